// One publishing RTMP connection as a value: bytes in, actions out. It owns the handshake,
// the chunk decoder and encoder, answers the NetConnection/NetStream commands a publisher
// sends (connect, releaseStream, FCPublish, createStream, publish, FCUnpublish,
// deleteStream) and hands media to its owner once the owner accepted the publish.
//
//   HANDSHAKING ─C2─► AWAITING CONNECT ─connect─► CONNECTED ─publish─► PUBLISH PENDING
//                                                          acceptPublish │ rejectPublish ─► CLOSED
//                                                                        ▼
//              CLOSED ◄─protocol error (any state)       PUBLISHING ─FCUnpublish/deleteStream─► UNPUBLISHED
//
// The owner (the NIO shell) writes `.send` bytes, asks its authorizer about
// `.publishRequested`, forwards `.media`/`.metadata`, and closes the connection on `.close`.

import MediaCore

/// What the owner does next, in order.
public enum RTMPSessionAction: Equatable, Sendable {
    /// Write these bytes to the peer.
    case send([UInt8])
    /// The peer wants to publish; answer with `acceptPublish()` or `rejectPublish(code:description:)`.
    case publishRequested(RTMPPublishRequest)
    /// An audio or video message of the accepted publish.
    case media(RTMPMediaMessage)
    /// `onMetaData` of the accepted publish (from `@setDataFrame` or sent directly).
    case metadata([AMF0Property])
    /// The publisher stopped publishing (FCUnpublish, deleteStream or closeStream).
    case unpublished
    /// A message the session did not act on; for debug logs.
    case ignored(String)
    /// Close the connection; the session accepts nothing more.
    case close(RTMPSessionError)
}

/// The publish a peer asked for.
public struct RTMPPublishRequest: Equatable, Sendable {
    /// The application of the connect command (the first path segment of the RTMP URL).
    public var app: String
    public var tcUrl: String?
    /// The publish name as given, `?query` included.
    public var streamKey: String
    public var publishingType: RTMPPublishingType
    /// The message stream the publisher will send media on.
    public var messageStreamID: UInt32

    public init(app: String, tcUrl: String?, streamKey: String, publishingType: RTMPPublishingType, messageStreamID: UInt32) {
        self.app = app
        self.tcUrl = tcUrl
        self.streamKey = streamKey
        self.publishingType = publishingType
        self.messageStreamID = messageStreamID
    }
}

public enum RTMPPublishingType: String, Equatable, Sendable {
    case live, record, append
}

/// An audio or video message, payload still an FLV tag body (see `FLVMediaPacket`).
public struct RTMPMediaMessage: Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        case audio, video
    }

    public var kind: Kind
    /// Milliseconds, unwrapped across the 32-bit wrap of RTMP timestamps.
    public var timestamp: Int64
    public var payload: [UInt8]
    /// The message's timestamp jumped by more than the unwrapper takes as time passing.
    public var isDiscontinuity: Bool

    public init(kind: Kind, timestamp: Int64, payload: [UInt8], isDiscontinuity: Bool = false) {
        self.kind = kind
        self.timestamp = timestamp
        self.payload = payload
        self.isDiscontinuity = isDiscontinuity
    }
}

/// Why the session closed the connection.
public enum RTMPSessionError: Error, Equatable, Sendable, CustomStringConvertible {
    case handshake(RTMPHandshakeError)
    case chunkStream(RTMPChunkError)
    /// A command whose AMF0 body does not decode.
    case malformedCommand(AMF0Error)
    /// A command of the wrong shape (no name, missing arguments).
    case invalidCommand(String)
    case commandBeforeConnect(String)
    case duplicateConnect
    /// AMF3 was asked for in connect; we speak AMF0 only.
    case unsupportedObjectEncoding(Double)
    /// This server only ingests.
    case playNotSupported
    case duplicatePublish
    case invalidPublishName
    /// The owner rejected the publish with this status code.
    case publishRejected(code: String)
    case tooManyStreams

