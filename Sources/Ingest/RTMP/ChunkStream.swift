// The RTMP chunk stream: messages are cut into chunks of at most `chunkSize` bytes, each
// with a basic header (format + chunk stream ID) and a message header that may be
// compressed against the previous one of the same chunk stream. The decoder is fed bytes
// as they arrive and hands back whole messages; its memory is bounded by
// `RTMPChunkLimits` whatever a peer sends.

import MediaCore

/// One reassembled RTMP message.
public struct RTMPMessage: Sendable, Equatable {
    public var chunkStreamID: UInt32
    public var messageStreamID: UInt32
    public var typeID: UInt8
    /// Milliseconds, wrapping at 2^32; see `RTMPTimestampUnwrapper`.
    public var timestamp: UInt32
    public var payload: [UInt8]

    public init(chunkStreamID: UInt32, messageStreamID: UInt32, typeID: UInt8, timestamp: UInt32, payload: [UInt8]) {
        self.chunkStreamID = chunkStreamID
        self.messageStreamID = messageStreamID
        self.typeID = typeID
        self.timestamp = timestamp
        self.payload = payload
    }

    /// Message type IDs of the RTMP specification.
    public enum TypeID {
        public static let setChunkSize: UInt8 = 1
        public static let abort: UInt8 = 2
        public static let acknowledgement: UInt8 = 3
        public static let userControl: UInt8 = 4
        public static let windowAckSize: UInt8 = 5
        public static let setPeerBandwidth: UInt8 = 6
        public static let audio: UInt8 = 8
        public static let video: UInt8 = 9
        public static let dataAMF3: UInt8 = 15
        public static let sharedObjectAMF3: UInt8 = 16
        public static let commandAMF3: UInt8 = 17
        public static let dataAMF0: UInt8 = 18
        public static let sharedObjectAMF0: UInt8 = 19
        public static let commandAMF0: UInt8 = 20
        public static let aggregate: UInt8 = 22
    }

    /// Chunk stream IDs are 2...65599 (0 and 1 are escape codes of the basic header).
    public static let chunkStreamIDRange: ClosedRange<UInt32> = 2...65599
    /// The chunk size both sides start with.
    public static let defaultChunkSize: UInt32 = 128
}

/// Bounds on what the decoder accepts and holds.
public struct RTMPChunkLimits: Equatable, Sendable {
    /// Largest chunk size a peer may set.
    public var maxChunkSize: UInt32
    /// Largest declared message length.
    public var maxMessageLength: UInt32
    /// Chunk streams with a message half received at the same time.
    public var maxAssemblingChunkStreams: Int
    /// Chunk streams whose last header is remembered (publishers use a handful).
    public var maxKnownChunkStreams: Int
    /// Payload bytes of all half-received messages together.
    public var maxBufferedPayloadBytes: Int

    public init(maxChunkSize: UInt32 = 1 << 20, maxMessageLength: UInt32 = 16 << 20,
                maxAssemblingChunkStreams: Int = 64, maxKnownChunkStreams: Int = 256,
                maxBufferedPayloadBytes: Int = 32 << 20) {
        self.maxChunkSize = maxChunkSize
        self.maxMessageLength = maxMessageLength
        self.maxAssemblingChunkStreams = maxAssemblingChunkStreams
        self.maxKnownChunkStreams = maxKnownChunkStreams
        self.maxBufferedPayloadBytes = maxBufferedPayloadBytes
    }
}

