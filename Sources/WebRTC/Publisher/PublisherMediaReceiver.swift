// One WHIP publisher's media, after SRTP: RTP in, access units with timestamps on one
// publisher timeline out, and the RTCP feedback to send back (NACK, PLI/FIR, REMB, receiver
// reports). Pure: decrypted packets and `now` in, values out; the UDP shell encrypts and sends.
//
//   RTP ─► RTX unwrap ─► receive stream (stats) ─► NACK generator ─► reorder buffer ─►
//        depacketizer (H.264 / VP8 / Opus) ─► access unit, RTP time → sender clock ─► output
//   RTCP SR ─► sender clock (NTP) ─► audio and video on one timeline
//   (abs-capture-time, when the publisher sends it, instead of SRs: exact capture instants)
//
// Streams are told apart by payload type (one video and one audio m-section are negotiated),
// so an SSRC the offer did not announce (as browsers send) is still received. A simulcast
// publisher sends each video layer on its own SSRC, named by the rid header extension; each
// is received, repaired and depacketized as a stream of its own, and one of them, the
// smallest that covers the size it is drawn at, else the largest (`SimulcastLayerSelector`),
// is delivered.

public import WebRTCMedia
public import WebRTCSignal

/// An access unit ready for a decoder.
public struct ReceivedAccessUnit: Sendable, Equatable {
    public var kind: MediaKind
    public var codec: WebRTCCodec
    /// H.264 Annex B, a VP8 frame, or an Opus packet.
    public var data: [UInt8]
    /// On the publisher's timeline (µs): the sender's clock once RTCP sender reports arrived,
    /// the arrival of its first packet before; the same timeline for audio and video.
    public var time: Int64
    public var isKeyframe: Bool
}

public enum ReceiverOutput: Sendable, Equatable {
    case accessUnit(ReceivedAccessUnit)
    /// A plain RTCP compound packet for the shell to protect and send.
    case rtcp([UInt8])
}

/// Per-publisher counters (the participant's metrics).
public struct ReceiverStatistics: Sendable, Equatable {
    public var packetsReceived: Int64 = 0
    public var bytesReceived: Int64 = 0
    public var packetsLost: Int64 = 0
    public var recoveredByNack: Int64 = 0
    public var nacksSent: Int64 = 0
    public var pictureLossIndicationsSent: Int64 = 0
    public var framesDelivered: Int64 = 0
    public var framesIncomplete: Int64 = 0
    /// Complete delta frames not delivered because an earlier frame was lost.
    public var framesSkippedUntilKeyframe: Int64 = 0
    /// Interarrival jitter of the video stream, µs.
    public var videoJitter: Int64 = 0
    /// The round trip measured from NACKs to the retransmissions answering them (µs, the
    /// video stream's; 0 until one was measured): what spaces the NACK retries.
    public var nackRoundTrip: Int64 = 0
    /// Retransmissions of video packets not awaited any more (they had come after all, or
    /// were given up): the publisher's bandwidth spent for nothing.
    public var unneededRetransmissions: Int64 = 0
    /// Packets that came after their reorder buffer had stopped waiting for them (video:
    /// 150 ms; audio: `audioReorderWait`) and were dropped: for audio, sound missing that a
    /// longer wait would have had in time. (A retransmission of a packet that came after all
    /// is a duplicate, not counted here.)
    public var audioPacketsTooLate: Int64 = 0
    public var videoPacketsTooLate: Int64 = 0
    /// How long the audio waits for a packet out of order now (µs): what the reordering of
    /// the last 10-20 s needed, 40-120 ms (`ReorderBufferConfiguration.audio`).
    public var audioReorderWait: Int64 = 0
    public var audioJitter: Int64 = 0
    /// Packets that were not RTP/RTCP of a negotiated stream.
    public var unknownPackets: Int64 = 0
    /// Packets of SSRCs the offer did not declare, beyond the streams it negotiated (one per
    /// m-section, one per simulcast layer): dropped before any state is made for them.
    public var undeclaredStreamPackets: Int64 = 0
    /// RTP timestamps that jumped more than an hour of media from their stream's clock.
    public var timestampDiscontinuities: Int = 0
    /// The picture size of the video delivered, from its latest keyframe.
    public var videoWidth: Int = 0
    public var videoHeight: Int = 0
    /// Simulcast: the layers seen, the rid of the one delivered, changes of layer, and the
    /// complete frames of the other layers, not delivered.
    public var simulcastLayers: Int = 0
    public var simulcastRid: String?
    public var simulcastSwitches: Int64 = 0
    public var framesOfOtherLayers: Int64 = 0
    /// abs-capture-time elements that mapped a stream onto the sender's clock (lip sync from
    /// capture instants, not from sender reports).
    public var audioCaptureTimes: Int64 = 0
    public var videoCaptureTimes: Int64 = 0
}

