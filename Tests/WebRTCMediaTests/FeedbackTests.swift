// Keyframe requests (PLI/FIR) and the REMB cap.
@testable import WebRTCMedia
import TestSupport
import Testing

struct KeyframeRequesterTests {
    @Test("joining asks for a keyframe at once and every 500 ms until one arrives")
    func joinRepeats() {
        var requester = KeyframeRequester(mediaSSRC: 0xAAAA, senderSSRC: 1)
        #expect(requester.poll(now: 0) == nil)  // nothing before the first packet
        #expect(requester.nextDeadline == nil)
        requester.packetReceived()
        let pli = RTCPPacket.pictureLossIndication(.init(senderSSRC: 1, mediaSSRC: 0xAAAA))
        #expect(requester.poll(now: 10_000) == pli)
        #expect(requester.poll(now: 509_999) == nil)
        #expect(requester.nextDeadline == 510_000)
        #expect(requester.poll(now: 510_000) == pli)
        #expect(requester.poll(now: 1_010_000) == pli)
        requester.keyframeReceived()
        #expect(requester.poll(now: 2_000_000) == nil)
        #expect(requester.nextDeadline == nil)
        #expect(requester.pictureLossIndicationsSent == 3)
        #expect(!requester.isRequesting)
    }

    @Test("a keyframe as the first frame needs no request")
    func firstIsKeyframe() {
        var requester = KeyframeRequester(mediaSSRC: 2, senderSSRC: 1)
        requester.packetReceived()
        requester.keyframeReceived()
        requester.packetReceived()
        #expect(requester.poll(now: 0) == nil)
        #expect(requester.pictureLossIndicationsSent == 0)
    }

    @Test("an unrecoverable loss asks again; more broken frames while waiting add no requests")
    func brokenFrames() {
        var requester = KeyframeRequester(mediaSSRC: 2, senderSSRC: 1, configuration: .init(repeatInterval: 300_000))
        requester.packetReceived()
        requester.keyframeReceived()
        requester.keyframeNeeded()
        #expect(requester.poll(now: 1_000_000) != nil)
        requester.keyframeNeeded()
        requester.keyframeNeeded()
        #expect(requester.poll(now: 1_100_000) == nil)
        #expect(requester.poll(now: 1_300_000) != nil)
        #expect(requester.pictureLossIndicationsSent == 2)
    }

    @Test("FIR: a new sequence number for every request, wrapping at 256")
    func fullIntraRequests() {
        var requester = KeyframeRequester(mediaSSRC: 0xAAAA, senderSSRC: 1, configuration: .init(method: .fullIntraRequest))
        requester.packetReceived()
        var numbers: [UInt8] = []
        for step in 0..<300 {
            guard case .fullIntraRequest(let fir) = requester.poll(now: Int64(step) * 500_000) else {
                Issue.record("no FIR at step \(step)"); return
            }
            #expect(fir.entries.count == 1 && fir.entries[0].ssrc == 0xAAAA && fir.mediaSSRC == 0)
            numbers.append(fir.entries[0].sequenceNumber)
        }
        #expect(Array(numbers.prefix(3)) == [1, 2, 3])
        #expect(numbers[254...256] == [255, 0, 1])
        #expect(requester.fullIntraRequestsSent == 300)
        #expect(requester.pictureLossIndicationsSent == 0)
    }
}

struct REMBSchedulerTests {
    @Test("REMB every second at the cap, for the given SSRCs")
    func interval() throws {
        var remb = REMBScheduler(senderSSRC: 1, cap: 8_500_000, interval: 1_000_000)
        #expect(remb.poll(now: 0, mediaSSRCs: []) == nil)
        let polled = remb.poll(now: 0, mediaSSRCs: [0xA, 0xB])
        let first = try #require(polled)
        #expect(first == .receiverEstimatedMaxBitrate(.init(senderSSRC: 1, bitrate: 8_500_000, ssrcs: [0xA, 0xB])))
        // On the wire: exponent 6, mantissa 132 812 → 8 499 968 bps, never above the cap.
        #expect(Array(try first.serialized()[16..<20]) == hex("02 1a 06 cc"))
        #expect(remb.poll(now: 999_999, mediaSSRCs: [0xA]) == nil)
        #expect(remb.nextDeadline == 1_000_000)
        #expect(remb.poll(now: 1_000_000, mediaSSRCs: [0xA]) != nil)
        #expect(remb.packetsSent == 2)
    }

    @Test("a new cap is sent at once; one that encodes the same is not")
    func capChange() {
        var remb = REMBScheduler(senderSSRC: 1, cap: 2_000_000)
        _ = remb.poll(now: 0, mediaSSRCs: [5])
        remb.setCap(2_000_001)  // 2 000 001 >> 3 = 250 000, like 2 000 000: same on the wire
        #expect(remb.poll(now: 100_000, mediaSSRCs: [5]) == nil)
        remb.setCap(1_000_000)
        #expect(remb.nextDeadline == Int64.min)
        #expect(remb.poll(now: 100_001, mediaSSRCs: [5]) == .receiverEstimatedMaxBitrate(.init(senderSSRC: 1, bitrate: 1_000_000, ssrcs: [5])))
        #expect(remb.poll(now: 200_000, mediaSSRCs: [5]) == nil)
    }
}
