import Foundation
import Testing
@testable import Layout

@Suite struct OverlayValidationTests {
    static func message(_ configuration: OverlayConfiguration) -> String? {
        do {
            try configuration.validate()
            return nil
        } catch {
            return error.description
        }
    }

    static func image(_ file: String = "logo.png", position: OverlayPosition? = nil, margin: Int? = nil, x: Int? = nil, y: Int? = nil,
                      width: Int? = nil, height: Int? = nil, opacity: Double? = nil) -> OverlayConfiguration {
        OverlayConfiguration(images: [ImageOverlay(file: file, position: position, margin: margin, x: x, y: y, width: width,
                                                   height: height, opacity: opacity)])
    }

    static func banner(_ banner: BannerOverlay) -> OverlayConfiguration { OverlayConfiguration(banners: [banner]) }
    static func slate(_ slate: SlateOverlay) -> OverlayConfiguration { OverlayConfiguration(slate: slate) }
    static func labels(_ labels: LabelOverlay) -> OverlayConfiguration { OverlayConfiguration(labels: labels) }

    /// Every limit at its edge, and text a real overlay carries (scripts, emoji, lines).
    static let valid: [OverlayConfiguration] = [
        OverlayConfiguration(),
        OverlayConfiguration(labels: LabelOverlay()),
        labels(LabelOverlay(attribute: "display_name-2", position: .topRight, margin: 0, fontScale: 0.02,
                            font: String(repeating: "é", count: 64), textColor: "#ffffff", backgroundColor: "#000000A0")),
        labels(LabelOverlay(margin: 1000, fontScale: 0.25, font: "Noto Sans CJK JP")),
        OverlayConfiguration(images: (0..<8).map { ImageOverlay(file: "logos/logo \($0).png") }),
        image(String(repeating: "a", count: 251) + ".png", position: .bottomCenter, margin: 1000, width: 1, height: 4096, opacity: 0),
        image("ü/.hidden/./logo.png", x: 0, y: 8192, width: 4096, opacity: 1),
        image("..logo..png", x: 8192, y: 0),
        OverlayConfiguration(background: BackgroundOverlay(color: "#102030")),
        OverlayConfiguration(background: BackgroundOverlay(file: "bg.jpg", fillMode: .contain)),
        slate(SlateOverlay(backgroundColor: "#10101080")),
        slate(SlateOverlay(file: "slate.png")),
        slate(SlateOverlay(text: "We'll be right back\nسنعود قريبا\nすぐ戻ります\n🎬", fontSize: 8)),
        slate(SlateOverlay(text: String(repeating: "é", count: 250), fontSize: 400, font: "DejaVu Sans")),
        OverlayConfiguration(banners: (0..<8).map { BannerOverlay(id: "b\($0)", text: "Banner \($0)") }),
        banner(BannerOverlay(id: String(repeating: "A-z_9", count: 12) + "abcd", text: "x", margin: 0, fontSize: 8,
                             textColor: "#FFFFFF", backgroundColor: "#000000C0", visible: false, transitionMs: 0)),
        banner(BannerOverlay(id: "lower-third", text: "Dana — שלום", margin: 1000, fontSize: 400, transitionMs: 5000)),
    ]

    @Test(arguments: valid)
    func validDescriptionsPass(configuration: OverlayConfiguration) {
        #expect(Self.message(configuration) == nil)
    }

    static let longFont = String(repeating: "a", count: 129)

