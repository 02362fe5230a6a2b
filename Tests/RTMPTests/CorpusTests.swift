// The fuzz corpus: client→server byte streams of whole publish sessions. One is a real
// FFmpeg 5.1 recording; the others are generated here by our own client code, and this
// test checks they are still what the generator makes (RTMP_REGENERATE_CORPUS=1 rewrites them).
import Foundation
@testable import RTMP
import TestSupport
import Testing

enum Corpus {
    static let directory = FuzzSeeds.corpusRoot.appendingPathComponent("rtmp-parsers")

    static func load(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    static func all() throws -> [(name: String, bytes: [UInt8])] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".bin") }.sorted()
        return try names.map { ($0, try load($0)) }
    }
}

/// Builds the generated corpus files: deterministic client→server streams.
enum CorpusGenerator {
    static func generate() throws -> [(name: String, bytes: [UInt8])] {
        [("simple-publish.bin", try simplePublish()), ("digest-publish.bin", try digestPublish()),
         ("enhanced-publish.bin", try enhancedPublish())]
    }

    /// C0+C1 and C2 of our client against a server session.
    static func handshake(_ publisher: inout TestPublisher) throws -> [UInt8] {
        var server = RTMPServerHandshake(hmacSHA256: testHMACSHA256, random: seededRandomFill(11))
        let c0c1 = publisher.handshake.start()
        var c2: [UInt8] = []
        for case .send(let reply) in try server.receive(c0c1) {
            for case .send(let bytes) in try publisher.handshake.receive(reply) { c2 = bytes }
        }
        return c0c1 + c2
    }

    static func simplePublish() throws -> [UInt8] {
        var publisher = TestPublisher(variant: .simple, seed: 21)
        var bytes = try handshake(&publisher)
        bytes += publisher.connect() + publisher.releaseStream("live-key") + publisher.fcPublish("live-key")
        bytes += publisher.createStream() + publisher.publish("live-key")
        bytes += publisher.metadata([AMF0Property("width", .number(64)), AMF0Property("height", .number(64)),
                                     AMF0Property("videocodecid", .number(7)), AMF0Property("audiocodecid", .number(10))])
        bytes += publisher.video(SampleTags.avcSequenceHeader, timestamp: 0) + publisher.audio(SampleTags.aacSequenceHeader, timestamp: 0)
        for frame in 0..<6 {
            bytes += publisher.video(frame == 0 ? SampleTags.avcKeyframe(compositionTime: 66) : SampleTags.avcInterframe, timestamp: UInt32(frame * 33))
            bytes += publisher.audio(SampleTags.aacFrame, timestamp: UInt32(frame * 23))
        }
        bytes += publisher.fcUnpublish("live-key") + publisher.deleteStream(1)
        return bytes
    }

    /// Digest handshake, a larger chunk size, long frames and timestamps across 0xFFFFFF.
    static func digestPublish() throws -> [UInt8] {
        var publisher = TestPublisher(variant: .digest(.scheme1), seed: 22)
        var bytes = try handshake(&publisher)
        bytes += publisher.setChunkSize(1000)
        bytes += publisher.connect(app: "app/inst", tcUrl: "rtmp://example:1935/app/inst") + publisher.createStream()
        bytes += publisher.publish("key?token=1&x=%20", type: "record")
        bytes += publisher.video(SampleTags.avcSequenceHeader, timestamp: 0xFF_FF00)
        for frame in 0..<4 {
            let body = [UInt8](0..<UInt8(200)) + [UInt8](repeating: UInt8(frame), count: 2500)
            bytes += publisher.video([0x27, 1, 0, 0, 0] + body, timestamp: 0xFF_FFF0 + UInt32(frame * 20))
        }
        bytes += publisher.command([.string("closeStream"), .number(0), .null], streamID: 1)
        return bytes
    }

