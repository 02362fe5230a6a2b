import Testing
@testable import Layout
import MediaCore

@Suite struct LayoutTransitionTests {
    static let grid = GridLayout(configuration: GridConfiguration())
    static let pip = PipLayout(configuration: PipConfiguration(pipParticipantAttribute: "isPip"))

    /// Grid of p1..p3 → PiP where p3 is the window and p2 has left.
    static func transition() -> LayoutTransition {
        let before = grid.tiles(canvas: hd, participants: participants(3))
        let after = pip.tiles(canvas: hd, participants: [participant(1), participant(3, attributes: ["isPip": "true"])])
        return LayoutTransition(from: before, to: after, start: 1_000_000, duration: 300_000)
    }

    @Test func startsWhereTheOldTilesAreAndEndsExactlyOnTheNewOnes() {
        let t = Self.transition()
        let first = t.tiles(at: 1_000_000)
        for item in first where t.from.contains(where: { $0.participantId == item.tile.participantId }) {
            #expect(item.tile.rect == t.from.tile(item.tile.participantId)?.rect)
        }
        // Those staying are whole; the one going starts whole and fades.
        #expect(first.first { $0.tile.participantId == "p2" }?.opacity == 1)
        let last = t.tiles(at: 1_300_000)
        #expect(last.filter { $0.opacity > 0 }.map(\.tile) == t.to)
        #expect(t.isFinished(at: 1_300_000) && !t.isFinished(at: 1_299_999))
        #expect(t.tiles(at: 9_000_000).filter { $0.opacity > 0 }.map(\.tile) == t.to)
    }

    @Test func goingTilesAreDrawnFirstAndFadeOutWhileStayingOnesGlide() {
        let t = Self.transition()
        let middle = t.tiles(at: 1_150_000)
        #expect(middle.first?.tile.participantId == "p2", "the tile that goes is drawn under the others")
        #expect(middle.map(\.tile.participantId) == ["p2", "p1", "p3"])
        let p2 = middle[0], p3 = middle[2]
        #expect(abs(p2.opacity - 0.125) < 1e-9, "eased progress is 7/8 at the midpoint")
        #expect(p3.opacity == 1)
        let from = t.from.tile("p3")!.rect, to = t.to.tile("p3")!.rect
        #expect(p3.tile.rect != from && p3.tile.rect != to)
        #expect(p3.tile.rect.x >= min(from.x, to.x) && p3.tile.rect.x <= max(from.x, to.x))
    }

    @Test func aTileThatComesFadesIn() {
        let before = Self.grid.tiles(canvas: hd, participants: participants(1))
        let after = Self.grid.tiles(canvas: hd, participants: participants(2))
        let t = LayoutTransition(from: before, to: after, start: 0, duration: 1_000)
        let opacities = stride(from: Int64(0), through: 1_000, by: 100).map { time in t.tiles(at: time).first { $0.tile.participantId == "p2" }!.opacity }
        #expect(opacities.first == 0 && opacities.last == 1)
        #expect(zip(opacities, opacities.dropFirst()).allSatisfy { $0 <= $1 }, "\(opacities)")
    }

    @Test("every frame of a transition keeps tiles on even pixels inside the canvas, for any progress",
          arguments: [0.0, 0.013, 0.25, 0.5, 0.77, 0.999, 1.0])
    func geometryStaysValid(progress: Double) {
        let t = Self.transition()
        let time = t.start + Int64(progress * Double(t.duration))
        let tiles = t.tiles(at: time).map(\.tile)
        for tile in tiles {
            #expect(tile.rect.x % 2 == 0 && tile.rect.y % 2 == 0 && tile.rect.width % 2 == 0 && tile.rect.height % 2 == 0, "\(tile)")
            #expect(Rect(x: 0, y: 0, width: hd.width, height: hd.height).contains(tile.rect), "\(tile)")
        }
    }

    @Test func easingIsMonotoneStartsAtOnceAndLandsSoftly() {
        var last = -1.0
        for step in 0...100 {
            let e = LayoutTransition.eased(Double(step) / 100)
            #expect(e >= last)
            last = e
        }
        #expect(LayoutTransition.eased(0) == 0 && LayoutTransition.eased(1) == 1)
        #expect(LayoutTransition.eased(1.0 / 9) > 0.29, "a third of the way after the first of nine frames")
        #expect(1 - LayoutTransition.eased(0.95) < 0.001, "the last steps are small")
    }

    @Test func extremeTimesDoNotTrap() {
        let t = LayoutTransition(from: [], to: [], start: .max - 5, duration: .max)
        #expect(t.progress(at: .min) == 0)
        #expect(t.progress(at: .max) >= 0)
        let u = LayoutTransition(from: [], to: [], start: .min, duration: 0)
        #expect(u.progress(at: .max) == 1)
    }
}

@Suite struct TransitionPreviewTests {
    @Test("a preview of a transition starts on the old layout's picture, ends on the new one's, and is neither between")
    func previewEnds() {
        let grid = LayoutConfiguration.defaultGrid
        let pip = LayoutConfiguration(pip: PipConfiguration(pipParticipantAttribute: "isPip"))
        let canvas = PixelSize(width: 320, height: 180)
        let before = LayoutPreview.sampleParticipants(count: 3, configuration: grid)
        let after = LayoutPreview.sampleParticipants(count: 3, pip: [2], configuration: pip)
        func frame(_ progress: Double) -> [UInt8] {
            LayoutPreview.renderRGB(configuration: pip, canvas: canvas, participants: after,
                                    transition: LayoutPreview.Transition(from: grid, fromParticipants: before, progress: progress))
        }
        let old = LayoutPreview.renderRGB(configuration: grid, canvas: canvas, participants: before)
        let new = LayoutPreview.renderRGB(configuration: pip, canvas: canvas, participants: after)
        #expect(frame(0) == old)
        #expect(frame(1) == new)
        #expect(frame(0.5) != old && frame(0.5) != new)
    }
}
