// The receive pipeline end to end in virtual time: packets go through a lossy, jittery
// network as bytes; the receiver unwraps RTX, keeps statistics, reorders, and NACKs; the
// sender answers NACKs with RTX. Seeded, so every run is the same.
@testable import WebRTCMedia
import TestSupport
import Testing

struct LossSimulationTests {
    static let mediaSSRC: UInt32 = 0x1111
    static let rtxSSRC: UInt32 = 0x2222

    /// One datagram in flight.
    enum Datagram {
        case rtp([UInt8])
        case rtcp([UInt8])
    }

    struct Network {
        var generator: SeededGenerator
        var lossPercent: Int
        /// (arrival time, order of sending, datagram, toReceiver)
        var inFlight: [(at: Int64, order: Int, datagram: Datagram, toReceiver: Bool)] = []
        var order = 0
        var dropped = 0

        mutating func send(_ datagram: Datagram, now: Int64, toReceiver: Bool, lossless: Bool = false) {
            order += 1
            if !lossless, Int.random(in: 0..<100, using: &generator) < lossPercent {
                dropped += 1
                return
            }
            let delay = 20_000 + Int64.random(in: 0...5_000, using: &generator)
            inFlight.append((now + delay, order, datagram, toReceiver))
        }

        mutating func next(before deadline: Int64) -> (at: Int64, datagram: Datagram, toReceiver: Bool)? {
            guard let index = inFlight.indices.min(by: { (inFlight[$0].at, inFlight[$0].order) < (inFlight[$1].at, inFlight[$1].order) }),
                  inFlight[index].at <= deadline
            else { return nil }
            let item = inFlight.remove(at: index)
            return (item.at, item.datagram, item.toReceiver)
        }
    }

    struct Receiver {
        var rtx = RTXUnwrapper(associations: RTXAssociations(payloadTypes: [97: 96], ssrcs: [LossSimulationTests.rtxSSRC: LossSimulationTests.mediaSSRC]))
        var stream = RTPReceiveStream(ssrc: LossSimulationTests.mediaSSRC, clockRate: 90_000)
        var nack: NackGenerator
        var reorder: ReorderBuffer<RTPPacket>
        var released: [Int64] = []
        var lost: [ClosedRange<Int64>] = []
        var keyframeNeeded = false

        mutating func receive(_ bytes: [UInt8], now: Int64) throws {
            let packet: RTPPacket
            let isRetransmission: Bool
            switch try rtx.unwrap(RTPPacket(parsing: bytes)) {
            case .media(let media): (packet, isRetransmission) = (media, false)
            case .retransmission(let original): (packet, isRetransmission) = (original, true)
            case .padding, .unknownSSRC: return
            }
            let update = stream.received(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                                         payloadBytes: packet.payload.count, now: now, isRetransmission: isRetransmission)
            guard let extended = update.extended else { return }
            _ = nack.received(seq: extended, now: now, isRetransmission: isRetransmission)
            _ = reorder.insert(packet, sequence: extended, now: now)
        }

        /// Polls everything due; returns the RTCP to send.
        mutating func poll(now: Int64) throws -> [UInt8]? {
            let output = nack.poll(now: now)
            for range in output.gaveUp {
                for sequence in range { reorder.abandon(sequence) }
            }
            if output.keyframeNeeded { keyframeNeeded = true }
            for event in reorder.poll(now: now) {
                switch event {
                case .packet(let sequence, _): released.append(sequence)
                case .lost(let range, _): lost.append(range)
                }
            }
            guard !output.nacks.isEmpty else { return nil }
            return try RTCPPacket.genericNack(RTCPGenericNack(senderSSRC: 1, mediaSSRC: LossSimulationTests.mediaSSRC,
                                                              lost: output.nacks)).serialized()
        }

        var nextDeadline: Int64? {
            [nack.nextDeadline, reorder.nextDeadline].compactMap { $0 }.min()
        }
    }

    struct Result {
        var receiver: Receiver
        var network: Network
        var originalsLost: Int
        var retransmissionsSent: Int
    }

