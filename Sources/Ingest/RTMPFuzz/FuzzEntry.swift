// libFuzzer entry point for the RTMP core: every input goes through a whole server session
// (accepting its publish, parsing its media as the NIO shell would) and through each parser
// on its own. Traps, and memory beyond the configured limits, are findings.
//
// Build and run (from this package's directory):
//   swift build -c release --product RTMPFuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING
//   mkdir -p /tmp/rtmp-fuzz && .build/release/RTMPFuzz /tmp/rtmp-fuzz Tests/RTMPTests/Corpus \
//       -max_len=65536 -max_total_time=60
// Without -DFUZZING the same file builds a plain executable that replays input files:
//   swift run RTMPFuzz crash-<hash>

import MediaCore
import RTMP

/// Small limits so that the bounds are reached by short inputs.
private let limits = RTMPSessionLimits(
    chunk: RTMPChunkLimits(maxChunkSize: 8192, maxMessageLength: 32_768, maxAssemblingChunkStreams: 8,
                           maxKnownChunkStreams: 16, maxBufferedPayloadBytes: 65_536),
    amf: AMF0Limits(maxNestingDepth: 8, maxValueCount: 256, maxStringBytes: 4096, maxContainerElements: 64),
    maxPendingMediaBytes: 16_384, maxMessageStreams: 4)

/// Handshake buffer + partial payloads + one chunk header and peek + held media.
private let memoryBound = 1537 + 65_536 + 22 + 16_384

/// A keyed FNV-1a stand-in for HMAC-SHA256: the module takes crypto from its owner, and
/// the fuzzer is after parsing bugs, not digests.
private let fastHMAC: RTMPHMACSHA256 = { key, data in
    var state: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in key { state = (state ^ UInt64(byte)) &* 0x100_0000_01b3 }
    for byte in data { state = (state ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return (0..<32).map { index in UInt8(truncatingIfNeeded: state >> UInt64(index % 8 * 8) &+ UInt64(index)) }
}

private let zeroRandom: RTMPRandomFill = { buffer in
    for index in buffer.indices { buffer[index] = UInt8(truncatingIfNeeded: index) }
}

func fuzzOne(_ input: [UInt8]) {
    runSession(input)
    runParsers(input)
}

private func runSession(_ input: [UInt8]) {
    var session = RTMPServerSession(limits: limits, hmacSHA256: fastHMAC, random: zeroRandom)
    // Split sizes vary with the input so that reads end in different places.
    let pieceSize = 1 + (input.count &* 2_654_435_761) % 1500
    var offset = 0
    while offset < input.count, !session.isClosed {
        let end = min(input.count, offset + pieceSize)
        var actions = session.receive(input[offset..<end])
        offset = end
        for case .publishRequested(let request) in actions {
            actions += request.streamKey.utf8.count % 5 == 4
                ? session.rejectPublish(code: "NetStream.Publish.BadName", description: "rejected")
                : session.acceptPublish()
        }
        for case .media(let media) in actions {
            parseMedia(media)
        }
        precondition(session.bufferedByteCount <= memoryBound, "session holds \(session.bufferedByteCount) bytes")
    }
}

private func parseMedia(_ media: RTMPMediaMessage) {
    let packet = try? (media.kind == .video ? FLVMediaPacket.parseVideo(media.payload) : FLVMediaPacket.parseAudio(media.payload))
    switch packet {
    case .videoConfig(.avc, let record)?:
        _ = try? AVCDecoderConfigurationRecord(parsing: record).firstSequenceParameterSet()
    case .audioConfig(.aac, let config)?:
        _ = try? AACAudioSpecificConfig(parsing: config)
    default:
        break
    }
}

private func runParsers(_ input: [UInt8]) {
    _ = try? AMF0Decoder.decodeAll(input, limits: limits.amf)
    _ = try? FLVMediaPacket.parseVideo(input)
    _ = try? FLVMediaPacket.parseAudio(input)
    _ = try? AVCDecoderConfigurationRecord(parsing: input).firstSequenceParameterSet()
    _ = try? AVCSequenceParameterSet(nalUnit: input)
    _ = try? AACAudioSpecificConfig(parsing: input)
    // The chunk decoder alone, on what follows a handshake when there is one.
    var decoder = RTMPChunkDecoder(limits: limits.chunk)
    decoder.append(input.count > 3073 ? Array(input[3073...]) : input)
    while let message = try? decoder.nextMessage() {
        _ = message
        precondition(decoder.bufferedByteCount <= 65_536 + 22 + input.count)
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    fuzzOne(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// libFuzzer's driver, for the entry point below.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>,
                     _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// SwiftPM links every executable with `main` aliased to `<target>_main`; providing it here
/// (instead of libFuzzer's own `main`) hands control to libFuzzer's driver.
@_cdecl("RTMPFuzz_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments, fuzzerTestOneInput)
}
#else
import Foundation

/// Replays the files named on the command line (crash reproducers, corpus files).
@main
enum ReplayInputs {
    static func main() {
        for path in CommandLine.arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                print("cannot read \(path)")
                continue
            }
            fuzzOne([UInt8](data))
            print("\(path): \(data.count) bytes, no finding")
        }
    }
}
#endif
