// RFC 3550 §6.5 SDES and §6.6 BYE.

/// SDES (PT 202): items (CNAME above all) per source.
public struct RTCPSourceDescription: Sendable, Equatable {
    public struct Item: Sendable, Equatable {
        public var type: UInt8
        public var value: [UInt8]

        public init(type: UInt8, value: [UInt8]) {
            self.type = type
            self.value = value
        }

        public static let cnameType: UInt8 = 1

        public static func cname(_ text: String) -> Item { Item(type: cnameType, value: Array(text.utf8)) }
    }

    public struct Chunk: Sendable, Equatable {
        public var ssrc: UInt32
        public var items: [Item]

        public init(ssrc: UInt32, items: [Item]) {
            self.ssrc = ssrc
            self.items = items
        }

        /// The CNAME item as text, if present.
        public var cname: String? {
            items.first { $0.type == Item.cnameType }.map { String(decoding: $0.value, as: UTF8.self) }
        }

        /// Bytes on the wire: SSRC, items, a null terminator, padded to 32 bits.
        var wireSize: Int {
            let raw = 4 + items.reduce(0) { $0 + 2 + $1.value.count } + 1
            return (raw + 3) / 4 * 4
        }
    }

    public var chunks: [Chunk]

    public init(chunks: [Chunk]) { self.chunks = chunks }

    public static func cname(ssrc: UInt32, _ cname: String) -> RTCPSourceDescription {
        RTCPSourceDescription(chunks: [Chunk(ssrc: ssrc, items: [.cname(cname)])])
    }
}

/// BYE (PT 203): sources leaving, with an optional reason.
public struct RTCPGoodbye: Sendable, Equatable {
    public var ssrcs: [UInt32]
    public var reason: [UInt8]?

    public init(ssrcs: [UInt32], reason: [UInt8]? = nil) {
        self.ssrcs = ssrcs
        self.reason = reason
    }
}

/// A packet type (or feedback format) this module does not interpret: APP, XR, transport-cc,
/// TMMBR... kept byte for byte so it can be inspected or forwarded.
public struct RTCPUnknownPacket: Sendable, Equatable {
    public var packetType: UInt8
    /// The 5-bit count / feedback message type field.
    public var count: UInt8
    /// Everything after the 4-byte header, padding removed.
    public var body: [UInt8]

    public init(packetType: UInt8, count: UInt8, body: [UInt8]) {
        self.packetType = packetType
        self.count = count
        self.body = body
    }
}
