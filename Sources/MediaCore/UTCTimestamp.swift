/// Whole-second UTC timestamps as "2023-11-01T06:01:36Z" (API responses, events, recording
/// metadata all use this form), with integer civil-date arithmetic: no formatter, no locale.
public enum UTCTimestamp {
    /// "YYYY-MM-DDTHH:MM:SSZ" for seconds since 1970-01-01T00:00:00Z.
    public static func format(secondsSince1970 seconds: Int64) -> String {
        let days = Int64.floorDivide(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilDate.fromDays(days)
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))Z"
    }

    /// "YYYY-MM-DDTHH:MM:SS.mmmZ" for milliseconds since 1970 (HLS EXT-X-PROGRAM-DATE-TIME).
    public static func format(millisecondsSince1970 milliseconds: Int64) -> String {
        let seconds = Int64.floorDivide(milliseconds, 1000)
        let text = format(secondsSince1970: seconds)
        return text.dropLast() + "." + pad(milliseconds &- seconds &* 1000, 3) + "Z"   // 0...999
    }

    /// Milliseconds since 1970 of an RFC 3339 date-time ("2026-11-26T11:53:37.123Z",
    /// "...T11:53:37+01:00", any number of fraction digits, truncated to milliseconds), or
    /// nil for anything else. Years 0...9999; never traps on what it is given.
    public static func parseMilliseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 64 else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= 48, byte <= 57 else { return nil }
                value = value &* 10 &+ Int64(byte &- 48)   // at most 4 digits
            }
            return value
        }
        guard bytes[4] == 45, bytes[7] == 45, bytes[10] == 84 || bytes[10] == 116, bytes[13] == 58, bytes[16] == 58,
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...daysInMonth(year, month)).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var millis: Int64 = 0
        if bytes[index] == 46 {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if digits < 3 { millis = millis &* 10 &+ Int64(bytes[index] &- 48) }   // at most 3 digits
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { millis *= 10 }
        }
        guard index < bytes.count else { return nil }
        var zoneSeconds: Int64 = 0
        if bytes[index] == 90 || bytes[index] == 122 {
            index += 1
        } else if bytes[index] == 43 || bytes[index] == 45, index + 6 == bytes.count, bytes[index + 3] == 58,
                  let zoneHour = number(index + 1..<index + 3), let zoneMinute = number(index + 4..<index + 6),
                  zoneHour < 24, zoneMinute < 60 {
            zoneSeconds = (zoneHour * 3600 + zoneMinute * 60) * (bytes[index] == 43 ? 1 : -1)
            index += 6
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = CivilDate.toDays(year, month, day)
        // Years 0...9999: about 3.2e14 ms at most, far inside Int64.
        return ((days &* 86_400 &+ hour &* 3600 &+ minute &* 60 &+ min(second, 59)) &- zoneSeconds) &* 1000 &+ millis
    }

    private static func daysInMonth(_ year: Int64, _ month: Int64) -> Int64 { CivilDate.daysInMonth(year, month) }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}

/// Proleptic Gregorian calendar arithmetic (Howard Hinnant's days-from-civil algorithms).
public enum CivilDate {
    /// Days since 1970-01-01 of a (year, month 1...12, day) date.
    public static func toDays(_ year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = Int64.floorDivide(y, 400)
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// (year, month, day) of a count of days since 1970-01-01.
    public static func fromDays(_ days: Int64) -> (Int64, Int64, Int64) {
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

    public static func daysInMonth(_ year: Int64, _ month: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

extension Int64 {
    /// Division rounding toward negative infinity.
    public static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }
}
