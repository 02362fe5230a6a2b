// The NACK generator on its own: scheduling, retries, give-up paths, wrap.
@testable import WebRTCMedia
import Testing

struct NackGeneratorTests {
    @Test("a gap is NACKed at once, then every RTT until it arrives")
    func retries() {
        var nack = NackGenerator()
        #expect(nack.received(seq: 100, now: 0) == .advanced(newlyMissing: 0))
        #expect(nack.received(seq: 103, now: 10_000) == .advanced(newlyMissing: 2))
        #expect(nack.nextDeadline == 10_000)
        #expect(nack.poll(now: 10_000) == NackOutput(nacks: [101, 102]))
        #expect(nack.poll(now: 109_999).isEmpty)
        #expect(nack.nextDeadline == 110_000)
        #expect(nack.poll(now: 110_000) == NackOutput(nacks: [101, 102]))
        #expect(nack.received(seq: 101, now: 120_000, isRetransmission: true) == .filledGap(wasRequested: true))
        #expect(nack.poll(now: 210_000) == NackOutput(nacks: [102]))
        #expect(nack.recoveredByNack == 1)
        #expect(nack.sequenceNumbersRequested == 5)
    }

    @Test("the RTT estimate spaces retries, never below the minimum")
    func rttSpacing() {
        var nack = NackGenerator(configuration: .init(minRetryInterval: 50_000))
        _ = nack.received(seq: 1, now: 0)
        _ = nack.received(seq: 3, now: 0)
        _ = nack.poll(now: 0)
        nack.updateRTT(200_000)
        #expect(nack.nextDeadline == 200_000)
        nack.updateRTT(10_000)
        #expect(nack.nextDeadline == 50_000)
    }

    @Test("the RTT is measured from retransmissions answering a single request: retries follow it, within the minimum")
    func measuredRTT() {
        var nack = NackGenerator(configuration: .init(minRetryInterval: 20_000, initialRTT: 100_000))
        _ = nack.received(seq: 1, now: 0)
        _ = nack.received(seq: 3, now: 0)
        #expect(nack.poll(now: 0) == NackOutput(nacks: [2]))
        // Before any measurement, the initial RTT spaces the retries.
        #expect(nack.nextDeadline == 100_000)
        #expect(nack.received(seq: 2, now: 8_000, isRetransmission: true) == .filledGap(wasRequested: true))
        // 8 ms, deviation 4 ms: 8 + 4 × 4 = 24 ms.
        #expect(nack.measuredRTT == 8_000)
        _ = nack.received(seq: 5, now: 50_000)
        #expect(nack.poll(now: 50_000) == NackOutput(nacks: [4]))
        #expect(nack.nextDeadline == 74_000)
        // Asked for twice: the answer could be to either request, so it is not measured (Karn).
        #expect(nack.poll(now: 74_000) == NackOutput(nacks: [4]))
        _ = nack.received(seq: 4, now: 75_000, isRetransmission: true)
        #expect(nack.rttSamples == 1)
        #expect(nack.measuredRTT == 8_000)
        // A tiny RTT: retries no closer than the minimum.
        for step in Int64(1)...35 {
            let now = 100_000 + step * 10_000
            _ = nack.received(seq: 5 + 2 * step, now: now)
            #expect(nack.poll(now: now) == NackOutput(nacks: [UInt16(4 + 2 * step)]))
            _ = nack.received(seq: 4 + 2 * step, now: now + 500, isRetransmission: true)
        }
        #expect(nack.rttSamples == 36)
        #expect(nack.measuredRTT.map { $0 < 2_000 } == true)
        _ = nack.received(seq: 77, now: 1_000_000)
        #expect(nack.poll(now: 1_000_000) == NackOutput(nacks: [76]))
        #expect(nack.nextDeadline == 1_020_000)
    }

    @Test("an initial delay lets plain reordering settle without a NACK")
    func initialDelay() {
        var nack = NackGenerator(configuration: .init(initialDelay: 20_000))
        _ = nack.received(seq: 1, now: 0)
        _ = nack.received(seq: 3, now: 0)
        #expect(nack.poll(now: 10_000).isEmpty)
        #expect(nack.received(seq: 2, now: 15_000) == .filledGap(wasRequested: false))
        #expect(nack.poll(now: 30_000).isEmpty)
        #expect(nack.lateArrivals == 1)
        #expect(nack.sequenceNumbersRequested == 0)
    }

