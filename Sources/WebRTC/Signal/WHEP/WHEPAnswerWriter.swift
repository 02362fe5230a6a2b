// The text of a WHEP answer. Every served section says sendonly and announces our SSRCs
// (cname, msid, the RTX pair in a FID group), so the viewer maps our packets to its
// transceivers without waiting for the mid header extension; every other section is
// answered with port 0 and its mid (JSEP). Nothing of the offer is written back but numbers
// (payload types, extension ids) and the tokens `WHEPNegotiator` checked (kinds, protocols,
// first formats, mids).

struct WHEPAnswerWriter {
    let offer: SessionDescription
    let options: WHEPAnswerOptions
    let localFingerprint: SDPFingerprint
    let negotiation: WHEPNegotiation

    func render() -> String {
        var lines = SDPAnswerSession.lines(sessionID: options.sessionID, bundleMids: negotiation.bundleMids)
        let tracks = negotiation.tracks
        for (index, section) in offer.media.enumerated() {
            if let track = tracks.first(where: { $0.index == index }) {
                lines += served(track, offered: section)
            } else {
                lines += ["m=\(section.kind) 0 \(section.proto) \(section.formats.first ?? "0")", "c=IN IP4 0.0.0.0"]
                if let mid = section.mid { lines.append("a=mid:\(mid)") }
            }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    private func served(_ track: WHEPSendTrack, offered section: SDPMediaDescription) -> [String] {
        let first = options.candidates[0]
        var formats = [String(track.payloadType)]
        if let rtx = track.rtx { formats.append(String(rtx.payloadType)) }
        var lines = [
            "m=\(track.kind.rawValue) \(first.port) \(section.proto.uppercased()) \(formats.joined(separator: " "))",
            "c=IN \(first.ip.family == .ipv4 ? "IP4" : "IP6") \(first.ip)",
        ]
        if let mid = track.mid { lines.append("a=mid:\(mid)") }
        lines += [
            "a=ice-ufrag:\(options.localCredentials.ufrag)",
            "a=ice-pwd:\(options.localCredentials.pwd)",
            "a=fingerprint:\(localFingerprint)",
            "a=setup:\(negotiation.localSetup.rawValue)",
            "a=sendonly",
            "a=rtcp-mux",
        ]
        if track.rtcpReducedSize { lines.append("a=rtcp-rsize") }
        for (id, uri) in [(track.absSendTimeID, SDPExtmap.absSendTimeURI), (track.midExtensionID, SDPExtmap.midURI)] {
            guard let id else { continue }
            // A directional offer (recvonly: the viewer receives it) gets the mirror; a plain one stays plain.
            let directional = section.extmaps.first { $0.id == Int(id) }?.direction != nil
            lines.append("a=extmap:\(id)\(directional ? "/sendonly" : "") \(uri)")
        }
        let streams = options.streams
        let trackID = track.kind == .video ? streams.videoTrackID : streams.audioTrackID
        lines.append("a=msid:\(streams.streamID) \(trackID)")

        let pt = track.payloadType
        lines.append(track.kind == .video ? "a=rtpmap:\(pt) H264/90000" : "a=rtpmap:\(pt) opus/48000/2")
        for feedback in track.feedback { lines.append("a=rtcp-fb:\(pt) \(feedback)") }
        lines.append("a=fmtp:\(pt) \(track.fmtp)")
        if let rtx = track.rtx {
            lines += ["a=rtpmap:\(rtx.payloadType) rtx/\(track.clockRate)", "a=fmtp:\(rtx.payloadType) apt=\(pt)",
                      "a=ssrc-group:FID \(track.ssrc) \(rtx.ssrc)"]
        }
        for ssrc in [track.ssrc] + (track.rtx.map { [$0.ssrc] } ?? []) {
            lines += ["a=ssrc:\(ssrc) cname:\(streams.cname)", "a=ssrc:\(ssrc) msid:\(streams.streamID) \(trackID)"]
        }
        for (index, address) in options.candidates.enumerated() {
            // RFC 8445 §5.1.2.1: host type preference 126, local preference falling with the index.
            let priority = UInt32(126) << 24 | UInt32(65535 - index) << 8 | 255
            lines.append("a=candidate:\(index + 1) 1 udp \(priority) \(address.ip) \(address.port) typ host")
        }
        lines.append("a=end-of-candidates")
        return lines
    }
}
