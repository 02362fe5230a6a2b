// The server session: a whole scripted publish with the exact replies, the owner's
// decisions, the protocol errors, acknowledgements, pings, and FFmpeg's real recording.
@testable import RTMP
import TestSupport
import Testing
import MediaCore

/// A session and our publisher, already past the handshake.
struct Conversation {
    var session: RTMPServerSession
    var publisher: TestPublisher

    init(limits: RTMPSessionLimits = RTMPSessionLimits(), variant: RTMPHandshakeVariant = .simple) throws {
        session = RTMPServerSession(limits: limits, hmacSHA256: testHMACSHA256, random: seededRandomFill(3))
        publisher = TestPublisher(variant: variant)
        let serverHello = sentBytes(session.receive(publisher.handshake.start()))
        #expect(serverHello.count == 3073)
        var c2: [UInt8] = []
        for action in try publisher.handshake.receive(serverHello) {
            if case .send(let bytes) = action { c2 = bytes }
        }
        #expect(session.receive(c2) == [])
        #expect(session.isHandshakeComplete)
    }

    /// Feeds bytes; returns the non-send actions and the messages the server sent.
    mutating func exchange(_ bytes: [UInt8]) throws -> (actions: [RTMPSessionAction], replies: [RTMPMessage]) {
        let actions = session.receive(bytes)
        return (actions.filter { if case .send = $0 { return false } else { return true } },
                try publisher.decodeReplies(sentBytes(actions)))
    }

    mutating func connectAndPublish(key: String = "key") throws {
        _ = try exchange(publisher.connect())
        _ = try exchange(publisher.createStream())
        _ = try exchange(publisher.publish(key))
    }
}

func status(_ command: [AMF0Value]) -> (level: String?, code: String?) {
    (command.last?["level"]?.stringValue, command.last?["code"]?.stringValue)
}

