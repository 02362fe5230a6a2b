// The RTMP core on its own: every input goes through a whole server session (accepting its
// publish, parsing its media as the NIO shell would) and through each parser on its own.
// Traps, and memory beyond the configured limits, are findings.

import MediaCore
import RTMP

/// Small limits so that the bounds are reached by short inputs.
let limits = RTMPSessionLimits(
    chunk: RTMPChunkLimits(maxChunkSize: 8192, maxMessageLength: 32_768, maxAssemblingChunkStreams: 8,
                           maxKnownChunkStreams: 16, maxBufferedPayloadBytes: 65_536),
    amf: AMF0Limits(maxNestingDepth: 8, maxValueCount: 256, maxStringBytes: 4096, maxContainerElements: 64),
    maxPendingMediaBytes: 16_384, maxMessageStreams: 4)

/// Handshake buffer + partial payloads + one chunk header and peek + held media.
let memoryBound = 1537 + 65_536 + 22 + 16_384

/// A keyed FNV-1a stand-in for HMAC-SHA256: the module takes crypto from its owner, and
/// the fuzzer is after parsing bugs, not digests.
let fastHMAC: RTMPHMACSHA256 = { key, data in
    var state: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in key { state = (state ^ UInt64(byte)) &* 0x100_0000_01b3 }
    for byte in data { state = (state ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return (0..<32).map { index in UInt8(truncatingIfNeeded: state >> UInt64(index % 8 * 8) &+ UInt64(index)) }
}

private let zeroRandom: RTMPRandomFill = { buffer in
    for index in buffer.indices { buffer[index] = UInt8(truncatingIfNeeded: index) }
}

enum RTMPParsersTarget {
    static func run(_ input: [UInt8]) -> FuzzReach {
        let media = runSession(input)
        runParsers(input)
        return FuzzReach(mediaPackets: media)
    }
}

private func runSession(_ input: [UInt8]) -> Int {
    var media = 0
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
        for case .media(let message) in actions {
            parseMedia(message)
            media += 1
        }
        FuzzBound(session.bufferedByteCount <= memoryBound, "session holds \(session.bufferedByteCount) bytes")
    }
    return media
}

/// What the NIO shell does with media: parse the tag, and the configuration records.
func parseMedia(_ media: RTMPMediaMessage) {
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
        FuzzBound(decoder.bufferedByteCount <= 65_536 + 22 + input.count, "decoder holds \(decoder.bufferedByteCount) bytes")
    }
}
