// WHEP (draft-ietf-wish-whep) on the API listener: a viewer POSTs an SDP offer to a
// composition's `/whep/composition/<id>` and gets the composite over WebRTC on the WHIP UDP
// socket, from the composition's own encode.
//
//   POST   /whep/composition/<id>            application/sdp → 201 + Location + answer
//   DELETE /whep/composition/<id>/<session>  → 200: the viewer's session ends
//   PATCH  /whep/composition/<id>/<session>  → 405: no trickle ICE or restarts (the answer
//          carries our only candidate; a viewer that lost its path POSTs again)
//   OPTIONS                                  → 204 with CORS, so a web page can play
//
// Who may watch: a participant token of the composition's stage with the SUBSCRIBE
// capability (Bearer), or a request the API would take (SigV4; with authentication off, this
// machine's tools and the console's own origin). Checks run cheapest first: the path, the
// body's size and type, who it is, where the composition runs (a fleet's other node: 307),
// the offer (400 naming what is missing), then the caps (429): per composition, per address,
// in all.

import APIModels
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ParticipantTokens
import Persistence
import WHEP
import WebRTCIngest
import WebRTCMedia
import WebRTCSignal

struct WHEPEndpoint<Store: CompositionStore>: Sendable {
    let configuration: ServerConfiguration
    let store: Store
    let runtime: StageRuntime<Store>
    let media: WebRTCIngestServer
    let feeds: WHEPFeeds
    let tokens: TokenAuthority
    let authenticator: any RequestAuthenticator
    let wallClock: @Sendable () -> Date
    let logger: Logger

    /// Offers larger than this are refused (a browser's is 5–10 KiB).
    static var maxOfferBytes: Int { WHEPNegotiator.maximumOfferBytes }

    /// What the answer declares before the composition's encoder has started: Main profile
    /// (what it encodes) at level 4.2, which bounds every size and rate an encoder
    /// configuration allows (1080p60). Once it runs, its own SPS says.
    static var profileBeforeStart: H264ProfileLevelID { H264ProfileLevelID(profileIDC: 0x4D, constraintFlags: 0x40, levelIDC: 42) }

    func respond(to request: Request, clientAddress: String) async -> Response {
        let segments = request.uri.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard segments.count >= 3, segments[0] == "whep", segments[1] == "composition", segments.count <= 4 else {
            return WHIPResponses.plain(.notFound, "no WHEP endpoint at \(request.uri.path.prefix(200)): use /whep/composition/<composition id>")
        }
        let compositionId = segments[2]
        let resource = segments.count == 4 ? segments[3] : nil
        let allow = resource == nil ? "POST, OPTIONS" : "PATCH, DELETE, OPTIONS"
        switch (request.method, resource) {
        case (.options, _):
            return Response(status: .noContent, headers: WHIPResponses.cors(allow: allow))
        case (.post, nil):
            return await play(request, compositionId: compositionId, clientAddress: clientAddress)
        case (.delete, let id?):
            return await end(request, compositionId: compositionId, sessionId: id)
        default:
            var headers = WHIPResponses.cors(allow: allow)
            headers[.allow] = resource == nil ? "POST, OPTIONS" : "DELETE, OPTIONS"
            let message = request.method == .patch ? "trickle ICE and ICE restarts are not supported; the answer has every candidate (POST again)"
                : "\(request.method.rawValue) is not supported here"
            return WHIPResponses.plain(.methodNotAllowed, message, headers: headers)
        }
    }

    // MARK: Who

    private enum Access {
        case allowed
        case refused(Response)
    }

