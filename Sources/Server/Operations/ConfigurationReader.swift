// Reads the configuration file so that `config check` can name every mistake at once.
//
// The Codable types stay the one definition of the file: `RecordingDecoder` runs their
// `init(from:)` over the parsed JSON and writes down every key each one asks for. A key in the
// file that no type asked for is unknown (reported with the nearest known key), so a new field
// is known the moment a type decodes it. The decoder is also lenient: an optional value of the
// wrong type is reported and its default taken, a missing or mistyped required string or number
// is reported and stood in for, so decoding goes on and every problem is found in one pass.
import Foundation

/// A key in the file that nothing reads, with the known key nearest to it.
struct UnknownConfigurationKey: Equatable, Sendable, CustomStringConvertible {
    /// `lifecycle.idleTimeoutSecond`
    var path: String
    /// `idleTimeoutSeconds`
    var suggestion: String?

    var description: String {
        "\(path): unknown key" + (suggestion.map { ", did you mean \"\($0)\"?" } ?? "")
    }
}

/// What reading a file found: the value (nil when even its outline was wrong), its problems
/// (each naming the key at fault), the unknown keys, and where problems were stood in for.
struct ConfigurationReading<Value: Decodable> {
    var value: Value?
    var problems: [String]
    var unknownKeys: [UnknownConfigurationKey]
    /// Keys whose value is a default or a stand-in because of a reported problem; checks of the
    /// decoded value about these keys would only repeat it.
    var substitutedKeys: Set<String>

    init(_ type: Value.Type, from data: Data) {
        let json: JSONValue
        do {
            json = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            self.init(value: nil, problems: ["not valid JSON: \(Self.describeSyntaxError(error))"], unknownKeys: [], substitutedKeys: [])
            return
        }
        let record = DecodingRecord()
        var value: Value?
        do {
            value = try Value(from: RecordingDecoder(value: json, codingPath: [], record: record))
        } catch {
            record.absorb(error, at: [])
        }
        self.init(value: value, problems: record.problems, unknownKeys: record.unknownKeys(in: json, at: []),
                  substitutedKeys: record.substitutedKeys)
    }

    private init(value: Value?, problems: [String], unknownKeys: [UnknownConfigurationKey], substitutedKeys: Set<String>) {
        self.value = value
        self.problems = problems
        self.unknownKeys = unknownKeys
        self.substitutedKeys = substitutedKeys
    }

    private static func describeSyntaxError(_ error: any Error) -> String {
        guard case DecodingError.dataCorrupted(let context) = error else { return "\(error)" }
        return context.underlyingError.map { "\($0)" } ?? context.debugDescription
    }
}

/// A JSON document as values, for the decoder to walk.
enum JSONValue: Decodable, Equatable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let value = try? c.decode(Bool.self) { self = .bool(value) }
        else if let value = try? c.decode(Int64.self) { self = .integer(value) }
        else if let value = try? c.decode(Double.self) { self = .number(value) }
        else if let value = try? c.decode(String.self) { self = .string(value) }
        else if let value = try? c.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    /// How a problem names what was found.
    var kind: String {
        switch self {
        case .null: return "null"
        case .bool: return "true/false"
        case .integer(let n): return "\(n)"
        case .number(let x): return "\(x)"
        case .string(let text): return "the string \"\(text.count > 40 ? text.prefix(40) + "…" : text)\""
        case .array: return "a list"
        case .object: return "an object"
        }
    }
}

/// `listen.tls`, `stages[0].arn`: the form every problem uses.
func configurationPath(_ keys: [any CodingKey]) -> String {
    keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().drop { $0 == "." }.description
}