    /// `count` packets every 2 ms from sequence 65 000 (so the numbers wrap), one-way delay
    /// 20–25 ms, `lossPercent` of every datagram lost (the first and last 5 media packets
    /// excepted: a receiver cannot know of packets before its first, nor of a gap with nothing after it). `answerNacks: false` simulates a sender without history.
    static func run(seed: UInt64, count: Int, lossPercent: Int, answerNacks: Bool = true,
                    nack: NackConfiguration, reorder: ReorderBufferConfiguration) throws -> Result {
        var network = Network(generator: SeededGenerator(seed: seed), lossPercent: lossPercent)
        var receiver = Receiver(nack: NackGenerator(configuration: nack), reorder: ReorderBuffer(configuration: reorder))
        var history: [UInt16: RTPPacket] = [:]
        var rtxSequence: UInt16 = 500
        var retransmissionsSent = 0
        var originalsLost = 0
        var now: Int64 = 0
        var sent = 0
        let end: Int64 = Int64(count) * 2000 + 3_000_000

        while now < end {
            // The next thing to happen: a send, an arrival, or a receiver deadline.
            let nextSend = sent < count ? Int64(sent) * 2000 : Int64.max
            var deadline = min(nextSend, end)
            if let receiverDeadline = receiver.nextDeadline { deadline = min(deadline, max(receiverDeadline, now)) }
            if let arrival = network.next(before: deadline) {
                now = arrival.at
                switch arrival.datagram {
                case .rtp(let bytes):
                    try receiver.receive(bytes, now: now)
                case .rtcp(let bytes):
                    for case .genericNack(let request) in try RTCPPacket.parseCompound(bytes) where answerNacks {
                        for seq in request.sequenceNumbers {
                            guard let original = history[seq] else { continue }
                            rtxSequence &+= 1
                            retransmissionsSent += 1
                            let rtx = RTXUnwrapper.wrap(original, rtxSSRC: rtxSSRC, rtxPayloadType: 97, rtxSequenceNumber: rtxSequence)
                            network.send(.rtp(try rtx.serialized()), now: now, toReceiver: true)
                        }
                    }
                }
            } else {
                now = deadline
                if now == nextSend {
                    let seq = UInt16(truncatingIfNeeded: 65_000 + sent)
                    let packet = RTPPacket(marker: true, payloadType: 96, sequenceNumber: seq,
                                           timestamp: UInt32(truncatingIfNeeded: 4_294_000_000 + Int64(sent) * 180),
                                           ssrc: mediaSSRC, payload: [UInt8(truncatingIfNeeded: sent), 0xAB])
                    history[seq] = packet
                    let before = network.dropped
                    network.send(.rtp(try packet.serialized()), now: now, toReceiver: true, lossless: sent < 5 || sent >= count - 5)
                    if network.dropped > before { originalsLost += 1 }
                    sent += 1
                }
            }
            if let rtcp = try receiver.poll(now: now) {
                network.send(.rtcp(rtcp), now: now, toReceiver: false)
            }
        }
        return Result(receiver: receiver, network: network, originalsLost: originalsLost, retransmissionsSent: retransmissionsSent)
    }

    @Test("5 % loss, RTT ≈ 45 ms: every packet recovered by NACK + RTX, in order, stats exact", arguments: [UInt64(1), 2, 3])
    func recoversEverything(seed: UInt64) throws {
        let count = 3000
        let result = try Self.run(seed: seed, count: count, lossPercent: 5,
                                  nack: NackConfiguration(initialDelay: 10_000),
                                  reorder: ReorderBufferConfiguration(maxWait: 1_000_000, capacity: 2048))
        var receiver = result.receiver
        let inOrder = receiver.released.elementsEqual(65_000..<Int64(65_000 + count))
        #expect(inOrder)
        #expect(receiver.released.count == count)
        #expect(receiver.lost.isEmpty)
        #expect(!receiver.keyframeNeeded)
        #expect(result.originalsLost > count * 3 / 100)  // the network really lost ~5 %
        #expect(receiver.nack.recoveredByNack == Int64(result.originalsLost))
        #expect(receiver.nack.spuriousRetransmissions == 0)
        #expect(receiver.nack.givenUp == 0)
        #expect(receiver.nack.lateArrivals > 0)  // jitter reordered some, and they were not NACKed
        #expect(receiver.stream.retransmissionsReceived == Int64(result.originalsLost))
        #expect(receiver.stream.packetsExpected == Int64(count))
        #expect(receiver.stream.packetsReceived == Int64(count))
        let block = try report(&receiver.stream, now: Int64(count) * 2000)
        #expect(block.cumulativeLost == 0)
        #expect(block.extendedHighestSequence == UInt32(65_000 + count - 1))
        // Delays vary by 0–5 ms: jitter is a fraction of that (450 ticks at 90 kHz).
        #expect(block.jitter > 0 && block.jitter < 450)
    }

