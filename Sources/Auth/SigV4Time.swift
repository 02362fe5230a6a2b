// The two request-time forms SigV4 accepts, parsed by hand (no locale-dependent
// formatters): `x-amz-date: 20261122T051219Z`, or `Date: Sun, 22 Nov 2026 05:12:19 GMT`
// which botocore sends instead when the caller set a Date header.

/// A request time in whole UTC seconds.
public struct SigV4Time: Sendable, Hashable {
    public let secondsSince1970: Int64

    public init(secondsSince1970: Int64) { self.secondsSince1970 = secondsSince1970 }

    /// `yyyyMMdd'T'HHmmss'Z'`.
    public init?(amzDate text: String) {
        let b = Array(text.utf8)
        guard b.count == 16, b[8] == UInt8(ascii: "T"), b[15] == UInt8(ascii: "Z"),
              let year = Self.number(b[0..<4]), let month = Self.number(b[4..<6]), let day = Self.number(b[6..<8]),
              let hour = Self.number(b[9..<11]), let minute = Self.number(b[11..<13]), let second = Self.number(b[13..<15])
        else { return nil }
        self.init(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    /// RFC 7231 IMF-fixdate, `Sun, 22 Nov 2026 05:12:19 GMT`, or the RFC 2822 form with a
    /// zero offset that botocore writes (`... 05:12:19 -0000`).
    public init?(httpDate text: String) {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].hasSuffix(","), ["GMT", "UTC", "UT", "-0000", "+0000"].contains(parts[5]),
              let day = Self.number(Array(parts[1].utf8)[...]),
              let monthIndex = Self.months.firstIndex(of: String(parts[2])),
              let year = Self.number(Array(parts[3].utf8)[...])
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3,
              let hour = Self.number(Array(clock[0].utf8)[...]), let minute = Self.number(Array(clock[1].utf8)[...]),
              let second = Self.number(Array(clock[2].utf8)[...])
        else { return nil }
        self.init(year: year, month: monthIndex + 1, day: day, hour: hour, minute: minute, second: second)
    }

    init?(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        guard (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour),
              (0...59).contains(minute), (0...60).contains(second) else { return nil }
        let days = Self.daysFromCivil(year: year, month: month, day: day)
        secondsSince1970 = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// `yyyyMMdd'T'HHmmss'Z'`, the form the string to sign carries.
    public var amzDate: String {
        let days = Int(secondsSince1970.quotient(86_400))
        let rest = Int(secondsSince1970 - Int64(days) * 86_400)
        let (year, month, day) = Self.civilFromDays(days)
        return Self.pad(year, 4) + Self.pad(month, 2) + Self.pad(day, 2) + "T"
            + Self.pad(rest / 3600, 2) + Self.pad(rest / 60 % 60, 2) + Self.pad(rest % 60, 2) + "Z"
    }

    /// `yyyyMMdd`, the credential scope's date.
    public var scopeDate: String { String(amzDate.prefix(8)) }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        guard !digits.isEmpty, digits.count <= 9 else { return nil }
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    // Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Int64 {
    /// Floor division (the time is never before 1970 in practice, but stay correct).
    fileprivate func quotient(_ divisor: Int64) -> Int64 {
        let q = self / divisor
        return (self % divisor < 0) ? q - 1 : q
    }
}