public struct PublisherMediaReceiverConfiguration: Sendable, Equatable {
    /// Our SSRC in the RTCP we send.
    public var senderSSRC: UInt32
    public var cname: String
    /// The REMB cap: what the publisher may send at most (bit/s).
    public var maxBitrate: UInt64
    public var nack: NackConfiguration
    public var videoReorder: ReorderBufferConfiguration
    public var audioReorder: ReorderBufferConfiguration
    public var keyframeRequests: KeyframeRequesterConfiguration

    public init(senderSSRC: UInt32, cname: String = "stage-compositor", maxBitrate: UInt64 = 8_500_000,
                nack: NackConfiguration = .video,
                videoReorder: ReorderBufferConfiguration = ReorderBufferConfiguration(),
                audioReorder: ReorderBufferConfiguration = .audio,
                keyframeRequests: KeyframeRequesterConfiguration = KeyframeRequesterConfiguration()) {
        self.senderSSRC = senderSSRC
        self.cname = cname
        self.maxBitrate = maxBitrate
        self.nack = nack
        self.videoReorder = videoReorder
        self.audioReorder = audioReorder
        self.keyframeRequests = keyframeRequests
    }
}

public struct PublisherMediaReceiver: Sendable {
    /// One received stream (a media SSRC).
    struct Track: Sendable {
        var kind: MediaKind
        var codec: WebRTCCodec
        var stream: RTPReceiveStream
        var nack: NackGenerator?
        var reorder: ReorderBuffer<RTPPacket>
        var timestamps = TimestampUnwrapper()
        var clock: SenderClock
        var keyframes: KeyframeRequester?
        var h264 = H264Depacketizer()
        var vp8 = VP8Depacketizer()
        var opus = OpusDepacketizer()
        /// The simulcast layer (rid header extension of its first packets).
        var rid: String?
        /// Video after a loss that NACKs could not repair: delta frames would decode into
        /// garbage, so none is delivered until the next keyframe (the picture freezes instead).
        var awaitingKeyframe = false
        /// The first sequence number of the latest keyframe delivered: a loss given up before
        /// it is repaired by it already.
        var latestKeyframeStart: Int64?
        /// When its latest packet arrived (µs).
        var lastPacketAt: Int64 = 0
    }

    /// Streams (SSRCs) with receive state, and RTX SSRCs paired with one (for tests and metrics).
    public var streamCount: Int { tracks.count }
    public var rtxAssociationCount: Int { rtx.associations.ssrcs.count }

    /// A stream silent this long (µs) may give its place to a new SSRC of its kind (a sender
    /// that restarted a track with a new SSRC and declared none).
    static let replaceableAfter: Int64 = 2_000_000

