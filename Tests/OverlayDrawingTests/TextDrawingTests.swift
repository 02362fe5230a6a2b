import Testing
@testable import OverlayDrawing
import MediaCore

@Suite struct TextDrawingTests {
    static let font = "DejaVu Sans"

    static func inkColumns(_ bitmap: RGBABitmap) -> Range<Int>? {
        var first: Int?, last = 0
        for x in 0..<bitmap.width {
            for y in 0..<bitmap.height where bitmap.pixel(x: x, y: y).a > 0 {
                first = first ?? x
                last = x
                break
            }
        }
        return first.map { $0..<(last + 1) }
    }

    @Test func latinIsLeftToRightInItsOwnFont() {
        let order = TextDrawing.visualOrder("Alice", font: Self.font, pixelSize: 32)
        #expect(order.map(\.character) == [0, 1, 2, 3, 4])
        #expect(order.allSatisfy { $0.fontFile.contains("DejaVuSans") })
    }

    /// Hebrew and Arabic read right to left: the first character is drawn rightmost.
    @Test func rightToLeftScriptsAreDrawnRightToLeft() {
        let hebrew = TextDrawing.visualOrder("שלום", font: Self.font, pixelSize: 32)
        #expect(hebrew.map(\.character) == [3, 2, 1, 0])
        let arabic = TextDrawing.visualOrder("مرحبا", font: Self.font, pixelSize: 32)
        #expect(arabic.first?.character == 4 && arabic.last?.character == 0)
        #expect(arabic.map(\.character) == arabic.map(\.character).sorted(by: >))
    }

    /// In a left-to-right line, an Arabic run keeps its own order inside.
    @Test func mixedDirectionsFollowTheParagraph() {
        let order = TextDrawing.visualOrder("Hi مرحبا", font: Self.font, pixelSize: 32).map(\.character)
        #expect(Array(order.prefix(3)) == [0, 1, 2])
        #expect(Array(order.dropFirst(3)) == Array(order.dropFirst(3)).sorted(by: >))
        // A right-to-left paragraph puts a Latin word at its left end, in its own order.
        let rtl = TextDrawing.visualOrder("مرحبا Bob", font: Self.font, pixelSize: 32).map(\.character)
        #expect(Array(rtl.prefix(3)) == [6, 7, 8])
    }

    /// Arabic letters join: shaped, "مرحبا" is not its letters' isolated forms side by side.
    @Test func arabicIsShaped() {
        let word = TextDrawing.draw("مرحبا", style: TextStyle(font: Self.font, pixelSize: 40))
        let letters = "مرحبا".map { TextDrawing.draw(String($0), style: TextStyle(font: Self.font, pixelSize: 40)).width }
        #expect(word.width > 0 && word.width < letters.reduce(0, +))
    }

    /// Hebrew and Arabic in one line: each is shaped by its own script's rules (the Arabic word
    /// joined exactly as when alone), the line right to left.
    @Test func scriptsInOneLineAreShapedApart() {
        let style = TextStyle(font: Self.font, pixelSize: 40)
        let alone = TextDrawing.visualOrder("مرحبا", font: Self.font, pixelSize: 40).count
        let mixed = TextDrawing.visualOrder("שלום مرحبا", font: Self.font, pixelSize: 40)
        // Joined Arabic can take other glyph counts than its letters; alone and mixed agree.
        #expect(mixed.filter { $0.character >= 5 }.count == alone)
        #expect(mixed.map(\.character) == mixed.map(\.character).sorted(by: >))
        let word = TextDrawing.draw("مرحبا", style: style).width
        let both = TextDrawing.draw("שלום مرحبا", style: style).width
        let hebrew = TextDrawing.draw("שלום ", style: style).width
        #expect(abs(both - hebrew - word) <= 2, "\(both) vs \(hebrew) + \(word)")
    }

