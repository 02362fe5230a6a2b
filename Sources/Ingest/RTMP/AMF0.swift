// AMF0, the value encoding of RTMP commands and FLV script data: a tiny tagged format
// (one marker byte, then the value). The decoder works on untrusted bytes, so every
// container and string is checked against explicit limits before anything is allocated.

import MediaCore

/// One AMF0 value. Objects and ECMA arrays keep their properties in wire order.
public indirect enum AMF0Value: Equatable, Sendable {
    case number(Double)
    case boolean(Bool)
    case string(String)
    case object([AMF0Property])
    case null
    case undefined
    case ecmaArray([AMF0Property])
    case strictArray([AMF0Value])
    case date(milliseconds: Double, timeZone: Int16)
    case longString(String)

    /// The value of the first property named `key` of an object or ECMA array.
    public subscript(key: String) -> AMF0Value? {
        properties?.first(where: { $0.key == key })?.value
    }

    /// Short and long strings alike.
    public var stringValue: String? {
        switch self {
        case .string(let text), .longString(let text): return text
        default: return nil
        }
    }

    public var numberValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }

    public var booleanValue: Bool? {
        if case .boolean(let flag) = self { return flag }
        return nil
    }

    /// The properties of an object or an ECMA array (encoders use either for metadata).
    public var properties: [AMF0Property]? {
        switch self {
        case .object(let properties), .ecmaArray(let properties): return properties
        default: return nil
        }
    }
}

/// A key/value pair of an AMF0 object or ECMA array.
public struct AMF0Property: Equatable, Sendable {
    public var key: String
    public var value: AMF0Value

    public init(_ key: String, _ value: AMF0Value) {
        self.key = key
        self.value = value
    }
}

/// Bounds on what one decoder accepts from a peer.
public struct AMF0Limits: Equatable, Sendable {
    /// Containers inside containers; deeper input is an attack, not a command.
    public var maxNestingDepth: Int
    /// Values of every kind, nested ones included, per decoder.
    public var maxValueCount: Int
    /// Bytes of one long string (short strings cannot exceed 65 535 anyway).
    public var maxStringBytes: Int
    /// Properties of one object or ECMA array, elements of one strict array.
    public var maxContainerElements: Int

    public init(maxNestingDepth: Int = 16, maxValueCount: Int = 4096,
                maxStringBytes: Int = 65_536, maxContainerElements: Int = 1024) {
        self.maxNestingDepth = maxNestingDepth
        self.maxValueCount = maxValueCount
        self.maxStringBytes = maxStringBytes
        self.maxContainerElements = maxContainerElements
    }
}

/// Why AMF0 bytes could not be decoded.
public enum AMF0Error: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes end inside a value.
    case truncated
    case unknownMarker(UInt8)
    /// An object-end marker where a value was expected.
    case unexpectedObjectEnd
    case tooDeep
    case tooManyValues
    /// One container has more elements than `maxContainerElements`.
    case tooManyElements
    case stringTooLong(UInt32)
    case invalidUTF8
    /// A marker AMF0 defines but RTMP ingest has no use for: movie clip, reference, XML,
    /// typed object, record set, "unsupported", and the switch to AMF3 (0x11).
    case unsupported(marker: UInt8)

    public var description: String {
        switch self {
        case .truncated: return "AMF0 value truncated"
        case .unknownMarker(let marker): return "unknown AMF0 marker 0x\(String(marker, radix: 16))"
        case .unexpectedObjectEnd: return "AMF0 object-end marker outside an object"
        case .tooDeep: return "AMF0 values nested too deeply"
        case .tooManyValues: return "too many AMF0 values"
        case .tooManyElements: return "AMF0 container has too many elements"
        case .stringTooLong(let length): return "AMF0 string of \(length) bytes is too long"
        case .invalidUTF8: return "AMF0 string is not valid UTF-8"
        case .unsupported(let marker): return "unsupported AMF0 marker 0x\(String(marker, radix: 16))"
        }
    }
}