    public let configuration: PublisherMediaReceiverConfiguration
    private let video: NegotiatedMedia?
    private let audio: NegotiatedMedia?
    private var rtx: RTXUnwrapper
    private var tracks: [UInt32: Track] = [:]
    /// With simulcast negotiated: which video layer is delivered.
    private var layers: SimulcastLayerSelector?
    private let ridExtensionID: UInt8?
    private let repairedRidExtensionID: UInt8?
    private let audioCaptureTimeID: UInt8?
    private let videoCaptureTimeID: UInt8?
    /// The latest `now` seen, for deadlines that depend on it.
    private var lastNow: Int64 = .min
    private var reports: ReceiverReportScheduler
    private var remb: REMBScheduler
    /// Sender-clock time minus publisher time, fixed by audio's first sender report (or the
    /// first stream's, until audio reports): the other stream switches to its sender-report
    /// mapping through the same offset, which corrects its position relative to audio (lip
    /// sync) without moving audio, whose timeline gaps or overlaps would be audible.
    private var senderOffset: Int64?
    public private(set) var statistics = ReceiverStatistics()

    public init(negotiation: SDPNegotiation, configuration: PublisherMediaReceiverConfiguration) {
        self.configuration = configuration
        video = negotiation.video
        audio = negotiation.audio
        var associations = RTXAssociations()
        for media in negotiation.media {
            if let rtx = media.rtx { associations.payloadTypes[rtx.payloadType] = rtx.associatedPayloadType }
            for source in media.sources {
                if let rtxSSRC = source.rtxSSRC { associations.ssrcs[rtxSSRC] = source.ssrc }
            }
        }
        rtx = RTXUnwrapper(associations: associations)
        let simulcast = negotiation.video.map { !$0.simulcastRids.isEmpty } ?? false
        layers = simulcast ? SimulcastLayerSelector() : nil
        ridExtensionID = simulcast ? negotiation.video?.extensionID(SDPExtmap.ridURI).map { UInt8(clamping: $0) } : nil
        repairedRidExtensionID = simulcast ? negotiation.video?.extensionID(SDPExtmap.repairedRidURI).map { UInt8(clamping: $0) } : nil
        audioCaptureTimeID = negotiation.audio?.extensionID(SDPExtmap.absCaptureTimeURI).map { UInt8(clamping: $0) }
        videoCaptureTimeID = negotiation.video?.extensionID(SDPExtmap.absCaptureTimeURI).map { UInt8(clamping: $0) }
        reports = ReceiverReportScheduler(configuration: ReceiverReportConfiguration(senderSSRC: configuration.senderSSRC,
                                                                                     cname: configuration.cname))
        remb = REMBScheduler(senderSSRC: configuration.senderSSRC, cap: configuration.maxBitrate)
    }

    /// The next time `poll` has something to do. A scheduler that has not run yet (the first
    /// receiver report and REMB, a keyframe request not sent yet) says `Int64.min`: once media
    /// flows, that is due at once, or the publisher would hear nothing from us until a loss
    /// set a NACK timer (and a browser's bandwidth estimate would never rise).
    public var nextDeadline: Int64? {
        var deadlines: [Int64] = [reports.nextDeadline, remb.nextDeadline]
        for (ssrc, track) in tracks {
            if let deadline = track.nack?.nextDeadline { deadlines.append(deadline) }
            if let deadline = track.reorder.nextDeadline { deadlines.append(deadline) }
            if wantsKeyframes(ssrc, now: lastNow), let deadline = track.keyframes?.nextDeadline { deadlines.append(deadline) }
        }
        let dueNow: Int64? = tracks.isEmpty ? nil : lastNow
        return deadlines.compactMap { $0 == .min ? dueNow : $0 }.min()
    }

    // MARK: Input

