// Generated hostile offers: real viewers' offers (Chromium, aiortc, and the WHIP fixtures
// turned recvonly) with lines deleted, repeated, swapped, inserted from a vocabulary of the
// attributes the negotiation reads, tokens and bytes replaced, the text cut short; each seed
// also picks the composition's profile. Whatever comes out, the negotiator does not trap; a
// refusal is a WHEPOfferError with a short description; an accepted offer gets an answer our
// parser reads whose payload types the offer has, for the codec and profile it offered
// (`WHEPAnswerCheck`). A failure is shrunk and printed with its seed (STAGE_SEQUENCE_SEED
// replays it).
import TestSupport
import Testing
@testable import WebRTCSignal

enum OfferMutation: CustomStringConvertible {
    case setup(base: Int, profile: Int, anyOffered: Bool)
    case deleteLine(Int)
    case duplicateLine(Int)
    case swapLines(Int, Int)
    case insertLine(Int, String)
    case replaceToken(line: Int, token: Int, String)
    case setByte(line: Int, offset: Int, UInt8)
    case truncate(Int)

    var description: String {
        switch self {
        case .setup(let base, let profile, let anyOffered):
            return "setup(base: \(OfferMutation.baseNames[base]), profile: \(OfferMutation.profiles[profile]), anyOffered: \(anyOffered))"
        case .deleteLine(let line): return "deleteLine(\(line))"
        case .duplicateLine(let line): return "duplicateLine(\(line))"
        case .swapLines(let a, let b): return "swapLines(\(a), \(b))"
        case .insertLine(let line, let text): return "insertLine(\(line), \(text.debugDescription))"
        case .replaceToken(let line, let token, let text): return "replaceToken(line: \(line), token: \(token), \(text.debugDescription))"
        case .setByte(let line, let offset, let value): return "setByte(line: \(line), offset: \(offset), \(value))"
        case .truncate(let lines): return "truncate(\(lines))"
        }
    }

    static let baseNames = ["chromiumWHEP", "aiortcWHEP", "chrome", "firefox", "obs", "gstreamer", "aiortc", "simulcast", "viewerOffer"]
    static let bases: [String] = [
        Offers.chromiumWHEP, Offers.aiortcWHEP,
        Offers.chrome, Offers.firefox, Offers.obs, Offers.gstreamer, Offers.aiortc, Offers.simulcast,
    ].map { $0.replacingOccurrences(of: "a=sendonly", with: "a=recvonly") }
        + [viewerOffer(h264: ["packetization-mode=1;profile-level-id=42e01f", "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f"],
                       videoLines: ["a=extmap:3 \(SDPExtmap.absSendTimeURI)", "a=extmap:4 \(SDPExtmap.midURI)"])]
    static let profiles = [Compositions.constrainedBaseline31, Compositions.main40, Compositions.high40,
                           H264ProfileLevelID("42f00b")!, H264ProfileLevelID("640c1f")!]

