import Testing
import TestSupport
@testable import Layout
import MediaCore

/// Random stages, configurations and canvases (seeded, so failures reproduce) checked
/// against the rules every layout must keep.
@Suite struct LayoutPropertyTests {
    static let videoSizes = [PixelSize(width: 1280, height: 720), PixelSize(width: 1920, height: 1080),
                             PixelSize(width: 720, height: 1280), PixelSize(width: 640, height: 480),
                             PixelSize(width: 480, height: 480), PixelSize(width: 853, height: 479)]
    static let gaps: [Int?] = [nil, 0, 1, 2, 3, 8, 17, 64, 500]
    static let attributeChoices: [String?] = [nil, "", "flag"]

    static func randomCanvas(_ rng: inout SeededGenerator) -> PixelSize {
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: PixelSize(width: 1920, height: 1080)
        case 1: PixelSize(width: 1080, height: 1920)
        case 2: PixelSize(width: 160, height: 160)
        default: PixelSize(width: Int.random(in: 160...1920, using: &rng), height: Int.random(in: 160...1920, using: &rng))
        }
    }

    /// 1–12 participants with random video state, flags and order keys, in random input order.
    static func randomStage(_ rng: inout SeededGenerator) -> [LayoutParticipant] {
        let count = Int.random(in: 1...12, using: &rng)
        return (0..<count).map { index in
            var attributes: [String: String] = [:]
            if Int.random(in: 0..<4, using: &rng) == 0 { attributes["featured"] = "true" }
            if Int.random(in: 0..<3, using: &rng) == 0 { attributes["pip"] = "true" }
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: attributes["order"] = String(Int.random(in: -5...20, using: &rng))
            case 1: attributes["order"] = ["a", "B", "zz", "", "10x"].randomElement(using: &rng)!
            default: break
            }
            let video: VideoState = switch Int.random(in: 0..<6, using: &rng) {
            case 0: .stopped
            case 1: .audioOnly
            default: .publishing(videoSizes.randomElement(using: &rng)!)
            }
            return LayoutParticipant(participantId: "p\(index)", userId: "u\(index)", attributes: attributes,
                                     arrivalIndex: Int.random(in: 0..<6, using: &rng), video: video)
        }.shuffled(using: &rng)
    }

    static func expectedShown(_ stage: [LayoutParticipant], omit: Bool) -> Set<String> {
        Set(stage.filter { !omit || $0.video.isPublishing }.map(\.participantId))
    }

    static func check(_ engine: any LayoutEngine, stage: [LayoutParticipant], canvas: PixelSize, omit: Bool,
                      allowPip: Bool, rng: inout SeededGenerator, context: String) {
        let tiles = engine.tiles(canvas: canvas, participants: stage)
        if let violation = geometryViolation(tiles, canvas: canvas) {
            Issue.record("\(context): \(violation)")
            return
        }
        #expect(Set(tiles.ids) == expectedShown(stage, omit: omit), "\(context): wrong participants")
        let byId = Dictionary(uniqueKeysWithValues: stage.map { ($0.participantId, $0) })
        for tile in tiles {
            #expect(tile.content == (byId[tile.participantId]!.video.isPublishing ? .video : .cameraOff), "\(context)")
        }
        let windows = tiles.filter { $0.zIndex > 0 }
        #expect(windows.count <= (allowPip ? 1 : 0), "\(context): unexpected overlay tiles")
        // Deterministic and independent of the input order.
        let again = engine.tiles(canvas: canvas, participants: stage.shuffled(using: &rng))
        #expect(again == tiles, "\(context): not deterministic")
    }

    @Test func gridKeepsTheGeometryRulesForEveryConfiguration() {
        var rng = SeededGenerator(seed: 0x5EED_0001)
        var cases = 0
        for aspect in [nil] + VideoAspectRatio.allCases.map(Optional.some) {
            for fill in [nil] + VideoFillMode.allCases.map(Optional.some) {
                for featured in Self.attributeChoices {
                    for omit in [nil, false, true] {
                        for order in [nil, "order"] {
                            let configuration = GridConfiguration(
                                featuredParticipantAttribute: featured.map { $0.isEmpty ? "" : "featured" },
                                omitStoppedVideo: omit, videoAspectRatio: aspect, videoFillMode: fill,
                                gridGap: Self.gaps.randomElement(using: &rng)!, participantOrderAttribute: order)
                            let engine = GridLayout(configuration: configuration)
                            for _ in 0..<3 {
                                let stage = Self.randomStage(&rng)
                                let canvas = Self.randomCanvas(&rng)
                                Self.check(engine, stage: stage, canvas: canvas, omit: omit ?? false, allowPip: false,
                                           rng: &rng, context: "grid \(configuration) \(canvas) n=\(stage.count)")
                                cases += 1
                            }
                        }
                    }
                }
            }
        }
        #expect(cases == 5 * 4 * 3 * 3 * 2 * 3)
    }

    @Test func pipKeepsTheGeometryRulesForRandomConfigurations() {
        var rng = SeededGenerator(seed: 0x5EED_0002)
        var seen = Set<String>()
        for _ in 0..<2500 {
            let configuration = PipConfiguration(
                featuredParticipantAttribute: Self.attributeChoices.randomElement(using: &rng)!.map { $0.isEmpty ? "" : "featured" },
                omitStoppedVideo: [nil, false, true].randomElement(using: &rng)!,
                videoFillMode: ([nil] + VideoFillMode.allCases.map(Optional.some)).randomElement(using: &rng)!,
                gridGap: Self.gaps.randomElement(using: &rng)!,
                pipParticipantAttribute: Self.attributeChoices.randomElement(using: &rng)!.map { $0.isEmpty ? "" : "pip" },
                pipBehavior: ([nil] + PipBehavior.allCases.map(Optional.some)).randomElement(using: &rng)!,
                pipOffset: [nil, 0, 7, 20, 3000].randomElement(using: &rng)!,
                pipPosition: ([nil] + PipPosition.allCases.map(Optional.some)).randomElement(using: &rng)!,
                pipWidth: [nil, 1, 97, 320, 4000].randomElement(using: &rng)!,
                pipHeight: [nil, 1, 55, 180, 4000].randomElement(using: &rng)!,
                participantOrderAttribute: [nil, "order"].randomElement(using: &rng)!)
            seen.insert("\(configuration.pipPosition.map(\.rawValue) ?? "-")/\(configuration.pipBehavior.map(\.rawValue) ?? "-")")
            let stage = Self.randomStage(&rng)
            let canvas = Self.randomCanvas(&rng)
            Self.check(PipLayout(configuration: configuration), stage: stage, canvas: canvas,
                       omit: configuration.omitStoppedVideo ?? false, allowPip: true, rng: &rng,
                       context: "pip \(configuration) \(canvas) n=\(stage.count)")
        }
        #expect(seen.count == 5 * 3) // every position x behaviour (incl. unset) was exercised
    }

    /// Independent reference: the tile of an r x c arrangement, largest box of the aspect in
    /// the cell, rounded down to even.
    static func referenceTileArea(rows: Int, columns: Int, canvas: PixelSize, gap: Int, aspect: (Int, Int)) -> Int {
        let cellW = (canvas.width - gap * (columns - 1)) / columns
        let cellH = (canvas.height - gap * (rows - 1)) / rows
        guard cellW >= 2, cellH >= 2 else { return 0 }
        let (w, h) = cellW * aspect.1 <= cellH * aspect.0
            ? (cellW, cellW * aspect.1 / aspect.0) : (cellH * aspect.0 / aspect.1, cellH)
        return (w & ~1) * (h & ~1)
    }

    @Test func plainGridTilesAreAtLeastAsLargeAsSimpleAlternatives() {
        var rng = SeededGenerator(seed: 0x5EED_0003)
        let aspects: [(VideoAspectRatio, (Int, Int))] = [(.video, (16, 9)), (.square, (1, 1)), (.portrait, (3, 4))]
        for _ in 0..<1500 {
            let (aspect, ratio) = aspects.randomElement(using: &rng)!
            let gap = [0, 2, 4, 10].randomElement(using: &rng)!
            let canvas = Self.randomCanvas(&rng)
            let count = Int.random(in: 1...12, using: &rng)
            let engine = GridLayout(configuration: GridConfiguration(videoAspectRatio: aspect, gridGap: gap))
            let tiles = engine.tiles(canvas: canvas, participants: participants(count))
            let even = PixelSize(width: canvas.width & ~1, height: canvas.height & ~1)
            #expect(Set(tiles.map(\.rect.size)).count == 1, "equal tiles")
            let area = tiles[0].rect.area
            let side = Int((Double(count).squareRoot()).rounded(.up))
            let alternatives = [(1, count), (count, 1), ((count + side - 1) / side, side), (side, side)]
            for (rows, columns) in alternatives {
                let reference = Self.referenceTileArea(rows: rows, columns: columns, canvas: even, gap: gap, aspect: ratio)
                #expect(area >= reference, "\(count) on \(canvas) \(aspect) gap \(gap): \(tiles[0].rect) < \(rows)x\(columns)")
            }
            // The tile keeps the requested aspect (within even rounding).
            let size = tiles[0].rect
            #expect(abs(size.width * ratio.1 - size.height * ratio.0) <= 2 * max(ratio.0, ratio.1), "aspect \(size)")
            // Gaps between horizontal neighbours are exactly the gap; the block is centred.
            let rows = Dictionary(grouping: tiles, by: \.rect.y)
            for row in rows.values {
                let sorted = row.sorted { $0.rect.x < $1.rect.x }
                for (a, b) in zip(sorted, sorted.dropFirst()) { #expect(b.rect.x - a.rect.maxX == gap) }
                let left = sorted.first!.rect.x, right = even.width - sorted.last!.rect.maxX
                #expect(abs(left - right) <= 2, "row not centred")
            }
            let top = tiles.map(\.rect.y).min()!, bottom = even.height - tiles.map(\.rect.maxY).max()!
            #expect(abs(top - bottom) <= 2, "block not centred vertically")
        }
    }

    @Test func featuredSlotIsLargerThanEveryStripTile() {
        var rng = SeededGenerator(seed: 0x5EED_0004)
        for _ in 0..<500 {
            let canvas = Self.randomCanvas(&rng)
            let count = Int.random(in: 2...12, using: &rng)
            var stage = participants(count)
            let featuredIndex = Int.random(in: 0..<count, using: &rng)
            stage[featuredIndex].attributes["isFeatured"] = "true"
            let engine = GridLayout(configuration: GridConfiguration(featuredParticipantAttribute: "isFeatured"))
            let tiles = engine.tiles(canvas: canvas, participants: stage)
            #expect(tiles.first?.participantId == stage[featuredIndex].participantId)
            #expect(tiles.dropFirst().allSatisfy { $0.rect.area < tiles[0].rect.area }, "\(canvas) \(tiles)")
            // The strip is entirely below or entirely beside the slot, exactly one gap away.
            let slot = tiles[0].rect, strip = tiles.dropFirst().map(\.rect)
            let below = strip.allSatisfy { $0.y >= slot.maxY }, beside = strip.allSatisfy { $0.x >= slot.maxX }
            #expect(below != beside, "\(canvas) \(tiles)")
            if below { #expect(strip.map(\.y).min()! - slot.maxY == 2) }
            if beside { #expect(strip.map(\.x).min()! - slot.maxX == 2) }
            #expect(geometryViolation(tiles, canvas: canvas) == nil)
        }
    }
}
