import Fleet
import Testing

@Suite struct PlacementCostTests {
    @Test("a 720p30 composition of one or no publisher costs 900 millicores")
    func reference() {
        let hd = PlacementCost.Rendition(width: 1280, height: 720, framerate: 30)
        #expect(PlacementCost.composition(renditions: [hd], participants: 0) == 900)
        #expect(PlacementCost.composition(renditions: [hd], participants: 1) == 900)
        #expect(PlacementCost.composition(renditions: [hd], participants: 4) == 1_200)
    }

    @Test("encoding scales with the pixel rate, rounded up, and each rendition counts")
    func scaling() {
        let fullHD60 = PlacementCost.Rendition(width: 1920, height: 1080, framerate: 60)
        #expect(PlacementCost.composition(renditions: [fullHD60], participants: 1) == 3_600 + 100)
        let small = PlacementCost.Rendition(width: 320, height: 180, framerate: 15)
        #expect(PlacementCost.composition(renditions: [small], participants: 1) == 25 + 100)
        #expect(PlacementCost.composition(renditions: [small, fullHD60], participants: 2) == 25 + 3_600 + 200)
    }

    @Test("hostile sizes and rates are clamped, never trap", arguments: [Int.min, -1, 0, Int.max])
    func bounded(_ value: Int) {
        let rendition = PlacementCost.Rendition(width: value, height: value, framerate: .infinity)
        let cost = PlacementCost.composition(renditions: [rendition], participants: value)
        #expect(cost > 0 && cost < 10_000_000)
        #expect(PlacementCost.publishers(value) >= 0)
    }
}