/// Why the chunk stream cannot be decoded any further. The decoder stays failed.
public enum RTMPChunkError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Set Chunk Size above `maxChunkSize`.
    case chunkSizeTooLarge(UInt32)
    /// Set Chunk Size of 0 or with the reserved top bit set.
    case invalidChunkSize(UInt32)
    /// A message header declares more than `maxMessageLength` bytes.
    case messageTooLong(UInt32)
    /// More than `maxAssemblingChunkStreams` messages half received at once.
    case tooManyChunkStreams
    /// More than `maxKnownChunkStreams` distinct chunk stream IDs.
    case tooManyKnownChunkStreams
    /// Half-received messages hold more than `maxBufferedPayloadBytes`.
    case bufferedBytesExceeded
    /// A compressed header (format 2 or 3) on a chunk stream that never had a full one.
    case missingMessageHeader(chunkStreamID: UInt32)
    /// A format 0/1/2 header in the middle of a message on the same chunk stream.
    case headerInterruptsMessage(chunkStreamID: UInt32)
    /// Set Chunk Size or Abort with fewer than 4 payload bytes.
    case malformedControlMessage(typeID: UInt8)

    public var description: String {
        switch self {
        case .chunkSizeTooLarge(let size): return "chunk size \(size) exceeds the limit"
        case .invalidChunkSize(let size): return "invalid chunk size \(size)"
        case .messageTooLong(let length): return "message length \(length) exceeds the limit"
        case .tooManyChunkStreams: return "too many chunk streams assembling messages"
        case .tooManyKnownChunkStreams: return "too many chunk streams"
        case .bufferedBytesExceeded: return "too many bytes buffered in partial messages"
        case .missingMessageHeader(let id): return "chunk stream \(id) starts without a message header"
        case .headerInterruptsMessage(let id): return "new message header in the middle of a message on chunk stream \(id)"
        case .malformedControlMessage(let typeID): return "malformed protocol control message type \(typeID)"
        }
    }
}

/// Reassembles messages from chunk-stream bytes. Feed bytes with `append`, then call
/// `nextMessage` until it returns nil. Set Chunk Size and Abort take effect as soon as
/// they complete (before the next chunk is parsed) and are still returned.
public struct RTMPChunkDecoder: Sendable {
    /// What one chunk stream remembers from its previous headers.
    private struct ChunkStreamState {
        var messageStreamID: UInt32 = 0
        var typeID: UInt8 = 0
        var length: UInt32 = 0
        var timestamp: UInt32 = 0
        var timestampDelta: UInt32 = 0
        /// The extended timestamp field of the last header, when that header had one;
        /// format 3 chunks then carry it again.
        var extendedTimestamp: UInt32?
        /// The message being reassembled, nil between messages.
        var payload: [UInt8]?
    }

    private enum State {
        case awaitingHeader
        case readingChunk(chunkStreamID: UInt32, remaining: Int)
        case failed(RTMPChunkError)
    }

    private enum HeaderOutcome {
        case needMoreBytes
        /// A zero-length message is complete at its header.
        case emptyMessage(RTMPMessage)
        case chunkDataFollows
    }

    /// Tighter before a publisher is identified, the full limits after (RTMPServerSession).
    public var limits: RTMPChunkLimits
    /// The peer's current outgoing chunk size.
    public private(set) var chunkSize: UInt32 = RTMPMessage.defaultChunkSize
    private var state: State = .awaitingHeader
    private var input: [UInt8] = []
    private var readIndex = 0
    private var streams: [UInt32: ChunkStreamState] = [:]
    private var assemblingCount = 0
    private var bufferedPayloadBytes = 0

    public init(limits: RTMPChunkLimits = RTMPChunkLimits()) {
        self.limits = limits
    }