    /// One row per rule, each failing alone; the message starts with the field's path.
    static let invalid: [(OverlayConfiguration, String)] = [
        // labels
        (labels(LabelOverlay(attribute: "")), "overlays.labels.attribute: must not be empty"),
        (labels(LabelOverlay(attribute: "display name")), "overlays.labels.attribute: 'display name' must match [a-zA-Z0-9-_]*"),
        (labels(LabelOverlay(attribute: String(repeating: "a", count: 129))),
         "overlays.labels.attribute: length must be between 0 and 128 characters (got 129)"),
        (labels(LabelOverlay(margin: -1)), "overlays.labels.margin: must be between 0 and 1000 (got -1)"),
        (labels(LabelOverlay(margin: 1001)), "overlays.labels.margin: must be between 0 and 1000 (got 1001)"),
        (labels(LabelOverlay(fontScale: 0.019)), "overlays.labels.fontScale: must be between 0.02 and 0.25 (got 0.019)"),
        (labels(LabelOverlay(fontScale: 0.26)), "overlays.labels.fontScale: must be between 0.02 and 0.25 (got 0.26)"),
        (labels(LabelOverlay(fontScale: .nan)), "overlays.labels.fontScale: must be between 0.02 and 0.25 (got nan)"),
        (labels(LabelOverlay(font: "")), "overlays.labels.font: must be 1 to 128 bytes of UTF-8 (got 0)"),
        (labels(LabelOverlay(font: longFont)), "overlays.labels.font: must be 1 to 128 bytes of UTF-8 (got 129)"),
        (labels(LabelOverlay(font: "Sans\u{7}")), "overlays.labels.font: must not contain control characters"),
        (labels(LabelOverlay(textColor: "white")), "overlays.labels.textColor: 'white' must be #RRGGBB or #RRGGBBAA"),
        (labels(LabelOverlay(backgroundColor: "#0000000")), "overlays.labels.backgroundColor: '#0000000' must be #RRGGBB or #RRGGBBAA"),
        // images
        (OverlayConfiguration(images: (0..<9).map { ImageOverlay(file: "\($0).png") }), "overlays.images: at most 8 images (got 9)"),
        (image(""), "overlays.images[0].file: must be 1 to 255 bytes of UTF-8 (got 0)"),
        (image(String(repeating: "a", count: 252) + ".png"), "overlays.images[0].file: must be 1 to 255 bytes of UTF-8 (got 256)"),
        (image("logo\u{0}.png"), "overlays.images[0].file: must not contain control characters"),
        (image("logo\n.png"), "overlays.images[0].file: must not contain control characters"),
        (image("/etc/passwd"), "overlays.images[0].file: '/etc/passwd' must be a relative path (no leading /)"),
        (image(#"logos\logo.png"#), #"overlays.images[0].file: 'logos\logo.png' must use / between folders, not \"#),
        (image("../secret.png"), "overlays.images[0].file: '../secret.png' must not contain a .. component"),
        (image("logos/../../secret.png"), "overlays.images[0].file: 'logos/../../secret.png' must not contain a .. component"),
        (image("logos/.."), "overlays.images[0].file: 'logos/..' must not contain a .. component"),
        (image(margin: 1001), "overlays.images[0].margin: must be between 0 and 1000 (got 1001)"),
        (image(x: -1, y: 0), "overlays.images[0].x: must be between 0 and 8192 (got -1)"),
        (image(x: 0, y: 8193), "overlays.images[0].y: must be between 0 and 8192 (got 8193)"),
        (image(x: 10), "overlays.images[0].y: is required with x"),
        (image(y: 10), "overlays.images[0].x: is required with y"),
        (image(position: .topRight, x: 10, y: 10), "overlays.images[0].position: give either position or x and y, not both"),
        (image(width: 0), "overlays.images[0].width: must be between 1 and 4096 (got 0)"),
        (image(height: 4097), "overlays.images[0].height: must be between 1 and 4096 (got 4097)"),
        (image(opacity: 1.01), "overlays.images[0].opacity: must be between 0 and 1 (got 1.01)"),
        (image(opacity: -0.1), "overlays.images[0].opacity: must be between 0 and 1 (got -0.1)"),
        (image(opacity: .infinity), "overlays.images[0].opacity: must be between 0 and 1 (got inf)"),
        (OverlayConfiguration(images: [ImageOverlay(file: "a.png"), ImageOverlay(file: "b.png", width: 5000)]),
         "overlays.images[1].width: must be between 1 and 4096 (got 5000)"),
        // background
        (OverlayConfiguration(background: BackgroundOverlay(fillMode: .cover)), "overlays.background: give a color or a file"),
        (OverlayConfiguration(background: BackgroundOverlay(color: "#GGGGGG")),
         "overlays.background.color: '#GGGGGG' must be #RRGGBB or #RRGGBBAA"),
        (OverlayConfiguration(background: BackgroundOverlay(file: "a/../b.png")),
         "overlays.background.file: 'a/../b.png' must not contain a .. component"),
        // slate
        (slate(SlateOverlay(fontSize: 40)), "overlays.slate: give a text, a file or a backgroundColor"),
        (slate(SlateOverlay(text: "")), "overlays.slate.text: must be 1 to 500 bytes of UTF-8 (got 0)"),
        (slate(SlateOverlay(text: String(repeating: "é", count: 250) + "!")), "overlays.slate.text: must be 1 to 500 bytes of UTF-8 (got 501)"),
        (slate(SlateOverlay(text: "Back\tsoon")), #"overlays.slate.text: must not contain control characters other than \n"#),
        (slate(SlateOverlay(text: "Back\r\nsoon")), #"overlays.slate.text: must not contain control characters other than \n"#),
        (slate(SlateOverlay(text: "1\n2\n3\n4\n5")), "overlays.slate.text: at most 4 lines (got 5)"),
        (slate(SlateOverlay(file: "/slate.png")), "overlays.slate.file: '/slate.png' must be a relative path (no leading /)"),
        (slate(SlateOverlay(text: "x", fontSize: 7)), "overlays.slate.fontSize: must be between 8 and 400 (got 7)"),
        (slate(SlateOverlay(text: "x", fontSize: 401)), "overlays.slate.fontSize: must be between 8 and 400 (got 401)"),
        (slate(SlateOverlay(text: "x", font: longFont)), "overlays.slate.font: must be 1 to 128 bytes of UTF-8 (got 129)"),
        (slate(SlateOverlay(text: "x", textColor: "#fff")), "overlays.slate.textColor: '#fff' must be #RRGGBB or #RRGGBBAA"),
        (slate(SlateOverlay(backgroundColor: "101010")), "overlays.slate.backgroundColor: '101010' must be #RRGGBB or #RRGGBBAA"),
        // banners
        (OverlayConfiguration(banners: (0..<9).map { BannerOverlay(id: "b\($0)", text: "x") }), "overlays.banners: at most 8 banners (got 9)"),
        (banner(BannerOverlay(id: "", text: "x")), "overlays.banners[0].id: '' must match [A-Za-z0-9_-]{1,64}"),
        (banner(BannerOverlay(id: "lower third", text: "x")), "overlays.banners[0].id: 'lower third' must match [A-Za-z0-9_-]{1,64}"),
        (banner(BannerOverlay(id: "é", text: "x")), "overlays.banners[0].id: 'é' must match [A-Za-z0-9_-]{1,64}"),
        (banner(BannerOverlay(id: "a\u{1}", text: "x")), #"overlays.banners[0].id: 'a\u{01}' must match [A-Za-z0-9_-]{1,64}"#),
        (banner(BannerOverlay(id: String(repeating: "a", count: 65), text: "x")),
         "overlays.banners[0].id: '\(String(repeating: "a", count: 65))' must match [A-Za-z0-9_-]{1,64}"),
        (OverlayConfiguration(banners: [BannerOverlay(id: "a", text: "x"), BannerOverlay(id: "b", text: "y"), BannerOverlay(id: "a", text: "z")]),
         "overlays.banners[2].id: 'a' is already the id of banners[0]"),
        (banner(BannerOverlay(id: "a", text: "")), "overlays.banners[0].text: must be 1 to 500 bytes of UTF-8 (got 0)"),
        (banner(BannerOverlay(id: "a", text: String(repeating: "x", count: 1_000_000))),
         "overlays.banners[0].text: must be 1 to 500 bytes of UTF-8 (got 1000000)"),
        (banner(BannerOverlay(id: "a", text: "x\u{85}")), #"overlays.banners[0].text: must not contain control characters other than \n"#),
        (banner(BannerOverlay(id: "a", text: "\n\n\n\n")), "overlays.banners[0].text: at most 4 lines (got 5)"),
        (banner(BannerOverlay(id: "a", text: "x", margin: -1)), "overlays.banners[0].margin: must be between 0 and 1000 (got -1)"),
        (banner(BannerOverlay(id: "a", text: "x", fontSize: 0)), "overlays.banners[0].fontSize: must be between 8 and 400 (got 0)"),
        (banner(BannerOverlay(id: "a", text: "x", font: "A\u{1B}[31m")), "overlays.banners[0].font: must not contain control characters"),
        (banner(BannerOverlay(id: "a", text: "x", textColor: "")), "overlays.banners[0].textColor: '' must be #RRGGBB or #RRGGBBAA"),
        (banner(BannerOverlay(id: "a", text: "x", backgroundColor: "#00000000 ")),
         "overlays.banners[0].backgroundColor: '#00000000 ' must be #RRGGBB or #RRGGBBAA"),
        (banner(BannerOverlay(id: "a", text: "x", transitionMs: 5001)), "overlays.banners[0].transitionMs: must be between 0 and 5000 (got 5001)"),
        (banner(BannerOverlay(id: "a", text: "x", transitionMs: -1)), "overlays.banners[0].transitionMs: must be between 0 and 5000 (got -1)"),
    ]

    @Test(arguments: invalid)
    func invalidFieldsAreNamed(configuration: OverlayConfiguration, expected: String) {
        #expect(Self.message(configuration) == expected)
    }

    @Test func thePrefixIsTheDescriptionsPath() {
        #expect(throws: LayoutValidationError.invalidField(field: "directions[3].overlays.banners[0].fontSize",
                                                           reason: "must be between 8 and 400 (got 2)")) {
            try Self.banner(BannerOverlay(id: "a", text: "x", fontSize: 2)).validate(prefix: "directions[3].overlays")
        }
    }

    @Test func aHugeValueIsQuotedShort() throws {
        let message = try #require(Self.message(Self.labels(LabelOverlay(textColor: String(repeating: "z", count: 100_000)))))
        #expect(message == "overlays.labels.textColor: '\(String(repeating: "z", count: 80))...' must be #RRGGBB or #RRGGBBAA")
    }

    @Test func theJSONContractDecodes() throws {
        let json = #"""
        {"labels": {"attribute": "name"}, "images": [{"file": "logo.png", "position": "TOP_RIGHT", "margin": 24, "layer": "BELOW"}],
         "background": {"color": "#102030"}, "slate": {"text": "We'll be right back"},
         "banners": [{"id": "title", "text": "Live", "position": "TOP_CENTER", "visible": false, "transitionMs": 300}]}
        """#
        let configuration = try JSONDecoder().decode(OverlayConfiguration.self, from: Data(json.utf8))
        #expect(configuration == OverlayConfiguration(
            labels: LabelOverlay(attribute: "name"),
            images: [ImageOverlay(file: "logo.png", position: .topRight, margin: 24, layer: .below)],
            background: BackgroundOverlay(color: "#102030"), slate: SlateOverlay(text: "We'll be right back"),
            banners: [BannerOverlay(id: "title", text: "Live", position: .topCenter, visible: false, transitionMs: 300)]))
        #expect(Self.message(configuration) == nil)
        #expect(OverlayPosition.allCases.map(\.rawValue)
            == ["TOP_LEFT", "TOP_CENTER", "TOP_RIGHT", "BOTTOM_LEFT", "BOTTOM_CENTER", "BOTTOM_RIGHT", "CENTER"])
    }
}
