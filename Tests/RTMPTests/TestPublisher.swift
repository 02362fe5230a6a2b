// The client side of a publish, for the session tests and the fuzz corpus: our own
// handshake, chunk encoder and AMF0 commands, the way FFmpeg and OBS send them.
import RTMP
import TestSupport

struct TestPublisher {
    var handshake: RTMPClientHandshake
    var encoder = RTMPChunkEncoder()
    /// Decodes what the server sends back.
    var replies = RTMPChunkDecoder()

    init(variant: RTMPHandshakeVariant = .simple, seed: UInt64 = 1) {
        handshake = RTMPClientHandshake(variant: variant, hmacSHA256: testHMACSHA256, random: seededRandomFill(seed))
    }

    // MARK: Commands (each returns chunk-stream bytes)

    mutating func command(_ values: [AMF0Value], streamID: UInt32 = 0, chunkStreamID: UInt32 = 3) -> [UInt8] {
        encoder.encode(RTMPMessage(chunkStreamID: chunkStreamID, messageStreamID: streamID,
                                   typeID: RTMPMessage.TypeID.commandAMF0, timestamp: 0,
                                   payload: AMF0Encoder.encode(values)))
    }

    mutating func connect(app: String = "live", tcUrl: String = "rtmp://127.0.0.1:1935/live",
                          objectEncoding: Double? = nil, transactionID: Double = 1) -> [UInt8] {
        var properties = [AMF0Property("app", .string(app)), AMF0Property("type", .string("nonprivate")),
                          AMF0Property("flashVer", .string("FMLE/3.0 (compatible; Lavf60.16.100)")),
                          AMF0Property("tcUrl", .string(tcUrl))]
        if let objectEncoding { properties.append(AMF0Property("objectEncoding", .number(objectEncoding))) }
        return command([.string("connect"), .number(transactionID), .object(properties)])
    }

    mutating func releaseStream(_ name: String, transactionID: Double = 2) -> [UInt8] {
        command([.string("releaseStream"), .number(transactionID), .null, .string(name)])
    }

    mutating func fcPublish(_ name: String, transactionID: Double = 3) -> [UInt8] {
        command([.string("FCPublish"), .number(transactionID), .null, .string(name)])
    }

    mutating func createStream(transactionID: Double = 4) -> [UInt8] {
        command([.string("createStream"), .number(transactionID), .null])
    }

    mutating func publish(_ name: String, type: String = "live", streamID: UInt32 = 1, transactionID: Double = 5) -> [UInt8] {
        command([.string("publish"), .number(transactionID), .null, .string(name), .string(type)],
                streamID: streamID, chunkStreamID: 4)
    }

    mutating func fcUnpublish(_ name: String, transactionID: Double = 6) -> [UInt8] {
        command([.string("FCUnpublish"), .number(transactionID), .null, .string(name)])
    }

    mutating func deleteStream(_ streamID: UInt32, transactionID: Double = 7) -> [UInt8] {
        command([.string("deleteStream"), .number(transactionID), .null, .number(Double(streamID))])
    }

    mutating func setChunkSize(_ size: UInt32) -> [UInt8] {
        var payload: [UInt8] = []
        for shift in [24, 16, 8, 0] { payload.append(UInt8(truncatingIfNeeded: size >> UInt32(shift))) }
        return encoder.encode(RTMPMessage(chunkStreamID: 2, messageStreamID: 0, typeID: RTMPMessage.TypeID.setChunkSize,
                                          timestamp: 0, payload: payload))
    }

    mutating func metadata(_ properties: [AMF0Property], streamID: UInt32 = 1) -> [UInt8] {
        encoder.encode(RTMPMessage(chunkStreamID: 4, messageStreamID: streamID, typeID: RTMPMessage.TypeID.dataAMF0, timestamp: 0,
                                   payload: AMF0Encoder.encode([.string("@setDataFrame"), .string("onMetaData"), .ecmaArray(properties)])))
    }

    mutating func audio(_ payload: [UInt8], timestamp: UInt32, streamID: UInt32 = 1) -> [UInt8] {
        encoder.encode(RTMPMessage(chunkStreamID: 4, messageStreamID: streamID, typeID: RTMPMessage.TypeID.audio,
                                   timestamp: timestamp, payload: payload))
    }

    mutating func video(_ payload: [UInt8], timestamp: UInt32, streamID: UInt32 = 1) -> [UInt8] {
        encoder.encode(RTMPMessage(chunkStreamID: 6, messageStreamID: streamID, typeID: RTMPMessage.TypeID.video,
                                   timestamp: timestamp, payload: payload))
    }

    /// Messages in the server's bytes.
    mutating func decodeReplies(_ bytes: [UInt8]) throws -> [RTMPMessage] {
        replies.append(bytes)
        var messages: [RTMPMessage] = []
        while let message = try replies.nextMessage() { messages.append(message) }
        return messages
    }
}

/// The bytes of every `.send` in `actions`, concatenated.
func sentBytes(_ actions: [RTMPSessionAction]) -> [UInt8] {
    actions.flatMap { action -> [UInt8] in
        if case .send(let bytes) = action { return bytes }
        return []
    }
}

/// Commands in a list of messages, decoded.
func commands(in messages: [RTMPMessage]) throws -> [[AMF0Value]] {
    try messages.filter { $0.typeID == RTMPMessage.TypeID.commandAMF0 }.map { try AMF0Decoder.decodeAll($0.payload) }
}

/// Small FLV tag bodies for the conversations.
enum SampleTags {
    /// AVC sequence header with a 64x64 baseline SPS.
    static let avcSequenceHeader: [UInt8] = [0x17, 0x00, 0x00, 0x00, 0x00] + hex("""
        01 42 c0 0a ff e1 00 19 67 42 c0 0a d9 04 26 84 00 00 03 00 04 00 00 03 00 c8 3c 48 99 20 01 00 04 68 cb 8c b2
        """)
    static func avcKeyframe(compositionTime: Int32 = 0) -> [UInt8] {
        let cts = UInt32(bitPattern: compositionTime)
        return [0x17, 0x01, UInt8(truncatingIfNeeded: cts >> 16), UInt8(truncatingIfNeeded: cts >> 8), UInt8(truncatingIfNeeded: cts),
                0x00, 0x00, 0x00, 0x05, 0x65, 0x88, 0x84, 0x00, 0x33]
    }
    static let avcInterframe: [UInt8] = [0x27, 0x01, 0x00, 0x00, 0x21, 0x00, 0x00, 0x00, 0x03, 0x41, 0x9a, 0x02]
    static let aacSequenceHeader: [UInt8] = [0xAF, 0x00, 0x12, 0x10]
    static let aacFrame: [UInt8] = [0xAF, 0x01, 0x21, 0x10, 0x04, 0x60, 0x8c, 0x1c]
}