    /// A decrypted RTP packet.
    public mutating func receiveRTP(_ bytes: [UInt8], now: Int64) -> [ReceiverOutput] {
        lastNow = max(lastNow, now)
        guard let parsed = try? RTPPacket(parsing: bytes) else {
            statistics.unknownPackets += 1
            return []
        }
        let packet: RTPPacket
        let isRetransmission: Bool
        guard let unwrapped = try? rtx.unwrap(parsed) else {
            statistics.unknownPackets += 1
            return []
        }
        switch unwrapped {
        case .media(let media): (packet, isRetransmission) = (media, false)
        case .retransmission(let original): (packet, isRetransmission) = (original, true)
        case .padding: return []
        case .unknownSSRC:
            // An RTX packet whose SSRC the offer did not pair: pair it with the video stream of
            // its repaired rid (simulcast), or with the one video stream.
            guard let rtxMedia = video?.rtx, parsed.payloadType == rtxMedia.payloadType,
                  let mediaSSRC = repairedStream(of: parsed) else {
                statistics.unknownPackets += 1
                return []
            }
            // One RTX stream per video stream (twice that, for a sender that changed one): a
            // flood of RTX SSRCs is counted and dropped, never remembered.
            let videoStreams = max(1, video?.simulcastRids.count ?? 1)
            guard rtx.associations.ssrcs.count < 2 * videoStreams + (video?.sources.count ?? 0) else {
                statistics.undeclaredStreamPackets += 1
                return []
            }
            rtx.associations.ssrcs[parsed.ssrc] = mediaSSRC
            return receiveRTP(bytes, now: now)
        }
        guard var track = tracks[packet.ssrc] ?? admitStream(for: packet, now: now) else {
            return []
        }
        track.lastPacketAt = now
        if track.kind == .video, layers != nil {
            layers?.packetReceived(ssrc: packet.ssrc, now: now)
            // Senders put the rid on a layer's packets until our receiver reports name its SSRC.
            if track.rid == nil, let id = ridExtensionID { track.rid = packet.extensionElement(id: id).flatMap(Self.rid) }
        }
        statistics.packetsReceived += 1
        statistics.bytesReceived += Int64(bytes.count)
        let update = track.stream.received(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                                           payloadBytes: packet.payload.count, now: now, isRetransmission: isRetransmission)
        guard let extended = update.extended else {
            tracks[packet.ssrc] = track
            return []
        }
        if case .filledGap(let requested)? = track.nack?.received(seq: extended, now: now, isRetransmission: isRetransmission),
           requested {
            statistics.recoveredByNack += 1
        }
        track.keyframes?.packetReceived()
        if track.reorder.insert(packet, sequence: extended, now: now) == .tooLate {
            if track.kind == .audio { statistics.audioPacketsTooLate &+= 1 } else { statistics.videoPacketsTooLate &+= 1 }
        }
        let timestamp = track.timestamps.unwrap(packet.timestamp)
        _ = track.clock.packetArrived(timestamp: timestamp, now: now)
        if let id = track.kind == .audio ? audioCaptureTimeID : videoCaptureTimeID,
           let capture = packet.extensionElement(id: id).flatMap(AbsoluteCaptureTime.init(data:)) {
            if track.kind == .audio { statistics.audioCaptureTimes += 1 } else { statistics.videoCaptureTimes += 1 }
            if let change = track.clock.captureTime(ntpTime: capture.senderNTPTime, rtpTimestamp: timestamp) {
                adopt(change, kind: track.kind)
            }
        }
        var outputs: [ReceiverOutput] = []
        release(&track, now: now, into: &outputs)
        tracks[packet.ssrc] = track
        return outputs
    }

    /// A decrypted RTCP compound packet (sender reports, BYE ...).
    public mutating func receiveRTCP(_ bytes: [UInt8], now: Int64) {
        guard let packets = try? RTCPPacket.parseCompound(bytes) else {
            statistics.unknownPackets += 1
            return
        }
        for case .senderReport(let report) in packets {
            guard var track = tracks[report.ssrc] else { continue }
            track.stream.senderReportReceived(ntpTime: report.ntpTime, now: now)
            let timestamp = track.timestamps.peek(report.rtpTimestamp)
            if let change = track.clock.senderReport(ntpTime: report.ntpTime, rtpTimestamp: timestamp) {
                adopt(change, kind: track.kind)
            }
            tracks[report.ssrc] = track
        }
    }