    public var description: String {
        switch self {
        case .handshake(let error): return "handshake: \(error)"
        case .chunkStream(let error): return "chunk stream: \(error)"
        case .malformedCommand(let error): return "malformed command: \(error)"
        case .invalidCommand(let reason): return "invalid command: \(reason)"
        case .commandBeforeConnect(let name): return "command \(name) before connect"
        case .duplicateConnect: return "second connect on the connection"
        case .unsupportedObjectEncoding(let encoding): return "unsupported object encoding \(encoding)"
        case .playNotSupported: return "play is not supported by an ingest server"
        case .duplicatePublish: return "second publish on the connection"
        case .invalidPublishName: return "publish without a stream name"
        case .publishRejected(let code): return "publish rejected (\(code))"
        case .tooManyStreams: return "too many createStream calls"
        }
    }
}

/// Bounds on one connection.
public struct RTMPSessionLimits: Equatable, Sendable {
    public var chunk: RTMPChunkLimits
    public var amf: AMF0Limits
    /// Media and metadata held between the publish command and the owner's decision;
    /// beyond it (in bytes, or `maxPendingMediaMessages` messages: empty ones cost a place
    /// too) they are dropped.
    public var maxPendingMediaBytes: Int
    public var maxPendingMediaMessages: Int
    /// createStream calls per connection (publishers make one).
    public var maxMessageStreams: Int
    /// Until a publish command arrives (handshake, connect, createStream: a few small
    /// messages), the chunk stream holds at most this much: a peer that never publishes gets
    /// kilobytes of our memory, not `chunk`'s megabytes.
    public var beforePublish: RTMPChunkLimits

    public static let defaultBeforePublish = RTMPChunkLimits(maxChunkSize: 1 << 20, maxMessageLength: 65_536,
                                                             maxAssemblingChunkStreams: 4, maxKnownChunkStreams: 16,
                                                             maxBufferedPayloadBytes: 128 << 10)

    public init(chunk: RTMPChunkLimits = RTMPChunkLimits(), amf: AMF0Limits = AMF0Limits(),
                maxPendingMediaBytes: Int = 1 << 20, maxPendingMediaMessages: Int = 1_000, maxMessageStreams: Int = 16,
                beforePublish: RTMPChunkLimits = RTMPSessionLimits.defaultBeforePublish) {
        self.beforePublish = beforePublish
        self.chunk = chunk
        self.amf = amf
        self.maxPendingMediaBytes = maxPendingMediaBytes
        self.maxPendingMediaMessages = maxPendingMediaMessages
        self.maxMessageStreams = maxMessageStreams
    }
}

public struct RTMPServerSession: Sendable {
    /// What we announce and ask for after connect.
    public static let windowAcknowledgementSize: UInt32 = 2_500_000
    public static let peerBandwidth: UInt32 = 2_500_000
    public static let outgoingChunkSize: UInt32 = 4096
    static let serverVersion = "FMS/3,0,1,123"

    /// Chunk streams of our messages, as deployed servers use them.
    enum OutgoingChunkStream {
        static let control: UInt32 = 2
        static let command: UInt32 = 3
        static let status: UInt32 = 5
    }

    private struct Connection {
        var app: String
        var tcUrl: String?
    }

    private struct PendingPublish {
        var request: RTMPPublishRequest
        var transactionID: Double
    }

    private enum Phase {
        case handshaking
        case awaitingConnect
        case connected(Connection)
        case publishPending(Connection, PendingPublish)
        case publishing(Connection, RTMPPublishRequest)
        case unpublished
        case closed
    }

    public let limits: RTMPSessionLimits
    private var phase: Phase = .handshaking
    /// Media and metadata that arrived between the publish command and the owner's decision.
    /// Kept outside `phase`: an array inside an enum that a `switch` has copied is copied again
    /// on every append (a flood of empty messages held this way took seconds of an event loop).
    private var held: [RTMPSessionAction] = []
    private var heldBytes = 0
    private var handshake: RTMPServerHandshake
    private var decoder: RTMPChunkDecoder
    private var encoder = RTMPChunkEncoder()
    private var timestamps = RTMPTimestampUnwrapper()
    private var createdStreams: UInt32 = 0
    private var peerAcknowledgementWindow: UInt32 = RTMPServerSession.windowAcknowledgementSize
    private var bytesAtLastAcknowledgement: UInt64 = 0