/// Restricted Damerau–Levenshtein distance (a swap of two neighbours is one edit: `prot`/`port`),
/// ignoring case.
func editDistance(_ a: String, _ b: String) -> Int {
    let s = Array(a.lowercased()), t = Array(b.lowercased())
    if s.isEmpty || t.isEmpty { return max(s.count, t.count) }
    var d = [[Int]](repeating: [Int](repeating: 0, count: t.count + 1), count: s.count + 1)
    for i in 0...s.count { d[i][0] = i }
    for j in 0...t.count { d[0][j] = j }
    for i in 1...s.count {
        for j in 1...t.count {
            let cost = s[i - 1] == t[j - 1] ? 0 : 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1, j > 1, s[i - 1] == t[j - 2], s[i - 2] == t[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
        }
    }
    return d[s.count][t.count]
}

/// The known key nearest to `key`, if it is near enough to be a likely slip (a third of the
/// key's length, at least 2 edits), else one it begins (`requestTimeout`: `requestTimeoutSeconds`).
func nearestKey(to key: String, among known: some Collection<String>) -> String? {
    let limit = max(2, key.count / 3)
    if let near = known.map({ (key: $0, distance: editDistance(key, $0)) })
        .filter({ $0.distance <= limit })
        .min(by: { ($0.distance, $0.key) < ($1.distance, $1.key) }) {
        return near.key
    }
    guard key.count >= 4 else { return nil }
    return known.filter { $0.lowercased().hasPrefix(key.lowercased()) }.min { ($0.count, $0) < ($1.count, $1) }
}

/// What one decoding saw; shared by every container of it (one thread, one pass).
final class DecodingRecord {
    /// Container path → the keys its type asked for (present or not).
    private var askedFor: [String: Set<String>] = [:]
    /// Containers whose type's decoding stopped at an error: their later keys were never asked for.
    private var unfinished: Set<String> = []
    private(set) var problems: [String] = []
    private(set) var substitutedKeys: Set<String> = []

    func opened(_ path: [any CodingKey]) {
        let name = configurationPath(path)
        if askedFor[name] == nil { askedFor[name] = [] }
    }

    func asked(for key: String, in path: [any CodingKey]) {
        askedFor[configurationPath(path), default: []].insert(key)
    }

    func report(_ message: String, at path: [any CodingKey]) {
        let name = configurationPath(path)
        problems.append(name.isEmpty ? message : "\(name): \(message)")
        substitutedKeys.insert(name)
    }

    /// `error` stopped the decoding of the value at `path`, which takes its default: report it
    /// and mark the containers it left half-read.
    func absorb(_ error: any Error, at path: [any CodingKey]) {
        guard let error = error as? DecodingError else {
            report("\(error)", at: path)
            return
        }
        let at: [any CodingKey]
        switch error {
        case .keyNotFound(let key, let context):
            at = context.codingPath
            report("is required", at: context.codingPath + [key])
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            at = context.codingPath
            report(context.debugDescription, at: context.codingPath)
        @unknown default:
            at = path
            report("\(error)", at: path)
        }
        // Every container from `path` down to where the error arose stopped part-way (a
        // required key stood in for, reported at its own path, stops nothing).
        if at.count >= path.count {
            for length in path.count...at.count { unfinished.insert(configurationPath(Array(at.prefix(length)))) }
        }
        substitutedKeys.insert(configurationPath(path))
    }

    /// Keys in the objects of `value` that no type asked for, outside containers left half-read
    /// and objects never read at all (their value was already reported as wrong).
    func unknownKeys(in value: JSONValue, at path: [any CodingKey]) -> [UnknownConfigurationKey] {
        var found: [UnknownConfigurationKey] = []
        let name = configurationPath(path)
        switch value {
        case .object(let members):
            for key in members.keys.sorted() {
                let child = path + [RecordedKey(key)]
                if let known = askedFor[name], !unfinished.contains(name), !known.contains(key) {
                    found.append(UnknownConfigurationKey(path: configurationPath(child), suggestion: nearestKey(to: key, among: known)))
                } else if let member = members[key] {
                    found += unknownKeys(in: member, at: child)
                }
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() { found += unknownKeys(in: element, at: path + [RecordedKey(index)]) }
        default:
            break
        }
        return found
    }
}

struct RecordedKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ string: String) { stringValue = string }
    init(_ index: Int) { stringValue = "\(index)"; intValue = index }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { self.init(intValue) }
}