    /// A SUBSCRIBE token of `stageArn`, or what the API's authenticator takes.
    private func authorize(_ request: Request, body: ByteBuffer, stageArn: String) async -> Access {
        if let token = WHIPEndpoint<Store>.bearerToken(request) {
            let claims: ParticipantTokenClaims
            do {
                claims = try await tokens.verify(token, stageArn: stageArn, now: wallClock())
            } catch {
                return .refused(WHIPResponses.plain(error.kind == .wrongStage ? .forbidden : .unauthorized,
                                                    "participant token: \(error.message)",
                                                    headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""]))
            }
            guard claims.capabilities.contains(.subscribe) else {
                return .refused(WHIPResponses.plain(.forbidden, "participant token: no SUBSCRIBE capability"))
            }
            if await runtime.isRevoked(stageArn: stageArn, participantId: claims.participantId) {
                return .refused(WHIPResponses.plain(.forbidden, "participant \(claims.participantId) was disconnected or its token revoked"))
            }
            return .allowed
        }
        let (rawPath, rawQuery) = APIRoutes.splitTarget(request.head.path ?? request.uri.path)
        var headers = request.headers.map { ($0.name.rawName, $0.value) }
        if let authority = request.head.authority { headers.insert(("host", authority), at: 0) }
        // Unsigned (authentication off): the guard takes JSON only, against cross-site form
        // posts; application/sdp is not a simple content type (a cross-site page must preflight,
        // and the Origin check still applies), so it is not what the guard looks at.
        if !headers.contains(where: { $0.0.lowercased() == "authorization" }) {
            headers.removeAll { $0.0.lowercased() == "content-type" }
        }
        let denied = await authenticator.authenticate(AuthenticationRequest(
            method: request.method.rawValue, path: rawPath, query: rawQuery, headers: headers, body: Data(buffer: body)))
        guard let denied else { return .allowed }
        var fields: HTTPFields = [.wwwAuthenticate: "Bearer"]
        fields[.accessControlAllowOrigin] = "*"
        return .refused(WHIPResponses.plain(.unauthorized, "\(denied.message) (or send Authorization: Bearer <a SUBSCRIBE participant token>)",
                                            headers: fields))
    }

    private enum Found {
        case composition(Composition)
        case refused(Response)
    }

    /// The composition, or the answer for its absence.
    private func composition(_ compositionId: String) async -> Found {
        guard let arn = IVSARN(region: configuration.region, account: configuration.account, resourceType: .composition,
                               resourceID: compositionId)?.description else {
            return .refused(WHIPResponses.plain(.notFound, "no composition \(compositionId.prefix(100))"))
        }
        do {
            guard let stored = try await store.composition(arn: arn) else {
                return .refused(WHIPResponses.plain(.notFound, "no composition \(compositionId)"))
            }
            return .composition(stored.composition)
        } catch {
            return .refused(WHIPResponses.plain(.serviceUnavailable, "the composition cannot be read now: \(error)", headers: [.retryAfter: "2"]))
        }
    }

    // MARK: POST

    private func play(_ request: Request, compositionId: String, clientAddress: String) async -> Response {
        let body: ByteBuffer
        switch await WHIPResponses.offer(of: request, upTo: Self.maxOfferBytes) {
        case .refused(let response): return response
        case .body(let offer): body = offer
        }
        let composition: Composition
        switch await self.composition(compositionId) {
        case .refused(let response): return response
        case .composition(let found): composition = found
        }
        if case .refused(let response) = await authorize(request, body: body, stageArn: composition.stageArn) { return response }
        var requestLogger = logger
        requestLogger[metadataKey: "composition.arn"] = "\(composition.arn)"
        guard composition.state == .active || composition.state == .starting else {
            return WHIPResponses.plain(.notFound, "composition \(compositionId) is \(composition.state.rawValue): nothing to play")
        }
        // In a fleet, the node that runs the composition (its stage's) serves its viewers.
        do {
            if let peer = try await runtime.ownership.remoteOwner(of: composition.stageArn), let whip = peer.whipURL,
               whip.hasSuffix("/whip") {
                var headers = WHIPResponses.cors(allow: "POST, OPTIONS")
                var target = "\(whip.dropLast("/whip".count))/whep/composition/\(compositionId)"
                if let token = WHIPEndpoint<Store>.bearerToken(request) { target += "?access_token=\(WHIPEndpoint<Store>.queryEscaped(token))" }
                headers[.location] = target
                requestLogger.info("WHEP viewer redirected to the composition's node", metadata: ["node": "\(peer.nodeId)"])
                return WHIPResponses.plain(.temporaryRedirect, "composition \(compositionId) runs on node \(peer.nodeId)", headers: headers)
            }
        } catch {
            return WHIPResponses.plain(.serviceUnavailable, "the composition's node cannot be found now: \(error.message)",
                                       headers: [.retryAfter: "2"])
        }
        guard let feed = feeds.feed(compositionId: compositionId), !feed.isEnded else {
            return WHIPResponses.plain(.notFound, "composition \(compositionId) is not running on this node", headers: [.retryAfter: "2"])
        }
        let profile = feed.sequenceParameterSet.flatMap { H264ProfileLevelID(sequenceParameterSet: $0) } ?? Self.profileBeforeStart
        let prepared: PreparedWHEPSession
        do {
            prepared = try media.prepareViewer(offer: String(buffer: body), videoProfileLevelID: profile)
        } catch {
            requestLogger.notice("WHEP viewer refused: offer", metadata: ["reason": "\(error.message)"])
            return WHIPResponses.plain(error.kind == .offer ? .badRequest : .serviceUnavailable, error.message)
        }
        let outlet: WHEPViewerOutlet
        do {
            outlet = try WHEPViewerOutlet(streams: WHEPViewerStreams(prepared.negotiation))
        } catch {
            return WHIPResponses.plain(.badRequest, "the offer's header extensions cannot be sent: \(error)")
        }
        do {
            try feed.add(outlet)
        } catch .full(let limit) {
            media.noteViewerRefused()
            return WHIPResponses.plain(.tooManyRequests, "composition \(compositionId) has its \(limit) viewers (ingest.whip.maxViewersPerComposition)")
        } catch {
            return WHIPResponses.plain(.notFound, "composition \(compositionId) has ended")
        }
        let session = WebRTCIngestServer.redacted(prepared.id)
        let events = WebRTCViewerEvents(keyframeWanted: { feed.keyframeWanted() }, ended: { [requestLogger] reason in
            feed.remove(outlet)
            let counters = outlet.counters
            requestLogger.info("WHEP viewer ended", metadata: [
                "whep.session": "\(session)", "reason": "\(reason)", "rtp.packets": "\(counters.packets)",
                "rtp.retransmissions": "\(counters.retransmissions)", "frames.skipped": "\(counters.framesSkipped)",
                "backlogs.dropped": "\(counters.backlogsDropped)", "keyframe.requests": "\(counters.keyframeRequests)"])
        })
        do {
            try await media.startViewer(prepared, source: outlet, owner: compositionId, events: events, clientAddress: clientAddress)
        } catch {
            feed.remove(outlet)
            if error.kind == .tooManySessions {
                requestLogger.notice("WHEP viewer refused: cap", metadata: ["reason": "\(error.message)"])
                return WHIPResponses.plain(.tooManyRequests, error.message)
            }
            return WHIPResponses.plain(.serviceUnavailable, error.message)
        }
        requestLogger.info("WHEP viewer admitted", metadata: ["whep.session": "\(WebRTCIngestServer.redacted(prepared.id))",
                                                              "viewers": "\(feed.viewerCount)"])
        var headers = WHIPResponses.cors(allow: "POST, OPTIONS")
        headers[.contentType] = "application/sdp"
        headers[.location] = "/whep/composition/\(compositionId)/\(prepared.id)"
        headers[.eTag] = "\"\(prepared.id)\""
        return Response(status: .created, headers: headers, body: .init(byteBuffer: ByteBuffer(string: prepared.answer)))
    }

    // MARK: DELETE

    private func end(_ request: Request, compositionId: String, sessionId: String) async -> Response {
        let composition: Composition
        switch await self.composition(compositionId) {
        case .refused(let response): return response
        case .composition(let found): composition = found
        }
        if case .refused(let response) = await authorize(request, body: ByteBuffer(), stageArn: composition.stageArn) { return response }
        guard await media.stopViewer(id: sessionId, owner: compositionId, reason: "the viewer ended the WHEP session (DELETE)") else {
            return WHIPResponses.plain(.notFound, "no WHEP session \(WebRTCIngestServer.redacted(sessionId)) of composition \(compositionId)")
        }
        return Response(status: .ok, headers: WHIPResponses.cors(allow: "PATCH, DELETE, OPTIONS"))
    }
}