    /// All bytes received, handshake included.
    public private(set) var bytesReceived: UInt64 = 0
    /// All bytes handed out in `.send` actions.
    public private(set) var bytesSent: UInt64 = 0
    /// Messages (of any type) received so far: the owner holds the peer to a message rate, so
    /// empty or ignored messages cost the sender too.
    public private(set) var messagesReceived: Int64 = 0
    /// Media messages dropped: before any publish, or beyond the pending bound.
    public private(set) var droppedMediaMessages = 0

    public init(limits: RTMPSessionLimits = RTMPSessionLimits(), hmacSHA256: @escaping RTMPHMACSHA256,
                random: @escaping RTMPRandomFill = RTMPHandshake.systemRandom) {
        self.limits = limits
        self.handshake = RTMPServerHandshake(hmacSHA256: hmacSHA256, random: random)
        self.decoder = RTMPChunkDecoder(limits: limits.beforePublish)
    }

    public var isHandshakeComplete: Bool { handshake.isComplete }

    public var isPublishing: Bool {
        if case .publishing = phase { return true }
        return false
    }

    public var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    /// The publish asked for or accepted, until it ends.
    public var publishRequest: RTMPPublishRequest? {
        switch phase {
        case .publishPending(_, let pending): return pending.request
        case .publishing(_, let request): return request
        default: return nil
        }
    }

    /// Bytes held on behalf of the peer: handshake and chunk buffers, held media.
    public var bufferedByteCount: Int {
        var count = handshake.bufferedByteCount + decoder.bufferedByteCount
        if case .publishPending = phase { count += heldBytes }
        return count
    }

    // MARK: Events

    /// Bytes from the peer, in order, split anywhere.
    public mutating func receive(_ bytes: some Collection<UInt8>) -> [RTMPSessionAction] {
        if case .closed = phase { return [] }
        var actions: [RTMPSessionAction] = []
        bytesReceived &+= UInt64(bytes.count)
        if case .handshaking = phase {
            do {
                for action in try handshake.receive(bytes) {
                    switch action {
                    case .send(let reply):
                        actions.append(send(reply))
                    case .completed(let leftover):
                        phase = .awaitingConnect
                        decoder.append(leftover)
                    }
                }
            } catch {
                return finish(actions + [close(.handshake(error))])
            }
        } else {
            decoder.append(bytes)
        }
        guard handshake.isComplete else { return finish(actions) }

        while !isClosed {
            do {
                guard let message = try decoder.nextMessage() else { break }
                handle(message, into: &actions)
            } catch {
                actions.append(close(.chunkStream(error)))
            }
        }
        if !isClosed, bytesReceived &- bytesAtLastAcknowledgement >= UInt64(peerAcknowledgementWindow) {
            // Sequence number: every byte received so far (handshake included), modulo 2^32.
            bytesAtLastAcknowledgement = bytesReceived
            var payload: [UInt8] = []
            payload.appendBigEndian(UInt32(truncatingIfNeeded: bytesReceived))
            actions.append(sendControl(RTMPMessage.TypeID.acknowledgement, payload))
        }
        return finish(actions)
    }

    /// The owner accepts the pending publish: NetStream.Publish.Start goes out and media
    /// held since the publish command follows.
    public mutating func acceptPublish() -> [RTMPSessionAction] {
        guard case .publishPending(let connection, let pending) = phase else { return [] }
        var actions: [RTMPSessionAction] = []
        let streamID = pending.request.messageStreamID
        var streamBegin: [UInt8] = []
        streamBegin.appendBigEndian(UInt16(0))
        streamBegin.appendBigEndian(streamID)
        actions.append(sendControl(RTMPMessage.TypeID.userControl, streamBegin))
        actions.append(sendStatus(level: "status", code: "NetStream.Publish.Start",
                                  description: "Start publishing", details: pending.request.streamKey,
                                  transactionID: pending.transactionID, streamID: streamID))
        phase = .publishing(connection, pending.request)
        actions.append(contentsOf: held)
        held = []
        heldBytes = 0
        return finish(actions)
    }