struct RecordingDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    let record: DecodingRecord
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch(Key.self, expected: "an object") }
        record.opened(codingPath)
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath, record: record))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([JSONValue].self, expected: "a list") }
        return UnkeyedContainer(elements: elements, codingPath: codingPath, record: record)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValue(decoder: self) }

    func mismatch(_ type: Any.Type, expected: String) -> DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(expected), found \(value.kind)"))
    }

    /// The value as a Swift scalar, or a type mismatch naming what was expected.
    func scalar<T>(_ type: T.Type) throws -> T {
        func integer<I: FixedWidthInteger>(_: I.Type) -> I? {
            switch value {
            case .integer(let n): return I(exactly: n)
            case .number(let x): return I(exactly: x)
            default: return nil
            }
        }
        let found: Any?
        switch type {
        case is Bool.Type: if case .bool(let b) = value { found = b } else { found = nil }
        case is String.Type: if case .string(let s) = value { found = s } else { found = nil }
        case is Double.Type, is Float.Type:
            let x: Double?
            switch value {
            case .integer(let n): x = Double(n)
            case .number(let d): x = d
            default: x = nil
            }
            if type is Float.Type { found = x.map { Float($0) } } else { found = x }
        case is Int.Type: found = integer(Int.self)
        case is Int8.Type: found = integer(Int8.self)
        case is Int16.Type: found = integer(Int16.self)
        case is Int32.Type: found = integer(Int32.self)
        case is Int64.Type: found = integer(Int64.self)
        case is UInt.Type: found = integer(UInt.self)
        case is UInt8.Type: found = integer(UInt8.self)
        case is UInt16.Type: found = integer(UInt16.self)
        case is UInt32.Type: found = integer(UInt32.self)
        case is UInt64.Type: found = integer(UInt64.self)
        default: found = nil
        }
        if let found = found as? T { return found }
        if case .null = value { throw DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "must not be null")) }
        throw mismatch(type, expected: Self.name(of: type))
    }

    static func name(of type: Any.Type) -> String {
        switch type {
        case is Bool.Type: return "true or false"
        case is String.Type: return "a string"
        case is Double.Type, is Float.Type: return "a number"
        default: return "a whole number (\(type))"
        }
    }

    /// What stands in for a required scalar that is missing or wrong, so that decoding goes on
    /// (the reading has a problem, so the value is never used).
    static func standIn<T>(_ type: T.Type) -> T? {
        let candidates: [Any] = ["", 0, 0.0, false, Int64(0), Float(0), Int32(0), UInt(0), UInt64(0), UInt32(0)]
        return candidates.lazy.compactMap { $0 as? T }.first
    }
}

private struct SingleValue: SingleValueDecodingContainer {
    let decoder: RecordingDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    func decodeNil() -> Bool { decoder.value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try decoder.scalar(type) }
    func decode(_ type: String.Type) throws -> String { try decoder.scalar(type) }
    func decode(_ type: Double.Type) throws -> Double { try decoder.scalar(type) }
    func decode(_ type: Float.Type) throws -> Float { try decoder.scalar(type) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.scalar(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.scalar(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.scalar(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.scalar(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.scalar(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.scalar(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.scalar(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.scalar(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.scalar(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.scalar(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: decoder) }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    let record: DecodingRecord
    var currentIndex = 0
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next() throws -> RecordingDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(JSONValue.self, .init(codingPath: codingPath, debugDescription: "the list is too short"))
        }
        defer { currentIndex += 1 }
        return RecordingDecoder(value: elements[currentIndex], codingPath: codingPath + [RecordedKey(currentIndex)], record: record)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: next()) }
    mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) throws -> KeyedDecodingContainer<N> {
        try next().container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]
    let record: DecodingRecord
    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool {
        record.asked(for: key.stringValue, in: codingPath)
        return members[key.stringValue] != nil
    }

    private func child(_ key: Key) -> RecordingDecoder? {
        record.asked(for: key.stringValue, in: codingPath)
        return members[key.stringValue].map { RecordingDecoder(value: $0, codingPath: codingPath + [key], record: record) }
    }

    /// A required value: a missing or mistyped scalar is reported and stood in for; anything
    /// else wrong stops this container's decoding.
    private func required<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        do {
            guard let decoder = child(key) else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "is required"))
            }
            return try T(from: decoder)
        } catch {
            guard let standIn = RecordingDecoder.standIn(type) else { throw error }
            record.absorb(error, at: codingPath + [key])
            return standIn
        }
    }

    /// An optional value: absent, null or wrong is nil (the type's default); wrong is reported.
    private func optional<T: Decodable>(_ type: T.Type, _ key: Key) -> T? {
        guard let decoder = child(key), decoder.value != .null else { return nil }
        do {
            return try T(from: decoder)
        } catch {
            record.absorb(error, at: decoder.codingPath)
            return nil
        }
    }

    func decodeNil(forKey key: Key) throws -> Bool { child(key).map { $0.value == .null } ?? true }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try required(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try required(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try required(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try required(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try required(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try required(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try required(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try required(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try required(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try required(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try required(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try required(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try required(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try required(type, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try required(type, key) }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { optional(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { optional(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { optional(type, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { optional(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { optional(type, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { optional(type, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { optional(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { optional(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { optional(type, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { optional(type, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { optional(type, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { optional(type, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { optional(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { optional(type, key) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { optional(type, key) }

    func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) throws -> KeyedDecodingContainer<N> {
        guard let decoder = child(key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "is required"))
        }
        return try decoder.container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        guard let decoder = child(key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "is required"))
        }
        return try decoder.unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        RecordingDecoder(value: .object(members), codingPath: codingPath, record: record)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        child(key) ?? RecordingDecoder(value: .null, codingPath: codingPath + [key], record: record)
    }
}
