import Testing
@testable import Layout
import MediaCore

@Suite struct GridLayoutTests {
    let grid = GridLayout()

    @Test func oneParticipantFillsA16by9Canvas() {
        let tiles = grid.tiles(canvas: hd, participants: participants(1))
        #expect(tiles == [Tile(participantId: "p1", rect: Rect(x: 0, y: 0, width: 1920, height: 1080),
                               fillMode: .cover, zIndex: 0, content: .video)])
    }

    @Test func defaultsAreGap2CoverAndVideoAspect() {
        // Two 16:9 tiles side by side with exactly 2 pixels between them, block centred.
        let tiles = grid.tiles(canvas: hd, participants: participants(2))
        #expect(tiles.map(\.rect) == [Rect(x: 0, y: 270, width: 958, height: 538),
                                      Rect(x: 960, y: 270, width: 958, height: 538)])
        #expect(tiles.allSatisfy { $0.fillMode == .cover && $0.zIndex == 0 })
        #expect(GridConfiguration.defaultGridGap == 2)
        #expect(GridConfiguration.defaultVideoAspectRatio == .video)
        #expect(GridConfiguration().resolvedVideoAspectRatio == .video)
        #expect(GridConfiguration().resolvedOmitStoppedVideo == false)
    }

    @Test func incompleteLastRowIsCentred() {
        let tiles = grid.tiles(canvas: hd, participants: participants(3))
        #expect(tiles.map(\.rect) == [Rect(x: 0, y: 0, width: 958, height: 538),
                                      Rect(x: 960, y: 0, width: 958, height: 538),
                                      Rect(x: 480, y: 540, width: 958, height: 538)])
    }

    @Test func portraitCanvasStacksTiles() {
        let tiles = grid.tiles(canvas: portraitHD, participants: participants(2))
        #expect(tiles.map(\.rect.width) == [1080, 1080])
        #expect(tiles[1].rect.y - tiles[0].rect.maxY == 2)
        #expect(tiles[0].rect.x == 0)
    }

    @Test(arguments: [
        (VideoAspectRatio.video, Rect(x: 0, y: 0, width: 1920, height: 1080)),
        (.square, Rect(x: 420, y: 0, width: 1080, height: 1080)),
        (.portrait, Rect(x: 554, y: 0, width: 810, height: 1080)),
        // AUTO from the participant's own 9:16 video.
        (.auto, Rect(x: 656, y: 0, width: 606, height: 1080)),
    ])
    func videoAspectRatioSetsTheTileShape(aspect: VideoAspectRatio, expected: Rect) {
        let engine = GridLayout(configuration: GridConfiguration(videoAspectRatio: aspect))
        let phone = participant(1, video: .publishing(PixelSize(width: 720, height: 1280)))
        #expect(engine.tiles(canvas: hd, participants: [phone]).map(\.rect) == [expected])
    }

    @Test func autoAspectTakesTheMostCommonThenTheFirst() {
        let engine = GridLayout(configuration: GridConfiguration(videoAspectRatio: .auto))
        let portrait = VideoState.publishing(PixelSize(width: 720, height: 1280))
        let landscape = VideoState.publishing(PixelSize(width: 1920, height: 1080))
        let mostlyPortrait = [participant(1, video: landscape), participant(2, video: portrait),
                              participant(3, video: portrait)]
        #expect(engine.tiles(canvas: hd, participants: mostlyPortrait).allSatisfy { $0.rect.height > $0.rect.width })

        // One each: the first in layout order (4:3) wins.
        let fourThree = [participant(1, video: .publishing(PixelSize(width: 640, height: 480))),
                         participant(2, video: landscape)]
        let tiles = engine.tiles(canvas: hd, participants: fourThree)
        #expect(tiles.allSatisfy { abs($0.rect.width * 3 - $0.rect.height * 4) <= 8 })
        #expect(ParticipantSelection.autoAspect(of: fourThree) == AspectRatio(width: 4, height: 3))
        // 854x480 and 1280x720 round to the same hundredth (1.78) and count together.
        let mixed = [participant(1, video: .publishing(PixelSize(width: 640, height: 480))),
                     participant(2, video: .publishing(PixelSize(width: 854, height: 480))), participant(3)]
        #expect(ParticipantSelection.autoAspect(of: mixed) == AspectRatio(width: 427, height: 240))
        // Nobody publishing: 16:9.
        #expect(ParticipantSelection.autoAspect(of: [participant(1, video: .stopped)]) == .video)
    }

    @Test func gridGapIsExactAndOddGapsRoundUp() {
        let none = GridLayout(configuration: GridConfiguration(gridGap: 0)).tiles(canvas: hd, participants: participants(2))
        #expect(none.map(\.rect) == [Rect(x: 0, y: 270, width: 960, height: 540), Rect(x: 960, y: 270, width: 960, height: 540)])
        let odd = GridLayout(configuration: GridConfiguration(gridGap: 3)).tiles(canvas: hd, participants: participants(2))
        #expect(odd[1].rect.x - odd[0].rect.maxX == 4)
        let wide = GridLayout(configuration: GridConfiguration(gridGap: 40)).tiles(canvas: hd, participants: participants(4))
        #expect(wide[1].rect.x - wide[0].rect.maxX == 40)
        #expect(wide[2].rect.y - wide[0].rect.maxY == 40)
    }

    @Test(arguments: VideoFillMode.allCases)
    func videoFillModeAppliesToGridAndFeaturedTiles(mode: VideoFillMode) {
        let engine = GridLayout(configuration: GridConfiguration(featuredParticipantAttribute: "isFeatured", videoFillMode: mode))
        let tiles = engine.tiles(canvas: hd, participants: [participant(1, attributes: ["isFeatured": "true"]), participant(2)])
        #expect(tiles.map(\.fillMode) == [mode, mode])
    }

    @Test func featuredParticipantGetsTheMainSlotAndOthersAStripBelow() {
        let engine = GridLayout(configuration: GridConfiguration(featuredParticipantAttribute: "isFeatured"))
        let people = [participant(1), participant(2, attributes: ["isFeatured": "true"]), participant(3)]
        let tiles = engine.tiles(canvas: hd, participants: people)
        #expect(tiles == [
            Tile(participantId: "p2", rect: Rect(x: 0, y: 0, width: 1920, height: 808), fillMode: .contain, zIndex: 0, content: .video),
            Tile(participantId: "p1", rect: Rect(x: 478, y: 810, width: 480, height: 270), fillMode: .cover, zIndex: 0, content: .video),
            Tile(participantId: "p3", rect: Rect(x: 960, y: 810, width: 480, height: 270), fillMode: .cover, zIndex: 0, content: .video),
        ])
        #expect(GridConfiguration.defaultFeaturedVideoFillMode == .contain)
    }

    @Test func featuredAloneTakesTheWholeCanvas() {
        let engine = GridLayout(configuration: GridConfiguration(featuredParticipantAttribute: "star"))
        let tiles = engine.tiles(canvas: hd, participants: [participant(1, attributes: ["star": "true"])])
        #expect(tiles.map(\.rect) == [Rect(x: 0, y: 0, width: 1920, height: 1080)])
        #expect(tiles.map(\.fillMode) == [.contain])
    }

    @Test func featuredFlagMustBeExactlyTrue() {
        let engine = GridLayout(configuration: GridConfiguration(featuredParticipantAttribute: "star"))
        for value in ["TRUE", "yes", "1", ""] {
            let tiles = engine.tiles(canvas: hd, participants: [participant(1, attributes: ["star": value]), participant(2)])
            #expect(Set(tiles.map(\.rect.size)).count == 1, "value \(value) must not feature")
        }
    }

    @Test func portraitFeaturedVideoOnLandscapeCanvasPutsTheStripBeside() {
        let engine = GridLayout(configuration: GridConfiguration(featuredParticipantAttribute: "isFeatured"))
        let phone = participant(1, video: .publishing(PixelSize(width: 720, height: 1280)), attributes: ["isFeatured": "true"])
        let tiles = engine.tiles(canvas: hd, participants: [phone, participant(2), participant(3)])
        #expect(tiles[0].rect == Rect(x: 0, y: 0, width: 1438, height: 1080))
        #expect(tiles[1...].allSatisfy { $0.rect.x == 1440 && $0.rect.width == 480 })
    }

    @Test func portraitCanvasWithLandscapeFeaturedKeepsTheStripBelow() {
        let engine = GridLayout(configuration: GridConfiguration(featuredParticipantAttribute: "isFeatured"))
        let tiles = engine.tiles(canvas: portraitHD, participants: [participant(1, attributes: ["isFeatured": "true"]),
                                                                    participant(2), participant(3)])
        #expect(tiles[0].rect.width == 1080 && tiles[0].rect.y == 0)
        #expect(tiles[1...].allSatisfy { $0.rect.y >= tiles[0].rect.maxY + 2 })
    }

    @Test func portraitCanvasWithPortraitFeaturedPutsTheStripBeside() {
        // With AUTO tiles both sides show the featured video equally: portrait prefers beside.
        let engine = GridLayout(configuration: GridConfiguration(featuredParticipantAttribute: "isFeatured",
                                                                 videoAspectRatio: .auto, gridGap: 0))
        let phone = VideoState.publishing(PixelSize(width: 1080, height: 1920))
        let tiles = engine.tiles(canvas: portraitHD, participants: [participant(1, video: phone, attributes: ["isFeatured": "true"]),
                                                                    participant(2, video: phone), participant(3, video: phone)])
        #expect(tiles[0].rect.height == 1920)
        #expect(tiles[1...].allSatisfy { $0.rect.x >= tiles[0].rect.maxX })
    }

    @Test func twoFeaturedParticipantsTheFirstInOrderWins() {
        let engine = GridLayout(configuration: GridConfiguration(featuredParticipantAttribute: "f", participantOrderAttribute: "seat"))
        let people = [participant(1, attributes: ["f": "true", "seat": "2"]), participant(2),
                      participant(3, attributes: ["f": "true", "seat": "1"])]
        let tiles = engine.tiles(canvas: hd, participants: people)
        #expect(tiles.first?.participantId == "p3")
        #expect(tiles.first?.fillMode == .contain)
        #expect(tiles.tile("p1")?.fillMode == .cover)
        #expect(tiles.tile("p1")!.rect.area < tiles.first!.rect.area)
    }

    @Test func orderAttributeComparesIntegersNumericallyThenTextThenArrival() {
        let engine = GridLayout(configuration: GridConfiguration(participantOrderAttribute: "seat"))
        let people = [
            participant(1, attributes: ["seat": "10"]), participant(2, attributes: ["seat": "9"]),
            participant(3, attributes: ["seat": "b"]), participant(4, attributes: ["seat": "a"]),
            participant(5), participant(6, attributes: ["seat": ""]), participant(7, attributes: ["seat": "-3"]),
            participant(8, attributes: ["seat": "9"], arrival: 0),
        ]
        let tiles = engine.tiles(canvas: hd, participants: people)
        let readingOrder = tiles.sorted { ($0.rect.y, $0.rect.x) < ($1.rect.y, $1.rect.x) }.ids
        #expect(readingOrder == ["p7", "p8", "p2", "p1", "p4", "p3", "p5", "p6"])
    }

    @Test func withoutOrderAttributeArrivalThenIdDecides() {
        let people = [participant(3, arrival: 1), participant(1, arrival: 2), participant(2, arrival: 1)]
        #expect(grid.tiles(canvas: hd, participants: people).ids == ["p2", "p3", "p1"])
    }

    @Test func stoppedAndAudioOnlyAreCameraOffUnlessOmitted() {
        let people = [participant(1), participant(2, video: .stopped), participant(3, video: .audioOnly)]
        let shown = grid.tiles(canvas: hd, participants: people)
        #expect(shown.map(\.content) == [.video, .cameraOff, .cameraOff])
        let omitting = GridLayout(configuration: GridConfiguration(omitStoppedVideo: true))
        let tiles = omitting.tiles(canvas: hd, participants: people)
        #expect(tiles.ids == ["p1"])
        #expect(tiles[0].rect == Rect(x: 0, y: 0, width: 1920, height: 1080))
    }

    @Test func tooSmallCanvasGivesNoTilesAndTinyCanvasClampsToTwoPixels() {
        #expect(grid.tiles(canvas: PixelSize(width: 1, height: 500), participants: participants(2)).isEmpty)
        #expect(grid.tiles(canvas: hd, participants: []).isEmpty)
        // 12 participants on 8x8: tiles are clamped to 2x2 (overlapping), none dropped.
        let tiles = GridLayout(configuration: GridConfiguration(gridGap: 100)).tiles(canvas: PixelSize(width: 8, height: 8),
                                                                                    participants: participants(12))
        #expect(tiles.count == 12)
        #expect(tiles.allSatisfy { $0.rect.width == 2 && $0.rect.height == 2 })
        #expect(geometryViolation(tiles, canvas: PixelSize(width: 8, height: 8)) == nil) // 4x3 of 2x2 still fits
        // 12 on 4x4 cannot fit: clamped inside the canvas, overlapping, nobody dropped.
        let crowded = grid.tiles(canvas: PixelSize(width: 4, height: 4), participants: participants(12))
        #expect(crowded.count == 12)
        #expect(crowded.allSatisfy { Rect(x: 0, y: 0, width: 4, height: 4).contains($0.rect) && $0.rect.area == 4 })
    }

    @Test func hugeGapShrinksInsteadOfPushingTilesOut() {
        let engine = GridLayout(configuration: GridConfiguration(gridGap: 10_000))
        let tiles = engine.tiles(canvas: PixelSize(width: 160, height: 160), participants: participants(6))
        #expect(geometryViolation(tiles, canvas: PixelSize(width: 160, height: 160)) == nil)
        #expect(tiles.count == 6)
    }

    @Test func makeEngineDefaultsToGrid() {
        #expect(LayoutConfiguration().makeEngine() is GridLayout)
        #expect(LayoutConfiguration.defaultGrid.makeEngine() is GridLayout)
        #expect(LayoutConfiguration(pip: PipConfiguration()).makeEngine() is PipLayout)
    }
}
