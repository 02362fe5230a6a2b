// Line-oriented SDP parsing. Lenient where real offers vary (\n or \r\n, blank lines, case
// of encoding names, unknown lines and attributes, candidate syntax) and strict where the
// negotiation depends on a value (rtpmap, fmtp, extmap, fingerprint, setup, group, ssrc).

extension SessionDescription {
    /// Offers of browsers with many codecs stay below 16 KiB; this bounds the work per request.
    public static let maximumLength = 128 * 1024

    public static func parse(_ text: String) throws(SDPError) -> SessionDescription {
        let byteCount = text.utf8.count
        guard byteCount <= maximumLength else { throw .tooLarge(bytes: byteCount, limit: maximumLength) }
        var parser = SDPParser()
        // Split on LF at the byte level: Swift treats "\r\n" as one Character.
        var number = 0
        for rawLine in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            var line = Substring(rawLine)
            while line.last == "\r" || line.last == " " || line.last == "\t" { line.removeLast() }
            if line.isEmpty { continue }
            try parser.consume(line, number: number)
        }
        return try parser.finish()
    }
}

/// Builds a `SessionDescription` one line at a time.
private struct SDPParser {
    var session = SessionDescription()
    /// Session-level values of the attributes a section may override.
    var sessionShared = SharedAttributes()
    var sawVersion = false
    var current: MediaBuilder?

    /// Attributes allowed at session and media level (RFC 8839, RFC 8122, RFC 4145, RFC 8866, RFC 8285).
    struct SharedAttributes {
        var iceUfrag: String?
        var icePwd: String?
        var fingerprints: [SDPFingerprint] = []
        var setup: SDPSetup?
        var direction: SDPDirection?
        var extmaps: [SDPExtmap] = []
    }

    /// Per-section state that only becomes codecs at the end of the section.
    struct MediaBuilder {
        var media: SDPMediaDescription
        var shared = SharedAttributes()
        var rtpmaps: [UInt8: (name: String, clockRate: Int, channels: Int?)] = [:]
        var fmtps: [UInt8: String] = [:]
        var feedback: [String: [String]] = [:]
        var sources: [SDPSource] = []
    }

    mutating func consume(_ line: Substring, number: Int) throws(SDPError) {
        let bytes = Array(line.utf8.prefix(2))
        guard bytes.count == 2, bytes[1] == UInt8(ascii: "="),
              (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[0]) else {
            throw .malformedLine(number: number, text: Self.excerpt(line))
        }
        let type = line.first!
        let value = line.dropFirst(2)
        if !sawVersion {
            guard type == "v" else { throw .missingVersion }
            guard value.trimmingSDPWhitespace() == "0" else { throw .unsupportedVersion(String(value.prefix(20))) }
            sawVersion = true
            return
        }
        switch type {
        case "o":
            let fields = value.split(separator: " ")
            guard fields.count == 6 else { throw .malformedLine(number: number, text: Self.excerpt(line)) }
            session.origin = SDPOrigin(username: String(fields[0]), sessionID: String(fields[1]), sessionVersion: String(fields[2]),
                                       networkType: String(fields[3]), addressType: String(fields[4]), address: String(fields[5]))
        case "s":
            if current == nil { session.sessionName = String(value) }
        case "m":
            try closeMedia()
            current = MediaBuilder(media: try Self.parseMediaLine(value, line: line, number: number))
        case "a":
            try attribute(value, line: line, number: number)
        default:
            // c=, b=, t=, i=, ... carry nothing a lite, receive-only server needs.
            break
        }
    }

    mutating func finish() throws(SDPError) -> SessionDescription {
        guard sawVersion else { throw .empty }
        try closeMedia()
        session.iceUfrag = sessionShared.iceUfrag
        session.icePwd = sessionShared.icePwd
        session.fingerprints = sessionShared.fingerprints
        session.setup = sessionShared.setup
        session.extmaps = sessionShared.extmaps
        return session
    }

    private static func parseMediaLine(_ value: Substring, line: Substring, number: Int) throws(SDPError) -> SDPMediaDescription {
        let fields = value.split(separator: " ")
        guard fields.count >= 3 else { throw .malformedMediaLine(number: number, text: excerpt(line)) }
        // "<port>" or "<port>/<count>".
        guard let port = Int(fields[1].split(separator: "/").first ?? ""), (0...65535).contains(port) else {
            throw .malformedMediaLine(number: number, text: excerpt(line))
        }
        return SDPMediaDescription(kind: String(fields[0]), port: port, proto: String(fields[2]), formats: fields.dropFirst(3).map(String.init))
    }

