// The model's `Time` (timestampFormat iso8601): IVS returns "2023-09-27T21:32:38Z"
// (whole seconds, UTC) and botocore parses it with dateutil; the CLI reprints it as
// "+00:00". Kept as integer seconds since the Unix epoch: no floating-point time.

import MediaCore

/// A UTC instant with one-second resolution, coded as an ISO 8601 string.
public struct APITimestamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var secondsSince1970: Int64

    public init(secondsSince1970: Int64) { self.secondsSince1970 = secondsSince1970 }

    /// "2023-09-27T21:32:38Z"
    public var description: String { UTCTimestamp.format(secondsSince1970: secondsSince1970) }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff](Z|+00:00|±HH:MM)`; fractions are truncated.
    public init?(iso8601 text: String) {
        let chars = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= chars.count else { return nil }
            var value: Int64 = 0
            for c in chars[range] {
                guard c >= 0x30 && c <= 0x39 else { return nil }
                value = value * 10 + Int64(c - 0x30)
            }
            return value
        }
        guard chars.count >= 20, chars[4] == 0x2D, chars[7] == 0x2D, chars[10] == 0x54 || chars[10] == 0x74,
              chars[13] == 0x3A, chars[16] == 0x3A,
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), day >= 1, day <= CivilDate.daysInMonth(year, month),
              hour < 24, minute < 60, second < 60 else { return nil }
        var index = 19
        if chars[index] == 0x2E {
            index += 1
            let start = index
            while index < chars.count, chars[index] >= 0x30, chars[index] <= 0x39 { index += 1 }
            guard index > start else { return nil }
        }
        var offset: Int64 = 0
        guard index < chars.count else { return nil }
        if chars[index] == 0x5A || chars[index] == 0x7A {
            guard index + 1 == chars.count else { return nil }
        } else if chars[index] == 0x2B || chars[index] == 0x2D {
            guard chars.count == index + 6, chars[index + 3] == 0x3A,
                  let oh = number(index + 1..<index + 3), let om = number(index + 4..<index + 6),
                  oh < 24, om < 60 else { return nil }
            offset = (oh * 3600 + om * 60) * (chars[index] == 0x2B ? 1 : -1)
        } else {
            return nil
        }
        let days = CivilDate.toDays(year, month, day)
        secondsSince1970 = days * 86_400 + hour * 3600 + minute * 60 + second - offset
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = APITimestamp(iso8601: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 timestamp: \(text)")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public static func < (lhs: APITimestamp, rhs: APITimestamp) -> Bool { lhs.secondsSince1970 < rhs.secondsSince1970 }
}

