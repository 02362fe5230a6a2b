public import MediaCore

// The payloads of RTMP audio (type 8) and video (type 9) messages are FLV tag bodies:
// legacy FLV (codec ID nibbles, AVC/AAC packet types) or Enhanced RTMP (FourCC codecs,
// signalled by the top bit of the first byte). This turns them into codec-level packets;
// codecs we cannot decode come back as `.unsupported` with a reason, never as an error.

public enum FLVVideoCodec: String, Equatable, Sendable {
    case avc, hevc, av1, vp9
}

public enum FLVAudioCodec: String, Equatable, Sendable {
    case aac, mp3
}

/// One audio or video message, parsed.
public enum FLVMediaPacket: Equatable, Sendable {
    /// Decoder configuration: AVCDecoderConfigurationRecord, HEVCDecoderConfigurationRecord,
    /// AV1CodecConfigurationRecord or VPCodecConfigurationRecord, as sent.
    case videoConfig(codec: FLVVideoCodec, record: [UInt8])
    /// Coded video (length-prefixed NAL units for AVC/HEVC, OBUs for AV1, a frame for VP9).
    /// Presentation time = message timestamp + `compositionTimeMs`.
    case videoFrame(codec: FLVVideoCodec, isKeyframe: Bool, compositionTimeMs: Int32, data: [UInt8])
    case videoEndOfSequence(codec: FLVVideoCodec)
    /// AAC AudioSpecificConfig.
    case audioConfig(codec: FLVAudioCodec, config: [UInt8])
    /// One audio frame. `sampleRate`/`channels` come from the legacy FLV flags for MP3; for
    /// AAC they are nil (the AudioSpecificConfig is authoritative).
    case audioFrame(codec: FLVAudioCodec, data: [UInt8], sampleRate: Int?, channels: Int?)
    /// An E-RTMP v2 multitrack video message: each track's packet (a setup, a frame, an end
    /// of sequence), in the order sent. A plain video message is track 0.
    case multitrackVideo([FLVTrackPacket])
    /// Carries no media: command frames, E-RTMP metadata, silence, end of audio sequence.
    case ignored(String)
    /// Media we cannot decode; the reason names the codec or feature.
    case unsupported(String)
}

/// One track's part of a multitrack video message.
public struct FLVTrackPacket: Equatable, Sendable {
    public var track: UInt8
    public var packet: FLVMediaPacket

    public init(track: UInt8, packet: FLVMediaPacket) {
        self.track = track
        self.packet = packet
    }
}

/// A payload too short for its own headers, or a malformed configuration record.
public enum FLVMediaError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(String)
    case malformedRecord(String)

    public var description: String {
        switch self {
        case .truncated(let what): return "FLV payload truncated: \(what)"
        case .malformedRecord(let what): return "malformed record: \(what)"
        }
    }
}

extension FLVMediaError {
    init(_ error: BitstreamError) {
        switch error {
        case .truncated(let what): self = .truncated(what)
        case .malformed(let what): self = .malformedRecord(what)
        }
    }
}

extension FLVMediaPacket {
    private enum LegacyVideoCodecID {
        static let avc: UInt8 = 7
        static let names: [UInt8: String] = [
            1: "JPEG", 2: "Sorenson H.263", 3: "Screen video", 4: "On2 VP6", 5: "On2 VP6 with alpha",
            6: "Screen video v2", 12: "HEVC (non-standard codec ID 12)", 13: "AV1 (non-standard codec ID 13)",
        ]
    }

    private enum VideoFrameType {
        static let keyframe: UInt8 = 1
        static let command: UInt8 = 5
    }

    private enum VideoPacketType {
        static let sequenceStart: UInt8 = 0
        static let codedFrames: UInt8 = 1
        static let sequenceEnd: UInt8 = 2
        static let codedFramesX: UInt8 = 3
        static let metadata: UInt8 = 4
        static let mpeg2TSSequenceStart: UInt8 = 5
        static let multitrack: UInt8 = 6
        static let modEx: UInt8 = 7
    }

    private enum SoundFormat {
        static let mp3: UInt8 = 2
        static let exHeader: UInt8 = 9
        static let aac: UInt8 = 10
        static let names: [UInt8: String] = [
            0: "linear PCM (platform endian)", 1: "ADPCM", 3: "linear PCM (little endian)",
            4: "Nellymoser 16 kHz mono", 5: "Nellymoser 8 kHz mono", 6: "Nellymoser", 7: "G.711 A-law",
            8: "G.711 mu-law", 11: "Speex", 14: "MP3 8 kHz", 15: "device-specific sound",
        ]
    }

    private enum AudioPacketType {
        static let sequenceStart: UInt8 = 0
        static let codedFrames: UInt8 = 1
        static let sequenceEnd: UInt8 = 2
        static let multichannelConfig: UInt8 = 4
        static let multitrack: UInt8 = 5
        static let modEx: UInt8 = 7
    }