    static let lines: [String] = [
        "a=recvonly", "a=sendonly", "a=inactive", "a=sendrecv", "a=rtcp-mux", "a=rtcp-rsize", "a=bundle-only",
        "a=group:BUNDLE 0 1", "a=group:BUNDLE 0 1 2", "a=group:BUNDLE", "a=group:BUNDLE a v", "a=mid:0", "a=mid:1", "a=mid:2", "a=mid:",
        "m=video 9 UDP/TLS/RTP/SAVPF 96 97", "m=audio 9 UDP/TLS/RTP/SAVPF 111", "m=audio 0 UDP/TLS/RTP/SAVPF 111",
        "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "m=video 9 RTP/AVP 96", "m=video 0 UDP/TLS/RTP/SAVPF 96",
        "a=rtpmap:96 H264/90000", "a=rtpmap:96 h264/90000", "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96", "a=fmtp:97 apt=",
        "a=fmtp:96 packetization-mode=1;profile-level-id=4d0028", "a=fmtp:96 packetization-mode=1",
        "a=fmtp:96 packetization-mode=0;profile-level-id=42e01f",
        "a=fmtp:96 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=640c1f",
        "a=fmtp:96 profile-level-id=zzzzzz;packetization-mode=1", "a=fmtp:96 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=f4001f",
        "a=rtpmap:111 opus/48000/2", "a=rtpmap:111 opus/48000", "a=rtpmap:111 opus/48000/1", "a=fmtp:111 stereo=1",
        "a=extmap:2 \(SDPExtmap.absSendTimeURI)", "a=extmap:2/recvonly \(SDPExtmap.midURI)", "a=extmap:15 \(SDPExtmap.midURI)",
        "a=extmap:4/sendonly \(SDPExtmap.absSendTimeURI)", "a=extmap:4 \(SDPExtmap.transportCCURI)",
        "a=setup:passive", "a=setup:active", "a=setup:holdconn", "a=ice-ufrag:x", "a=ice-pwd:y", "a=ice-lite",
        "a=fingerprint:sha-1 AB:CD", "a=fingerprint:sha-256 " + Array(repeating: "0F", count: 32).joined(separator: ":"),
        "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli", "a=rtcp-fb:* ccm fir", "a=rtcp-fb:96 transport-cc", "a=rtcp-fb:96 goog-remb",
        "a=ssrc:1 cname:x", "a=ssrc-group:FID 1 2", "a=msid:a b", "c=IN IP4 0.0.0.0", "v=0", "s=-", "t=0 0", "a=x", "",
    ]
    static let tokens: [String] = [
        "0", "1", "2", "9", "96", "97", "111", "127", "128", "255", "-1", "H264/90000", "rtx/90000", "opus/48000/2", "recvonly",
        "sendonly", "UDP/TLS/RTP/SAVPF", "RTP/AVP", "video", "audio", "application", "webrtc-datachannel", "42e01f", "4d0028",
        "640c1f", "f4001f", "packetization-mode=1", "apt=96", "", "\t", "é", "a\u{0}b", String(repeating: "x", count: 70),
    ]

    static func generate(_ generator: inout SeededGenerator) -> [OfferMutation] {
        var steps: [OfferMutation] = [.setup(base: Int.random(in: 0..<bases.count, using: &generator),
                                             profile: Int.random(in: 0..<profiles.count, using: &generator),
                                             anyOffered: Bool.random(using: &generator))]
        for _ in 0..<Int.random(in: 0...8, using: &generator) {
            let line = Int.random(in: 0..<512, using: &generator)
            switch Int.random(in: 0..<16, using: &generator) {
            case 0...2: steps.append(.deleteLine(line))
            case 3: steps.append(.duplicateLine(line))
            case 4: steps.append(.swapLines(line, Int.random(in: 0..<512, using: &generator)))
            case 5...9: steps.append(.insertLine(line, lines.randomElement(using: &generator)!))
            case 10...12: steps.append(.replaceToken(line: line, token: Int.random(in: 0..<8, using: &generator),
                                                     tokens.randomElement(using: &generator)!))
            case 13, 14: steps.append(.setByte(line: line, offset: Int.random(in: 0..<64, using: &generator),
                                               [0, 9, 13, 32, 0x3A, 0x3D, 0x7F, 0x80, 0xC3, 0xFF, UInt8.random(in: 0...255, using: &generator)]
                                                .randomElement(using: &generator)!))
            default: steps.append(.truncate(Int.random(in: 0..<512, using: &generator)))
            }
        }
        return steps
    }

