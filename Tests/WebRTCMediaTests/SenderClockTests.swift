// NTP time, and RTP timestamps mapped onto the sender's wall clock.
@testable import WebRTCMedia
import TestSupport
import Testing

struct NTPTimeTests {
    /// 2020-01-01T00:00:00.5Z: NTP seconds 3 786 825 600 (0xE1B65F80), fraction one half.
    static let ntp: UInt64 = 0xE1B6_5F80_8000_0000
    static let unix: Int64 = 1_577_836_800_500_000

    @Test("NTP ↔ Unix microseconds, both ways")
    func conversions() {
        #expect(NTPTime.unixMicroseconds(fromNTP: Self.ntp) == Self.unix)
        #expect(NTPTime.ntp(fromUnixMicroseconds: Self.unix) == Self.ntp)
        #expect(NTPTime.compact(Self.ntp) == 0x5F80_8000)
        #expect(NTPTime.unixMicroseconds(fromNTP: 0) == -2_208_988_800_000_000)
        // Before 1970: the fraction stays positive.
        #expect(NTPTime.ntp(fromUnixMicroseconds: -1) == UInt64(2_208_988_799) << 32 | 0xFFFF_EF39)
    }

    @Test("a round trip through NTP is exact to the microsecond (NTP era 0: 1900–2036)", arguments: [UInt64(11), 12])
    func roundTrip(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<2000 {
            let micros = Int64.random(in: -2_208_988_800_000_000...2_085_978_495_000_000, using: &generator)
            #expect(NTPTime.unixMicroseconds(fromNTP: NTPTime.ntp(fromUnixMicroseconds: micros)) == micros)
        }
    }
}

struct SenderClockTests {
    @Test("before any SR, the first packet anchors a provisional mapping on its arrival")
    func provisional() {
        var clock = SenderClock(clockRate: 90_000)
        #expect(clock.wallClock(forTimestamp: 0) == nil)
        #expect(clock.senderReport(ntpTime: NTPTimeTests.ntp, rtpTimestamp: 0) == nil)  // no packet yet: ignored
        let change = clock.packetArrived(timestamp: 1000, now: 5_000_000)
        #expect(change?.mapping == SenderClockMapping(anchorTimestamp: 1000, anchorWallClock: 5_000_000, source: .arrival))
        #expect(clock.packetArrived(timestamp: 4000, now: 5_040_000) == nil)
        #expect(clock.wallClock(forTimestamp: 1000 + 90_000) == 6_000_000)
        #expect(clock.wallClock(forTimestamp: 1000 - 45_000) == 4_500_000)
    }

    @Test("until a report comes, the provisional mapping follows the least-delayed packet (a first burst waited at the sender)")
    func provisionalFollowsTheLeastDelayed() {
        var clock = SenderClock(clockRate: 48_000)
        // Ten 20 ms packets captured before the connection was up arrive at once at 1 s, then
        // packets come 20 ms apart, 5 ms after capture, with some jitter.
        for index in 0..<10 { _ = clock.packetArrived(timestamp: Int64(index) * 960, now: 1_000_000) }
        #expect(clock.wallClock(forTimestamp: 9 * 960) == 1_000_000)
        for index in 10..<20 {
            let jitter: Int64 = index % 3 == 0 ? 4_000 : 0
            _ = clock.packetArrived(timestamp: Int64(index) * 960, now: 1_000_000 + Int64(index - 9) * 20_000 + jitter)
        }
        // Packet 10 was the first on time: the mapping is anchored on it, not on the burst.
        #expect(clock.wallClock(forTimestamp: 10 * 960) == 1_020_000)
        // A sender-based mapping stays put whatever the arrivals.
        _ = clock.senderReport(ntpTime: NTPTimeTests.ntp, rtpTimestamp: 20 * 960)
        _ = clock.packetArrived(timestamp: 21 * 960, now: 0)
        #expect(clock.wallClock(forTimestamp: 20 * 960) == NTPTimeTests.unix)
    }