    /// Hand-written compressed headers (formats 1-3), E-RTMP tags, ping, window size,
    /// abort and an aggregate message.
    static func enhancedPublish() throws -> [UInt8] {
        var publisher = TestPublisher(variant: .simple, seed: 23)
        var bytes = try handshake(&publisher)
        bytes += hex("02 000000 000004 05 00000000 00001000")  // window acknowledgement size 4096
        bytes += publisher.connect() + publisher.createStream() + publisher.publish("hevc")
        bytes += hex("02 000000 000006 04 00000000 0006 00000064")  // ping request
        let hvc1 = Array("hvc1".utf8), av01 = Array("av01".utf8)
        bytes += publisher.video([0x90] + hvc1 + [1, 1, 0x60, 0, 0, 0, 0xB0, 0, 0, 0, 0, 0, 0x5D], timestamp: 0)
        // Format 1, 2 and 3 headers on chunk stream 7 (message stream from the fmt 0 above it).
        bytes += hex("07 000000 00000a 09 01000000") + [0x91] + hvc1 + [0, 0, 0x21, 0x26, 0x01]
        bytes += hex("47 000021 000008 09") + [0xA3] + hvc1 + [0, 0x02, 0x01]
        bytes += hex("87 000021") + [0xA3] + hvc1 + [0, 0x02, 0x02]
        bytes += hex("c7") + [0xA3] + hvc1 + [0, 0x02, 0x03]
        bytes += publisher.video([0x91] + av01 + [0x12, 0x00, 0x0A, 0x0B], timestamp: 200)
        // A partial message, then Abort for its chunk stream.
        bytes += hex("08 000000 000100 08 01000000") + [UInt8](repeating: 0xAF, count: 128)
        bytes += hex("02 000000 000004 02 00000000 00000008")
        // Aggregate: two FLV tags.
        let tag1: [UInt8] = [8, 0, 0, 4, 0, 1, 0, 0, 0, 0, 0] + SampleTags.aacSequenceHeader + [0, 0, 0, 15]
        let tag2: [UInt8] = [8, 0, 0, 8, 0, 1, 23, 0, 0, 0, 0] + SampleTags.aacFrame + [0, 0, 0, 19]
        bytes += publisher.encoder.encode(RTMPMessage(chunkStreamID: 9, messageStreamID: 1, typeID: 22, timestamp: 256, payload: tag1 + tag2))
        bytes += publisher.video([0x92] + hvc1, timestamp: 300)
        bytes += publisher.fcUnpublish("hevc")
        return bytes
    }
}

struct CorpusTests {
    @Test("the generated corpus files are what the generator makes (RTMP_REGENERATE_CORPUS=1 rewrites them)")
    func generatedCorpus() throws {
        let regenerate = ProcessInfo.processInfo.environment["RTMP_REGENERATE_CORPUS"] == "1"
        var total = 0
        for (name, bytes) in try CorpusGenerator.generate() {
            if regenerate {
                try Data(bytes).write(to: Corpus.directory.appendingPathComponent(name))
            }
            #expect(try Corpus.load(name) == bytes, "\(name) is stale; regenerate it")
            total += bytes.count
        }
        #expect(total < 100_000)
    }

    @Test("every corpus file is a valid publish session from start to end")
    func corpusSessionsAreValid() throws {
        // From the generator, not the files, so a regenerating run does not race itself.
        let sessions = try CorpusGenerator.generate() + [("ffmpeg-5.1-publish.bin", Corpus.load("ffmpeg-5.1-publish.bin"))]
        for (name, bytes) in sessions {
            var session = RTMPServerSession(hmacSHA256: testHMACSHA256, random: seededRandomFill(1))
            var actions: [RTMPSessionAction] = []
            for piece in RecordedSessionTests.pieces(bytes, size: 61) {
                let produced = session.receive(piece)
                actions += produced
                if produced.contains(where: { if case .publishRequested = $0 { return true } else { return false } }) {
                    actions += session.acceptPublish()
                }
            }
            for case .close(let error) in actions { Issue.record("\(name): \(error)") }
            #expect(actions.contains(.unpublished), "\(name)")
            #expect(actions.contains { if case .media = $0 { return true } else { return false } }, "\(name)")
        }
    }
}