    /// Bytes held: unparsed input plus partial message payloads. After `nextMessage`
    /// returned nil the unparsed part is at most one chunk header (18 bytes).
    public var bufferedByteCount: Int { input.count - readIndex + bufferedPayloadBytes }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        input.append(contentsOf: bytes)
    }

    /// The next complete message, or nil when more bytes are needed.
    public mutating func nextMessage() throws(RTMPChunkError) -> RTMPMessage? {
        do throws(RTMPChunkError) {
            while true {
                switch state {
                case .failed(let error):
                    throw error
                case .awaitingHeader:
                    switch try readHeader() {
                    case .needMoreBytes:
                        compactInput()
                        return nil
                    case .emptyMessage(let message):
                        try applyControl(message)
                        return message
                    case .chunkDataFollows:
                        break
                    }
                case .readingChunk(let chunkStreamID, let remaining):
                    let available = input.count - readIndex
                    guard available > 0 else {
                        compactInput()
                        return nil
                    }
                    let taken = min(remaining, available)
                    guard bufferedPayloadBytes + taken <= limits.maxBufferedPayloadBytes else {
                        throw RTMPChunkError.bufferedBytesExceeded
                    }
                    streams[chunkStreamID]?.payload?.append(contentsOf: input[readIndex..<(readIndex + taken)])
                    readIndex += taken
                    bufferedPayloadBytes += taken
                    guard taken == remaining else {
                        state = .readingChunk(chunkStreamID: chunkStreamID, remaining: remaining - taken)
                        compactInput()
                        return nil
                    }
                    state = .awaitingHeader
                    if let message = completeMessageIfWhole(chunkStreamID) {
                        try applyControl(message)
                        return message
                    }
                }
            }
        } catch {
            state = .failed(error)
            input = []
            readIndex = 0
            streams = [:]
            bufferedPayloadBytes = 0
            assemblingCount = 0
            throw error
        }
    }

    /// Parses one chunk header once all of it has arrived.
    private mutating func readHeader() throws(RTMPChunkError) -> HeaderOutcome {
        var reader = ByteReader(input, offset: readIndex)
        guard let first = reader.readUInt8() else { return .needMoreBytes }
        let format = first >> 6
        let chunkStreamID: UInt32
        switch first & 0x3F {
        case 0:
            guard let low = reader.readUInt8() else { return .needMoreBytes }
            chunkStreamID = 64 + UInt32(low)
        case 1:
            guard let low = reader.readUInt8(), let high = reader.readUInt8() else { return .needMoreBytes }
            chunkStreamID = 64 + UInt32(low) + UInt32(high) << 8
        default:
            chunkStreamID = UInt32(first & 0x3F)
        }

        let known = streams[chunkStreamID]
        // librtmp opens a fresh chunk stream with format 1 (pings); tolerate that, not 2 or 3.
        if known == nil, format >= 2 {
            throw .missingMessageHeader(chunkStreamID: chunkStreamID)
        }
        var stream = known ?? ChunkStreamState()
        let isContinuation = stream.payload != nil
        if format < 3, isContinuation {
            throw .headerInterruptsMessage(chunkStreamID: chunkStreamID)
        }

        switch format {
        case 0, 1, 2:
            guard var timestampField = reader.readUInt24() else { return .needMoreBytes }
            if format <= 1 {
                guard let length = reader.readUInt24(), let typeID = reader.readUInt8() else { return .needMoreBytes }
                stream.length = length
                stream.typeID = typeID
            }
            if format == 0 {
                // The only little-endian field of RTMP.
                guard let raw = reader.readUInt32() else { return .needMoreBytes }
                stream.messageStreamID = raw.byteSwapped
            }
            if timestampField == 0xFFFFFF {
                guard let extended = reader.readUInt32() else { return .needMoreBytes }
                timestampField = extended
                stream.extendedTimestamp = extended
            } else {
                stream.extendedTimestamp = nil
            }
            // A format 0 timestamp also becomes the delta a following format 3 repeats.
            stream.timestampDelta = timestampField
            stream.timestamp = format == 0 ? timestampField : stream.timestamp &+ timestampField
        default:
            if let extended = stream.extendedTimestamp {
                if isContinuation {
                    // The field is optional in practice on continuations (FFmpeg writes
                    // it, others do not): take 4 bytes as the field only when they repeat
                    // the header's value or the message's timestamp.
                    guard let peeked = reader.readUInt32() else { return .needMoreBytes }
                    if peeked != extended && peeked != stream.timestamp {
                        reader = ByteReader(input, offset: reader.offset - 4)
                    }
                } else {
                    guard let repeated = reader.readUInt32() else { return .needMoreBytes }
                    stream.extendedTimestamp = repeated
                    stream.timestampDelta = repeated
                }
            }
            if !isContinuation {
                stream.timestamp = stream.timestamp &+ stream.timestampDelta
            }
        }

        if !isContinuation {
            guard stream.length <= limits.maxMessageLength else { throw .messageTooLong(stream.length) }
        }
        if known == nil, streams.count >= limits.maxKnownChunkStreams {
            throw .tooManyKnownChunkStreams
        }

        readIndex = reader.offset
        if !isContinuation {
            if stream.length == 0 {
                streams[chunkStreamID] = stream
                return .emptyMessage(RTMPMessage(chunkStreamID: chunkStreamID, messageStreamID: stream.messageStreamID,
                                                 typeID: stream.typeID, timestamp: stream.timestamp, payload: []))
            }
            guard assemblingCount < limits.maxAssemblingChunkStreams else { throw .tooManyChunkStreams }
            assemblingCount += 1
            // Grow as data arrives: a declared length alone reserves little.
            var payload: [UInt8] = []
            payload.reserveCapacity(Int(min(stream.length, chunkSize, 65_536)))
            stream.payload = payload
        }
        let received = UInt32(stream.payload?.count ?? 0)
        let chunkLength = min(chunkSize, stream.length - received)
        streams[chunkStreamID] = stream
        state = .readingChunk(chunkStreamID: chunkStreamID, remaining: Int(chunkLength))
        return .chunkDataFollows
    }

    private mutating func completeMessageIfWhole(_ chunkStreamID: UInt32) -> RTMPMessage? {
        guard let stream = streams[chunkStreamID], let payload = stream.payload,
              payload.count == Int(stream.length) else { return nil }
        streams[chunkStreamID]?.payload = nil
        assemblingCount -= 1
        bufferedPayloadBytes -= payload.count
        return RTMPMessage(chunkStreamID: chunkStreamID, messageStreamID: stream.messageStreamID,
                           typeID: stream.typeID, timestamp: stream.timestamp, payload: payload)
    }

    /// Set Chunk Size and Abort change how the very next chunk is read.
    private mutating func applyControl(_ message: RTMPMessage) throws(RTMPChunkError) {
        switch message.typeID {
        case RTMPMessage.TypeID.setChunkSize:
            var reader = ByteReader(message.payload)
            guard let size = reader.readUInt32() else { throw .malformedControlMessage(typeID: message.typeID) }
            guard size & 0x8000_0000 == 0, size >= 1 else { throw .invalidChunkSize(size) }
            guard size <= limits.maxChunkSize else { throw .chunkSizeTooLarge(size) }
            chunkSize = size
        case RTMPMessage.TypeID.abort:
            var reader = ByteReader(message.payload)
            guard let abortedID = reader.readUInt32() else { throw .malformedControlMessage(typeID: message.typeID) }
            if let partial = streams[abortedID]?.payload {
                streams[abortedID]?.payload = nil
                assemblingCount -= 1
                bufferedPayloadBytes -= partial.count
            }
        default:
            break
        }
    }

    /// Drops consumed input so a long session does not keep every byte it ever received.
    private mutating func compactInput() {
        if readIndex == input.count {
            input.removeAll(keepingCapacity: input.capacity <= 65_536)
            readIndex = 0
        } else if readIndex >= 4096 {
            input.removeFirst(readIndex)
            readIndex = 0
        }
    }
}