    /// The owner refuses the pending publish (e.g. "NetStream.Publish.BadName" for an
    /// unknown stream key); the connection is then closed.
    public mutating func rejectPublish(code: String, description: String) -> [RTMPSessionAction] {
        guard case .publishPending(_, let pending) = phase else { return [] }
        let reply = sendStatus(level: "error", code: code, description: description, details: nil,
                               transactionID: pending.transactionID, streamID: pending.request.messageStreamID)
        return finish([reply, close(.publishRejected(code: code))])
    }

    // MARK: Messages

    private mutating func handle(_ message: RTMPMessage, into actions: inout [RTMPSessionAction]) {
        messagesReceived &+= 1
        switch message.typeID {
        case RTMPMessage.TypeID.setChunkSize, RTMPMessage.TypeID.abort:
            break  // The decoder applied them.
        case RTMPMessage.TypeID.acknowledgement, RTMPMessage.TypeID.setPeerBandwidth:
            break  // A publisher's acknowledgements and bandwidth hints change nothing for us.
        case RTMPMessage.TypeID.windowAckSize:
            var reader = ByteReader(message.payload)
            if let window = reader.readUInt32(), window > 0 {
                peerAcknowledgementWindow = window
            } else {
                actions.append(.ignored("malformed window acknowledgement size"))
            }
        case RTMPMessage.TypeID.userControl:
            handleUserControl(message.payload, into: &actions)
        case RTMPMessage.TypeID.commandAMF0:
            handleCommand(message.payload, messageStreamID: message.messageStreamID, into: &actions)
        case RTMPMessage.TypeID.commandAMF3:
            // AMF3 commands start with a format byte, then (from AMF0-speaking clients) AMF0.
            handleCommand(Array(message.payload.dropFirst()), messageStreamID: message.messageStreamID, into: &actions)
        case RTMPMessage.TypeID.dataAMF0:
            handleData(message.payload, into: &actions)
        case RTMPMessage.TypeID.dataAMF3:
            handleData(Array(message.payload.dropFirst()), into: &actions)
        case RTMPMessage.TypeID.audio, RTMPMessage.TypeID.video:
            let discontinuities = timestamps.discontinuities
            let timestamp = timestamps.unwrap(message.timestamp)
            handleMedia(.media(RTMPMediaMessage(kind: message.typeID == RTMPMessage.TypeID.audio ? .audio : .video, timestamp: timestamp,
                                                payload: message.payload, isDiscontinuity: timestamps.discontinuities != discontinuities)),
                        byteCount: message.payload.count, into: &actions)
        case RTMPMessage.TypeID.aggregate:
            handleAggregate(message, into: &actions)
        default:
            actions.append(.ignored("message type \(message.typeID)"))
        }
    }

    private mutating func handleUserControl(_ payload: [UInt8], into actions: inout [RTMPSessionAction]) {
        var reader = ByteReader(payload)
        guard let event = reader.readUInt16() else {
            actions.append(.ignored("malformed user control message"))
            return
        }
        switch event {
        case 6:  // PingRequest: answer with PingResponse carrying the same timestamp.
            guard let timestamp = reader.readUInt32() else {
                actions.append(.ignored("malformed ping request"))
                return
            }
            var response: [UInt8] = []
            response.appendBigEndian(UInt16(7))
            response.appendBigEndian(timestamp)
            actions.append(sendControl(RTMPMessage.TypeID.userControl, response))
        case 3, 7:
            break  // SetBufferLength (a player's), PingResponse.
        default:
            actions.append(.ignored("user control event \(event)"))
        }
    }

    /// Audio/video and metadata: passed on while publishing, held while the owner
    /// decides, dropped otherwise.
    private mutating func handleMedia(_ action: RTMPSessionAction, byteCount: Int, into actions: inout [RTMPSessionAction]) {
        switch phase {
        case .publishing:
            actions.append(action)
        case .publishPending:
            guard heldBytes + byteCount <= limits.maxPendingMediaBytes, held.count < limits.maxPendingMediaMessages else {
                droppedMediaMessages += 1
                return
            }
            held.append(action)
            heldBytes += byteCount
        default:
            droppedMediaMessages += 1
        }
    }

