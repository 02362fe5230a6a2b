// Hostile overlay descriptions at the API (#43): each refused with a 400 naming the field,
// before any composition exists — nothing of them reaches a composition thread.
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Prometheus
import EventSinks
import NIOCore
@testable import Server
import XCTest

final class OverlayAPITests: XCTestCase {
    func makeApp(overlayDirectory: URL) async throws -> some ApplicationProtocol {
        let configuration = ServerConfiguration(
            stages: [.init(id: "twoPeople", source: CompositionManagerTests.fixtures.appendingPathComponent("two-people").path)],
            overlays: .init(directory: overlayDirectory.path))
        return try await buildApplication(configuration: configuration, dependencies: ServerDependencies(
            logger: Logger(label: "test"), events: InMemoryEventSink(), metricsRegistry: PrometheusCollectorRegistry(),
            launcher: FakePipelineLauncher(), inMemoryStore: true), store: nil)
    }

    static func start(_ overlays: String) -> String {
        #"{"stageArn":"arn:aws:ivs:us-east-1:123456789012:stage/twoPeople","#
            + #""destinations":[{"channel":{"channelArn":"arn:aws:ivs:us-east-1:123456789012:channel/abcdEFGH1234"}}],"#
            + #""overlays":"# + overlays + "}"
    }

    func testHostileOverlaysAreRefusedNamingTheField() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("overlay-api-\(UUID())")
        let outside = FileManager.default.temporaryDirectory.appendingPathComponent("overlay-outside-\(UUID())")
        for directory in [folder, outside] { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        defer { for directory in [folder, outside] { try? FileManager.default.removeItem(at: directory) } }
        // A 20000×20000 PNG: a valid header, nothing behind it.
        func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        let ihdr = Array("IHDR".utf8) + be(20000) + be(20000) + [8, 6, 0, 0, 0]
        let huge = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be(13) + ihdr + be(0) + be(0) + Array("IEND".utf8) + be(0)
        try Data(huge).write(to: folder.appendingPathComponent("huge.png"))
        // A JPEG cut short: its start is real (a frame header), its end missing.
        try Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0,
                  0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x10, 0x00, 0x10, 0x03, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1,
                  0xFF, 0xDA, 0x00, 0x0C, 0x03, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3F, 0, 0x12, 0x34])
            .write(to: folder.appendingPathComponent("cut.jpg"))
        try Data("not an image".utf8).write(to: folder.appendingPathComponent("text.png"))
        try Data("secret".utf8).write(to: outside.appendingPathComponent("secret.png"))
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("link.png"),
                                                   withDestinationURL: outside.appendingPathComponent("secret.png"))
        let megabyte = String(repeating: "A", count: 1_000_000)
        let cases: [(overlays: String, status: HTTPResponse.Status, message: String)] = [
            (#"{"images":[{"file":"huge.png"}]}"#, .badRequest, "overlays.images[0].file: 'huge.png': image is 20000x20000: over the limit"),
            (#"{"background":{"file":"cut.jpg"}}"#, .badRequest, "overlays.background.file: 'cut.jpg': JPEG is truncated"),
            (#"{"slate":{"file":"text.png"}}"#, .badRequest, "overlays.slate.file: 'text.png': not a PNG or JPEG image"),
            (#"{"images":[{"file":"link.png"}]}"#, .badRequest, "overlays.images[0].file: 'link.png' is outside the overlay directory"),
            (#"{"images":[{"file":"../secret.png"}]}"#, .badRequest, "overlays.images[0].file: "),
            (#"{"images":[{"file":"missing.png"}]}"#, .badRequest, "overlays.images[0].file: no file 'missing.png'"),
            (#"{"labels":{"font":"No Such Font 4711"}}"#, .badRequest, "overlays.labels.font: no font of the family 'No Such Font 4711' is installed"),
            (#"{"banners":[{"id":"b","text":"\#(String(repeating: "x", count: 600))"}]}"#, .badRequest, "overlays.banners[0].text: "),
            // A megabyte of banner text (under the 1 MiB body limit): refused by its length.
            (#"{"banners":[{"id":"b","text":"\#(megabyte)"}]}"#, .badRequest, "overlays.banners[0].text: "),
            (#"{"slate":{"text":"\#(megabyte)"}}"#, .badRequest, "overlays.slate.text: "),
        ]
        try await makeApp(overlayDirectory: folder).test(.router) { client in
            for (overlays, status, message) in cases {
                try await client.execute(uri: "/StartComposition", method: .post, body: ByteBuffer(string: Self.start(overlays))) { response in
                    XCTAssertEqual(response.status, status, String(overlays.prefix(80)))
                    XCTAssertEqual(response.headers[HTTPField.Name("x-amzn-ErrorType")!], "ValidationException")
                    let text = (try? ControlPlaneRouterTests.json(response.body)["message"] as? String) ?? nil
                    XCTAssertTrue(text?.hasPrefix(message) == true, "\(String(overlays.prefix(80))): \(text ?? "no message")")
                }
            }
            // None of them made a composition.
            try await client.execute(uri: "/ListCompositions", method: .post, body: ByteBuffer(string: "{}")) { response in
                XCTAssertEqual((try ControlPlaneRouterTests.json(response.body)["compositions"] as? [Any])?.count, 0)
            }
        }
    }
}
