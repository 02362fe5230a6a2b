// Seeds of the rtmp-session fuzz target (Sources/Fuzz/Targets/RTMPSessionTarget.swift): each
// a two-byte header (how the bytes are cut into reads, ms between reads) and a publisher's
// bytes. The corpus sessions, and the floods an attacker sends: audio timestamps alternating
// between 0 and 2^31 (the crash of issue 23, which took 4.4 million of them), and zero-length
// messages.
import Foundation
import RTMP
import TestSupport
import Testing

enum SessionSeeds {
    static func generate() throws -> [(name: String, bytes: [UInt8])] {
        var seeds: [(name: String, bytes: [UInt8])] = []
        for (name, bytes) in try Corpus.all() {
            let stem = name.replacingOccurrences(of: ".bin", with: "")
            seeds.append(("\(stem)-reads-35-5ms", [2, 5] + bytes))
            seeds.append(("\(stem)-reads-4336-0ms", [255, 0] + bytes))
        }
        let timestampFlood = try flood { publisher, index in
            publisher.audio(SampleTags.aacFrame, timestamp: index % 2 == 0 ? 0 : 0x8000_0000)
        }
        seeds.append(("timestamp-flood-reads-35-0ms", [2, 0] + timestampFlood))
        seeds.append(("timestamp-flood-reads-137-1ms", [8, 1] + timestampFlood))
        // A zero-length audio message (format 0 header), then format 3 headers of one byte:
        // each is another zero-length message, about 57,000 of them.
        let emptyFlood = try flood { _, index in index == 0 ? hex("04 000000 000000 08 01000000") : [0xC4] }
        seeds.append(("zero-length-flood-reads-137-0ms", [8, 0] + emptyFlood))
        // A publisher whose every GOP comes with new sequence headers (video and audio): the
        // configuration changes that the relay, recordings and compositions must follow.
        let changes = try headerChanges()
        seeds.append(("sequence-header-changes-reads-35-1ms", [2, 1] + changes))
        seeds.append(("sequence-header-changes-reads-1241-33ms", [73, 33] + changes))
        return seeds
    }

    /// A publish whose GOPs alternate between two H.264 and two AAC configurations.
    static func headerChanges() throws -> [UInt8] {
        var publisher = TestPublisher(variant: .simple, seed: 37)
        var bytes = try CorpusGenerator.handshake(&publisher)
        bytes += publisher.connect() + publisher.createStream() + publisher.publish("changes-key")
        // The same 64x64 SPS at another level (avcC and SPS level_idc 0x0a -> 0x1f), and AAC at
        // 48 kHz instead of 44.1 kHz.
        let otherVideo = SampleTags.avcSequenceHeader.enumerated().map { index, byte in [8, 16].contains(index) ? 0x1f : byte }
        let otherAudio: [UInt8] = [0xAF, 0x00, 0x11, 0x90]
        var time: UInt32 = 0
        for gop in 0..<24 {
            bytes += publisher.video(gop % 2 == 0 ? SampleTags.avcSequenceHeader : otherVideo, timestamp: time)
            bytes += publisher.audio(gop % 2 == 0 ? SampleTags.aacSequenceHeader : otherAudio, timestamp: time)
            bytes += publisher.video(SampleTags.avcKeyframe(), timestamp: time)
            for frame in 0..<4 {
                bytes += publisher.audio(SampleTags.aacFrame, timestamp: time &+ UInt32(frame) &* 23)
                if frame > 0 { bytes += publisher.video(SampleTags.avcInterframe, timestamp: time &+ UInt32(frame) &* 33) }
            }
            time &+= 133
        }
        return bytes
    }

    /// A publish with AAC, then messages from `message` up to about 60 KB.
    static func flood(_ message: (inout TestPublisher, Int) -> [UInt8]) throws -> [UInt8] {
        var publisher = TestPublisher(variant: .simple, seed: 31)
        var bytes = try CorpusGenerator.handshake(&publisher)
        bytes += publisher.connect() + publisher.createStream() + publisher.publish("flood-key")
        bytes += publisher.audio(SampleTags.aacSequenceHeader, timestamp: 0)
        var index = 0
        while bytes.count < 60_000 {
            bytes += message(&publisher, index)
            index += 1
        }
        return bytes
    }
}

struct FuzzSeedTests {
    @Test("the rtmp-session fuzz seeds are what the generator makes (FUZZ_REGENERATE_SEEDS=1 rewrites them)")
    func sessionSeeds() throws {
        let problems = try FuzzSeeds.staleSeeds(target: "rtmp-session", seeds: SessionSeeds.generate())
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test("the flood seeds are publish sessions whose floods the session parses as media")
    func floodsParse() throws {
        for (name, bytes) in try SessionSeeds.generate() where name.contains("flood") {
            var session = RTMPServerSession(hmacSHA256: testHMACSHA256, random: seededRandomFill(1))
            var media = 0
            for piece in RecordedSessionTests.pieces(Array(bytes.dropFirst(2)), size: 61) {
                var actions = session.receive(piece)
                if actions.contains(where: { if case .publishRequested = $0 { return true } else { return false } }) {
                    actions += session.acceptPublish()
                }
                for case .media(_) in actions { media += 1 }
            }
            #expect(media > 1000, "\(name): \(media) media messages")
        }
    }
}
