// The fleet's RTMP relay passes a publisher's sequence-header changes on as they came: a
// publisher that goes from 160x120 to 176x144 mid-stream is relayed (here into an FLV file,
// the same muxer the relay writes to the owner's RTMP listener) with both sequence headers,
// and the relayed stream decodes cleanly at both sizes. Before, the second header was dropped
// and the 176x144 frames were decoded as 160x120 ("corrupted macroblock").
import FFmpeg
import Foundation
import LiveStage
import Logging
import MediaCore
import Pipeline
@testable import Server
import Synchronization
import Testing

@Suite struct RTMPRelayTests {
    struct Media {
        var video: CodecConfiguration
        var audio: CodecConfiguration
        var items: [(type: MediaType, data: [UInt8], dts: Int64, pts: Int64, isKeyframe: Bool)]
    }

    /// H.264 + AAC of `size`, `seconds` long, made by ffmpeg and demuxed into memory.
    static func media(size: String, seconds: Int, in directory: URL) throws -> Media {
        let file = directory.appendingPathComponent("\(size).flv").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30",
                             "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-t", "\(seconds)",
                             "-c:v", "libx264", "-preset", "ultrafast", "-g", "15", "-bf", "0", "-pix_fmt", "yuv420p",
                             "-c:a", "aac", "-f", "flv", file]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let source = try DemuxerMediaSource(url: file)
        let videoSetup = try #require(source.stream(.video)), audioSetup = try #require(source.stream(.audio))
        var items: [(type: MediaType, data: [UInt8], dts: Int64, pts: Int64, isKeyframe: Bool)] = []
        let packet = Packet()
        while case .packet(let type) = try source.read(into: packet) {
            let base = type == .video ? videoSetup.info.timeBase : audioSetup.info.timeBase
            items.append((type, packet.bytes, base.rescale(packet.dts, to: MediaTime.microseconds),
                          base.rescale(packet.pts, to: MediaTime.microseconds), packet.isKeyframe))
        }
        return Media(video: CodecConfiguration(codec: .h264, extradata: videoSetup.parameters.extradata,
                                               width: videoSetup.info.width, height: videoSetup.info.height),
                     audio: CodecConfiguration(codec: .aac, extradata: audioSetup.parameters.extradata,
                                               sampleRate: audioSetup.info.sampleRate, channelCount: audioSetup.info.channelCount),
                     items: items)
    }

    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process(), pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test("a resolution change mid-stream reaches the relayed stream as a second sequence header, and it decodes clean")
    func sequenceHeaderChange() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let small = try Self.media(size: "160x120", seconds: 2, in: directory)
        let large = try Self.media(size: "176x144", seconds: 2, in: directory)

        let hub = LiveStageHub(clock: ManualMediaClock())
        let publisher = hub.join(stageArn: "relay:stage", identity: LiveParticipantIdentity(participantId: "p", userId: "u", attributes: [:]))
        let output = directory.appendingPathComponent("relayed.flv").path
        let ended = Mutex<String??>(nil)
        let relay = RTMPRelay(publisher: publisher, url: output, displayURL: output, logger: Logger(label: "relay-test")) { failure in
            ended.withLock { $0 = .some(failure) }
        }
        // The relay's thread takes its queue of the publisher's media: from then on it sees every packet.
        let attached = ContinuousClock.now + .seconds(60)
        while publisher.videoDemand == .none, ContinuousClock.now < attached { try await Task.sleep(for: .milliseconds(5)) }
        publisher.announce(small.video)
        publisher.announce(small.audio)
        for item in small.items {
            publisher.pushStageTimed(item.type, data: item.data, dts: item.dts, pts: item.pts, isKeyframe: item.isKeyframe)
        }
        // The same connection goes on at the new size: new sequence headers, times continuing.
        let offset = (small.items.map(\.dts).max() ?? 0) + 33_333
        publisher.announce(large.video)
        publisher.announce(large.audio)
        for item in large.items {
            publisher.pushStageTimed(item.type, data: item.data, dts: item.dts + offset, pts: item.pts + offset, isKeyframe: item.isKeyframe)
        }
        publisher.leave()
        relay.stop()
        let deadline = ContinuousClock.now + .seconds(120)
        while ended.withLock({ $0 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let failure = try #require(ended.withLock { $0 })
        #expect(failure == nil)

        let frames = try Self.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "frame=width,height",
                                                        "-of", "csv=p=0", output])
        // "width,height" (a frame with side data ends its line with one more comma).
        let sizes = frames.output.split(separator: "\n").map { $0.split(separator: ",").prefix(2).joined(separator: ",") }
        let counts = Dictionary(grouping: sizes, by: { $0 }).mapValues(\.count)
        print("relayed frames by size: \(counts)")
        #expect(counts["160,120"] == 60 && counts["176,144"] == 60, "relayed frames by size: \(counts)")
        let decode = try Self.run("/usr/bin/ffmpeg", ["-v", "error", "-i", output, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.output.isEmpty, "decoding the relayed stream: \(decode.output.prefix(600))")
    }
}
