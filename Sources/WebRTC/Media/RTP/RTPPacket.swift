// RFC 3550 §5.1 RTP fixed header, CSRCs, header extension and padding.
//
//  0                   1                   2                   3
//  |V=2|P|X|  CC   |M|     PT      |       sequence number         |
//  |                           timestamp                           |
//  |           synchronization source (SSRC) identifier            |
//  |            contributing source (CSRC) identifiers (CC × 32)   |
//  | profile (0xBEDE / 0x100X)     |           length (words)      |  if X
//  | extension data ...                                            |
//  | payload ...                   | padding ...   | padding count |  if P

import MediaCore

/// One RTP packet, parsed. `payload` excludes padding; `paddingCount` keeps its size so a
/// packet round-trips (and so a padding-only probe can be told apart from media).
public struct RTPPacket: Sendable, Equatable {
    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var csrcs: [UInt32]
    public var headerExtension: RTPHeaderExtension?
    public var payload: [UInt8]
    /// Bytes of padding after the payload, the count byte included (0 when P is clear).
    public var paddingCount: Int

    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
                csrcs: [UInt32] = [], headerExtension: RTPHeaderExtension? = nil, payload: [UInt8], paddingCount: Int = 0) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.headerExtension = headerExtension
        self.payload = payload
        self.paddingCount = paddingCount
    }

    /// The data of the first extension element with `id`, if any.
    public func extensionElement(id: UInt8) -> [UInt8]? {
        headerExtension?.elements.first { $0.id == id }?.data
    }

    /// On a port that muxes RTP and RTCP, a second byte of 192...223 is an RTCP packet type
    /// (RFC 5761 §4: those payload types are never used for RTP).
    public static func looksLikeRTCP(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && (192...223).contains(bytes[1])
    }

    public init(parsing bytes: [UInt8]) throws(RTPError) {
        var reader = ByteReader(bytes)
        guard let first = reader.readUInt8(), let second = reader.readUInt8(),
              let sequenceNumber = reader.readUInt16(), let timestamp = reader.readUInt32(),
              let ssrc = reader.readUInt32()
        else { throw .truncated(offset: 0) }
        let version = first >> 6
        guard version == 2 else { throw .unsupportedVersion(version) }
        let hasPadding = first & 0x20 != 0
        let hasExtension = first & 0x10 != 0
        let csrcCount = Int(first & 0x0F)

        var csrcs: [UInt32] = []
        csrcs.reserveCapacity(csrcCount)
        for _ in 0..<csrcCount {
            guard let csrc = reader.readUInt32() else { throw .truncated(offset: reader.offset) }
            csrcs.append(csrc)
        }

        var headerExtension: RTPHeaderExtension?
        if hasExtension {
            let start = reader.offset
            guard let profile = reader.readUInt16(), let words = reader.readUInt16(),
                  let data = reader.readBytes(Int(words) * 4)
            else { throw .truncated(offset: start) }
            headerExtension = try RTPHeaderExtension.parse(profile: profile, data: data, base: start + 4)
        }

        var paddingCount = 0
        if hasPadding {
            // The last byte counts the padding, itself included; it may not eat into the header.
            guard let last = bytes.last, last != 0, Int(last) <= reader.remainingCount else {
                throw .invalidPadding(count: Int(bytes.last ?? 0))
            }
            paddingCount = Int(last)
        }
        let payloadEnd = bytes.count - paddingCount
        self.init(marker: second & 0x80 != 0, payloadType: second & 0x7F, sequenceNumber: sequenceNumber,
                  timestamp: timestamp, ssrc: ssrc, csrcs: csrcs, headerExtension: headerExtension,
                  payload: Array(bytes[reader.offset..<payloadEnd]), paddingCount: paddingCount)
    }

    /// The wire form. Padding bytes are zeros followed by the count.
    public func serialized() throws(RTPError) -> [UInt8] {
        guard csrcs.count <= 15 else { throw .tooManyCSRCs(csrcs.count) }
        guard (0...255).contains(paddingCount) else { throw .invalidPadding(count: paddingCount) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12 + csrcs.count * 4 + payload.count + paddingCount + 64)
        var first: UInt8 = 2 << 6 | UInt8(csrcs.count)
        if paddingCount > 0 { first |= 0x20 }
        if headerExtension != nil { first |= 0x10 }
        bytes.append(first)
        bytes.append((marker ? 0x80 : 0) | payloadType & 0x7F)
        bytes.appendBigEndian(sequenceNumber)
        bytes.appendBigEndian(timestamp)
        bytes.appendBigEndian(ssrc)
        for csrc in csrcs { bytes.appendBigEndian(csrc) }
        if let headerExtension {
            let (profile, data) = try headerExtension.serialized()
            guard data.count / 4 <= Int(UInt16.max) else { throw .unencodableHeaderExtension(id: 0, length: data.count) }
            bytes.appendBigEndian(profile)
            bytes.appendBigEndian(UInt16(data.count / 4))
            bytes += data
        }
        bytes += payload
        if paddingCount > 0 {
            bytes += [UInt8](repeating: 0, count: paddingCount - 1)
            bytes.append(UInt8(paddingCount))
        }
        return bytes
    }
}