    @Test("the first SR replaces it, and says how far the mapping moved")
    func firstSenderReport() throws {
        var clock = SenderClock(clockRate: 90_000)
        _ = clock.packetArrived(timestamp: 1000, now: 5_000_000)
        // SR: RTP 91 000 (1 s after the anchor) is 2020-01-01T00:00:00.5Z.
        let update = clock.senderReport(ntpTime: NTPTimeTests.ntp, rtpTimestamp: 91_000)
        let change = try #require(update)
        #expect(change.becameSenderBased)
        #expect(change.mapping.source == .senderReport)
        #expect(change.shift == NTPTimeTests.unix - 1_000_000 - 5_000_000)
        #expect(clock.wallClock(forTimestamp: 91_000 + 9000) == NTPTimeTests.unix + 100_000)
        #expect(clock.senderReportsUsed == 1)
    }

    @Test("later SRs: drift is followed (the second report weighs a half), a step of the sender's clock at once")
    func laterReports() {
        var clock = SenderClock(clockRate: 48_000, resyncThreshold: 100_000)
        _ = clock.packetArrived(timestamp: 0, now: 0)
        _ = clock.senderReport(ntpTime: NTPTimeTests.ntp, rtpTimestamp: 0)
        // One second later by both clocks, plus 800 µs of drift: half of it is taken.
        let drifted = NTPTime.ntp(fromUnixMicroseconds: NTPTimeTests.unix + 1_000_800)
        #expect(clock.senderReport(ntpTime: drifted, rtpTimestamp: 48_000) == nil)
        #expect(clock.wallClock(forTimestamp: 48_000) == NTPTimeTests.unix + 1_000_400)
        // The sender's wall clock was stepped by 2 s.
        let stepped = NTPTime.ntp(fromUnixMicroseconds: NTPTimeTests.unix + 4_000_000)
        let change = clock.senderReport(ntpTime: stepped, rtpTimestamp: 96_000)
        #expect(change?.shift == 1_999_600)
        #expect(change?.becameSenderBased == false)
        #expect(clock.wallClock(forTimestamp: 96_000) == NTPTimeTests.unix + 4_000_000)
    }

    @Test("a first report stamped late is averaged away with the next ones (1/n), then an eighth of each is taken")
    func firstReportsAveraged() {
        var clock = SenderClock(clockRate: 90_000)
        _ = clock.packetArrived(timestamp: 0, now: 0)
        // The first SR is 8 ms late (a sender starting up); the others are exact.
        var errors: [Int64] = []
        for second in 0..<10 {
            let truth = NTPTimeTests.unix + Int64(second) * 1_000_000
            let stamped = second == 0 ? truth + 8_000 : truth
            _ = clock.senderReport(ntpTime: NTPTime.ntp(fromUnixMicroseconds: stamped), rtpTimestamp: Int64(second) * 90_000)
            errors.append((clock.wallClock(forTimestamp: Int64(second) * 90_000) ?? 0) - truth)
        }
        // After n reports the error is 8 ms / n (an eighth at a time from the start would leave
        // 5.4 ms after four); from the ninth, an eighth of it goes each time.
        // (whole microseconds: within a few of it).
        #expect(errors[..<8].enumerated().allSatisfy { abs($0.element - 8_000 / Int64($0.offset + 1)) <= 5 }, "\(errors)")
        #expect(errors[8] == errors[7] - errors[7] / 8 && errors[9] == errors[8] - errors[8] / 8, "\(errors)")
    }

    @Test("a steady drift is tracked and the jitter of report times is smoothed")
    func driftAndJitter() {
        // The sender's RTP clock runs 200 ppm slow against its NTP clock; each SR is stamped
        // up to ±8 ms late or early (seeded). After a minute of SRs every second, the mapping
        // stays within 6 ms of the truth (taking each SR as it is would be off by up to 8 ms)
        // and within 2 ms on average.
        var clock = SenderClock(clockRate: 48_000)
        var random = SeededGenerator(seed: 5)
        _ = clock.packetArrived(timestamp: 0, now: 0)
        var worst: Int64 = 0, total: Int64 = 0
        for second in 0...600 {
            let rtp = Int64(second) * 48_000
            let truth = NTPTimeTests.unix + Int64(second) * 1_000_200
            let jitter = Int64.random(in: -8_000...8_000, using: &random)
            _ = clock.senderReport(ntpTime: NTPTime.ntp(fromUnixMicroseconds: truth + jitter), rtpTimestamp: rtp)
            if second > 60, let mapped = clock.wallClock(forTimestamp: rtp) {
                worst = max(worst, abs(mapped - truth))
                total += abs(mapped - truth)
            }
        }
        #expect(worst < 6_000, "worst error \(worst) µs")
        #expect(total / 540 < 2_000, "mean error \(total / 540) µs")
    }