    @Test("the production settings: a 150 ms reorder wait on a 45 ms path, retries spaced by the RTT measured, not by a fixed 100 ms",
          arguments: [UInt64(1), 2, 3])
    func retriesByMeasuredRTT(seed: UInt64) throws {
        // 5 % of every datagram lost, NACKs and retransmissions too. Spaced by 100 ms, a second
        // request comes at 110 ms and its answer after the 150 ms wait: a lost request or a lost
        // retransmission loses the packet. Spaced by the RTT measured (≈ 45 ms plus its
        // deviation), the second comes in time.
        let count = 3000
        let production = NackConfiguration.video
        #expect(production.minRetryInterval < 45_000 && production.initialRTT >= 100_000)
        let measured = try Self.run(seed: seed, count: count, lossPercent: 5, nack: production,
                                    reorder: ReorderBufferConfiguration())
        let fixed = try Self.run(seed: seed, count: count, lossPercent: 5,
                                 nack: NackConfiguration(minRetryInterval: 100_000, initialDelay: production.initialDelay),
                                 reorder: ReorderBufferConfiguration())
        let lostMeasured = measured.receiver.lost.reduce(0) { $0 + $1.count }
        let lostFixed = fixed.receiver.lost.reduce(0) { $0 + $1.count }
        #expect(measured.originalsLost > count * 3 / 100)
        #expect(measured.receiver.nack.rttSamples > 50)
        let rtt = try #require(measured.receiver.nack.measuredRTT)
        #expect(rtt >= 40_000 && rtt <= 50_000, "measured RTT \(rtt) µs")
        // Both lose some over 3000 packets; spaced by the RTT, several times fewer.
        #expect(lostFixed >= 5, "fixed spacing lost \(lostFixed)")
        #expect(lostMeasured * 3 <= lostFixed, "measured spacing lost \(lostMeasured), fixed \(lostFixed)")
        // Retries rarely go out before the answer to the last request could have come back.
        let nack = measured.receiver.nack
        print("seed \(seed): lost \(lostMeasured) spaced by the RTT measured (\(rtt) µs), \(lostFixed) by 100 ms; "
              + "recovered \(nack.recoveredByNack), spurious \(nack.spuriousRetransmissions), requested \(nack.sequenceNumbersRequested)")
        #expect(nack.spuriousRetransmissions * 50 <= nack.recoveredByNack)
    }

    @Test("without retransmissions: NACK gives up, the buffer skips the gaps, a keyframe is asked for")
    func givesUp() throws {
        let count = 1000
        let result = try Self.run(seed: 9, count: count, lossPercent: 5, answerNacks: false,
                                  nack: NackConfiguration(maxRetries: 3, minRetryInterval: 50_000, initialDelay: 10_000),
                                  reorder: ReorderBufferConfiguration(maxWait: 1_000_000, capacity: 2048))
        let receiver = result.receiver
        let lostCount = receiver.lost.reduce(0) { $0 + $1.count }
        #expect(receiver.released.count + lostCount == count)
        #expect(Int64(lostCount) == receiver.stream.cumulativeLost)
        #expect(receiver.nack.givenUp == Int64(lostCount))
        #expect(receiver.keyframeNeeded)
        #expect(receiver.nack.recoveredByNack == 0)
        // Every gap was asked for three times, then abandoned well before the 1 s wait ran out.
        #expect(receiver.nack.sequenceNumbersRequested == Int64(3 * lostCount))
        #expect(receiver.reorder.packetsLost == Int64(lostCount))
        let ascending = zip(receiver.released, receiver.released.dropFirst()).allSatisfy { $0 < $1 }
        #expect(ascending)
    }

    @Test("a short reorder wait gives up on gaps before the NACKs can repair them")
    func shortWait() throws {
        let result = try Self.run(seed: 4, count: 1000, lossPercent: 5,
                                  nack: NackConfiguration(initialDelay: 10_000),
                                  reorder: ReorderBufferConfiguration(maxWait: 30_000, capacity: 2048))
        let receiver = result.receiver
        // RTX needs ≈ 45 ms; the buffer waits 30: every lost original is skipped, and its
        // retransmission then arrives too late for the buffer.
        let lostCount = receiver.lost.reduce(0) { $0 + $1.count }
        #expect(lostCount == result.originalsLost)
        #expect(receiver.reorder.packetsTooLate == Int64(result.originalsLost))
        #expect(receiver.released.count == 1000 - lostCount)
    }
}