    /// Aggregate messages carry FLV tags (11-byte header, body, 4-byte back pointer);
    /// their timestamps are relative to the first tag's, which maps to the message's.
    private mutating func handleAggregate(_ message: RTMPMessage, into actions: inout [RTMPSessionAction]) {
        var reader = ByteReader(message.payload)
        var firstTagTimestamp: UInt32?
        while !reader.isAtEnd {
            guard let tagType = reader.readUInt8(), let size = reader.readUInt24(), let low = reader.readUInt24(),
                  let high = reader.readUInt8(), reader.readUInt24() != nil,
                  let body = reader.readBytes(Int(size)), reader.skip(4)
            else {
                actions.append(.ignored("truncated aggregate message"))
                return
            }
            guard [RTMPMessage.TypeID.audio, RTMPMessage.TypeID.video, RTMPMessage.TypeID.dataAMF0].contains(tagType) else {
                actions.append(.ignored("aggregate tag type \(tagType)"))
                continue
            }
            let tagTimestamp = UInt32(high) << 24 | low
            let base = firstTagTimestamp ?? tagTimestamp
            firstTagTimestamp = base
            let timestamp = message.timestamp &+ (tagTimestamp &- base)
            handle(RTMPMessage(chunkStreamID: message.chunkStreamID, messageStreamID: message.messageStreamID,
                               typeID: tagType,
                               timestamp: timestamp, payload: body), into: &actions)
        }
    }

    private mutating func handleData(_ payload: [UInt8], into actions: inout [RTMPSessionAction]) {
        let values: [AMF0Value]
        do {
            values = try AMF0Decoder.decodeAll(payload, limits: limits.amf)
        } catch {
            actions.append(.ignored("malformed data message: \(error)"))
            return
        }
        var remaining = values[...]
        if remaining.first?.stringValue == "@setDataFrame" {
            remaining = remaining.dropFirst()
        }
        guard remaining.first?.stringValue == "onMetaData",
              let properties = remaining.dropFirst().first?.properties else {
            actions.append(.ignored("data message \(Self.loggable(values.first?.stringValue ?? "without a name"))"))
            return
        }
        handleMedia(.metadata(properties), byteCount: payload.count, into: &actions)
    }

    // MARK: Commands

    private mutating func handleCommand(_ payload: [UInt8], messageStreamID: UInt32, into actions: inout [RTMPSessionAction]) {
        let values: [AMF0Value]
        do {
            values = try AMF0Decoder.decodeAll(payload, limits: limits.amf)
        } catch {
            actions.append(close(.malformedCommand(error)))
            return
        }
        guard let name = values.first?.stringValue else {
            actions.append(close(.invalidCommand("command without a name")))
            return
        }
        let transactionID = values.count > 1 ? values[1].numberValue ?? 0 : 0
        let arguments = Array(values.dropFirst(2))

        if name == "connect" {
            handleConnect(transactionID: transactionID, arguments: arguments, into: &actions)
            return
        }
        guard let connection = currentConnection else {
            if case .unpublished = phase {
                if name == "publish" {
                    actions.append(close(.duplicatePublish))
                } else {
                    actions.append(.ignored("command \(Self.loggable(name)) after unpublish"))
                }
            } else {
                actions.append(close(.commandBeforeConnect(Self.loggable(name))))
            }
            return
        }
        switch name {
        case "releaseStream":
            if transactionID != 0 { actions.append(sendResult(transactionID, [.null, .undefined])) }
        case "FCPublish":
            let streamName = arguments.dropFirst().first?.stringValue ?? ""
            actions.append(sendCommand([.string("onFCPublish"), .number(0), .null,
                                        .object([AMF0Property("code", .string("NetStream.Publish.Start")),
                                                 AMF0Property("description", .string(streamName))])]))
            if transactionID != 0 { actions.append(sendResult(transactionID, [.null, .undefined])) }
        case "createStream":
            guard createdStreams < limits.maxMessageStreams else {
                actions.append(close(.tooManyStreams))
                return
            }
            createdStreams += 1
            actions.append(sendResult(transactionID, [.null, .number(Double(createdStreams))]))
        case "publish":
            handlePublish(connection: connection, transactionID: transactionID, arguments: arguments,
                          messageStreamID: messageStreamID, into: &actions)
        case "FCUnpublish":
            endPublish(into: &actions)
            if transactionID != 0 { actions.append(sendResult(transactionID, [.null, .undefined])) }
        case "deleteStream":
            let streamID = arguments.dropFirst().first?.numberValue
            if let publishStream = publishRequest?.messageStreamID, streamID == Double(publishStream) {
                endPublish(into: &actions)
            }
        case "closeStream":
            if let publishStream = publishRequest?.messageStreamID, messageStreamID == publishStream {
                endPublish(into: &actions)
            }
        case "play", "play2":
            actions.append(sendStatus(level: "error", code: "NetStream.Play.Failed",
                                      description: "This server accepts publishing only.", details: nil,
                                      transactionID: 0, streamID: messageStreamID))
            actions.append(close(.playNotSupported))
        default:
            // getStreamLength, checkBandwidth, _checkbw and the rest need no answer from an ingest.
            actions.append(.ignored("command \(Self.loggable(name))"))
        }
    }