    @Test("audio and video of one publisher land on one timeline through their SRs")
    func lipSync() {
        // Random RTP origins; the same capture instant T = unix + 3 s on both.
        var audio = SenderClock(clockRate: 48_000)
        var video = SenderClock(clockRate: 90_000)
        var audioTimestamps = TimestampUnwrapper()
        var videoTimestamps = TimestampUnwrapper()
        let audioOrigin: UInt32 = 4_294_000_000, videoOrigin: UInt32 = 123_456
        _ = audio.packetArrived(timestamp: audioTimestamps.unwrap(audioOrigin), now: 10)
        _ = video.packetArrived(timestamp: videoTimestamps.unwrap(videoOrigin), now: 20)
        // SRs at unix + 1 s (audio) and unix + 1.5 s (video), each from its own origin.
        let audioSR = audioOrigin &+ 48_000
        let videoSR = videoOrigin &+ 135_000
        _ = audio.senderReport(ntpTime: NTPTime.ntp(fromUnixMicroseconds: NTPTimeTests.unix + 1_000_000),
                               rtpTimestamp: audioTimestamps.peek(audioSR))
        _ = video.senderReport(ntpTime: NTPTime.ntp(fromUnixMicroseconds: NTPTimeTests.unix + 1_500_000),
                               rtpTimestamp: videoTimestamps.peek(videoSR))
        // At T the audio clock reads origin + 3 × 48 000 (past 2^32), the video one origin + 3 × 90 000.
        let audioAtT = audio.wallClock(forTimestamp: audioTimestamps.unwrap(audioOrigin &+ 144_000))
        let videoAtT = video.wallClock(forTimestamp: videoTimestamps.unwrap(videoOrigin &+ 270_000))
        #expect(audioAtT == NTPTimeTests.unix + 3_000_000)
        #expect(videoAtT == NTPTimeTests.unix + 3_000_000)
    }

    @Test("capture times replace any other mapping and are followed as they come; SRs are then ignored")
    func captureTimes() throws {
        var clock = SenderClock(clockRate: 48_000)
        _ = clock.packetArrived(timestamp: 0, now: 0)
        // An SR 20 ms late (libwebrtc's audio), then the packet's capture time.
        _ = clock.senderReport(ntpTime: NTPTime.ntp(fromUnixMicroseconds: NTPTimeTests.unix + 20_000), rtpTimestamp: 0)
        let update = clock.captureTime(ntpTime: NTPTimeTests.ntp, rtpTimestamp: 960)
        let change = try #require(update)
        #expect(change.mapping == SenderClockMapping(anchorTimestamp: 960, anchorWallClock: NTPTimeTests.unix, source: .captureTime))
        #expect(change.shift == -40_000)
        #expect(change.previousSource == .senderReport && !change.becameSenderBased)
        // Later SRs change nothing; later capture times are followed as they are, unsmoothed:
        // a clock 0.8 ms fast, then a microphone that skipped a 10 ms buffer, then three more.
        #expect(clock.senderReport(ntpTime: NTPTime.ntp(fromUnixMicroseconds: NTPTimeTests.unix + 500_000), rtpTimestamp: 960) == nil)
        #expect(clock.wallClock(forTimestamp: 960) == NTPTimeTests.unix)
        #expect(clock.captureTime(ntpTime: NTPTime.ntp(fromUnixMicroseconds: NTPTimeTests.unix + 1_000_800), rtpTimestamp: 48_960) == nil)
        #expect(clock.wallClock(forTimestamp: 48_960) == NTPTimeTests.unix + 1_000_800)
        #expect(clock.captureTime(ntpTime: NTPTime.ntp(fromUnixMicroseconds: NTPTimeTests.unix + 1_030_800), rtpTimestamp: 49_920) == nil)
        #expect(clock.wallClock(forTimestamp: 49_920) == NTPTimeTests.unix + 1_030_800)
        #expect(clock.captureTime(ntpTime: NTPTime.ntp(fromUnixMicroseconds: NTPTimeTests.unix + 1_080_800), rtpTimestamp: 50_880) == nil)
        #expect(clock.wallClock(forTimestamp: 50_880) == NTPTimeTests.unix + 1_080_800)
        #expect(clock.wallClock(forTimestamp: 51_840) == NTPTimeTests.unix + 1_100_800)
        #expect(clock.senderReportsUsed == 1 && clock.captureTimesUsed == 4)
        // Straight from the arrival mapping, a capture time makes the stream sender-based.
        var fresh = SenderClock(clockRate: 90_000)
        #expect(fresh.captureTime(ntpTime: NTPTimeTests.ntp, rtpTimestamp: 0) == nil)  // no packet yet
        _ = fresh.packetArrived(timestamp: 0, now: 7)
        let firstUpdate = fresh.captureTime(ntpTime: NTPTimeTests.ntp, rtpTimestamp: 0)
        let first = try #require(firstUpdate)
        #expect(first.becameSenderBased && first.previousSource == .arrival && first.shift == NTPTimeTests.unix - 7)
    }
}