    /// Parses the payload of a video message (type 9).
    public static func parseVideo(_ payload: [UInt8]) throws(FLVMediaError) -> FLVMediaPacket {
        var reader = ByteReader(payload)
        guard let first = reader.readUInt8() else { return .ignored("empty video message") }
        if first & 0x80 != 0 {
            return try parseEnhancedVideo(first: first, reader: &reader)
        }
        let frameType = first >> 4
        let codecID = first & 0x0F
        if frameType == VideoFrameType.command {
            return .ignored("video command frame")
        }
        guard codecID == LegacyVideoCodecID.avc else {
            let name = LegacyVideoCodecID.names[codecID] ?? "unknown"
            return .unsupported("legacy video codec ID \(codecID) (\(name))")
        }
        guard let packetType = reader.readUInt8(), let compositionTime = reader.readInt24() else {
            throw .truncated("AVC video header")
        }
        switch packetType {
        case 0:
            return .videoConfig(codec: .avc, record: reader.readRemaining())
        case 1:
            return .videoFrame(codec: .avc, isKeyframe: frameType == VideoFrameType.keyframe,
                               compositionTimeMs: compositionTime, data: reader.readRemaining())
        case 2:
            return .videoEndOfSequence(codec: .avc)
        default:
            return .unsupported("AVC packet type \(packetType)")
        }
    }

    private static func parseEnhancedVideo(first: UInt8, reader: inout ByteReader) throws(FLVMediaError) -> FLVMediaPacket {
        let frameType = (first >> 4) & 0x07
        let packetType = first & 0x0F
        switch packetType {
        case VideoPacketType.modEx:
            return .unsupported("E-RTMP v2 ModEx video packet")
        case VideoPacketType.multitrack:
            if frameType == VideoFrameType.command { return .ignored("video command frame") }
            return try parseMultitrackVideo(frameType: frameType, reader: &reader)
        default:
            break
        }
        if frameType == VideoFrameType.command, packetType != VideoPacketType.metadata {
            return .ignored("video command frame")
        }
        guard let fourCC = reader.readBytes(4) else { throw .truncated("video FourCC") }
        return try enhancedVideo(fourCC: fourCC, packetType: packetType, frameType: frameType, reader: &reader)
    }

    private enum AvMultitrackType {
        static let oneTrack: UInt8 = 0
        static let manyTracks: UInt8 = 1
        static let manyTracksManyCodecs: UInt8 = 2
    }

    /// More tracks than any encoder sends in one message (OBS sends up to 5 renditions).
    public static let maxTracksPerMessage = 16

    /// E-RTMP v2 multitrack: the tracks' own packet type and (unless each track names its
    /// own) FourCC, then each track's ID, its size (unless it is the only one) and its body.
    private static func parseMultitrackVideo(frameType: UInt8, reader: inout ByteReader) throws(FLVMediaError) -> FLVMediaPacket {
        guard let types = reader.readUInt8() else { throw .truncated("multitrack type") }
        let multitrackType = types >> 4, packetType = types & 0x0F
        guard multitrackType <= AvMultitrackType.manyTracksManyCodecs else {
            return .unsupported("multitrack type \(multitrackType)")
        }
        guard packetType != VideoPacketType.multitrack, packetType != VideoPacketType.modEx else {
            return .unsupported("video packet type \(packetType) inside a multitrack message")
        }
        var shared: [UInt8]?
        if multitrackType != AvMultitrackType.manyTracksManyCodecs {
            guard let fourCC = reader.readBytes(4) else { throw .truncated("multitrack FourCC") }
            shared = fourCC
        }
        var tracks: [FLVTrackPacket] = []
        repeat {
            let fourCC: [UInt8]
            if let shared {
                fourCC = shared
            } else {
                guard let own = reader.readBytes(4) else { throw .truncated("track FourCC") }
                fourCC = own
            }
            guard let track = reader.readUInt8() else { throw .truncated("track ID") }
            var body: ByteReader
            if multitrackType == AvMultitrackType.oneTrack {
                body = ByteReader(reader.readRemaining())
            } else {
                guard let size = reader.readUInt24(), let bytes = reader.readBytes(Int(size)) else {
                    throw .truncated("track \(track) body")
                }
                body = ByteReader(bytes)
            }
            guard tracks.count < maxTracksPerMessage else {
                return .unsupported("more than \(maxTracksPerMessage) tracks in one video message")
            }
            tracks.append(FLVTrackPacket(track: track, packet: try enhancedVideo(fourCC: fourCC, packetType: packetType,
                                                                                 frameType: frameType, reader: &body)))
        } while multitrackType != AvMultitrackType.oneTrack && !reader.isAtEnd
        return .multitrackVideo(tracks)
    }

