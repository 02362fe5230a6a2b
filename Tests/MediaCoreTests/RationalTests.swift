import Testing
@testable import MediaCore

@Suite struct RationalTests {
    @Test func reducesAndNormalisesSign() {
        #expect(Rational(2, -4) == Rational(-1, 2))
        #expect(Rational(30000, 1001).description == "30000/1001")
    }

    @Test func rescalesWithRounding() {
        // 1 frame at 30 fps in 90 kHz.
        #expect(Rational(1, 30).rescale(1, to: Rational(1, 90_000)) == 3000)
        // 1/3 s in ms rounds to nearest.
        #expect(Rational(1, 3).rescale(1, to: Rational(1, 1000)) == 333)
        #expect(Rational(2, 3).rescale(1, to: Rational(1, 1000)) == 667)
        #expect(Rational(2, 3).rescale(-1, to: Rational(1, 1000)) == -667)
        // Large values do not overflow.
        #expect(Rational(1, 90_000).rescale(Int64(1) << 50, to: Rational(1, 1_000_000)) == 12_509_998_964_918_044)
    }

    @Test func rescaleDownFloors() {
        #expect(Rational(1, 30).rescaleDown(1, to: Rational(1, 48_000)) == 1600)
        #expect(Rational(1, 48_000).rescaleDown(1023, to: Rational(1, 30)) == 0)
        #expect(Rational(1, 48_000).rescaleDown(-1, to: Rational(1, 30)) == -1)
    }

    @Test func mediaTimeComparesAcrossBases() {
        let a = MediaTime(ticks: 3000, timeBase: Rational(1, 90_000))
        #expect(a.microsecondsValue == 33_333)
        #expect(MediaTime.milliseconds(34) > a)
        #expect(MediaTime.milliseconds(1500).description == "1.500s")
    }

    @Test func manualClockOnlyMovesForward() async throws {
        let clock = ManualMediaClock()
        try await clock.sleep(until: .seconds(5))
        #expect(clock.now() == .seconds(5))
        clock.advance(to: .seconds(1))
        #expect(clock.now() == .seconds(5))
    }
}