extension SenderClockTests {
    @Test("RTP timestamps alternating by 2^31 (a hostile sender) re-anchor the clock and never trap, for millions of packets")
    func hostileTimestamps() {
        var unwrapper = TimestampUnwrapper()
        var clock = SenderClock(clockRate: 90_000)
        var now: Int64 = 1_000_000
        for index in 0..<3_000_000 {
            let timestamp = unwrapper.unwrap(index % 2 == 0 ? 0 : 0x8000_0000)
            _ = clock.packetArrived(timestamp: timestamp, now: now)
            _ = clock.senderReport(ntpTime: NTPTimeTests.ntp, rtpTimestamp: timestamp)
            let wall = clock.wallClock(forTimestamp: timestamp)
            // Each packet maps within an hour of its arrival or of the sender's reported clock.
            let hour: Int64 = 3_600_000_000
            let sane = wall.map { ($0 > now - hour && $0 < now + hour) || ($0 > NTPTimeTests.unix - hour && $0 < NTPTimeTests.unix + hour) }
            if index % 100_000 == 0 { #expect(sane ?? false, "packet \(index) mapped to \(String(describing: wall))") }
            now += 10
        }
        #expect(clock.discontinuities > 2_000_000)
    }

    @Test("mapping a timestamp beyond Int64 saturates instead of trapping")
    func saturation() {
        let mapping = SenderClockMapping(anchorTimestamp: 0, anchorWallClock: 0, source: .arrival)
        #expect(mapping.wallClock(forTimestamp: .max, clockRate: 90_000) == .max)
        #expect(mapping.wallClock(forTimestamp: .min, clockRate: 90_000) == .min)
        let far = SenderClockMapping(anchorTimestamp: .min, anchorWallClock: .max - 5, source: .arrival)
        #expect(far.wallClock(forTimestamp: .max, clockRate: 1) == .max)
        #expect(mapping.wallClock(forTimestamp: 90_000, clockRate: 90_000) == 1_000_000)
    }
}

struct AbsoluteCaptureTimeTests {
    @Test("8 bytes: the capture time; 16: plus the clock offset, added; other lengths are not the extension")
    func parsing() throws {
        let short = try #require(AbsoluteCaptureTime(data: [0xE1, 0xB6, 0x5F, 0x80, 0x80, 0, 0, 0]))
        #expect(short == AbsoluteCaptureTime(captureTimestamp: NTPTimeTests.ntp))
        #expect(short.senderNTPTime == NTPTimeTests.ntp)
        #expect(short.serialized == [0xE1, 0xB6, 0x5F, 0x80, 0x80, 0, 0, 0])
        // Offset -0.25 s (Q32.32): the sender's clock reads a quarter second less.
        let offset: Int64 = -(1 << 30)
        let long = try #require(AbsoluteCaptureTime(data: short.serialized + (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: offset) >> (56 - 8 * $0)) }))
        #expect(long.estimatedCaptureClockOffset == offset)
        #expect(NTPTime.unixMicroseconds(fromNTP: long.senderNTPTime) == NTPTimeTests.unix - 250_000)
        #expect(AbsoluteCaptureTime(data: long.serialized) == long)
        for count in [0, 7, 9, 15, 17] { #expect(AbsoluteCaptureTime(data: Array(repeating: 1, count: count)) == nil) }
    }
}