    @Test("after maxRetries a number is given up and a keyframe asked for")
    func retriesExhausted() {
        var nack = NackGenerator(configuration: .init(maxRetries: 3, minRetryInterval: 100_000, maxAge: 10_000_000))
        _ = nack.received(seq: 1, now: 0)
        _ = nack.received(seq: 3, now: 0)
        var sent = 0
        var now: Int64 = 0
        var last = NackOutput()
        while now <= 1_000_000 {
            let output = nack.poll(now: now)
            sent += output.nacks.count
            if !output.isEmpty { last = output }
            now += 50_000
        }
        #expect(sent == 3)
        #expect(last == NackOutput(nacks: [], gaveUp: [2...2], keyframeNeeded: true))
        #expect(nack.missingCount == 0)
        #expect(nack.givenUp == 1)
        #expect(nack.keyframesRequested == 1)
        #expect(nack.nextDeadline == nil)
        // A retransmission after giving up is spurious.
        #expect(nack.received(seq: 2, now: now, isRetransmission: true) == .unexpected)
        #expect(nack.spuriousRetransmissions == 1)
    }

    @Test("a number missing longer than maxAge is given up even with retries left")
    func maxAge() {
        var nack = NackGenerator(configuration: .init(maxRetries: 100, minRetryInterval: 300_000, maxAge: 1_000_000))
        _ = nack.received(seq: 1, now: 0)
        _ = nack.received(seq: 3, now: 0)
        #expect(nack.poll(now: 0).nacks == [2])
        #expect(nack.poll(now: 900_000).nacks == [2])
        #expect(nack.nextDeadline == 1_000_000)
        #expect(nack.poll(now: 1_000_000) == NackOutput(gaveUp: [2...2], keyframeNeeded: true))
    }

    @Test("too many missing at once: all given up, keyframe requested")
    func listOverflow() {
        var nack = NackGenerator(configuration: .init(maxMissing: 100))
        _ = nack.received(seq: 0, now: 0)
        #expect(nack.received(seq: 50, now: 0) == .advanced(newlyMissing: 49))
        #expect(nack.received(seq: 102, now: 0) == .advanced(newlyMissing: 51))  // 100 missing: still fine
        #expect(nack.received(seq: 104, now: 0) == .advanced(newlyMissing: 0))  // 101 > 100
        #expect(nack.missingCount == 0)
        #expect(nack.poll(now: 0) == NackOutput(gaveUp: [1...49, 51...101, 103...103], keyframeNeeded: true))
        // A single huge gap is given up as one range, without listing it.
        #expect(nack.received(seq: 5000, now: 0) == .advanced(newlyMissing: 0))
        #expect(nack.poll(now: 0) == NackOutput(gaveUp: [105...4999], keyframeNeeded: true))
    }

    @Test("numbers far behind the highest are given up")
    func sequenceAge() {
        var nack = NackGenerator(configuration: .init(maxSequenceAge: 100, maxMissing: 1000))
        _ = nack.received(seq: 0, now: 0)
        _ = nack.received(seq: 2, now: 0)
        _ = nack.received(seq: 101, now: 0)  // 1 is still within 100
        #expect(nack.missingCount == 99)
        _ = nack.received(seq: 102, now: 0)
        #expect(nack.missingSequences.first == 3)
        #expect(nack.poll(now: 0).gaveUp == [1...1])
    }

    @Test("a keyframe clears older numbers without asking for another")
    func keyframeClears() {
        var nack = NackGenerator()
        _ = nack.received(seq: 0, now: 0)
        _ = nack.received(seq: 10, now: 0)
        _ = nack.received(seq: 20, now: 0)  // the keyframe's first packet
        _ = nack.received(seq: 25, now: 0)
        nack.keyframeReceived(startingAt: 20)
        #expect(nack.missingSequences == Array(21...24))
        let output = nack.poll(now: 0)
        #expect(output.gaveUp == [1...9, 11...19])
        #expect(!output.keyframeNeeded)
        #expect(output.nacks == [21, 22, 23, 24])
    }

    @Test("NACKs across 65535 → 0 carry the 16-bit numbers, packed into one pair")
    func wrap() {
        var unwrapper = SequenceUnwrapper()
        var nack = NackGenerator()
        for seq: UInt16 in [65532, 65533, 2, 3] {
            _ = nack.received(seq: unwrapper.unwrap(seq).extended!, now: 0)
        }
        let output = nack.poll(now: 0)
        #expect(output.nacks == [65534, 65535, 0, 1])
        #expect(NackPacker.pack(output.nacks) == [.init(packetID: 65534, lostBitmask: 0b111)])
        #expect(nack.received(seq: unwrapper.unwrap(0).extended!, now: 1, isRetransmission: true) == .filledGap(wasRequested: true))
        #expect(nack.missingSequences == [65534, 65535, 65537])
    }

    @Test("duplicates and reset")
    func duplicatesAndReset() {
        var nack = NackGenerator()
        _ = nack.received(seq: 5, now: 0)
        #expect(nack.received(seq: 5, now: 0) == .unexpected)
        _ = nack.received(seq: 8, now: 0)
        nack.reset()
        #expect(nack.missingCount == 0)
        #expect(nack.received(seq: 1, now: 0) == .advanced(newlyMissing: 0))
        #expect(nack.poll(now: 0).isEmpty)
    }
}
