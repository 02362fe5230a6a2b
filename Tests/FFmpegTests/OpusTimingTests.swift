// Opus from RTP has no container to say where its audio is in time: a packet decodes to what
// entered the encoder its lookahead earlier. A 2 kHz beep starting exactly at 1 s, encoded by
// libopus (the ffmpeg CLI) as a WebRTC sender would, its packets then timed as RTP times them
// (20 ms apart from 0) and decoded by our decoder with the OpusHead a WHIP publisher gets: the
// beep must begin at 1 s on the decoded timeline, not 6.5 ms later.
import Foundation
@testable import FFmpeg
import MediaCore
import Testing
import TestSupport

@Suite struct OpusTimingTests {
    /// Bare Opus packets (20 ms each) of 2 s of silence with a beep from 1 s to 1.06 s.
    private func encodeBeep() throws -> [[UInt8]] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opus-timing-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("beep.ogg").path
        let encoded = try runTool("ffmpeg", [
            "-v", "error", "-f", "lavfi", "-i", "aevalsrc=exprs='0.8*sin(2*PI*2000*t)*between(t,1,1.06)':s=48000:d=2",
            "-c:a", "libopus", "-application", "voip", "-frame_duration", "20", "-b:a", "96k", "-f", "ogg", path], keeping: .standardError)
        guard encoded.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: encoded.text]) }
        let demuxer = try Demuxer(url: path)
        let packet = Packet()
        var packets: [[UInt8]] = []
        while try demuxer.read(into: packet) == .packet { packets.append(packet.bytes) }
        return packets
    }

    /// Where the decoded beep begins (s), the packets timed by `time` (µs from packet index).
    private func beepOnset(_ packets: [[UInt8]], time: (Int) -> Int64) throws -> Double {
        let parameters = try CodecParameters(CodecConfiguration(codec: .opus, extradata: OpusStream.identificationHeader,
                                                                sampleRate: OpusStream.sampleRate, channelCount: 2))
        let decoder = try Decoder(parameters: parameters, stream: StreamInfo(index: 0, type: .audio, codecName: "opus",
                                                                             timeBase: Rational(1, 1_000_000)))
        let frame = Frame(), resampler = Resampler()
        let left = UnsafeMutablePointer<Float>.allocate(capacity: 8192), right = UnsafeMutablePointer<Float>.allocate(capacity: 8192)
        defer { left.deallocate(); right.deallocate() }
        let packet = Packet()
        for (index, bytes) in packets.enumerated() {
            try packet.fill(bytes)
            packet.pts = time(index)
            packet.dts = packet.pts
            _ = try decoder.send(packet)
            while try decoder.receive(into: frame) == .frame {
                let start = frame.bestEffortTimestamp ?? frame.pts
                let count = try resampler.convert(frame, left: left, right: right, capacity: 8192)
                if let loud = (0..<count).first(where: { abs(left[$0]) > 0.4 }) {
                    return Double(start) / 1_000_000 + Double(loud) / Double(OpusStream.sampleRate)
                }
            }
        }
        throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no beep decoded"])
    }

    @Test("timed back by the pre-skip, the decoded beep begins where it was captured; by RTP time alone, 6.5 ms late")
    func decodedAudioIsAtItsCaptureTime() async throws {
        let packets = try await onThread { try self.encodeBeep() }
        #expect(packets.count >= 99)
        let rtp = { (index: Int) in Int64(index) * 20_000 }
        let timed = try beepOnset(packets, time: { OpusStream.decodeTime(ofPacketAt: rtp($0)) })
        #expect(abs(timed - 1.0) < 0.001, "beep at \(timed) s")
        let untimed = try beepOnset(packets, time: rtp)
        #expect(abs(untimed - 1.0065) < 0.001, "beep at \(untimed) s by RTP time alone")
    }

    @Test("the OpusHead says 312 samples of pre-skip at 48 kHz, 2 channels")
    func identificationHeader() {
        #expect(OpusStream.identificationHeader == Array("OpusHead".utf8) + [1, 2, 0x38, 0x01, 0x80, 0xBB, 0x00, 0x00, 0, 0, 0])
        #expect(OpusStream.decodeTime(ofPacketAt: 1_000_000) == 993_500)
    }
}
