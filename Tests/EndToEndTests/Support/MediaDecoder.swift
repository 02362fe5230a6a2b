// Decodes what the pipeline wrote with the ffmpeg/ffprobe CLIs (an independent decoder):
// raw RGB frames, mono float audio, and packet timestamps.
import Foundation
import Layout
import MediaCore

struct ProbedStream: Sendable {
    var index: Int
    var codecType: String
    var codecName: String
    var startPTS: Int64
    var timeBase: (num: Int64, den: Int64)
}

struct ProbedPacket: Sendable {
    var streamIndex: Int
    var pts: Int64
    var dts: Int64
    var isKeyframe: Bool
}

struct DecodedVideo: Sendable {
    var width: Int
    var height: Int
    /// rgb24, frame after frame, in decode (= presentation: no B-frames) order.
    var pixels: [UInt8]
    var frameCount: Int
    /// Video packet pts in the stream's 90 kHz time base, in file order.
    var packetPTS: [Int64]
    var timeBaseDenominator: Int64

    /// Mean colour of the (2·radius+1)² box around (x, y) in frame `index`.
    func colour(frame index: Int, x: Int, y: Int, radius: Int = 2) -> RGB {
        var sum = (0, 0, 0), count = 0
        let frameBase = index * width * height * 3
        for yy in max(0, y - radius)...min(height - 1, y + radius) {
            for xx in max(0, x - radius)...min(width - 1, x + radius) {
                let offset = frameBase + (yy * width + xx) * 3
                sum.0 += Int(pixels[offset]); sum.1 += Int(pixels[offset + 1]); sum.2 += Int(pixels[offset + 2])
                count += 1
            }
        }
        return RGB(r: sum.0 / count, g: sum.1 / count, b: sum.2 / count)
    }

    func colour(frame index: Int, atCentreOf rect: Rect) -> RGB {
        colour(frame: index, x: rect.x + rect.width / 2, y: rect.y + rect.height / 2)
    }
}

struct DecodedAudio: Sendable {
    var sampleRate: Int
    /// Mono (ffmpeg's downmix of our stereo).
    var samples: [Float]
    /// Stage time of `samples[0]`: the audio stream's first pts minus the video's first pts
    /// (the muxer shifts both so the AAC priming does not go negative).
    var startSeconds: Double

    var endSeconds: Double { startSeconds + Double(samples.count) / Double(sampleRate) }

    func index(at seconds: Double) -> Int { Int(((seconds - startSeconds) * Double(sampleRate)).rounded()) }

    /// Samples of [from, to) seconds of stage time (clamped to what exists).
    func slice(from: Double, to: Double) -> ArraySlice<Float> {
        let a = max(0, min(samples.count, index(at: from)))
        let b = max(a, min(samples.count, index(at: to)))
        return samples[a..<b]
    }

    /// Amplitude of the `hz` component over [from, to) stage seconds.
    func toneAmplitude(_ hz: Double, from: Double, to: Double) -> Double {
        Goertzel.amplitude(of: hz, in: slice(from: from, to: to), sampleRate: sampleRate)
    }

    func rms(from: Double, to: Double) -> Double {
        let window = slice(from: from, to: to)
        guard !window.isEmpty else { return 0 }
        return (window.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(window.count)).squareRoot()
    }
}

enum MediaDecoder {
    static func probeStreams(_ path: String) async throws -> [ProbedStream] {
        let output = try await runChecked(Paths.ffprobe, ["-v", "error", "-show_entries",
                                                          "stream=index,codec_type,codec_name,start_pts,time_base",
                                                          "-of", "json", path])
        let json = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any]
        let streams = json?["streams"] as? [[String: Any]] ?? []
        return streams.map { stream in
            let base = (stream["time_base"] as? String ?? "1/90000").split(separator: "/").compactMap { Int64($0) }
            return ProbedStream(index: stream["index"] as? Int ?? -1, codecType: stream["codec_type"] as? String ?? "",
                                codecName: stream["codec_name"] as? String ?? "",
                                startPTS: (stream["start_pts"] as? NSNumber)?.int64Value ?? 0,
                                timeBase: (base.first ?? 1, base.count > 1 ? base[1] : 90_000))
        }
    }

    static func probePackets(_ path: String) async throws -> [ProbedPacket] {
        let output = try await runChecked(Paths.ffprobe, ["-v", "error", "-show_entries", "packet=stream_index,pts,dts,flags",
                                                          "-of", "csv=p=0", path])
        return output.stdoutText.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count >= 4, let index = Int(fields[0]), let pts = Int64(fields[1]) else { return nil }
            return ProbedPacket(streamIndex: index, pts: pts, dts: Int64(fields[2]) ?? pts, isKeyframe: fields[3].hasPrefix("K"))
        }
    }

    static func video(of recording: ComposedRecording) async throws -> DecodedVideo {
        let path = recording.mediaPlaylist.path
        let streams = try await probeStreams(path)
        guard let video = streams.first(where: { $0.codecType == "video" }) else {
            throw SubprocessError(description: "no video stream in \(path)")
        }
        let packets = try await probePackets(path).filter { $0.streamIndex == video.index }
        let raw = try await runChecked(Paths.ffmpeg, ["-v", "error", "-nostdin", "-i", path, "-map", "0:v:0",
                                                      "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        let width = recording.encoder.width, height = recording.encoder.height
        let frameBytes = width * height * 3
        return DecodedVideo(width: width, height: height, pixels: [UInt8](raw.stdout), frameCount: raw.stdout.count / frameBytes,
                            packetPTS: packets.map(\.pts), timeBaseDenominator: video.timeBase.den)
    }

    static func audio(of recording: ComposedRecording) async throws -> DecodedAudio {
        let path = recording.mediaPlaylist.path
        let streams = try await probeStreams(path)
        guard let audio = streams.first(where: { $0.codecType == "audio" }),
              let video = streams.first(where: { $0.codecType == "video" }) else {
            throw SubprocessError(description: "missing audio or video stream in \(path)")
        }
        let raw = try await runChecked(Paths.ffmpeg, ["-v", "error", "-nostdin", "-i", path, "-map", "0:a:0",
                                                      "-ac", "1", "-ar", "48000", "-f", "f32le", "-"])
        let samples = raw.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let start = Double(audio.startPTS) * Double(audio.timeBase.num) / Double(audio.timeBase.den)
            - Double(video.startPTS) * Double(video.timeBase.num) / Double(video.timeBase.den)
        return DecodedAudio(sampleRate: 48_000, samples: samples, startSeconds: start)
    }
}