/// Cuts messages into chunks: a format 0 header on the first chunk, format 3 on the rest,
/// the extended timestamp repeated on every chunk when the timestamp needs it.
public struct RTMPChunkEncoder: Sendable {
    /// Our outgoing chunk size. Encoding a Set Chunk Size message changes it (after that
    /// message, as the peer will apply it).
    public private(set) var chunkSize: UInt32

    public init(chunkSize: UInt32 = RTMPMessage.defaultChunkSize) {
        precondition(chunkSize >= 1 && chunkSize <= 0x7FFF_FFFF, "chunk size out of range")
        self.chunkSize = chunkSize
    }

    /// The chunks of one message. `message.chunkStreamID` must be in 2...65599.
    public mutating func encode(_ message: RTMPMessage) -> [UInt8] {
        precondition(RTMPMessage.chunkStreamIDRange.contains(message.chunkStreamID), "chunk stream ID out of range")
        precondition(message.payload.count <= 0xFF_FFFF, "message longer than 24 bits")
        let usesExtendedTimestamp = message.timestamp >= 0xFF_FFFF
        var bytes: [UInt8] = []
        bytes.reserveCapacity(message.payload.count + 18 + message.payload.count / Int(chunkSize) * 8)
        appendBasicHeader(format: 0, chunkStreamID: message.chunkStreamID, to: &bytes)
        bytes.appendBigEndian24(usesExtendedTimestamp ? 0xFF_FFFF : message.timestamp)
        bytes.appendBigEndian24(UInt32(message.payload.count))
        bytes.append(message.typeID)
        bytes.appendBigEndian(message.messageStreamID.byteSwapped)
        if usesExtendedTimestamp { bytes.appendBigEndian(message.timestamp) }

        var offset = 0
        repeat {
            if offset > 0 {
                appendBasicHeader(format: 3, chunkStreamID: message.chunkStreamID, to: &bytes)
                if usesExtendedTimestamp { bytes.appendBigEndian(message.timestamp) }
            }
            let end = min(offset + Int(chunkSize), message.payload.count)
            bytes.append(contentsOf: message.payload[offset..<end])
            offset = end
        } while offset < message.payload.count

        if message.typeID == RTMPMessage.TypeID.setChunkSize, message.payload.count >= 4 {
            var reader = ByteReader(message.payload)
            if let size = reader.readUInt32(), size >= 1, size <= 0x7FFF_FFFF {
                chunkSize = size
            }
        }
        return bytes
    }

