// 64-bit NTP timestamps (seconds since 1900 . 32-bit fraction) and microseconds since the
// Unix epoch, the one wall-clock unit of this module.

public enum NTPTime {
    /// Seconds from 1900-01-01 (NTP era 0) to 1970-01-01.
    public static let unixEpochOffsetSeconds: Int64 = 2_208_988_800

    /// Microseconds since the Unix epoch (negative before 1970), fraction rounded to nearest.
    public static func unixMicroseconds(fromNTP ntp: UInt64) -> Int64 {
        let seconds = Int64(ntp >> 32) - unixEpochOffsetSeconds
        let fraction = (ntp & 0xFFFF_FFFF) * 1_000_000 + (1 << 31)
        return seconds * 1_000_000 + Int64(fraction >> 32)
    }

    /// The NTP timestamp of `microseconds` since the Unix epoch (era 0; wraps in 2036 as NTP does).
    public static func ntp(fromUnixMicroseconds microseconds: Int64) -> UInt64 {
        let total = microseconds + unixEpochOffsetSeconds * 1_000_000
        let seconds = total.quotientAndRemainder(dividingBy: 1_000_000)
        var whole = seconds.quotient
        var remainder = seconds.remainder
        if remainder < 0 { whole -= 1; remainder += 1_000_000 }
        let fraction = (UInt64(remainder) << 32 + 500_000) / 1_000_000
        return UInt64(truncatingIfNeeded: whole) << 32 &+ fraction
    }

    /// Middle 32 bits (16.16 seconds), as RTCP report blocks echo them.
    public static func compact(_ ntp: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: ntp >> 16) }
}
