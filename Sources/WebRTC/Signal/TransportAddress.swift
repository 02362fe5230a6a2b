// IP addresses and UDP transport addresses as plain values: what STUN carries in
// XOR-MAPPED-ADDRESS, what the ICE agent selects, and what SDP candidate lines print.
// Text forms follow RFC 5952 (IPv6) so an address prints the same way everywhere.

/// An IPv4 (4 bytes) or IPv6 (16 bytes) address in network byte order.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    public enum Family: Hashable, Sendable {
        case ipv4, ipv6
    }

    public let bytes: [UInt8]

    /// Nil unless `bytes` has 4 or 16 elements.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    public static func ipv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> IPAddress {
        IPAddress(validBytes: [a, b, c, d])
    }

    private init(validBytes: [UInt8]) {
        self.bytes = validBytes
    }

    public var family: Family { bytes.count == 4 ? .ipv4 : .ipv6 }

    /// Parses dotted-quad IPv4 or RFC 4291 IPv6 text (`::` compression and a trailing
    /// dotted quad allowed). Zone suffixes (`%eth0`) are not addresses and give nil.
    public init?(_ text: some StringProtocol) {
        if let v4 = Self.parseIPv4(Substring(text)) {
            self.bytes = v4
        } else if let v6 = Self.parseIPv6(Substring(text)) {
            self.bytes = v6
        } else {
            return nil
        }
    }

    public var description: String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        let groups = (0..<8).map { UInt16(bytes[$0 * 2]) << 8 | UInt16(bytes[$0 * 2 + 1]) }
        // IPv4-mapped addresses print with their IPv4 tail (RFC 5952 §5).
        if groups[0..<5].allSatisfy({ $0 == 0 }), groups[5] == 0xFFFF {
            return "::ffff:" + bytes[12...].map(String.init).joined(separator: ".")
        }
        // The longest run of two or more zero groups becomes "::" (the first one on a tie).
        var bestStart = -1, bestLength = 1, runStart = -1
        for index in 0...8 {
            if index < 8, groups[index] == 0 {
                if runStart < 0 { runStart = index }
            } else if runStart >= 0 {
                if index - runStart > bestLength { bestStart = runStart; bestLength = index - runStart }
                runStart = -1
            }
        }
        func hex(_ range: Range<Int>) -> String {
            groups[range].map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard bestStart >= 0 else { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
    }

    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var result: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCIIDigit), let value = UInt8(part) else { return nil }
            result.append(value)
        }
        return result
    }

    private static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.contains(":"), !text.contains("%") else { return nil }
        let halves = text.splitOnDoubleColon()
        guard halves.count <= 2 else { return nil }
        func groups(_ part: Substring, allowIPv4Tail: Bool) -> [UInt8]? {
            if part.isEmpty { return [] }
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            var result: [UInt8] = []
            for (index, field) in fields.enumerated() {
                if allowIPv4Tail, index == fields.count - 1, field.contains(".") {
                    guard let v4 = parseIPv4(field) else { return nil }
                    result += v4
                } else {
                    guard (1...4).contains(field.count), let value = UInt16(field, radix: 16) else { return nil }
                    result += [UInt8(value >> 8), UInt8(value & 0xFF)]
                }
            }
            return result
        }
        if halves.count == 1 {
            guard let all = groups(halves[0], allowIPv4Tail: true), all.count == 16 else { return nil }
            return all
        }
        guard let head = groups(halves[0], allowIPv4Tail: false),
              let tail = groups(halves[1], allowIPv4Tail: true),
              head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}

/// An IP address and UDP port: where a datagram came from or goes to.
public struct TransportAddress: Hashable, Sendable, CustomStringConvertible {
    public var ip: IPAddress
    public var port: UInt16

    public init(ip: IPAddress, port: UInt16) {
        self.ip = ip
        self.port = port
    }

    /// `192.0.2.1:3478` or `[2001:db8::1]:3478`.
    public var description: String {
        ip.family == .ipv4 ? "\(ip):\(port)" : "[\(ip)]:\(port)"
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

extension Substring {
    /// The pieces around each "::"; a valid IPv6 address has at most one.
    fileprivate func splitOnDoubleColon() -> [Substring] {
        var pieces: [Substring] = []
        var start = startIndex
        var index = startIndex
        while index < endIndex {
            let next = self.index(after: index)
            if self[index] == ":", next < endIndex, self[next] == ":" {
                pieces.append(self[start..<index])
                start = self.index(after: next)
                index = start
            } else {
                index = next
            }
        }
        pieces.append(self[start..<endIndex])
        return pieces
    }
}
