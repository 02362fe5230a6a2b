// A negotiated WHEP viewer's send side: what the answer said, as the outlet's streams.

public import WebRTCMedia
public import WebRTCSignal

extension WHEPViewerStreams {
    /// The send side of a negotiated viewer: SSRCs, payload types, RTX, abs-send-time and mid.
    public init(_ negotiation: WHEPNegotiation) {
        func configuration(_ track: WHEPSendTrack) -> RTPSendStreamConfiguration {
            let mid = track.midExtensionID.flatMap { id in track.mid.map { RTPHeaderExtensionElement(id: id, data: Array($0.utf8)) } }
            return RTPSendStreamConfiguration(ssrc: track.ssrc, payloadType: track.payloadType, clockRate: track.clockRate,
                                              rtx: track.rtx.map { RTXSendConfiguration(ssrc: $0.ssrc, payloadType: $0.payloadType) },
                                              absSendTimeID: track.absSendTimeID, fixedExtensions: mid.map { [$0] } ?? [])
        }
        let video = configuration(negotiation.video)
        // Without an audio section the audio stream is never written; it only needs a distinct SSRC.
        let audio = negotiation.audio.map(configuration)
            ?? RTPSendStreamConfiguration(ssrc: negotiation.video.ssrc &+ 1, payloadType: 111, clockRate: 48_000)
        self.init(video: video, audio: audio, cname: negotiation.cname, sendsAudio: negotiation.audio != nil)
    }
}