    /// A stream's mapping moved onto the sender's clock, or to a better source on it.
    private mutating func adopt(_ change: SenderClockChange, kind: MediaKind) {
        if change.becameSenderBased {
            // Audio keeps its timeline exactly (a jump would be heard); video moves to it.
            // Without audio, or before audio's first report, the first stream's shift holds.
            if kind == .audio || senderOffset == nil { senderOffset = change.shift }
        } else if kind == .audio, change.previousSource != change.mapping.source, let offset = senderOffset {
            // Audio's SR mapping gave way to capture times: audio stays where it is, and the
            // other streams move against it by what its SRs were off.
            senderOffset = offset + change.shift
        }
    }

    /// Something downstream lost video (a composition's queue overflowed): every video track
    /// asks for a keyframe (PLI/FIR) at the next poll, so the picture freezes briefly instead
    /// of until the publisher's next scheduled keyframe.
    public mutating func requestKeyframe() {
        for ssrc in tracks.keys {
            tracks[ssrc]?.keyframes?.keyframeNeeded()
        }
    }

    /// The size the publisher's picture is drawn at now (nil: the largest layer): a simulcast
    /// publisher's smallest layer that covers it is composed, moved to at its next keyframe,
    /// which the next poll asks for. Without simulcast there is one picture and this is kept
    /// for nothing. True if the layer to compose changed (poll soon).
    @discardableResult
    public mutating func setWantedVideoSize(_ size: PictureSize?) -> Bool {
        guard layers != nil, layers?.wanted != size else { return false }
        let before = layers?.target(now: lastNow)
        layers?.wanted = size
        return layers?.target(now: lastNow) != before
    }

    /// Timers: releases held packets, sends NACKs, keyframe requests, REMB and reports.
    public mutating func poll(now: Int64) -> [ReceiverOutput] {
        lastNow = max(lastNow, now)
        var outputs: [ReceiverOutput] = []
        var feedback: [RTCPPacket] = []
        for ssrc in tracks.keys.sorted() {
            guard var track = tracks[ssrc] else { continue }
            if var nack = track.nack {
                let output = nack.poll(now: now)
                for range in output.gaveUp {
                    for sequence in range { track.reorder.abandon(sequence) }
                }
                // Numbers given up behind the latest keyframe (the reorder buffer had let them go,
                // and the keyframe that followed made them moot) break nothing: only a loss from
                // that keyframe on holds the delta frames, and then a keyframe is asked for, since
                // a publisher that sends keyframes only when asked would otherwise never end it.
                let latestKeyframe = track.latestKeyframeStart
                if output.gaveUp.contains(where: { range in latestKeyframe.map { range.upperBound >= $0 } ?? true }) {
                    track.awaitingKeyframe = true
                    track.keyframes?.keyframeNeeded()
                }
                if output.keyframeNeeded { track.keyframes?.keyframeNeeded() }
                if !output.nacks.isEmpty {
                    for chunk in stride(from: 0, to: output.nacks.count, by: 200) {
                        let lost = Array(output.nacks[chunk..<min(chunk + 200, output.nacks.count)])
                        feedback.append(.genericNack(RTCPGenericNack(senderSSRC: configuration.senderSSRC, mediaSSRC: ssrc, lost: lost)))
                    }
                    statistics.nacksSent += 1
                }
                track.nack = nack
            }
            release(&track, now: now, into: &outputs)
            // The layer in use went silent (or is not the largest sending): ask the one to move
            // to for a keyframe.
            if layers?.target(now: now) == ssrc { track.keyframes?.keyframeNeeded() }
            if wantsKeyframes(ssrc, now: now), var keyframes = track.keyframes, let request = keyframes.poll(now: now) {
                feedback.append(request)
                statistics.pictureLossIndicationsSent += 1
                track.keyframes = keyframes
            }
            tracks[ssrc] = track
        }
        if let estimate = remb.poll(now: now, mediaSSRCs: tracks.keys.sorted()) { feedback.append(estimate) }
        var streams = tracks.keys.sorted().compactMap { tracks[$0]?.stream }
        if reports.isReportDue(now: now) || !feedback.isEmpty {
            if let compounds = try? reports.poll(now: now, streams: &streams, feedback: feedback) {
                outputs += compounds.map { .rtcp($0) }
            }
            for stream in streams { tracks[stream.ssrc]?.stream = stream }
        }
        if let video = tracks.values.first(where: { $0.kind == .video }) {
            statistics.videoJitter = Int64(video.stream.jitter) * 1_000_000 / Int64(max(video.stream.clockRate, 1))
            statistics.nackRoundTrip = video.nack?.measuredRTT ?? 0
        }
        if let audio = tracks.values.first(where: { $0.kind == .audio }) {
            statistics.audioJitter = Int64(audio.stream.jitter) * 1_000_000 / Int64(max(audio.stream.clockRate, 1))
            statistics.audioReorderWait = audio.reorder.wait
        }
        statistics.packetsLost = tracks.values.reduce(0) { $0 + max(0, $1.stream.cumulativeLost) }
        statistics.unneededRetransmissions = tracks.values.reduce(0) { $0 &+ ($1.nack?.spuriousRetransmissions ?? 0) }
        statistics.timestampDiscontinuities = tracks.values.reduce(0) { $0 &+ $1.clock.discontinuities }
        if let layers {
            statistics.simulcastLayers = layers.layerCount
            statistics.simulcastSwitches = layers.switches
            statistics.simulcastRid = layers.selected.flatMap { tracks[$0]?.rid }
        }
        return outputs
    }