    private mutating func attribute(_ text: Substring, line: Substring, number: Int) throws(SDPError) {
        let name: Substring
        let value: Substring?
        if let colon = text.firstIndex(of: ":") {
            name = text[..<colon]
            value = text[text.index(after: colon)...]
        } else {
            name = text
            value = nil
        }
        let malformed = SDPError.malformedAttribute(number: number, text: Self.excerpt(line))
        let attribute = SDPAttribute(name: String(name), value: value.map(String.init))
        let trimmed = value?.trimmingSDPWhitespace() ?? ""

        guard current != nil else {
            session.attributes.append(attribute)
            if try Self.applyShared(name, trimmed, to: &sessionShared, malformed: malformed) { return }
            switch name {
            case "ice-lite": session.iceLite = true
            case "ice-options": session.iceOptions = trimmed.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
            case "group":
                let fields = trimmed.split(separator: " ")
                guard let semantics = fields.first else { throw malformed }
                session.groups.append(SDPGroup(semantics: String(semantics), mids: fields.dropFirst().map(String.init)))
            default: break
            }
            return
        }

        current!.media.attributes.append(attribute)
        if try Self.applyShared(name, trimmed, to: &current!.shared, malformed: malformed) { return }
        switch name {
        case "mid": current!.media.mid = String(trimmed)
        case "rtcp-mux": current!.media.rtcpMux = true
        case "rtcp-mux-only": current!.media.rtcpMuxOnly = true
        case "rtcp-rsize": current!.media.rtcpReducedSize = true
        case "bundle-only": current!.media.bundleOnly = true
        case "msid": current!.media.msid = String(trimmed)
        case "simulcast": current!.media.simulcast = String(trimmed)
        case "end-of-candidates": current!.media.endOfCandidates = true
        case "rtpmap":
            // "<pt> <name>/<clock>[/<channels>]"
            let fields = trimmed.split(separator: " ", maxSplits: 1)
            guard fields.count == 2, let payloadType = UInt8(fields[0]), payloadType < 128 else { throw malformed }
            let parts = fields[1].trimmingSDPWhitespace().split(separator: "/")
            guard (2...3).contains(parts.count), let clockRate = Int(parts[1]), clockRate > 0 else { throw malformed }
            var channels: Int?
            if parts.count == 3 {
                guard let count = Int(parts[2]), count > 0 else { throw malformed }
                channels = count
            }
            current!.rtpmaps[payloadType] = (String(parts[0]), clockRate, channels)
        case "fmtp":
            let fields = trimmed.split(separator: " ", maxSplits: 1)
            guard let format = fields.first else { throw malformed }
            // Non-RTP formats may carry fmtp too; only payload types matter here.
            if let payloadType = UInt8(format) {
                current!.fmtps[payloadType] = fields.count == 2 ? String(fields[1].trimmingSDPWhitespace()) : ""
            }
        case "rtcp-fb":
            let fields = trimmed.split(separator: " ")
            guard fields.count >= 2 else { break }
            current!.feedback[String(fields[0]), default: []].append(fields.dropFirst().joined(separator: " "))
        case "ssrc":
            // "<ssrc> <attribute>[:<value>]"
            let fields = trimmed.split(separator: " ", maxSplits: 1)
            guard let first = fields.first, let ssrc = UInt32(first) else { throw malformed }
            var sourceAttribute: SDPAttribute?
            if fields.count == 2 {
                let body = fields[1]
                if let colon = body.firstIndex(of: ":") {
                    sourceAttribute = SDPAttribute(name: String(body[..<colon]), value: String(body[body.index(after: colon)...]))
                } else {
                    sourceAttribute = SDPAttribute(name: String(body), value: nil)
                }
            }
            current!.addSource(ssrc, sourceAttribute)
        case "ssrc-group":
            let fields = trimmed.split(separator: " ")
            guard let semantics = fields.first else { throw malformed }
            var ssrcs: [UInt32] = []
            for field in fields.dropFirst() {
                guard let ssrc = UInt32(field) else { throw malformed }
                ssrcs.append(ssrc)
            }
            current!.media.sourceGroups.append(SDPSourceGroup(semantics: String(semantics), ssrcs: ssrcs))
        case "rid":
            let fields = trimmed.split(separator: " ", maxSplits: 2)
            if fields.count >= 2 {
                current!.media.rids.append(SDPRid(id: String(fields[0]), direction: String(fields[1]),
                                                  restrictions: fields.count == 3 ? String(fields[2]) : nil))
            }
        case "candidate":
            if let candidate = Self.parseCandidate(trimmed) { current!.media.candidates.append(candidate) }
        default:
            break
        }
    }