    private var currentConnection: Connection? {
        switch phase {
        case .connected(let connection), .publishPending(let connection, _), .publishing(let connection, _):
            return connection
        default:
            return nil
        }
    }

    private mutating func handleConnect(transactionID: Double, arguments: [AMF0Value], into actions: inout [RTMPSessionAction]) {
        guard case .awaitingConnect = phase else {
            actions.append(close(.duplicateConnect))
            return
        }
        guard let commandObject = arguments.first, commandObject.properties != nil else {
            actions.append(close(.invalidCommand("connect without a command object")))
            return
        }
        let objectEncoding = commandObject["objectEncoding"]?.numberValue ?? 0
        guard objectEncoding == 0 else {
            actions.append(sendCommand([.string("_error"), .number(transactionID), .null,
                                        .object([AMF0Property("level", .string("error")),
                                                 AMF0Property("code", .string("NetConnection.Connect.Rejected")),
                                                 AMF0Property("description", .string("Only AMF0 object encoding is supported.")),
                                                 AMF0Property("objectEncoding", .number(objectEncoding))])]))
            actions.append(close(.unsupportedObjectEncoding(objectEncoding)))
            return
        }
        phase = .connected(Connection(app: commandObject["app"]?.stringValue ?? "",
                                      tcUrl: commandObject["tcUrl"]?.stringValue))
        var window: [UInt8] = []
        window.appendBigEndian(Self.windowAcknowledgementSize)
        actions.append(sendControl(RTMPMessage.TypeID.windowAckSize, window))
        var bandwidth: [UInt8] = []
        bandwidth.appendBigEndian(Self.peerBandwidth)
        bandwidth.append(2)  // limit type: dynamic
        actions.append(sendControl(RTMPMessage.TypeID.setPeerBandwidth, bandwidth))
        var chunkSize: [UInt8] = []
        chunkSize.appendBigEndian(Self.outgoingChunkSize)
        actions.append(sendControl(RTMPMessage.TypeID.setChunkSize, chunkSize))
        actions.append(sendResult(transactionID, [
            .object([AMF0Property("fmsVer", .string(Self.serverVersion)),
                     AMF0Property("capabilities", .number(31)),
                     AMF0Property("mode", .number(1))]),
            .object([AMF0Property("level", .string("status")),
                     AMF0Property("code", .string("NetConnection.Connect.Success")),
                     AMF0Property("description", .string("Connection succeeded.")),
                     AMF0Property("objectEncoding", .number(objectEncoding))]),
        ]))
    }