    private func appendBasicHeader(format: UInt8, chunkStreamID: UInt32, to bytes: inout [UInt8]) {
        switch chunkStreamID {
        case 2...63:
            bytes.append(format << 6 | UInt8(chunkStreamID))
        case 64...319:
            bytes.append(format << 6)
            bytes.append(UInt8(chunkStreamID - 64))
        default:
            let value = chunkStreamID - 64
            bytes.append(format << 6 | 1)
            bytes.append(UInt8(truncatingIfNeeded: value))
            bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        }
    }
}

/// RTMP timestamps are 32-bit milliseconds and wrap after about 49.7 days. This turns them
/// into a running Int64: each step is read as a signed 32-bit difference from the previous
/// timestamp, so a wrap counts forward and a small step back (audio and video interleaving
/// out of order) stays a step back. A step of more than `maxStep` either way is not time
/// passing but a discontinuity (an encoder restart, or a hostile peer alternating 0 and 2³¹):
/// it is counted and the running time stays where it was, so no sequence of timestamps can
/// move it by more than `maxStep` per message (4 million 2³¹ steps once overflowed it).
public struct RTMPTimestampUnwrapper: Sendable {
    public static let defaultMaxStep: Int64 = 60_000
    private var last: (raw: UInt32, unwrapped: Int64)?
    public let maxStep: Int64
    /// Steps beyond `maxStep` seen so far.
    public private(set) var discontinuities = 0

    public init(maxStep: Int64 = RTMPTimestampUnwrapper.defaultMaxStep) {
        self.maxStep = maxStep
    }

    public mutating func unwrap(_ timestamp: UInt32) -> Int64 {
        guard let last else {
            self.last = (timestamp, Int64(timestamp))
            return Int64(timestamp)
        }
        var step = Int64(Int32(bitPattern: timestamp &- last.raw))
        if step > maxStep || step < -maxStep {
            discontinuities &+= 1
            step = 0
        }
        // |step| <= maxStep per message: 10^14 messages from overflowing.
        let unwrapped = last.unwrapped &+ step
        self.last = (timestamp, unwrapped)
        return unwrapped
    }
}
