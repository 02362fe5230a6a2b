// Exact decimal rendering of integer media times, so playlists never carry float error.
import MediaCore

extension MediaTime {
    /// The time in whole milliseconds, rounded to nearest (halves away from zero).
    var roundedMilliseconds: Int64 { timeBase.rescale(ticks, to: MediaTime.milliseconds) }
}

enum DecimalText {
    /// "2.000", "0.033", "-1.500": `thousandths` / 1000 with exactly three decimals.
    static func thousandths(_ value: Int64) -> String {
        let sign = value < 0 ? "-" : ""
        let magnitude = value.magnitude
        let fraction = String(magnitude % 1000)
        return "\(sign)\(magnitude / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }

    /// A rational rendered with three decimals, rounded to nearest: 30000/1001 -> "29.970".
    static func threeDecimals(_ value: Rational) -> String {
        thousandths(value.rescale(1, to: Rational(1, 1000)))
    }
}