    private mutating func handlePublish(connection: Connection, transactionID: Double, arguments: [AMF0Value],
                                        messageStreamID: UInt32, into actions: inout [RTMPSessionAction]) {
        guard case .connected = phase else {
            actions.append(sendStatus(level: "error", code: "NetStream.Publish.BadConnection",
                                      description: "Already publishing on this connection.", details: nil,
                                      transactionID: transactionID, streamID: messageStreamID))
            actions.append(close(.duplicatePublish))
            return
        }
        // Arguments: null, publishing name, publishing type.
        guard let streamKey = arguments.dropFirst().first?.stringValue, !streamKey.isEmpty else {
            actions.append(sendStatus(level: "error", code: "NetStream.Publish.BadName",
                                      description: "No stream name given.", details: nil,
                                      transactionID: transactionID, streamID: messageStreamID))
            actions.append(close(.invalidPublishName))
            return
        }
        let typeName = arguments.dropFirst(2).first?.stringValue?.lowercased() ?? "live"
        let request = RTMPPublishRequest(app: connection.app, tcUrl: connection.tcUrl, streamKey: streamKey,
                                         publishingType: RTMPPublishingType(rawValue: typeName) ?? .live,
                                         messageStreamID: messageStreamID)
        phase = .publishPending(connection, PendingPublish(request: request, transactionID: transactionID))
        // Media may follow at once (some encoders do not wait for the answer): full limits.
        decoder.limits = limits.chunk
        actions.append(.publishRequested(request))
    }

    private mutating func endPublish(into actions: inout [RTMPSessionAction]) {
        switch phase {
        case .publishPending:
            droppedMediaMessages += held.count
            held = []
            heldBytes = 0
            phase = .unpublished
            actions.append(.unpublished)
        case .publishing:
            phase = .unpublished
            actions.append(.unpublished)
        default:
            break
        }
    }

    // MARK: Output

    private mutating func send(_ bytes: [UInt8]) -> RTMPSessionAction {
        bytesSent &+= UInt64(bytes.count)
        return .send(bytes)
    }

    private mutating func sendControl(_ typeID: UInt8, _ payload: [UInt8]) -> RTMPSessionAction {
        send(encoder.encode(RTMPMessage(chunkStreamID: OutgoingChunkStream.control, messageStreamID: 0,
                                        typeID: typeID, timestamp: 0, payload: payload)))
    }

    private mutating func sendCommand(_ values: [AMF0Value], streamID: UInt32 = 0,
                                      chunkStreamID: UInt32 = OutgoingChunkStream.command) -> RTMPSessionAction {
        send(encoder.encode(RTMPMessage(chunkStreamID: chunkStreamID, messageStreamID: streamID,
                                        typeID: RTMPMessage.TypeID.commandAMF0, timestamp: 0,
                                        payload: AMF0Encoder.encode(values))))
    }

    private mutating func sendResult(_ transactionID: Double, _ values: [AMF0Value]) -> RTMPSessionAction {
        sendCommand([.string("_result"), .number(transactionID)] + values)
    }

    private mutating func sendStatus(level: String, code: String, description: String, details: String?,
                                     transactionID: Double, streamID: UInt32) -> RTMPSessionAction {
        var info = [AMF0Property("level", .string(level)), AMF0Property("code", .string(code)),
                    AMF0Property("description", .string(description))]
        if let details { info.append(AMF0Property("details", .string(details))) }
        return sendCommand([.string("onStatus"), .number(transactionID), .null, .object(info)],
                           streamID: streamID, chunkStreamID: OutgoingChunkStream.status)
    }

    private mutating func close(_ error: RTMPSessionError) -> RTMPSessionAction {
        phase = .closed
        // Nothing more will be read: let go of whatever the peer made us hold.
        decoder = RTMPChunkDecoder(limits: limits.chunk)
        held = []
        heldBytes = 0
        return .close(error)
    }

    /// Peer-chosen names go into logs: keep them short.
    private static func loggable(_ name: String) -> String {
        name.count <= 64 ? name : String(name.prefix(64)) + "…"
    }

    /// Adjacent `.send`s become one write.
    private func finish(_ actions: [RTMPSessionAction]) -> [RTMPSessionAction] {
        var merged: [RTMPSessionAction] = []
        merged.reserveCapacity(actions.count)
        for action in actions {
            if case .send(let next) = action, case .send(let previous)? = merged.last {
                merged[merged.count - 1] = .send(previous + next)
            } else {
                merged.append(action)
            }
        }
        return merged
    }
}