    /// An enhanced video body after its FourCC.
    private static func enhancedVideo(fourCC: [UInt8], packetType: UInt8, frameType: UInt8,
                                      reader: inout ByteReader) throws(FLVMediaError) -> FLVMediaPacket {
        let codec: FLVVideoCodec
        switch fourCC {
        case Array("avc1".utf8): codec = .avc
        case Array("hvc1".utf8): codec = .hevc
        case Array("av01".utf8): codec = .av1
        case Array("vp09".utf8): codec = .vp9
        default: return .unsupported("video FourCC \(describeFourCC(fourCC))")
        }
        let isKeyframe = frameType == VideoFrameType.keyframe
        switch packetType {
        case VideoPacketType.sequenceStart:
            return .videoConfig(codec: codec, record: reader.readRemaining())
        case VideoPacketType.codedFrames:
            var compositionTime: Int32 = 0
            // Only the codecs with B-frames in their FLV mapping carry a composition time.
            if codec == .avc || codec == .hevc {
                guard let value = reader.readInt24() else { throw .truncated("composition time") }
                compositionTime = value
            }
            return .videoFrame(codec: codec, isKeyframe: isKeyframe, compositionTimeMs: compositionTime,
                               data: reader.readRemaining())
        case VideoPacketType.codedFramesX:
            return .videoFrame(codec: codec, isKeyframe: isKeyframe, compositionTimeMs: 0, data: reader.readRemaining())
        case VideoPacketType.sequenceEnd:
            return .videoEndOfSequence(codec: codec)
        case VideoPacketType.metadata:
            return .ignored("video metadata")
        case VideoPacketType.mpeg2TSSequenceStart:
            return .unsupported("MPEG-2 TS sequence start (\(codec.rawValue))")
        default:
            return .unsupported("video packet type \(packetType)")
        }
    }

    /// Parses the payload of an audio message (type 8).
    public static func parseAudio(_ payload: [UInt8]) throws(FLVMediaError) -> FLVMediaPacket {
        var reader = ByteReader(payload)
        // An empty audio message is the (undocumented) silence signal.
        guard let first = reader.readUInt8() else { return .ignored("audio silence") }
        let soundFormat = first >> 4
        switch soundFormat {
        case SoundFormat.aac:
            guard let packetType = reader.readUInt8() else { throw .truncated("AAC packet type") }
            switch packetType {
            case 0: return .audioConfig(codec: .aac, config: reader.readRemaining())
            case 1: return .audioFrame(codec: .aac, data: reader.readRemaining(), sampleRate: nil, channels: nil)
            default: return .unsupported("AAC packet type \(packetType)")
            }
        case SoundFormat.mp3:
            guard !reader.isAtEnd else { throw .truncated("MP3 frame") }
            let sampleRates = [5512, 11025, 22050, 44100]
            return .audioFrame(codec: .mp3, data: reader.readRemaining(),
                               sampleRate: sampleRates[Int((first >> 2) & 0x03)], channels: first & 0x01 == 1 ? 2 : 1)
        case SoundFormat.exHeader:
            return try parseEnhancedAudio(packetType: first & 0x0F, reader: &reader)
        default:
            return .unsupported("audio format \(soundFormat) (\(SoundFormat.names[soundFormat] ?? "unknown"))")
        }
    }

    private static func parseEnhancedAudio(packetType: UInt8, reader: inout ByteReader) throws(FLVMediaError) -> FLVMediaPacket {
        switch packetType {
        case AudioPacketType.modEx: return .unsupported("E-RTMP v2 ModEx audio packet")
        case AudioPacketType.multitrack: return .unsupported("E-RTMP v2 multitrack audio")
        default: break
        }
        guard let fourCC = reader.readBytes(4) else { throw .truncated("audio FourCC") }
        let codec: FLVAudioCodec
        switch fourCC {
        case Array("mp4a".utf8): codec = .aac
        case Array(".mp3".utf8): codec = .mp3
        default: return .unsupported("audio FourCC \(describeFourCC(fourCC))")
        }
        switch packetType {
        case AudioPacketType.sequenceStart:
            return codec == .aac ? .audioConfig(codec: .aac, config: reader.readRemaining()) : .ignored("MP3 sequence start")
        case AudioPacketType.codedFrames:
            return .audioFrame(codec: codec, data: reader.readRemaining(), sampleRate: nil, channels: nil)
        case AudioPacketType.sequenceEnd:
            return .ignored("audio sequence end")
        case AudioPacketType.multichannelConfig:
            return .ignored("audio multichannel configuration")
        default:
            return .unsupported("audio packet type \(packetType)")
        }
    }

