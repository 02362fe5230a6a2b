/// A point or span on a media timeline: integer ticks in a rational time base.
public struct MediaTime: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var ticks: Int64
    public let timeBase: Rational

    public init(ticks: Int64, timeBase: Rational) {
        self.ticks = ticks
        self.timeBase = timeBase
    }

    /// Microsecond time base, the stage clock's unit.
    public static let microseconds = Rational(1, 1_000_000)
    public static let milliseconds = Rational(1, 1_000)

    public static func microseconds(_ value: Int64) -> MediaTime { MediaTime(ticks: value, timeBase: microseconds) }
    public static func milliseconds(_ value: Int64) -> MediaTime {
        MediaTime(ticks: value * 1000, timeBase: microseconds)
    }
    public static func seconds(_ value: Int64) -> MediaTime {
        MediaTime(ticks: value * 1_000_000, timeBase: microseconds)
    }
    public static let zero = MediaTime(ticks: 0, timeBase: microseconds)

    /// The same instant in another time base (rounded to nearest).
    public func converted(to base: Rational) -> MediaTime {
        base == timeBase ? self : MediaTime(ticks: timeBase.rescale(ticks, to: base), timeBase: base)
    }

    public var microsecondsValue: Int64 { timeBase.rescale(ticks, to: MediaTime.microseconds) }
    public var millisecondsValue: Int64 { timeBase.rescale(ticks, to: MediaTime.milliseconds) }

    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool {
        lhs.timeBase == rhs.timeBase ? lhs.ticks < rhs.ticks : lhs.microsecondsValue < rhs.microsecondsValue
    }
    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        MediaTime(ticks: lhs.ticks + rhs.converted(to: lhs.timeBase).ticks, timeBase: lhs.timeBase)
    }
    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        MediaTime(ticks: lhs.ticks - rhs.converted(to: lhs.timeBase).ticks, timeBase: lhs.timeBase)
    }

    /// "12.345s" for logs and progress lines.
    public var description: String {
        let us = microsecondsValue
        let sign = us < 0 ? "-" : ""
        let m = abs(us)
        let ms = (m % 1_000_000) / 1000
        return "\(sign)\(m / 1_000_000).\(String(repeating: "0", count: ms < 10 ? 2 : ms < 100 ? 1 : 0))\(ms)s"
    }
}