    /// Stores a session-or-media attribute into `shared`; false when `name` is not one of them.
    private static func applyShared(_ name: Substring, _ value: Substring, to shared: inout SharedAttributes,
                                    malformed: SDPError) throws(SDPError) -> Bool {
        switch name {
        case "ice-ufrag": shared.iceUfrag = String(value)
        case "ice-pwd": shared.icePwd = String(value)
        case "fingerprint":
            guard let fingerprint = SDPFingerprint(attributeValue: value) else { throw malformed }
            shared.fingerprints.append(fingerprint)
        case "setup":
            guard let setup = SDPSetup(rawValue: value.lowercased()) else { throw malformed }
            shared.setup = setup
        case "extmap":
            guard let extmap = parseExtmap(value) else { throw malformed }
            shared.extmaps.append(extmap)
        case "sendrecv", "sendonly", "recvonly", "inactive":
            shared.direction = SDPDirection(rawValue: String(name))
        default:
            return false
        }
        return true
    }

    private mutating func closeMedia() throws(SDPError) {
        guard let builder = current else { return }
        current = nil
        var media = builder.media
        let own = builder.shared
        media.direction = own.direction ?? sessionShared.direction ?? .sendrecv
        media.iceUfrag = own.iceUfrag ?? sessionShared.iceUfrag
        media.icePwd = own.icePwd ?? sessionShared.icePwd
        media.fingerprints = own.fingerprints.isEmpty ? sessionShared.fingerprints : own.fingerprints
        media.setup = own.setup ?? sessionShared.setup
        // Session-level extmaps apply unless the section maps the same id itself.
        media.extmaps = own.extmaps + sessionShared.extmaps.filter { extmap in !own.extmaps.contains { $0.id == extmap.id } }
        let wildcardFeedback = builder.feedback["*"] ?? []
        var seen = Set<UInt8>()
        for format in media.formats {
            guard let payloadType = UInt8(format), seen.insert(payloadType).inserted,
                  let rtpmap = builder.rtpmaps[payloadType] else { continue }
            media.codecs.append(SDPCodec(payloadType: payloadType, name: rtpmap.name, clockRate: rtpmap.clockRate,
                                         channels: rtpmap.channels, fmtp: builder.fmtps[payloadType],
                                         feedback: (builder.feedback[format] ?? []) + wildcardFeedback))
        }
        media.sources = builder.sources
        session.media.append(media)
    }

    private static func parseExtmap(_ value: Substring) -> SDPExtmap? {
        let fields = value.split(separator: " ", maxSplits: 2)
        guard fields.count >= 2 else { return nil }
        let idParts = fields[0].split(separator: "/", maxSplits: 1)
        guard let first = idParts.first, let id = Int(first), (1...255).contains(id) else { return nil }
        var direction: SDPDirection?
        if idParts.count == 2 {
            guard let parsed = SDPDirection(rawValue: String(idParts[1])) else { return nil }
            direction = parsed
        }
        return SDPExtmap(id: id, direction: direction, uri: String(fields[1]), attributes: fields.count == 3 ? String(fields[2]) : nil)
    }

    /// Nil for anything that does not follow the grammar; candidates are informational here.
    private static func parseCandidate(_ value: Substring) -> SDPCandidate? {
        let fields = value.split(separator: " ")
        guard fields.count >= 8, fields[6] == "typ", let component = Int(fields[1]), let priority = UInt32(fields[3]),
              let port = UInt16(fields[5]) else { return nil }
        var candidate = SDPCandidate(foundation: String(fields[0]), component: component, transport: fields[2].lowercased(),
                                     priority: priority, address: String(fields[4]), port: port, type: String(fields[7]))
        var index = 8
        while index + 1 < fields.count {
            switch fields[index] {
            case "raddr": candidate.relatedAddress = String(fields[index + 1])
            case "rport": candidate.relatedPort = UInt16(fields[index + 1])
            default: break
            }
            index += 2
        }
        return candidate
    }

    /// Enough of a bad line to find it, never a whole hostile body.
    static func excerpt(_ line: Substring) -> String {
        line.count > 120 ? String(line.prefix(120)) + "…" : String(line)
    }
}

extension SDPParser.MediaBuilder {
    mutating func addSource(_ ssrc: UInt32, _ attribute: SDPAttribute?) {
        let index: Int
        if let existing = sources.firstIndex(where: { $0.ssrc == ssrc }) {
            index = existing
        } else {
            sources.append(SDPSource(ssrc: ssrc))
            index = sources.count - 1
        }
        guard let attribute else { return }
        sources[index].attributes.append(attribute)
        switch attribute.name {
        case "cname": sources[index].cname = attribute.value
        case "msid": sources[index].msid = attribute.value
        default: break
        }
    }
}