    private static func describeFourCC(_ bytes: [UInt8]) -> String {
        if bytes.allSatisfy({ (0x20...0x7E).contains($0) }), let text = String(validating: bytes, as: UTF8.self) {
            return "'\(text)'"
        }
        return "0x" + bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

// MARK: - Codec configuration helpers

/// The parts of an AVCDecoderConfigurationRecord (ISO 14496-15) a server needs.
public struct AVCDecoderConfigurationRecord: Equatable, Sendable {
    public var profileIndication: UInt8
    public var profileCompatibility: UInt8
    public var levelIndication: UInt8
    /// Bytes of the length prefix of each NAL unit in frames (1, 2 or 4).
    public var nalUnitLengthSize: Int
    public var sequenceParameterSets: [[UInt8]]
    public var pictureParameterSets: [[UInt8]]

    public init(parsing record: [UInt8]) throws(FLVMediaError) {
        var reader = ByteReader(record)
        guard let version = reader.readUInt8(), let profile = reader.readUInt8(),
              let compatibility = reader.readUInt8(), let level = reader.readUInt8(),
              let lengthByte = reader.readUInt8(), let spsCountByte = reader.readUInt8()
        else { throw .truncated("AVCDecoderConfigurationRecord header") }
        guard version == 1 else { throw .malformedRecord("AVCDecoderConfigurationRecord version \(version)") }
        profileIndication = profile
        profileCompatibility = compatibility
        levelIndication = level
        nalUnitLengthSize = Int(lengthByte & 0x03) + 1
        sequenceParameterSets = try Self.readParameterSets(count: Int(spsCountByte & 0x1F), from: &reader, name: "SPS")
        guard let ppsCount = reader.readUInt8() else { throw .truncated("PPS count") }
        pictureParameterSets = try Self.readParameterSets(count: Int(ppsCount), from: &reader, name: "PPS")
    }

    private static func readParameterSets(count: Int, from reader: inout ByteReader, name: String) throws(FLVMediaError) -> [[UInt8]] {
        var sets: [[UInt8]] = []
        for _ in 0..<count {
            guard let length = reader.readUInt16(), let set = reader.readBytes(Int(length)) else {
                throw .truncated(name)
            }
            sets.append(set)
        }
        return sets
    }

    /// The first SPS, parsed.
    public func firstSequenceParameterSet() throws(FLVMediaError) -> AVCSequenceParameterSet {
        guard let sps = sequenceParameterSets.first else { throw .malformedRecord("no SPS in the record") }
        do {
            return try AVCSequenceParameterSet(nalUnit: sps)
        } catch {
            throw FLVMediaError(error)
        }
    }
}

/// Sample rate and channels from an AAC AudioSpecificConfig (ISO 14496-3 1.6.2.1).
public struct AACAudioSpecificConfig: Equatable, Sendable {
    /// The core audio object type: 2 for AAC-LC, also under HE-AAC signalling.
    public var objectType: Int
    /// The output rate: the SBR rate when SBR is signalled explicitly.
    public var sampleRate: Int
    /// nil when the configuration defers to a program config element (channel config 0).
    public var channels: Int?
    /// Explicit SBR (HE-AAC) or PS (HE-AACv2) signalling.
    public var hasSpectralBandReplication: Bool

    private static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
    private static let channelsByConfiguration: [Int: Int] = [1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 8, 11: 7, 12: 8, 13: 24, 14: 8]

    init(objectType: Int, sampleRate: Int, channels: Int?, hasSpectralBandReplication: Bool) {
        self.objectType = objectType
        self.sampleRate = sampleRate
        self.channels = channels
        self.hasSpectralBandReplication = hasSpectralBandReplication
    }

    public init(parsing config: [UInt8]) throws(FLVMediaError) {
        var bits = BitReader(config)
        do {
            var objectType = try Self.readObjectType(&bits)
            var sampleRate = try Self.readSampleRate(&bits)
            let channelConfiguration = try bits.readBits(4)
            hasSpectralBandReplication = objectType == 5 || objectType == 29
            if hasSpectralBandReplication {
                sampleRate = try Self.readSampleRate(&bits)
                objectType = try Self.readObjectType(&bits)
            }
            self.objectType = objectType
            self.sampleRate = sampleRate
            channels = Self.channelsByConfiguration[channelConfiguration]
        } catch .truncated {
            throw .truncated("AudioSpecificConfig")
        } catch {
            throw FLVMediaError(error)
        }
    }

    private static func readObjectType(_ bits: inout BitReader) throws(BitstreamError) -> Int {
        let objectType = try bits.readBits(5)
        return objectType == 31 ? 32 + (try bits.readBits(6)) : objectType
    }

    private static func readSampleRate(_ bits: inout BitReader) throws(BitstreamError) -> Int {
        let index = try bits.readBits(4)
        if index == 15 {
            return try bits.readBits(24)
        }
        guard index < sampleRates.count else { throw .malformed("AAC sampling frequency index \(index)") }
        return sampleRates[index]
    }
}
