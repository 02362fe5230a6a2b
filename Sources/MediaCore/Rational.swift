/// An exact rational number, used for time bases and frame rates. Time is never a `Double`.
public struct Rational: Hashable, Sendable, CustomStringConvertible {
    public let numerator: Int64
    public let denominator: Int64

    public init(_ numerator: Int64, _ denominator: Int64) {
        precondition(denominator != 0, "Rational with zero denominator")
        let sign: Int64 = denominator < 0 ? -1 : 1
        let divisor = Rational.gcd(abs(numerator), abs(denominator))
        self.numerator = sign * numerator / Swift.max(divisor, 1)
        self.denominator = sign * denominator / Swift.max(divisor, 1)
    }

    public var inverted: Rational { Rational(denominator, numerator) }
    public var description: String { "\(numerator)/\(denominator)" }

    /// Rescales `value` expressed in `self` units into `target` units, rounding to nearest
    /// (halves away from zero), with 128-bit intermediates so it cannot overflow for media times.
    public func rescale(_ value: Int64, to target: Rational) -> Int64 {
        // value * self / target = value * (sn * td) / (sd * tn)
        let num = (self.numerator.multipliedFullWidth(by: target.denominator))
        let den = (self.denominator.multipliedFullWidth(by: target.numerator))
        return Rational.mulDivRound(value, Int128(num), Int128(den))
    }

    /// floor(value * self / target).
    public func rescaleDown(_ value: Int64, to target: Rational) -> Int64 {
        let num = Int128(self.numerator) * Int128(target.denominator)
        let den = Int128(self.denominator) * Int128(target.numerator)
        let product = Int128(value) * num
        var quotient = product / den
        if (product % den != 0) && ((product < 0) != (den < 0)) { quotient -= 1 }
        return Int64(quotient)
    }

    static func mulDivRound(_ value: Int64, _ num: Int128, _ den: Int128) -> Int64 {
        let product = Int128(value) * num
        let half = abs(den) / 2
        let adjusted = (product < 0) != (den < 0) ? product - half : product + half
        return Int64(adjusted / den)
    }

    static func gcd(_ a: Int64, _ b: Int64) -> Int64 {
        var (x, y) = (a, b)
        while y != 0 { (x, y) = (y, x % y) }
        return x
    }
}

extension Int128 {
    init(_ wide: (high: Int64, low: UInt64)) {
        self = (Int128(wide.high) << 64) | Int128(wide.low)
    }
}