struct SessionConversationTests {
    @Test("a full publish: connect, releaseStream, FCPublish, createStream, publish, media, FCUnpublish, deleteStream")
    func fullPublish() throws {
        var talk = try Conversation()
        // connect arrives in the same read as nothing else; the replies are exact.
        let connectActions = talk.session.receive(talk.publisher.connect())
        let connectBytes = sentBytes(connectActions)
        #expect(connectActions.count == 1, "one write for all connect replies")
        #expect(Array(connectBytes.prefix(16 + 17 + 16)) == hex("""
            02 000000 000004 05 00000000 002625a0
            02 000000 000005 06 00000000 002625a0 02
            02 000000 000004 01 00000000 00001000
            """))
        let connectReplies = try talk.publisher.decodeReplies(connectBytes)
        #expect(connectReplies.map(\.typeID) == [5, 6, 1, 20])
        #expect(connectReplies[3].chunkStreamID == 3 && connectReplies[3].messageStreamID == 0)
        #expect(try AMF0Decoder.decodeAll(connectReplies[3].payload) == [
            .string("_result"), .number(1),
            .object([AMF0Property("fmsVer", .string("FMS/3,0,1,123")), AMF0Property("capabilities", .number(31)),
                     AMF0Property("mode", .number(1))]),
            .object([AMF0Property("level", .string("status")), AMF0Property("code", .string("NetConnection.Connect.Success")),
                     AMF0Property("description", .string("Connection succeeded.")), AMF0Property("objectEncoding", .number(0))]),
        ])

        var (actions, replies) = try talk.exchange(talk.publisher.releaseStream("key?x=1"))
        #expect(actions.isEmpty)
        #expect(try commands(in: replies) == [[.string("_result"), .number(2), .null, .undefined]])

        (actions, replies) = try talk.exchange(talk.publisher.fcPublish("key?x=1"))
        #expect(try commands(in: replies) == [
            [.string("onFCPublish"), .number(0), .null,
             .object([AMF0Property("code", .string("NetStream.Publish.Start")), AMF0Property("description", .string("key?x=1"))])],
            [.string("_result"), .number(3), .null, .undefined],
        ])

        (actions, replies) = try talk.exchange(talk.publisher.createStream())
        #expect(try commands(in: replies) == [[.string("_result"), .number(4), .null, .number(1)]])

        (actions, replies) = try talk.exchange(talk.publisher.publish("key?x=1"))
        #expect(replies.isEmpty, "nothing is said before the owner decides")
        #expect(actions == [.publishRequested(RTMPPublishRequest(app: "live", tcUrl: "rtmp://127.0.0.1:1935/live", streamKey: "key?x=1",
                                                                 publishingType: .live, messageStreamID: 1))])
        #expect(!talk.session.isPublishing)

        // An impatient publisher's metadata and sequence headers are held, not lost.
        let early = talk.publisher.metadata([AMF0Property("width", .number(64))])
            + talk.publisher.video(SampleTags.avcSequenceHeader, timestamp: 0)
            + talk.publisher.audio(SampleTags.aacSequenceHeader, timestamp: 0)
        (actions, replies) = try talk.exchange(early)
        #expect(actions.isEmpty)
        #expect(talk.session.bufferedByteCount >= SampleTags.avcSequenceHeader.count)

        let accepted = talk.session.acceptPublish()
        #expect(talk.session.isPublishing)
        let acceptReplies = try talk.publisher.decodeReplies(sentBytes(accepted))
        #expect(acceptReplies.map(\.typeID) == [4, 20])
        #expect(acceptReplies[0].payload == hex("0000 00000001"), "StreamBegin for stream 1")
        #expect(acceptReplies[1].messageStreamID == 1 && acceptReplies[1].chunkStreamID == 5)
        #expect(try AMF0Decoder.decodeAll(acceptReplies[1].payload) == [
            .string("onStatus"), .number(5), .null,
            .object([AMF0Property("level", .string("status")), AMF0Property("code", .string("NetStream.Publish.Start")),
                     AMF0Property("description", .string("Start publishing")), AMF0Property("details", .string("key?x=1"))]),
        ])
        #expect(accepted.dropFirst() == [
            .metadata([AMF0Property("width", .number(64))]),
            .media(RTMPMediaMessage(kind: .video, timestamp: 0, payload: SampleTags.avcSequenceHeader)),
            .media(RTMPMediaMessage(kind: .audio, timestamp: 0, payload: SampleTags.aacSequenceHeader)),
        ])
        #expect(talk.session.bufferedByteCount == 0)
        #expect(talk.session.acceptPublish() == [], "a second decision changes nothing")

        let media = talk.publisher.video(SampleTags.avcKeyframe(compositionTime: 66), timestamp: 0)
            + talk.publisher.audio(SampleTags.aacFrame, timestamp: 23)
            + talk.publisher.video(SampleTags.avcInterframe, timestamp: 33)
        (actions, replies) = try talk.exchange(media)
        #expect(replies.isEmpty)
        #expect(actions == [
            .media(RTMPMediaMessage(kind: .video, timestamp: 0, payload: SampleTags.avcKeyframe(compositionTime: 66))),
            .media(RTMPMediaMessage(kind: .audio, timestamp: 23, payload: SampleTags.aacFrame)),
            .media(RTMPMediaMessage(kind: .video, timestamp: 33, payload: SampleTags.avcInterframe)),
        ])

        (actions, replies) = try talk.exchange(talk.publisher.fcUnpublish("key?x=1"))
        #expect(actions == [.unpublished])
        #expect(try commands(in: replies) == [[.string("_result"), .number(6), .null, .undefined]])
        #expect(!talk.session.isPublishing)

        (actions, replies) = try talk.exchange(talk.publisher.deleteStream(1) + talk.publisher.audio(SampleTags.aacFrame, timestamp: 50))
        #expect(actions == [.ignored("command deleteStream after unpublish")])
        #expect(replies.isEmpty)
        #expect(talk.session.droppedMediaMessages == 1)
        #expect(talk.session.bytesSent > 0 && talk.session.bytesReceived > 3073)
    }

    @Test("deleteStream and closeStream of the publishing stream end the publish; other streams do not")
    func deleteAndCloseStream() throws {
        var talk = try Conversation()
        try talk.connectAndPublish()
        _ = talk.session.acceptPublish()
        #expect(try talk.exchange(talk.publisher.deleteStream(2)).actions == [])
        #expect(try talk.exchange(talk.publisher.deleteStream(1)).actions == [.unpublished])

        var other = try Conversation()
        try other.connectAndPublish()
        _ = other.session.acceptPublish()
        let closeStream = other.publisher.command([.string("closeStream"), .number(0), .null], streamID: 1)
        #expect(try other.exchange(closeStream).actions == [.unpublished])
    }

    @Test("a rejected publish answers onStatus error and closes")
    func rejectPath() throws {
        var talk = try Conversation()
        try talk.connectAndPublish(key: "wrong")
        let actions = talk.session.rejectPublish(code: "NetStream.Publish.BadName", description: "Unknown stream key.")
        #expect(actions.last == .close(.publishRejected(code: "NetStream.Publish.BadName")))
        let replies = try talk.publisher.decodeReplies(sentBytes(actions))
        let command = try AMF0Decoder.decodeAll(replies[0].payload)
        #expect(status(command) == ("error", "NetStream.Publish.BadName"))
        #expect(command.last?["description"]?.stringValue == "Unknown stream key.")
        #expect(talk.session.isClosed)
        #expect(talk.session.receive(talk.publisher.video(SampleTags.avcInterframe, timestamp: 1)) == [])
        #expect(talk.session.acceptPublish() == [])
    }

    @Test("unpublishing before the owner decides withdraws the request")
    func withdrawBeforeDecision() throws {
        var talk = try Conversation()
        try talk.connectAndPublish()
        _ = try talk.exchange(talk.publisher.video(SampleTags.avcSequenceHeader, timestamp: 0))
        #expect(try talk.exchange(talk.publisher.fcUnpublish("key")).actions == [.unpublished])
        #expect(talk.session.acceptPublish() == [])
        #expect(talk.session.droppedMediaMessages == 1)
    }

    @Test("play is refused: this server only ingests")
    func playRejected() throws {
        var talk = try Conversation()
        _ = try talk.exchange(talk.publisher.connect())
        _ = try talk.exchange(talk.publisher.createStream())
        let (actions, replies) = try talk.exchange(talk.publisher.command([.string("play"), .number(0), .null, .string("key")], streamID: 1))
        #expect(actions == [.close(.playNotSupported)])
        #expect(status(try AMF0Decoder.decodeAll(replies[0].payload)) == ("error", "NetStream.Play.Failed"))
        #expect(replies[0].messageStreamID == 1)
    }

    @Test("ping requests get ping responses with the same timestamp")
    func ping() throws {
        var talk = try Conversation()
        let ping = talk.publisher.encoder.encode(RTMPMessage(chunkStreamID: 2, messageStreamID: 0, typeID: 4, timestamp: 0, payload: hex("0006 12345678")))
        let (actions, replies) = try talk.exchange(ping)
        #expect(actions.isEmpty)
        #expect(replies == [RTMPMessage(chunkStreamID: 2, messageStreamID: 0, typeID: 4, timestamp: 0, payload: hex("0007 12345678"))])
        let setBuffer = talk.publisher.encoder.encode(RTMPMessage(chunkStreamID: 2, messageStreamID: 0, typeID: 4, timestamp: 0, payload: hex("0003 00000001 00000bb8")))
        #expect(try talk.exchange(setBuffer) == ([], []))
        let unknown = talk.publisher.encoder.encode(RTMPMessage(chunkStreamID: 2, messageStreamID: 0, typeID: 4, timestamp: 0, payload: hex("0020")))
        #expect(try talk.exchange(unknown).actions == [.ignored("user control event 32")])
    }

    @Test("acknowledgements go out each time the peer's window is crossed, numbered by bytes received")
    func acknowledgements() throws {
        var talk = try Conversation()
        try talk.connectAndPublish()
        _ = talk.session.acceptPublish()
        let window = talk.publisher.encoder.encode(RTMPMessage(chunkStreamID: 2, messageStreamID: 0, typeID: 5, timestamp: 0, payload: hex("00002710")))
        _ = try talk.exchange(window)  // 10 000 bytes
        var acknowledged: [UInt32] = []
        var previousReceived = talk.session.bytesReceived
        var lastAck: UInt64 = 0
        for index in 0..<40 {
            let frame = talk.publisher.video([0x27, 1, 0, 0, 0] + payload(1000, seed: UInt8(index)), timestamp: UInt32(index * 33))
            let (_, replies) = try talk.exchange(frame)
            for reply in replies {
                #expect(reply.typeID == 3 && reply.chunkStreamID == 2)
                var reader = ByteReader(reply.payload)
                let sequence = reader.readUInt32() ?? 0
                #expect(UInt64(sequence) == talk.session.bytesReceived)
                #expect(talk.session.bytesReceived - lastAck >= 10_000)
                #expect(previousReceived - lastAck < 10_000, "not late: the previous read was still inside the window")
                lastAck = talk.session.bytesReceived
                acknowledged.append(sequence)
            }
            previousReceived = talk.session.bytesReceived
        }
        #expect(acknowledged.count == 4)  // ≈ 3 400 + 40 × 1 024 bytes
    }

    @Test("without a window from the peer, our own 2 500 000 bytes apply")
    func defaultWindow() throws {
        var talk = try Conversation()
        try talk.connectAndPublish()
        _ = talk.session.acceptPublish()
        var acks = 0
        for index in 0..<26 {
            let frame = talk.publisher.video([0x27, 1, 0, 0, 0] + payload(100_000, seed: UInt8(index)), timestamp: UInt32(index))
            acks += try talk.exchange(frame).replies.filter { $0.typeID == 3 }.count
            if talk.session.bytesReceived < 2_500_000 { #expect(acks == 0) }
        }
        #expect(acks == 1)
    }

    @Test("connect over an AMF3 command message (type 17) works like AMF0")
    func amf3Command() throws {
        var talk = try Conversation()
        let payload = [0x00] + AMF0Encoder.encode([.string("connect"), .number(1), .object([AMF0Property("app", .string("app"))])])
        let message = talk.publisher.encoder.encode(RTMPMessage(chunkStreamID: 3, messageStreamID: 0, typeID: 17, timestamp: 0, payload: payload))
        let (actions, replies) = try talk.exchange(message)
        #expect(actions.isEmpty)
        #expect(try commands(in: replies).last?.first == .string("_result"))
    }

    @Test("aggregate messages are split into their FLV tags with rebased timestamps")
    func aggregate() throws {
        var talk = try Conversation()
        try talk.connectAndPublish()
        _ = talk.session.acceptPublish()
        func tag(_ type: UInt8, _ timestamp: UInt32, _ body: [UInt8]) -> [UInt8] {
            [type, 0, 0, UInt8(body.count), UInt8(timestamp >> 16 & 0xFF), UInt8(timestamp >> 8 & 0xFF), UInt8(timestamp & 0xFF), UInt8(timestamp >> 24), 0, 0, 0]
                + body + [0, 0, 0, UInt8(11 + body.count)]
        }
        let body = tag(9, 5000, SampleTags.avcInterframe) + tag(8, 5020, SampleTags.aacFrame) + tag(20, 5021, [0])
        let message = talk.publisher.encoder.encode(RTMPMessage(chunkStreamID: 4, messageStreamID: 1, typeID: 22, timestamp: 100, payload: body))
        #expect(try talk.exchange(message).actions == [
            .media(RTMPMediaMessage(kind: .video, timestamp: 100, payload: SampleTags.avcInterframe)),
            .media(RTMPMediaMessage(kind: .audio, timestamp: 120, payload: SampleTags.aacFrame)),
            .ignored("aggregate tag type 20"),
        ])
        let truncated = talk.publisher.encoder.encode(RTMPMessage(chunkStreamID: 4, messageStreamID: 1, typeID: 22, timestamp: 100, payload: Array(body.prefix(30))))
        #expect(try talk.exchange(truncated).actions == [
            .media(RTMPMediaMessage(kind: .video, timestamp: 100, payload: SampleTags.avcInterframe)), .ignored("truncated aggregate message"),
        ])
    }

    @Test("data messages other than onMetaData are ignored, metadata straight to onMetaData too")
    func dataMessages() throws {
        var talk = try Conversation()
        try talk.connectAndPublish()
        _ = talk.session.acceptPublish()
        func data(_ values: [AMF0Value]) -> [UInt8] {
            talk.publisher.encoder.encode(RTMPMessage(chunkStreamID: 4, messageStreamID: 1, typeID: 18, timestamp: 0, payload: AMF0Encoder.encode(values)))
        }
        #expect(try talk.exchange(data([.string("onMetaData"), .object([AMF0Property("fps", .number(30))])])).actions
            == [.metadata([AMF0Property("fps", .number(30))])])
        #expect(try talk.exchange(data([.string("onTextData"), .object([])])).actions == [.ignored("data message onTextData")])
        let broken = talk.publisher.encoder.encode(RTMPMessage(chunkStreamID: 4, messageStreamID: 1, typeID: 18, timestamp: 0, payload: [0x11]))
        #expect(try talk.exchange(broken).actions == [.ignored("malformed data message: unsupported AMF0 marker 0x11")])
    }
}

struct SessionErrorTests {
    @Test("connect asking for AMF3 gets a polite _error and a close")
    func amf3ObjectEncoding() throws {
        var talk = try Conversation()
        let (actions, replies) = try talk.exchange(talk.publisher.connect(objectEncoding: 3))
        #expect(actions == [.close(.unsupportedObjectEncoding(3))])
        let command = try AMF0Decoder.decodeAll(replies[0].payload)
        #expect(command.first == .string("_error") && command[1] == .number(1))
        #expect(status(command) == ("error", "NetConnection.Connect.Rejected"))
    }

    @Test("objectEncoding 0 is echoed")
    func objectEncodingEcho() throws {
        var talk = try Conversation()
        let replies = try talk.exchange(talk.publisher.connect(objectEncoding: 0)).replies
        #expect(try commands(in: replies).last?.last?["objectEncoding"] == .number(0))
    }

    @Test("protocol errors close the session with their reason", arguments: [
        ("publish before connect", 0), ("second connect", 1), ("second publish", 2), ("publish without name", 3),
        ("command without name", 4), ("malformed command", 5), ("too many streams", 6), ("connect without object", 7),
        ("publish after unpublish", 8),
    ])
    func protocolErrors(name: String, scenario: Int) throws {
        var talk = try Conversation(limits: RTMPSessionLimits(maxMessageStreams: 2))
        var bytes: [UInt8]
        let expected: RTMPSessionError
        switch scenario {
        case 0:
            bytes = talk.publisher.publish("key")
            expected = .commandBeforeConnect("publish")
        case 1:
            bytes = talk.publisher.connect() + talk.publisher.connect()
            expected = .duplicateConnect
        case 2:
            try talk.connectAndPublish()
            bytes = talk.publisher.publish("again")
            expected = .duplicatePublish
        case 3:
            bytes = talk.publisher.connect() + talk.publisher.command([.string("publish"), .number(5), .null, .null], streamID: 1)
            expected = .invalidPublishName
        case 4:
            bytes = talk.publisher.command([.number(1)])
            expected = .invalidCommand("command without a name")
        case 5:
            bytes = talk.publisher.encoder.encode(RTMPMessage(chunkStreamID: 3, messageStreamID: 0, typeID: 20, timestamp: 0, payload: hex("02 0010 61")))
            expected = .malformedCommand(.truncated)
        case 6:
            bytes = talk.publisher.connect() + talk.publisher.createStream() + talk.publisher.createStream() + talk.publisher.createStream()
            expected = .tooManyStreams
        case 7:
            bytes = talk.publisher.command([.string("connect"), .number(1), .string("app")])
            expected = .invalidCommand("connect without a command object")
        default:
            try talk.connectAndPublish()
            _ = talk.session.acceptPublish()
            bytes = talk.publisher.fcUnpublish("key") + talk.publisher.publish("key")
            expected = .duplicatePublish
        }
        let actions = try talk.exchange(bytes).actions
        #expect(actions.last == .close(expected), "\(name)")
        #expect(talk.session.isClosed)
    }

    @Test("chunk stream and handshake errors close the session")
    func lowerLayerErrors() throws {
        var talk = try Conversation()
        #expect(try talk.exchange(hex("c9 00")).actions == [.close(.chunkStream(.missingMessageHeader(chunkStreamID: 9)))])

        var session = RTMPServerSession(hmacSHA256: testHMACSHA256, random: seededRandomFill(1))
        #expect(session.receive([0x16] + [UInt8](repeating: 0, count: 1600)) == [.close(.handshake(.unsupportedVersion(0x16)))])
        #expect(session.receive([3]) == [])
    }

    @Test("media before any publish is dropped; held media beyond the bound is dropped")
    func mediaBounds() throws {
        var talk = try Conversation(limits: RTMPSessionLimits(maxPendingMediaBytes: 2000))
        _ = try talk.exchange(talk.publisher.connect())
        #expect(try talk.exchange(talk.publisher.video(SampleTags.avcInterframe, timestamp: 0)).actions.isEmpty)
        #expect(talk.session.droppedMediaMessages == 1)
        _ = try talk.exchange(talk.publisher.createStream() + talk.publisher.publish("key"))
        for index in 0..<5 {
            _ = try talk.exchange(talk.publisher.video(payload(700, seed: UInt8(index)), timestamp: UInt32(index)))
        }
        #expect(talk.session.droppedMediaMessages == 1 + 3)
        #expect(talk.session.bufferedByteCount <= 2000 + 18)
        #expect(talk.session.acceptPublish().filter { if case .media = $0 { return true } else { return false } }.count == 2)
    }

    @Test("before a publish command, a message over 64 KiB closes the connection; after it, keyframe-sized messages pass")
    func smallBufferBeforePublish() throws {
        var idle = try Conversation()
        _ = try idle.exchange(idle.publisher.connect())
        let big = idle.publisher.video(payload(200_000, seed: 1), timestamp: 0)
        #expect(idle.session.receive(big).contains(.close(.chunkStream(.messageTooLong(200_000)))))
        var talk = try Conversation()
        try talk.connectAndPublish()
        _ = talk.session.acceptPublish()
        let keyframe = talk.publisher.video(payload(200_000, seed: 2), timestamp: 0)
        #expect(talk.session.receive(keyframe).contains { if case .media = $0 { return true } else { return false } })
        #expect(talk.session.messagesReceived == 4)  // connect, createStream, publish, the keyframe
    }

    @Test("a flood of empty media while the publish is being decided is bounded in count and costs linear time")
    func emptyMediaFloodWhilePending() throws {
        var talk = try Conversation()
        try talk.connectAndPublish()
        // 65,536 empty audio messages in one read: one full header, then one-byte type-3 headers.
        let first = talk.publisher.audio([], timestamp: 0)
        let flood = first + [UInt8](repeating: 0xC4, count: 65_535)
        let started = ContinuousClock.now
        _ = talk.session.receive(flood)
        let took = ContinuousClock.now - started
        #expect(talk.session.droppedMediaMessages >= 65_536 - 1_000)
        #expect(talk.session.bufferedByteCount < 64 << 10)
        #expect(talk.session.acceptPublish().filter { if case .media = $0 { return true } else { return false } }.count == 1_000)
        // Quadratic holding took seconds here; linear takes milliseconds (a generous bound).
        #expect(took < .seconds(2), "\(took)")
    }

    @Test("unknown commands and message types are reported as ignored")
    func ignoredThings() throws {
        var talk = try Conversation()
        _ = try talk.exchange(talk.publisher.connect())
        #expect(try talk.exchange(talk.publisher.command([.string("getStreamLength"), .number(9), .null, .string("k")])).actions == [.ignored("command getStreamLength")])
        #expect(try talk.exchange(talk.publisher.command([.string("_checkbw"), .number(0), .null])).actions == [.ignored("command _checkbw")])
        let shared = talk.publisher.encoder.encode(RTMPMessage(chunkStreamID: 3, messageStreamID: 0, typeID: 19, timestamp: 0, payload: [1]))
        #expect(try talk.exchange(shared).actions == [.ignored("message type 19")])
    }

    @Test("the digest handshake works through the session too")
    func digestSession() throws {
        var talk = try Conversation(variant: .digest(.scheme1))
        #expect(talk.publisher.handshake.isComplete)
        #expect(try talk.exchange(talk.publisher.connect()).replies.count == 4)
    }
}

struct RecordedSessionTests {
    static func pieces(_ bytes: [UInt8], size: Int) -> [ArraySlice<UInt8>] {
        stride(from: 0, to: bytes.count, by: size).map { bytes[$0..<min($0 + size, bytes.count)] }
    }

    /// Replays FFmpeg's bytes, accepting the publish as soon as it is asked for.
    func replay(_ recording: [UInt8], pieces: [ArraySlice<UInt8>]) -> (actions: [RTMPSessionAction], sent: [UInt8]) {
        var session = RTMPServerSession(hmacSHA256: testHMACSHA256, random: seededRandomFill(3))
        var actions: [RTMPSessionAction] = []
        var sent: [UInt8] = []
        for piece in pieces {
            var produced = session.receive(piece)
            if produced.contains(where: { if case .publishRequested = $0 { return true } else { return false } }) {
                produced += session.acceptPublish()
            }
            for action in produced {
                if case .send(let bytes) = action { sent += bytes } else { actions.append(action) }
            }
        }
        return (actions, sent)
    }

    @Test("FFmpeg 5.1's real publish session: request, metadata, decodable media, unpublish")
    func ffmpegRecording() throws {
        let recording = try Corpus.load("ffmpeg-5.1-publish.bin")
        // In one read, the publish ends (FCUnpublish) before the owner could decide.
        #expect(replay(recording, pieces: [recording[...]]).actions.dropFirst() == [.unpublished, .ignored("command deleteStream after unpublish")])
        let (actions, _) = replay(recording, pieces: Self.pieces(recording, size: 1000))
        #expect(actions.first == .publishRequested(RTMPPublishRequest(app: "live", tcUrl: "rtmp://127.0.0.1:41781/live",
                                                                      streamKey: "stream-key?token=abc", publishingType: .live, messageStreamID: 1)))
        #expect(actions.suffix(2) == [.unpublished, .ignored("command deleteStream after unpublish")])
        guard case .metadata(let metadata)? = actions.dropFirst().first else { Issue.record("no metadata"); return }
        #expect(AMF0Value.ecmaArray(metadata)["width"] == .number(64))
        #expect(AMF0Value.ecmaArray(metadata)["audiosamplerate"] == .number(22050))

        var packets: [FLVMediaPacket] = []
        var lastVideoTimestamp: Int64 = -1
        for case .media(let media) in actions {
            packets.append(media.kind == .video ? try FLVMediaPacket.parseVideo(media.payload) : try FLVMediaPacket.parseAudio(media.payload))
            if media.kind == .video {
                #expect(media.timestamp >= lastVideoTimestamp)
                lastVideoTimestamp = media.timestamp
            }
        }
        let keyframes = packets.filter { if case .videoFrame(_, true, _, _) = $0 { return true } else { return false } }
        let frames = packets.filter { if case .videoFrame = $0 { return true } else { return false } }
        #expect(frames.count == 10 && keyframes.count == 1)
        guard case .videoConfig(.avc, let record)? = packets.first(where: { if case .videoConfig = $0 { return true } else { return false } }) else {
            Issue.record("no AVC configuration"); return
        }
        let sps = try AVCDecoderConfigurationRecord(parsing: record).firstSequenceParameterSet()
        #expect(sps.width == 64 && sps.height == 64)
        guard case .audioConfig(.aac, let config)? = packets.first(where: { if case .audioConfig = $0 { return true } else { return false } }) else {
            Issue.record("no AAC configuration"); return
        }
        let audio = try AACAudioSpecificConfig(parsing: config)
        #expect(audio.sampleRate == 22050 && audio.channels == 1)
        #expect(packets.contains(.videoEndOfSequence(codec: .avc)))
    }

    @Test("the recording fed one byte at a time and in random pieces gives the same actions and replies")
    func anySplit() throws {
        let recording = try Corpus.load("ffmpeg-5.1-publish.bin")
        let whole = replay(recording, pieces: Self.pieces(recording, size: 1000))
        let bytewise = replay(recording, pieces: recording.indices.map { recording[$0...$0] })
        #expect(bytewise.actions.count == whole.actions.count)
        if let index = bytewise.actions.indices.first(where: { $0 < whole.actions.count && bytewise.actions[$0] != whole.actions[$0] }) {
            Issue.record("first difference at \(index): \(String(describing: bytewise.actions[index]).prefix(300)) vs \(String(describing: whole.actions[index]).prefix(300))")
        }
        #expect(bytewise.actions == whole.actions)
        #expect(bytewise.sent == whole.sent)
        var generator = SeededGenerator(seed: 17)
        for _ in 0..<10 {
            let pieces = randomSplits(recording, maxPiece: 700, using: &generator)
            let split = replay(recording, pieces: pieces)
            #expect(split.actions == whole.actions)
            #expect(split.sent == whole.sent)
        }
    }
}