    /// Characters DejaVu lacks come from fallback fonts: Japanese and emoji are drawn, not boxes.
    @Test func fallbackFontsDrawCJKAndEmoji() {
        let japanese = TextDrawing.visualOrder("日本語", font: Self.font, pixelSize: 32)
        #expect(japanese.count == 3 && japanese.allSatisfy { !$0.fontFile.contains("DejaVu") })
        let emoji = TextDrawing.visualOrder("🎉", font: Self.font, pixelSize: 32)
        #expect(emoji.first.map { $0.fontFile.contains("Emoji") } == true)
        // The emoji is in colour.
        let drawn = TextDrawing.draw("🎉", style: TextStyle(font: Self.font, pixelSize: 48))
        var coloured = 0
        for y in 0..<drawn.height {
            for x in 0..<drawn.width {
                let p = drawn.pixel(x: x, y: y)
                if p.a > 200, max(p.r, p.g, p.b) - min(p.r, p.g, p.b) > 80 { coloured += 1 }
            }
        }
        #expect(coloured > 50)
    }

    @Test func combiningMarksStayWithTheirBase() {
        // "é" as e + U+0301: one cluster, drawn by one font.
        let order = TextDrawing.visualOrder("e\u{301}", font: Self.font, pixelSize: 32)
        #expect(Set(order.map(\.fontFile)).count == 1)
        #expect(order.allSatisfy { $0.character == 0 })
    }

    @Test func longTextEndsInAnEllipsisWithinItsWidth() {
        let style = TextStyle(font: Self.font, pixelSize: 24)
        let long = TextDrawing.draw(String(repeating: "Wolfgang Amadeus Mozart ", count: 10), style: style, maxWidth: 300)
        #expect(long.width <= 300 && long.width > 200)
        let box = TextDrawing.draw(String(repeating: "x", count: 400), style: style, box: BoxStyle(color: .black), maxWidth: 200)
        #expect(box.width <= 200)
    }

    @Test func bitmapsArePremultipliedAndBoxed() {
        let pill = TextDrawing.draw("Bob", style: TextStyle(font: Self.font, pixelSize: 30, color: RGBAColor(red: 255, green: 0, blue: 0)),
                                    box: BoxStyle(color: RGBAColor(red: 0, green: 0, blue: 255, alpha: 128)))
        for y in 0..<pill.height {
            for x in 0..<pill.width {
                let p = pill.pixel(x: x, y: y)
                #expect(p.r <= p.a && p.g <= p.a && p.b <= p.a)
            }
        }
        // The middle of the pill's left end is the box's colour at half alpha; its corner is rounded away.
        let edge = pill.pixel(x: pill.height / 2, y: 2)
        #expect(edge.a >= 120 && edge.a <= 136 && edge.b >= 120)
        #expect(pill.pixel(x: 0, y: 0).a == 0)
    }

    @Test func theMutedBadgeSitsAtTheLineEnd() {
        let style = TextStyle(font: Self.font, pixelSize: 30)
        let plain = TextDrawing.draw("Ana", style: style)
        let muted = TextDrawing.draw("Ana", style: style, mutedBadge: true)
        #expect(muted.width > plain.width + 30)
        // Red at the right for a left-to-right name, at the left for a right-to-left one.
        func redColumns(_ bitmap: RGBABitmap) -> [Int] {
            (0..<bitmap.width).filter { x in (0..<bitmap.height).contains { y in let p = bitmap.pixel(x: x, y: y); return p.r > 180 && p.g < 90 } }
        }
        #expect((redColumns(muted).min() ?? 0) > plain.width)
        let hebrew = TextDrawing.draw("שלום", style: style, mutedBadge: true)
        #expect((redColumns(hebrew).max() ?? Int.max) < hebrew.width / 2)
    }

    @Test func unknownFontsAreReportedAndKnownOnesFound() {
        #expect(TextDrawing.fontExists("DejaVu Sans"))
        #expect(TextDrawing.fontExists("dejavu sans"))
        #expect(!TextDrawing.fontExists("No Such Font 4711"))
    }

    @Test func emptyTextDrawsNothingAndHugeSizesAreBounded() {
        #expect(TextDrawing.draw("", style: TextStyle(font: Self.font, pixelSize: 20)).width == 0)
        let huge = TextDrawing.draw("W", style: TextStyle(font: Self.font, pixelSize: 1_000_000))
        #expect(huge.width <= TextDrawing.maximumSide && huge.height <= TextDrawing.maximumSide)
    }
}
