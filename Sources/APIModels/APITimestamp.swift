// The model's `Time` (timestampFormat iso8601): IVS returns "2023-09-27T21:32:38Z"
// (whole seconds, UTC) and botocore parses it with dateutil; the CLI reprints it as
// "+00:00". Kept as integer seconds since the Unix epoch: no floating-point time.

/// A UTC instant with one-second resolution, coded as an ISO 8601 string.
public struct APITimestamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var secondsSince1970: Int64

    public init(secondsSince1970: Int64) { self.secondsSince1970 = secondsSince1970 }

    /// "2023-09-27T21:32:38Z"
    public var description: String {
        let days = Int64.floorDivide(secondsSince1970, 86_400)
        let secondOfDay = secondsSince1970 - days * 86_400
        let (year, month, day) = CivilDate.fromDays(days)
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))Z"
    }

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

    private func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}

/// Proleptic Gregorian calendar arithmetic (Howard Hinnant's days-from-civil).
enum CivilDate {
    static func toDays(_ year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = Int64.floorDivide(y, 400)
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func fromDays(_ days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = Int64.floorDivide(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func daysInMonth(_ year: Int64, _ month: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

extension Int64 {
    static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }
}
