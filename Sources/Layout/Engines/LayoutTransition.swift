// From one set of tiles to the next over a time: a tile that stays glides from its old place
// to its new one (eased), a tile that goes fades out where it was, a tile that comes fades
// in where it will be. Pure: the compositor asks for the tiles of each output frame.

public import MediaCore

/// One tile of a frame inside a transition: where it is drawn now and how opaque (over the
/// background).
public struct TransitionTile: Hashable, Sendable, CustomStringConvertible {
    public var tile: Tile
    /// 0 (not seen) ... 1 (fully drawn).
    public var opacity: Double

    public init(tile: Tile, opacity: Double) {
        self.tile = tile
        self.opacity = opacity
    }

    public var description: String { opacity >= 1 ? tile.description : "\(tile)@\(Int((opacity * 100).rounded()))%" }
}

public struct LayoutTransition: Sendable, Equatable {
    public let from: [Tile]
    public let to: [Tile]
    /// Stage time (µs) the transition starts at, and its length (µs, > 0).
    public let start: Int64
    public let duration: Int64

    public init(from: [Tile], to: [Tile], start: Int64, duration: Int64) {
        self.from = from
        self.to = to
        self.start = start
        self.duration = max(1, duration)
    }

    /// Linear progress at `time`: 0 at the start, 1 from the end on.
    public func progress(at time: Int64) -> Double {
        let elapsed = time.subtractingReportingOverflow(start)
        guard !elapsed.overflow else { return time < start ? 0 : 1 }
        return min(1, max(0, Double(elapsed.partialValue) / Double(duration)))
    }

    public func isFinished(at time: Int64) -> Bool { progress(at: time) >= 1 }

    /// Ease out (cubic): the glide is under way from the first frame (a third of the way
    /// after a ninth of the time), then slows to land softly. An ease in and out would hide
    /// the change for its first frames (0.5 % of the way after a ninth).
    public static func eased(_ progress: Double) -> Double {
        let q = 1 - min(1, max(0, progress))
        return 1 - q * q * q
    }

    /// The tiles drawn at `time`, in draw order: those going first (under the others), then
    /// the others in the new layout's order. Rectangles stay on even pixels.
    public func tiles(at time: Int64) -> [TransitionTile] {
        let e = Self.eased(progress(at: time))
        var result: [TransitionTile] = []
        result.reserveCapacity(from.count + to.count)
        for old in from where !to.contains(where: { $0.participantId == old.participantId }) {
            result.append(TransitionTile(tile: old, opacity: 1 - e))
        }
        for new in to {
            guard let old = from.first(where: { $0.participantId == new.participantId }) else {
                result.append(TransitionTile(tile: new, opacity: e))
                continue
            }
            var moving = new
            moving.rect = Self.interpolate(old.rect, new.rect, e)
            result.append(TransitionTile(tile: moving, opacity: 1))
        }
        return result
    }

    /// `a` → `b` at `t` (0...1), rounded to even pixels, never narrower than 2.
    public static func interpolate(_ a: Rect, _ b: Rect, _ t: Double) -> Rect {
        func mix(_ u: Int, _ v: Int) -> Int {
            let value = Double(u) + (Double(v) - Double(u)) * t
            let even = Int((value / 2).rounded()) * 2
            return even
        }
        return Rect(x: mix(a.x, b.x), y: mix(a.y, b.y), width: max(2, mix(a.width, b.width)), height: max(2, mix(a.height, b.height)))
    }
}