    // MARK: Inside

    /// Keyframe requests go out for every stream but the simulcast layers not in use.
    private func wantsKeyframes(_ ssrc: UInt32, now: Int64) -> Bool {
        guard let layers, tracks[ssrc]?.kind == .video else { return true }
        return layers.wantsKeyframes(from: ssrc, now: now)
    }

    /// The media SSRC an unpaired RTX packet repairs.
    private func repairedStream(of packet: RTPPacket) -> UInt32? {
        let video = tracks.filter { $0.value.kind == .video }
        if layers == nil { return video.first?.key }
        guard let id = repairedRidExtensionID, let rid = packet.extensionElement(id: id).flatMap(Self.rid) else { return nil }
        return video.first { $0.value.rid == rid }?.key
    }

    /// An RtpStreamId / RepairedRtpStreamId: 1...16 alphanumeric characters (RFC 8852).
    static func rid(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty, bytes.count <= 255 else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.isEmpty ? nil : text
    }

    /// A track for a new SSRC, only if the offer allows it: an SSRC it declared, or while its
    /// kind has fewer streams than negotiated (a silent one may be replaced). Anything else is
    /// counted and dropped before memory is spent on it (a flood of SSRCs costs nothing).
    private mutating func admitStream(for packet: RTPPacket, now: Int64) -> Track? {
        guard let track = makeTrack(for: packet) else {
            statistics.unknownPackets += 1
            return nil
        }
        let media = track.kind == .video ? video : audio
        let declared = media?.sources ?? []
        if !declared.isEmpty {
            guard declared.contains(where: { $0.ssrc == packet.ssrc }) else {
                statistics.undeclaredStreamPackets += 1
                return nil
            }
            return track
        }
        let allowed = track.kind == .video ? max(1, video?.simulcastRids.count ?? 1) : 1
        let existing = tracks.filter { $0.value.kind == track.kind }
        if existing.count >= allowed {
            guard let silent = existing.filter({ now - $0.value.lastPacketAt >= Self.replaceableAfter })
                .min(by: { $0.value.lastPacketAt < $1.value.lastPacketAt }) else {
                statistics.undeclaredStreamPackets += 1
                return nil
            }
            tracks[silent.key] = nil
        }
        return track
    }

