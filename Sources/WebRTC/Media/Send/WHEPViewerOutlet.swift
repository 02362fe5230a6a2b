// One WHEP viewer's send state, between a composition thread (which hands it frames) and the
// transport (which asks it what is due, gives it the viewer's RTCP, and protects and sends
// the datagrams it returns). One lock; every call is short and bounded: the pacer's queue
// is the only queue, and a viewer that falls behind is dropped to the next keyframe by it.

import MediaCore
import Synchronization

/// The streams a viewer negotiated (its SDP answer): SSRCs, payload types, RTX, its CNAME.
public struct WHEPViewerStreams: Sendable, Equatable {
    public var video: RTPSendStreamConfiguration
    public var audio: RTPSendStreamConfiguration
    public var cname: String
    /// False when the viewer offered no audio: the mix's packets and reports are not sent.
    public var sendsAudio: Bool

    public init(video: RTPSendStreamConfiguration, audio: RTPSendStreamConfiguration, cname: String, sendsAudio: Bool = true) {
        self.sendsAudio = sendsAudio
        self.video = video
        self.audio = audio
        self.cname = cname
    }
}

/// What a viewer has been sent and dropped, for metrics and logs.
public struct WHEPViewerCounters: Sendable, Equatable {
    public var packets: Int64 = 0
    public var retransmissions: Int64 = 0
    public var senderReports: Int64 = 0
    public var framesSkipped: Int64 = 0
    public var backlogsDropped: Int64 = 0
    public var keyframeRequests: Int64 = 0
}

public final class WHEPViewerOutlet: ViewerMediaSource {
    private struct State {
        var pacer: ViewerPacer
        var video: RTPSendStream
        var audio: RTPSendStream
        var videoReports: SenderReportScheduler
        var audioReports: SenderReportScheduler
        var feedback: ViewerFeedbackReader
        var counters = WHEPViewerCounters()
        var ended = false
        var anchored = false
    }

    private let state: Mutex<State>
    public let streams: WHEPViewerStreams

    public convenience init(streams: WHEPViewerStreams, pacer: ViewerPacerConfiguration = ViewerPacerConfiguration()) throws(RTPError) {
        var random = SystemRandomNumberGenerator()
        try self.init(streams: streams, pacer: pacer, using: &random)
    }

    /// `random` draws the streams' first sequence numbers and timestamp offsets (a fuzz target
    /// replays them from a seed).
    public init(streams: WHEPViewerStreams, pacer: ViewerPacerConfiguration = ViewerPacerConfiguration(),
                using random: inout some RandomNumberGenerator) throws(RTPError) {
        let video = try RTPSendStream(configuration: streams.video, using: &random)
        let audio = try RTPSendStream(configuration: streams.audio, using: &random)
        let reports = SenderReportConfiguration(cname: streams.cname)
        state = Mutex(State(pacer: ViewerPacer(configuration: pacer), video: video, audio: audio,
                            videoReports: SenderReportScheduler(configuration: reports),
                            audioReports: SenderReportScheduler(configuration: reports),
                            feedback: ViewerFeedbackReader(mediaSSRCs: [streams.video.ssrc, streams.audio.ssrc])))
        self.streams = streams
    }

    public var counters: WHEPViewerCounters { state.withLock { $0.counters } }
    /// Video packets waiting in the pacer (bounded by its configuration).
    public var queuedVideoPackets: Int { state.withLock { $0.pacer.queuedVideoPackets } }
    public var isEnded: Bool { state.withLock { $0.ended } }

