// RFC 8285 header extensions: the one-byte form (profile 0xBEDE, ids 1...14, 1...16 bytes)
// and the two-byte form (profile 0x100X, ids 1...255, 0...255 bytes). Any other profile is
// kept as opaque bytes so a packet round-trips.

import MediaCore

/// One extension element: its negotiated id (from `a=extmap`) and its data.
public struct RTPHeaderExtensionElement: Sendable, Equatable {
    public var id: UInt8
    public var data: [UInt8]

    public init(id: UInt8, data: [UInt8]) {
        self.id = id
        self.data = data
    }
}

/// The extension block of an RTP packet (X bit set).
public enum RTPHeaderExtension: Sendable, Equatable {
    case oneByte([RTPHeaderExtensionElement])
    /// `appBits` are the low 4 bits of the 0x100X profile.
    case twoByte(appBits: UInt8, [RTPHeaderExtensionElement])
    /// A profile RFC 8285 does not describe; `data` is the block without its 4-byte header.
    case opaque(profile: UInt16, data: [UInt8])

    static let oneByteProfile: UInt16 = 0xBEDE
    static let twoByteProfileMask: UInt16 = 0xFFF0
    static let twoByteProfile: UInt16 = 0x1000

    /// The elements of the RFC 8285 forms; empty for an opaque block.
    public var elements: [RTPHeaderExtensionElement] {
        switch self {
        case .oneByte(let elements), .twoByte(_, let elements): elements
        case .opaque: []
        }
    }

    /// The smallest RFC 8285 form that can carry `elements`.
    public static func fitting(_ elements: [RTPHeaderExtensionElement]) -> RTPHeaderExtension {
        let oneByteFits = elements.allSatisfy { (1...14).contains($0.id) && (1...16).contains($0.data.count) }
        return oneByteFits ? .oneByte(elements) : .twoByte(appBits: 0, elements)
    }

    /// Parses the block after the profile and length words; `base` is only for error offsets.
    static func parse(profile: UInt16, data: [UInt8], base: Int) throws(RTPError) -> RTPHeaderExtension {
        if profile == oneByteProfile {
            var elements: [RTPHeaderExtensionElement] = []
            var index = 0
            while index < data.count {
                let byte = data[index]
                let id = byte >> 4
                if id == 0 { index += 1; continue }  // padding between elements
                if id == 15 { break }                 // reserved: stop processing, per RFC 8285
                let length = Int(byte & 0x0F) + 1
                guard index + 1 + length <= data.count else { throw .malformedHeaderExtension(offset: base + index) }
                elements.append(RTPHeaderExtensionElement(id: id, data: Array(data[(index + 1)..<(index + 1 + length)])))
                index += 1 + length
            }
            return .oneByte(elements)
        }
        if profile & twoByteProfileMask == twoByteProfile {
            var elements: [RTPHeaderExtensionElement] = []
            var index = 0
            while index < data.count {
                let id = data[index]
                if id == 0 { index += 1; continue }
                guard index + 1 < data.count else { throw .malformedHeaderExtension(offset: base + index) }
                let length = Int(data[index + 1])
                guard index + 2 + length <= data.count else { throw .malformedHeaderExtension(offset: base + index) }
                elements.append(RTPHeaderExtensionElement(id: id, data: Array(data[(index + 2)..<(index + 2 + length)])))
                index += 2 + length
            }
            return .twoByte(appBits: UInt8(profile & 0x000F), elements)
        }
        return .opaque(profile: profile, data: data)
    }

    /// Profile word and the element bytes, padded to a 32-bit boundary.
    func serialized() throws(RTPError) -> (profile: UInt16, data: [UInt8]) {
        var data: [UInt8] = []
        let profile: UInt16
        switch self {
        case .oneByte(let elements):
            profile = Self.oneByteProfile
            for element in elements {
                guard (1...14).contains(element.id), (1...16).contains(element.data.count) else {
                    throw .unencodableHeaderExtension(id: element.id, length: element.data.count)
                }
                data.append(element.id << 4 | UInt8(element.data.count - 1))
                data += element.data
            }
        case .twoByte(let appBits, let elements):
            profile = Self.twoByteProfile | UInt16(appBits & 0x0F)
            for element in elements {
                guard element.id != 0, element.data.count <= 255 else {
                    throw .unencodableHeaderExtension(id: element.id, length: element.data.count)
                }
                data.append(element.id)
                data.append(UInt8(element.data.count))
                data += element.data
            }
        case .opaque(let opaqueProfile, let bytes):
            profile = opaqueProfile
            data = bytes
        }
        data.padToWordBoundary()
        return (profile, data)
    }
}