    private func makeTrack(for packet: RTPPacket) -> Track? {
        let media: NegotiatedMedia
        if let video, packet.payloadType == video.codec.payloadType {
            media = video
        } else if let audio, packet.payloadType == audio.codec.payloadType {
            media = audio
        } else {
            return nil
        }
        let codec: WebRTCCodec
        switch media.codec.name {
        case .h264: codec = .h264
        case .vp8: codec = .vp8
        case .opus: codec = .opus
        }
        let isVideo = media.kind == .video
        return Track(kind: media.kind, codec: codec, stream: RTPReceiveStream(ssrc: packet.ssrc, clockRate: media.codec.clockRate),
                          nack: isVideo ? NackGenerator(configuration: configuration.nack) : nil,
                          reorder: ReorderBuffer(configuration: isVideo ? configuration.videoReorder : configuration.audioReorder),
                          clock: SenderClock(clockRate: media.codec.clockRate),
                          keyframes: isVideo ? KeyframeRequester(mediaSSRC: packet.ssrc, senderSSRC: configuration.senderSSRC,
                                                                 configuration: configuration.keyframeRequests) : nil)
    }

    /// Hands the packets the reorder buffer lets go of to the depacketizer, and complete
    /// access units to the output.
    private mutating func release(_ track: inout Track, now: Int64, into outputs: inout [ReceiverOutput]) {
        for event in track.reorder.poll(now: now) {
            guard case .packet(let sequence, let packet) = event else { continue }
            let timestamp = track.timestamps.peek(packet.timestamp)
            let events: [DepacketizerEvent]
            switch track.codec {
            case .h264: events = track.h264.push(payload: packet.payload, sequence: sequence, timestamp: timestamp, marker: packet.marker)
            case .vp8: events = track.vp8.push(payload: packet.payload, sequence: sequence, timestamp: timestamp, marker: packet.marker)
            case .opus: events = track.opus.push(payload: packet.payload, sequence: sequence, timestamp: timestamp)
            }
            for case .frame(let frame) in events {
                if !frame.isComplete {
                    // A broken frame breaks decoding until the next keyframe.
                    statistics.framesIncomplete += 1
                    track.keyframes?.keyframeNeeded()
                    if track.kind == .video { track.awaitingKeyframe = true }
                    continue
                }
                if frame.isKeyframe {
                    track.keyframes?.keyframeReceived()
                    track.nack?.keyframeReceived(startingAt: frame.firstSequence)
                    track.awaitingKeyframe = false
                    if track.kind == .video { track.latestKeyframeStart = frame.firstSequence }
                } else if track.awaitingKeyframe {
                    statistics.framesSkippedUntilKeyframe += 1
                    continue
                }
                guard let time = publisherTime(track, frame.timestamp) else { continue }
                let size = frame.keyframePictureSize
                if track.kind == .video, layers != nil,
                   layers?.admit(ssrc: track.stream.ssrc, isKeyframe: frame.isKeyframe, pictureSize: size, now: now) == false {
                    statistics.framesOfOtherLayers += 1
                    continue
                }
                if let size {
                    statistics.videoWidth = size.width
                    statistics.videoHeight = size.height
                }
                statistics.framesDelivered += 1
                outputs.append(.accessUnit(ReceivedAccessUnit(kind: track.kind, codec: track.codec, data: frame.data, time: time,
                                                              isKeyframe: frame.isKeyframe || track.kind == .audio)))
            }
        }
    }

    /// An RTP timestamp on the publisher's timeline.
    private func publisherTime(_ track: Track, _ timestamp: Int64) -> Int64? {
        guard let mapping = track.clock.mapping else { return nil }
        let wall = mapping.wallClock(forTimestamp: timestamp, clockRate: track.stream.clockRate)
        switch mapping.source {
        case .arrival: return wall
        case .senderReport, .captureTime: return wall - (senderOffset ?? 0)
        }
    }
}