    /// A frame of the composition (the composition thread). Whether the viewer takes it,
    /// skips it (waiting for a keyframe) or drops its backlog is the pacer's. `epoch` ties the
    /// composition's time to the transport's clock (µs of each): both streams' sender reports
    /// are anchored on it, so they say when audio and video of one instant were composed (not
    /// when each was sent: the video encode takes longer than the audio's).
    @discardableResult
    public func enqueue(_ frame: PacketizedFrame, now: Int64, epoch: (media: Int64, time: Int64)? = nil) -> PacerAdmission {
        if frame.mediaType == .audio, !streams.sendsAudio { return .queued }
        return state.withLock { state in
            guard !state.ended else { return .skippedUntilKeyframe }
            if let epoch, !state.anchored {
                state.anchored = true
                let rate = MediaTime.microseconds
                state.video.setClockAnchor(RTPClockAnchor(
                    timestamp: rate.rescale(epoch.media, to: Rational(1, Int64(streams.video.clockRate))), time: epoch.time))
                state.audio.setClockAnchor(RTPClockAnchor(
                    timestamp: rate.rescale(epoch.media, to: Rational(1, Int64(streams.audio.clockRate))), time: epoch.time))
            }
            let admission = state.pacer.enqueue(frame, now: now)
            switch admission {
            case .queued: break
            case .skippedUntilKeyframe: state.counters.framesSkipped += 1
            case .droppedBacklog: state.counters.backlogsDropped += 1
            }
            return admission
        }
    }

    /// What is due at `now`: RTP packets the pacer releases and sender reports, appended to
    /// `out` (unprotected). At most `limit` packets a call.
    public func due(now: Int64, limit: Int = 256, into out: inout [WHEPDatagram]) {
        state.withLock { state in
            guard !state.ended else { return }
            var sent = 0
            while sent < limit, let next = state.pacer.poll(now: now) {
                var datagram: [UInt8] = []
                if next.frame.mediaType == .video {
                    _ = state.video.writePacket(next.frame, index: next.index, now: now, into: &datagram)
                } else {
                    _ = state.audio.writePacket(next.frame, index: next.index, now: now, into: &datagram)
                }
                out.append(WHEPDatagram(bytes: datagram, isRTCP: false))
                state.counters.packets += 1
                sent += 1
            }
            if let report = try? state.videoReports.poll(now: now, stream: state.video) {
                out.append(WHEPDatagram(bytes: report, isRTCP: true))
                state.counters.senderReports += 1
            }
            if streams.sendsAudio, let report = try? state.audioReports.poll(now: now, stream: state.audio) {
                out.append(WHEPDatagram(bytes: report, isRTCP: true))
                state.counters.senderReports += 1
            }
        }
    }

    /// A compound RTCP packet from the viewer (decrypted): NACKs answered into `out`, the
    /// viewer's liveness noted. True when it asks for a keyframe (PLI, FIR). Malformed
    /// packets are ignored.
    public func feedback(_ compound: [UInt8], now: Int64, into out: inout [WHEPDatagram]) -> Bool {
        state.withLock { state in
            guard !state.ended, let feedback = try? state.feedback.read(compound) else { return false }
            state.pacer.feedbackReceived(now: now)
            for block in feedback.reportBlocks {
                if block.ssrc == state.video.configuration.ssrc { state.video.receiverReport(block, now: now) }
                if block.ssrc == state.audio.configuration.ssrc { state.audio.receiverReport(block, now: now) }
            }
            for nack in feedback.nacks {
                let isVideo = nack.mediaSSRC == state.video.configuration.ssrc
                let sequenceNumbers = isVideo ? state.video.retransmissions(answering: nack, now: now)
                    : state.audio.retransmissions(answering: nack, now: now)
                for sequenceNumber in sequenceNumbers {
                    var datagram: [UInt8] = []
                    let written = isVideo ? state.video.writeRetransmission(of: sequenceNumber, now: now, into: &datagram)
                        : state.audio.writeRetransmission(of: sequenceNumber, now: now, into: &datagram)
                    if written {
                        out.append(WHEPDatagram(bytes: datagram, isRTCP: false))
                        state.counters.retransmissions += 1
                    }
                }
            }
            if feedback.goodbye { state.ended = true }
            if feedback.keyframeRequested { state.counters.keyframeRequests += 1 }
            return feedback.keyframeRequested
        }
    }

    /// When the transport should ask again (µs on the same clock), nil when nothing waits.
    public func nextDeadline(now: Int64) -> Int64? {
        state.withLock { state in
            [state.pacer.nextDeadline(now: now), state.videoReports.nextDeadline, streams.sendsAudio ? state.audioReports.nextDeadline : nil]
                .compactMap { $0 }.min()
        }
    }

    /// The viewer left (DELETE, timeout, BYE): nothing more is queued or sent.
    public func end() {
        state.withLock { $0.ended = true }
    }
}