enum AMF0Marker {
    static let number: UInt8 = 0x00
    static let boolean: UInt8 = 0x01
    static let string: UInt8 = 0x02
    static let object: UInt8 = 0x03
    static let movieClip: UInt8 = 0x04
    static let null: UInt8 = 0x05
    static let undefined: UInt8 = 0x06
    static let reference: UInt8 = 0x07
    static let ecmaArray: UInt8 = 0x08
    static let objectEnd: UInt8 = 0x09
    static let strictArray: UInt8 = 0x0A
    static let date: UInt8 = 0x0B
    static let longString: UInt8 = 0x0C
    static let unsupported: UInt8 = 0x0D
    static let recordSet: UInt8 = 0x0E
    static let xmlDocument: UInt8 = 0x0F
    static let typedObject: UInt8 = 0x10
    static let avmPlusObject: UInt8 = 0x11
}

/// Decodes a sequence of AMF0 values (a command: name, transaction ID, arguments...).
public struct AMF0Decoder: Sendable {
    private var reader: ByteReader
    private let limits: AMF0Limits
    private var valueCount = 0

    public init(_ bytes: [UInt8], limits: AMF0Limits = AMF0Limits()) {
        self.reader = ByteReader(bytes)
        self.limits = limits
    }

    public var isAtEnd: Bool { reader.isAtEnd }
    /// Bytes consumed so far.
    public var offset: Int { reader.offset }

    /// The next top-level value, or nil when the bytes are used up.
    public mutating func decodeNext() throws(AMF0Error) -> AMF0Value? {
        guard !reader.isAtEnd else { return nil }
        return try decodeValue(depth: 0)
    }

    /// Every value in `bytes`; fails on the first malformed one.
    public static func decodeAll(_ bytes: [UInt8], limits: AMF0Limits = AMF0Limits()) throws(AMF0Error) -> [AMF0Value] {
        var decoder = AMF0Decoder(bytes, limits: limits)
        var values: [AMF0Value] = []
        while let value = try decoder.decodeNext() {
            values.append(value)
        }
        return values
    }

    private mutating func decodeValue(depth: Int) throws(AMF0Error) -> AMF0Value {
        guard let marker = reader.readUInt8() else { throw .truncated }
        valueCount += 1
        guard valueCount <= limits.maxValueCount else { throw .tooManyValues }
        switch marker {
        case AMF0Marker.number:
            return .number(try readDouble())
        case AMF0Marker.boolean:
            guard let byte = reader.readUInt8() else { throw .truncated }
            return .boolean(byte != 0)
        case AMF0Marker.string:
            guard let length = reader.readUInt16() else { throw .truncated }
            return .string(try readUTF8(byteCount: UInt32(length)))
        case AMF0Marker.longString:
            guard let length = reader.readUInt32() else { throw .truncated }
            return .longString(try readUTF8(byteCount: length))
        case AMF0Marker.object:
            return .object(try readProperties(depth: depth))
        case AMF0Marker.ecmaArray:
            // The count is only a hint (encoders get it wrong); the end marker decides.
            guard reader.readUInt32() != nil else { throw .truncated }
            return .ecmaArray(try readProperties(depth: depth))
        case AMF0Marker.strictArray:
            return .strictArray(try readStrictArray(depth: depth))
        case AMF0Marker.null:
            return .null
        case AMF0Marker.undefined:
            return .undefined
        case AMF0Marker.date:
            let milliseconds = try readDouble()
            guard let zone = reader.readUInt16() else { throw .truncated }
            return .date(milliseconds: milliseconds, timeZone: Int16(bitPattern: zone))
        case AMF0Marker.objectEnd:
            throw .unexpectedObjectEnd
        case AMF0Marker.movieClip, AMF0Marker.reference, AMF0Marker.unsupported, AMF0Marker.recordSet,
             AMF0Marker.xmlDocument, AMF0Marker.typedObject, AMF0Marker.avmPlusObject:
            throw .unsupported(marker: marker)
        default:
            throw .unknownMarker(marker)
        }
    }

    private mutating func readDouble() throws(AMF0Error) -> Double {
        guard let bits = reader.readUInt64() else { throw .truncated }
        return Double(bitPattern: bits)
    }

