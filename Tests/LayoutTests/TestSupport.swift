@testable import Layout
import MediaCore


func participant(_ number: Int, video: VideoState = .publishing(PixelSize(width: 1280, height: 720)),
                 attributes: [String: String] = [:], arrival: Int? = nil, userId: String? = nil) -> LayoutParticipant {
    LayoutParticipant(participantId: "p\(number)", userId: userId ?? "user\(number)", attributes: attributes,
                      arrivalIndex: arrival ?? number, video: video)
}

func participants(_ count: Int, video: VideoState = .publishing(PixelSize(width: 1280, height: 720))) -> [LayoutParticipant] {
    (1...max(count, 1)).prefix(count).map { participant($0, video: video) }
}

let hd = PixelSize(width: 1920, height: 1080)
let portraitHD = PixelSize(width: 1080, height: 1920)

extension Array where Element == Tile {
    var ids: [String] { map(\.participantId) }
    func tile(_ id: String) -> Tile? { first { $0.participantId == id } }
}

/// The geometry rules every layout must keep; returns a description of the first broken
/// rule, or nil.
func geometryViolation(_ tiles: [Tile], canvas: PixelSize) -> String? {
    let bounds = Rect(x: 0, y: 0, width: canvas.width & ~1, height: canvas.height & ~1)
    for tile in tiles {
        let r = tile.rect
        if r.x % 2 != 0 || r.y % 2 != 0 || r.width % 2 != 0 || r.height % 2 != 0 { return "odd geometry \(tile)" }
        if r.width < 2 || r.height < 2 { return "tile under 2x2 \(tile)" }
        if !bounds.contains(r) { return "outside canvas \(canvas): \(tile)" }
    }
    if zip(tiles, tiles.dropFirst()).contains(where: { $0.zIndex > $1.zIndex }) { return "not sorted by zIndex" }
    if Set(tiles.ids).count != tiles.count { return "participant tiled twice" }
    for (i, a) in tiles.enumerated() {
        for b in tiles[(i + 1)...] where a.zIndex == b.zIndex && a.rect.intersects(b.rect) {
            return "overlap \(a) \(b)"
        }
    }
    return nil
}