    /// The offer text and options the steps make (a missing setup step means the first base,
    /// profile and strict matching).
    static func build(_ steps: [OfferMutation]) -> (offer: String, options: WHEPAnswerOptions) {
        var base = 0, profile = 0, anyOffered = false
        if case .setup(let b, let p, let a)? = steps.first(where: { if case .setup = $0 { true } else { false } }) {
            (base, profile, anyOffered) = (b, p, a)
        }
        var lines = bases[base].sdpLines
        for step in steps {
            switch step {
            case .setup: break
            case .deleteLine(let line): if !lines.isEmpty { lines.remove(at: line % lines.count) }
            case .duplicateLine(let line): if !lines.isEmpty { lines.insert(lines[line % lines.count], at: line % lines.count) }
            case .swapLines(let a, let b): if !lines.isEmpty { lines.swapAt(a % lines.count, b % lines.count) }
            case .insertLine(let line, let text): lines.insert(text, at: line % (lines.count + 1))
            case .replaceToken(let line, let token, let text):
                guard !lines.isEmpty else { break }
                var fields = lines[line % lines.count].split(separator: " ", omittingEmptySubsequences: false).map(String.init)
                fields[token % fields.count] = text
                lines[line % lines.count] = fields.joined(separator: " ")
            case .setByte(let line, let offset, let value):
                guard !lines.isEmpty else { break }
                var bytes = Array(lines[line % lines.count].utf8)
                guard !bytes.isEmpty else { break }
                bytes[offset % bytes.count] = value
                lines[line % lines.count] = String(decoding: bytes, as: UTF8.self)
            case .truncate(let count): lines = Array(lines.prefix(count % (lines.count + 1)))
            }
        }
        return (lines.joined(separator: "\r\n") + "\r\n", whepOptions(profiles[profile], matching: anyOffered ? .anyOffered : .decodable))
    }

    enum Outcome {
        case accepted
        case refused(WHEPOfferError)
    }

    static func run(_ steps: [OfferMutation]) -> (Outcome, problem: String?) {
        let (offer, options) = build(steps)
        do {
            let negotiation = try WHEPNegotiator.negotiate(offer: offer, options: options)
            let problems = WHEPAnswerCheck.problems(negotiation, offer: offer, options: options)
            return (.accepted, problems.isEmpty ? nil : "\(problems)\noffer:\n\(offer)\nanswer:\n\(negotiation.answer)")
        } catch {
            let text = error.description
            if text.isEmpty || text.utf8.count > 600 { return (.refused(error), "a refusal described in \(text.utf8.count) bytes: \(text)") }
            if error.isServerFault { return (.refused(error), "the viewer's offer blamed on us: \(error)") }
            return (.refused(error), nil)
        }
    }
}

struct WHEPOfferPropertyTests {
    static let seeds = PropertyCheck.seeds(count: 1500, base: 0x5748_4550)

    @Test("mutated real offers never trap; refusals are short WHEPOfferErrors; accepted ones answer with offered payload types")
    func mutatedOffers() {
        let failure = PropertyCheck.check(seeds: Self.seeds, generate: OfferMutation.generate) { OfferMutation.run($0).problem }
        #expect(failure == nil, "\(failure.map(\.description) ?? "")")
    }

    @Test("the generator gets deep: many offers accepted, with and without audio, and refusals of many kinds")
    func generatorReach() {
        var accepted = 0, videoOnly = 0, declaredMismatch = 0
        var kinds = Set<String>()
        for seed in Self.seeds {
            var generator = SeededGenerator(seed: seed)
            let steps = OfferMutation.generate(&generator)
            switch OfferMutation.run(steps).0 {
            case .accepted:
                accepted += 1
                let (offer, options) = OfferMutation.build(steps)
                if let negotiation = try? WHEPNegotiator.negotiate(offer: offer, options: options) {
                    if negotiation.audio == nil { videoOnly += 1 }
                    if negotiation.video.h264?.declaredDecodable == false { declaredMismatch += 1 }
                }
            case .refused(let error):
                kinds.insert(Self.caseName(error))
            }
        }
        guard Self.seeds.count > 100 else { return }  // one replayed seed
        #expect(accepted * 5 >= Self.seeds.count, "\(accepted) of \(Self.seeds.count) accepted")
        #expect(videoOnly > 0 && declaredMismatch > 0, "video-only \(videoOnly), undeclared profile \(declaredMismatch)")
        #expect(kinds.count >= 10, "\(kinds.sorted())")
    }

    /// "noH264", "sdp.missingBundle", ...
    static func caseName(_ value: Any) -> String {
        guard let child = Mirror(reflecting: value).children.first, let label = child.label else { return "\(value)" }
        return label == "sdp" ? "sdp." + caseName(child.value) : label
    }
}