    private mutating func readUTF8(byteCount: UInt32) throws(AMF0Error) -> String {
        guard byteCount <= limits.maxStringBytes else { throw .stringTooLong(byteCount) }
        guard let bytes = reader.readBytes(Int(byteCount)) else { throw .truncated }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .invalidUTF8 }
        return text
    }

    /// Properties up to the 0x00 0x00 0x09 end marker.
    private mutating func readProperties(depth: Int) throws(AMF0Error) -> [AMF0Property] {
        guard depth < limits.maxNestingDepth else { throw .tooDeep }
        var properties: [AMF0Property] = []
        while true {
            guard let keyLength = reader.readUInt16() else { throw .truncated }
            if keyLength == 0, reader.peekUInt8() == AMF0Marker.objectEnd {
                _ = reader.readUInt8()
                return properties
            }
            guard properties.count < limits.maxContainerElements else { throw .tooManyElements }
            let key = try readUTF8(byteCount: UInt32(keyLength))
            let value = try decodeValue(depth: depth + 1)
            properties.append(AMF0Property(key, value))
        }
    }

    private mutating func readStrictArray(depth: Int) throws(AMF0Error) -> [AMF0Value] {
        guard depth < limits.maxNestingDepth else { throw .tooDeep }
        guard let count = reader.readUInt32() else { throw .truncated }
        guard count <= limits.maxContainerElements else { throw .tooManyElements }
        // Every element takes at least one byte, so the count cannot ask for more room than that.
        var elements: [AMF0Value] = []
        elements.reserveCapacity(min(Int(count), reader.remainingCount))
        for _ in 0..<count {
            elements.append(try decodeValue(depth: depth + 1))
        }
        return elements
    }
}

/// Encodes AMF0 values. Strings over 65 535 UTF-8 bytes go out as long strings; property
/// keys are limited to 65 535 bytes by the format and cut there.
public struct AMF0Encoder: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public static func encode(_ values: [AMF0Value]) -> [UInt8] {
        var encoder = AMF0Encoder()
        for value in values {
            encoder.encode(value)
        }
        return encoder.bytes
    }

    public mutating func encode(_ value: AMF0Value) {
        switch value {
        case .number(let number):
            bytes.append(AMF0Marker.number)
            bytes.appendBigEndian(number.bitPattern)
        case .boolean(let flag):
            bytes.append(AMF0Marker.boolean)
            bytes.append(flag ? 1 : 0)
        case .string(let text):
            let utf8 = Array(text.utf8)
            if utf8.count > Int(UInt16.max) {
                appendLongString(utf8)
            } else {
                bytes.append(AMF0Marker.string)
                appendShortString(utf8)
            }
        case .longString(let text):
            appendLongString(Array(text.utf8))
        case .object(let properties):
            bytes.append(AMF0Marker.object)
            appendProperties(properties)
        case .ecmaArray(let properties):
            bytes.append(AMF0Marker.ecmaArray)
            bytes.appendBigEndian(UInt32(truncatingIfNeeded: properties.count))
            appendProperties(properties)
        case .strictArray(let elements):
            bytes.append(AMF0Marker.strictArray)
            bytes.appendBigEndian(UInt32(truncatingIfNeeded: elements.count))
            for element in elements {
                encode(element)
            }
        case .null:
            bytes.append(AMF0Marker.null)
        case .undefined:
            bytes.append(AMF0Marker.undefined)
        case .date(let milliseconds, let timeZone):
            bytes.append(AMF0Marker.date)
            bytes.appendBigEndian(milliseconds.bitPattern)
            bytes.appendBigEndian(UInt16(bitPattern: timeZone))
        }
    }

    private mutating func appendShortString(_ utf8: [UInt8]) {
        let clipped = utf8.prefix(Int(UInt16.max))
        bytes.appendBigEndian(UInt16(clipped.count))
        bytes.append(contentsOf: clipped)
    }

    private mutating func appendLongString(_ utf8: [UInt8]) {
        bytes.append(AMF0Marker.longString)
        bytes.appendBigEndian(UInt32(truncatingIfNeeded: utf8.count))
        bytes.append(contentsOf: utf8)
    }

    private mutating func appendProperties(_ properties: [AMF0Property]) {
        for property in properties {
            appendShortString(Array(property.key.utf8))
            encode(property.value)
        }
        bytes.append(contentsOf: [0x00, 0x00, AMF0Marker.objectEnd])
    }
}
