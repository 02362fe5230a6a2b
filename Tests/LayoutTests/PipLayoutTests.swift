import Testing
@testable import Layout
import MediaCore

@Suite struct PipLayoutTests {
    static let pipFlag = ["isPip": "true"]

    func engine(_ configure: (inout PipConfiguration) -> Void = { _ in }) -> PipLayout {
        var configuration = PipConfiguration(pipParticipantAttribute: "isPip")
        configure(&configuration)
        return PipLayout(configuration: configuration)
    }

    @Test func defaultsBottomRightNoOffsetSixteenthOfTheCanvasOverAFullGrid() {
        let tiles = engine().tiles(canvas: hd, participants: [participant(1, attributes: Self.pipFlag), participant(2)])
        #expect(tiles == [
            Tile(participantId: "p2", rect: Rect(x: 0, y: 0, width: 1920, height: 1080), fillMode: .cover, zIndex: 0, content: .video),
            Tile(participantId: "p1", rect: Rect(x: 1440, y: 810, width: 480, height: 270), fillMode: .cover, zIndex: 1, content: .video),
        ])
        let defaults = PipConfiguration()
        #expect(defaults.resolvedPipPosition == .bottomRight)
        #expect(defaults.resolvedPipBehavior == .static)
        #expect(defaults.resolvedVideoFillMode == .cover)
        #expect(defaults.resolvedOmitStoppedVideo == false)
        #expect(PipConfiguration.defaultGridGap == 0)
        #expect(PipConfiguration.defaultPipOffset == 0)
    }

    @Test(arguments: [
        (PipPosition.topLeft, Rect(x: 10, y: 10, width: 480, height: 270)),
        (.topRight, Rect(x: 1430, y: 10, width: 480, height: 270)),
        (.bottomLeft, Rect(x: 10, y: 800, width: 480, height: 270)),
        (.bottomRight, Rect(x: 1430, y: 800, width: 480, height: 270)),
    ])
    func pipPositionAndOffsetPlaceTheWindow(position: PipPosition, expected: Rect) {
        let pip = engine { $0.pipPosition = position; $0.pipOffset = 10 }
        let tiles = pip.tiles(canvas: hd, participants: [participant(1, attributes: Self.pipFlag), participant(2)])
        #expect(tiles.last?.rect == expected)
        #expect(tiles.last?.zIndex == 1)
    }

    @Test func oddOffsetRoundsUpToEven() {
        let tiles = engine { $0.pipPosition = .topLeft; $0.pipOffset = 5 }
            .tiles(canvas: hd, participants: [participant(1, attributes: Self.pipFlag), participant(2)])
        #expect(tiles.last?.rect.origin == (6, 6))
    }

    @Test(arguments: [
        (640, nil, PixelSize(width: 640, height: 360)),
        (nil, 360, PixelSize(width: 640, height: 360)),
        (300, 500, PixelSize(width: 300, height: 500)),
        (301, nil, PixelSize(width: 300, height: 168)),
        (5000, nil, PixelSize(width: 1920, height: 1080)),
        (5000, 5000, PixelSize(width: 1920, height: 1080)),
    ] as [(Int?, Int?, PixelSize)])
    func pipWidthAndHeight(width: Int?, height: Int?, expected: PixelSize) {
        let tiles = engine { $0.pipWidth = width; $0.pipHeight = height }
            .tiles(canvas: hd, participants: [participant(1, attributes: Self.pipFlag), participant(2)])
        let window = tiles.last!.rect
        #expect(window.size == expected)
        #expect(Rect(x: 0, y: 0, width: 1920, height: 1080).contains(window))
    }

    @Test func derivedWindowFollowsTheParticipantsAspect() {
        let phone = participant(1, video: .publishing(PixelSize(width: 720, height: 1280)), attributes: Self.pipFlag)
        let tiles = engine().tiles(canvas: hd, participants: [phone, participant(2)])
        #expect(tiles.last?.rect == Rect(x: 1650, y: 600, width: 270, height: 480))
        // On a portrait canvas a 16:9 window keeps the same 1/16 area.
        let portrait = engine().tiles(canvas: portraitHD, participants: [participant(1, attributes: Self.pipFlag), participant(2)])
        #expect(portrait.last?.rect.size == PixelSize(width: 480, height: 270))
    }

    @Test func staticKeepsTheWindowWhenEveryoneElseLeft() {
        let tiles = engine { $0.pipBehavior = .static }.tiles(canvas: hd, participants: [participant(1, attributes: Self.pipFlag)])
        #expect(tiles.map(\.rect) == [Rect(x: 1440, y: 810, width: 480, height: 270)])
        let implicit = engine().tiles(canvas: hd, participants: [participant(1, attributes: Self.pipFlag)])
        #expect(implicit == tiles)
    }

    @Test func dynamicExpandsThePipParticipantWhenAlone() {
        let pip = engine { $0.pipBehavior = .dynamic }
        let alone = pip.tiles(canvas: hd, participants: [participant(1, attributes: Self.pipFlag)])
        #expect(alone == [Tile(participantId: "p1", rect: Rect(x: 0, y: 0, width: 1920, height: 1080),
                               fillMode: .cover, zIndex: 0, content: .video)])
        // With someone else on stage DYNAMIC is the usual window.
        let together = pip.tiles(canvas: hd, participants: [participant(1, attributes: Self.pipFlag), participant(2)])
        #expect(together.last?.rect == Rect(x: 1440, y: 810, width: 480, height: 270))
    }

    @Test func featuredAndPipTogether() {
        let pip = engine { $0.featuredParticipantAttribute = "isFeatured" }
        let people = [participant(1, attributes: Self.pipFlag), participant(2), participant(3, attributes: ["isFeatured": "true"]),
                      participant(4)]
        let tiles = pip.tiles(canvas: hd, participants: people)
        #expect(tiles.ids == ["p3", "p2", "p4", "p1"])
        #expect(tiles.map(\.zIndex) == [0, 0, 0, 1])
        // PiP fill default (COVER) applies to the featured slot too, and gridGap defaults to 0.
        #expect(tiles.allSatisfy { $0.fillMode == .cover })
        #expect(tiles[0].rect == Rect(x: 0, y: 0, width: 1920, height: 810))
        #expect(tiles[1].rect.y == 810)
        #expect(tiles[2].rect.x == tiles[1].rect.maxX)
        #expect(geometryViolation(tiles, canvas: hd) == nil)
    }

    @Test func pipFlagWinsOverFeaturedFlagOnTheSameParticipant() {
        let pip = engine { $0.featuredParticipantAttribute = "isFeatured" }
        let people = [participant(1, attributes: ["isPip": "true", "isFeatured": "true"]), participant(2), participant(3)]
        let tiles = pip.tiles(canvas: hd, participants: people)
        #expect(tiles.last?.participantId == "p1")
        #expect(tiles.last?.zIndex == 1)
        #expect(tiles[0].rect.size == tiles[1].rect.size) // no featured slot
    }

    @Test func stoppedPipParticipantIsCameraOffOrOmitted() {
        let people = [participant(1, video: .stopped, attributes: Self.pipFlag), participant(2)]
        let shown = engine().tiles(canvas: hd, participants: people)
        #expect(shown.last?.content == .cameraOff)
        #expect(shown.last?.zIndex == 1)
        let omitted = engine { $0.omitStoppedVideo = true }.tiles(canvas: hd, participants: people)
        #expect(omitted.ids == ["p2"])
        #expect(omitted[0].rect == Rect(x: 0, y: 0, width: 1920, height: 1080))
    }

    @Test func withoutPipParticipantEveryoneIsAGapless16by9Grid() {
        let tiles = PipLayout().tiles(canvas: hd, participants: participants(2))
        #expect(tiles.map(\.rect) == [Rect(x: 0, y: 270, width: 960, height: 540), Rect(x: 960, y: 270, width: 960, height: 540)])
        #expect(tiles.allSatisfy { $0.zIndex == 0 })
    }

    @Test(arguments: VideoFillMode.allCases)
    func videoFillModeAppliesEverywhere(mode: VideoFillMode) {
        let tiles = engine { $0.videoFillMode = mode }
            .tiles(canvas: hd, participants: [participant(1, attributes: Self.pipFlag), participant(2), participant(3)])
        #expect(tiles.map(\.fillMode) == [mode, mode, mode])
    }

    @Test func gridGapAppliesToTheMainArea() {
        let tiles = engine { $0.gridGap = 10 }
            .tiles(canvas: hd, participants: [participant(1, attributes: Self.pipFlag), participant(2), participant(3)])
        #expect(tiles[1].rect.x - tiles[0].rect.maxX == 10)
    }

    @Test func orderAttributePicksTheFirstOfSeveralPipFlags() {
        let pip = engine { $0.participantOrderAttribute = "rank" }
        let people = [participant(1, attributes: ["isPip": "true", "rank": "5"]), participant(2),
                      participant(3, attributes: ["isPip": "true", "rank": "1"])]
        let tiles = pip.tiles(canvas: hd, participants: people)
        #expect(tiles.last?.participantId == "p3")
        #expect(tiles.first?.participantId == "p1") // ranked before the unranked p2
    }
}

extension Rect {
    var origin: (Int, Int) { (x, y) }
}

func == (lhs: (Int, Int)?, rhs: (Int, Int)) -> Bool {
    guard let lhs else { return false }
    return lhs.0 == rhs.0 && lhs.1 == rhs.1
}
