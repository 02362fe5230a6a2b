// WHIP (RFC 9725) on the API listener: a publisher POSTs an SDP offer to its stage's
// `endpoints.whip` with a participant token, and gets the answer and a session resource.
//
//   POST   /whip/<stage id>            Bearer token, application/sdp → 201 + Location + answer
//   DELETE /whip/<stage id>/<session>  with the session's token: the participant leaves → 200
//   PATCH  /whip/<stage id>/<session>  application/jwt: a token exchange (the new token in the
//          body, the session's token as Bearer) → 204; other PATCHes (trickle ICE, ICE
//          restart) → 405: the answer carries our only candidate
//   OPTIONS                            → 204 with CORS, so a web page can publish
//
// The order of checks decides what a refused publisher hears: the token first (401/403),
// then the offer (400 naming what is missing), then the stage's admission (404, 409, 429).
// A genuine token that is refused also tells the stage (Participant Publish Error).

import APIModels
import Foundation
import HTTPTypes
import Hummingbird
import IngestServer
import Logging
import NIOCore
import ParticipantTokens
import Persistence
import WebRTCIngest
import LiveStage

struct WHIPEndpoint<Store: CompositionStore>: Sendable {
    let configuration: ServerConfiguration
    let store: Store
    let runtime: StageRuntime<Store>
    let media: WebRTCIngestServer
    let tokens: TokenAuthority
    let wallClock: @Sendable () -> Date
    let logger: Logger

    /// The `access_token` query parameter (a fleet's redirect), percent-decoded.
    static func queryToken(_ query: String?) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == "access_token", let value = parts[1].removingPercentEncoding, !value.isEmpty {
                return value
            }
        }
        return nil
    }

    static func queryEscaped(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    /// Offers larger than this are refused (a browser's is 5–10 KiB).
    static var maxOfferBytes: Int { 64 * 1024 }

    func respond(to request: Request, clientAddress: String) async -> Response {
        let segments = request.uri.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard segments.first == "whip", (2...3).contains(segments.count) else {
            return WHIPResponses.plain(.notFound, "no WHIP endpoint at \(request.uri.path)")
        }
        let stageId = segments[1]
        let resource = segments.count == 3 ? segments[2] : nil
        switch (request.method, resource) {
        case (.options, _):
            return Response(status: .noContent, headers: WHIPResponses.cors(allow: resource == nil ? "POST, OPTIONS" : "PATCH, DELETE, OPTIONS"))
        case (.post, nil):
            var request = request
            return await publish(&request, stageId: stageId, clientAddress: clientAddress)
        case (.delete, let id?):
            return await end(request, stageId: stageId, sessionId: id)
        case (.patch, let id?) where request.headers[.contentType]?.lowercased().hasPrefix("application/jwt") == true:
            return await exchange(request, stageId: stageId, sessionId: id)
        case (.patch, _):
            // No trickle ICE and no ICE restarts: the answer is complete (RFC 9725 §4.3.1).
            var headers = WHIPResponses.cors(allow: resource == nil ? "POST, OPTIONS" : "DELETE, OPTIONS")
            headers[.allow] = resource == nil ? "POST, OPTIONS" : "DELETE, OPTIONS"
            return WHIPResponses.plain(.methodNotAllowed, "trickle ICE and ICE restarts are not supported; the answer has every candidate",
                              headers: headers)
        default:
            var headers = WHIPResponses.cors(allow: resource == nil ? "POST, OPTIONS" : "DELETE, OPTIONS")
            headers[.allow] = resource == nil ? "POST, OPTIONS" : "DELETE, OPTIONS"
            return WHIPResponses.plain(.methodNotAllowed, "\(request.method.rawValue) is not supported here", headers: headers)
        }
    }

    /// The bearer token of a request: the Authorization header, or a fleet redirect's
    /// `access_token` query parameter.
    static func bearerToken(_ request: Request) -> String? {
        if let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") {
            return String(authorization.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
        }
        return queryToken(request.uri.query)
    }

    /// DELETE of a session resource: only with a token of the session's own participant on
    /// this stage (signed by a key of ours; an expired one still proves who it is), so neither
    /// a guessed nor a leaked resource ID ends someone's session. Every refusal is the same
    /// 404, which tells nothing of other participants' sessions.
    private func end(_ request: Request, stageId: String, sessionId: String) async -> Response {
        let stageArn: String, claims: ParticipantTokenClaims
        switch await sessionToken(request, stageId: stageId, sessionId: sessionId, headers: [:]) {
        case .refused(let response): return response
        case .owner(let arn, let owner): (stageArn, claims) = (arn, owner)
        }
        guard await media.stop(id: sessionId, stageArn: stageArn, participantId: claims.participantId,
                               reason: "the publisher ended the WHIP session (DELETE)") else {
            return Self.noSession(sessionId, headers: [:])
        }
        return Response(status: .ok, headers: WHIPResponses.cors(allow: "DELETE, OPTIONS"))
    }

    /// Whose session resource a request may act on (DELETE, a token exchange).
    private enum SessionToken {
        case owner(stageArn: String, claims: ParticipantTokenClaims)
        case refused(Response)
    }

    /// The Bearer token of a session resource's request, as its participant's on this stage
    /// (signed by a key of ours; an expired one still proves who it is): 401 without a usable
    /// one; the same 404 as for a session that is not the token's, for a stage that cannot be.
    private func sessionToken(_ request: Request, stageId: String, sessionId: String, headers: HTTPFields) async -> SessionToken {
        var headers = headers
        guard let token = Self.bearerToken(request) else {
            headers[.wwwAuthenticate] = "Bearer"
            return .refused(WHIPResponses.plain(.unauthorized, "missing Authorization: Bearer <the session's participant token>",
                                                headers: headers))
        }
        guard let stageArn = IVSARN(region: configuration.region, account: configuration.account, resourceType: .stage,
                                    resourceID: stageId)?.description else { return .refused(Self.noSession(sessionId, headers: headers)) }
        do {
            return .owner(stageArn: stageArn, claims: try await tokens.verify(token, stageArn: stageArn, now: wallClock()))
        } catch {
            guard error.kind == .expired, let genuine = error.genuineClaims, genuine.stageArn == stageArn else {
                headers[.wwwAuthenticate] = "Bearer error=\"invalid_token\""
                return .refused(WHIPResponses.plain(.unauthorized, "participant token: \(error.message)", headers: headers))
            }
            return .owner(stageArn: stageArn, claims: genuine)
        }
    }

    /// Every refusal of a session resource that is not the token's: one answer, telling nothing.
    private static func noSession(_ sessionId: String, headers: HTTPFields) -> Response {
        WHIPResponses.plain(.notFound, "no WHIP session \(WebRTCIngestServer.redacted(sessionId)) of this token's participant", headers: headers)
    }

    /// Token exchange on a session resource, as IVS's SDKs exchange a publisher's token: the
    /// session's current token as Bearer (proving whose session it is), the new token as the
    /// body. Both must be signed by an imported key pair (a CreateParticipantToken token
    /// cannot be exchanged) and name the same topic, resource, jti, whip_url and events_url;
    /// the new one may change attributes, capabilities (publishing kept), user_id and exp.
    /// The participant's attributes change on every composition of the stage from its next
    /// frame, and TOKEN_EXCHANGED says both tokens. 204 when done.
    private func exchange(_ request: Request, stageId: String, sessionId: String) async -> Response {
        let headers = WHIPResponses.cors(allow: "PATCH, DELETE, OPTIONS")
        let notFound = Self.noSession(sessionId, headers: headers)
        let stageArn: String, current: ParticipantTokenClaims
        switch await sessionToken(request, stageId: stageId, sessionId: sessionId, headers: headers) {
        case .refused(let response): return response
        case .owner(let arn, let owner): (stageArn, current) = (arn, owner)
        }
        guard await media.isSession(id: sessionId, stageArn: stageArn, participantId: current.participantId) else { return notFound }
        let body: ByteBuffer
        do {
            body = try await HTTPLimits.collect(request, upTo: Self.maxExchangedTokenBytes)
        } catch .tooSlow {
            return WHIPResponses.plain(.requestTimeout, "the new token did not arrive within \(HTTPLimits.bodyDeadline)", headers: headers)
        } catch {
            return WHIPResponses.plain(.contentTooLarge, "a participant token is at most \(Self.maxExchangedTokenBytes) bytes", headers: headers)
        }
        let newToken = String(buffer: body).trimmingCharacters(in: .whitespacesAndNewlines)
        let next: ParticipantTokenClaims
        do {
            next = try await tokens.verify(newToken, stageArn: stageArn, now: wallClock())
        } catch {
            return WHIPResponses.plain(error.kind == .wrongStage ? .forbidden : .badRequest, "new participant token: \(error.message)",
                                       headers: headers)
        }
        if let problem = Self.exchangeProblem(current: current, next: next, serviceKeyArn: tokens.ownKey.arn) {
            logger.notice("WHIP token exchange refused", metadata: ["stage.arn": "\(stageArn)", "participant.id": "\(current.participantId)",
                                                                    "reason": "\(problem.message)"])
            return WHIPResponses.plain(problem.status, problem.message, headers: headers)
        }
        guard await runtime.exchangeToken(stageArn: stageArn, participantId: current.participantId,
                                          from: TokenParticipant(current), to: TokenParticipant(next)) else { return notFound }
        return Response(status: .noContent, headers: headers)
    }

    /// A token exchange's new token is at most this long.
    static var maxExchangedTokenBytes: Int { 8 * 1024 }

    /// Why `next` may not replace `current` (IVS's rules), or nil.
    static func exchangeProblem(current: ParticipantTokenClaims, next: ParticipantTokenClaims, serviceKeyArn: String)
        -> (status: HTTPResponse.Status, message: String)? {
        if current.keyArn == serviceKeyArn || next.keyArn == serviceKeyArn {
            return (.forbidden, "a token made by CreateParticipantToken cannot be exchanged: exchange tokens signed with an imported key pair")
        }
        let same: [(String, String, String)] = [
            ("topic", current.stageId, next.stageId), ("resource", current.stageArn, next.stageArn),
            ("jti", current.participantId, next.participantId), ("whip_url", current.whipURL, next.whipURL),
            ("events_url", current.eventsURL, next.eventsURL),
        ]
        if let (claim, _, _) = same.first(where: { $0.1 != $0.2 }) {
            return (.badRequest, "new participant token: its \(claim) must equal the current token's")
        }
        guard next.capabilities.contains(.publish) else {
            return (.forbidden, "new participant token: no PUBLISH capability, and this session publishes")
        }
        return nil
    }

    private func publish(_ request: inout Request, stageId: String, clientAddress: String) async -> Response {
        guard let stageArn = IVSARN(region: configuration.region, account: configuration.account, resourceType: .stage,
                                    resourceID: stageId)?.description else {
            return WHIPResponses.plain(.notFound, "no stage \(stageId)")
        }
        let remote = clientAddress
        var requestLogger = logger
        requestLogger[metadataKey: "stage.arn"] = "\(stageArn)"
        // 1. Who is it? (The token is never logged.) A fleet's redirect carries the token in
        // the URL, because browsers drop Authorization when they follow a redirect to
        // another origin.
        guard let token = Self.bearerToken(request) else {
            return WHIPResponses.plain(.unauthorized, "missing Authorization: Bearer <participant token>",
                              headers: [.wwwAuthenticate: "Bearer"])
        }
        let claims: ParticipantTokenClaims
        do {
            claims = try await tokens.verify(token, stageArn: stageArn, now: wallClock())
        } catch {
            requestLogger.notice("WHIP publish refused: participant token", metadata: ["reason": "\(error.message)"])
            if let genuine = error.genuineClaims {
                runtime.refused(TokenParticipant(genuine), .invalidInput, reason: error.message)
            }
            return WHIPResponses.plain(error.kind == .wrongStage ? .forbidden : .unauthorized, "participant token: \(error.message)",
                              headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""])
        }
        let participant = TokenParticipant(claims)
        if await runtime.isRevoked(stageArn: stageArn, participantId: claims.participantId) {
            requestLogger.notice("WHIP publish refused: participant revoked", metadata: ["participant.id": "\(claims.participantId)"])
            return WHIPResponses.plain(.forbidden, "participant \(claims.participantId) was disconnected (DisconnectParticipant) "
                                       + "or its token revoked (RevokeConnectionToken): it is refused until the token expires")
        }
        guard claims.capabilities.contains(.publish) else {
            runtime.refused(participant, .insufficientCapabilities, reason: "the participant token does not allow publishing")
            return WHIPResponses.plain(.forbidden, "participant token: no PUBLISH capability (a subscribe-only token)")
        }
        // In a fleet, the stage's node takes its publishers (RFC 9725 §4.5: redirects).
        do {
            if let peer = try await runtime.ownership.remoteOwner(of: stageArn), let whip = peer.whipURL {
                var headers = WHIPResponses.cors(allow: "POST, OPTIONS")
                headers[.location] = "\(whip)/\(stageId)?access_token=\(Self.queryEscaped(token))"
                requestLogger.info("WHIP publisher redirected to the stage's node", metadata: ["node": "\(peer.nodeId)"])
                return WHIPResponses.plain(.temporaryRedirect, "stage \(stageId) is on node \(peer.nodeId): publish to \(whip)/\(stageId)",
                                           headers: headers)
            }
        } catch {
            return WHIPResponses.plain(.serviceUnavailable, "the stage's node cannot be found now: \(error.message)",
                                       headers: [.retryAfter: "2"])
        }
        // 2. What does it send?
        let body: ByteBuffer
        switch await WHIPResponses.offer(of: request, upTo: Self.maxOfferBytes) {
        case .refused(let response): return response
        case .body(let offer): body = offer
        }
        let prepared: PreparedWebRTCSession
        do {
            prepared = try media.prepare(offer: String(buffer: body))
        } catch {
            requestLogger.notice("WHIP publish refused: offer", metadata: ["reason": "\(error.message)"])
            if error.kind == .offer {
                let code: IngestPublishError = error.message.contains("no video") ? .invalidVideoCodec
                    : error.message.contains("no audio") ? .invalidAudioCodec : .invalidInput
                runtime.refused(participant, code, reason: error.message)
                return WHIPResponses.plain(.badRequest, error.message)
            }
            return WHIPResponses.plain(.serviceUnavailable, error.message)
        }
        // 3. May it publish on this stage now?
        let media = self.media
        let id = prepared.id
        let decision = await runtime.admit(participant, remoteAddress: remote,
                                           disconnect: { reason in media.stopSoon(id: id, reason: reason) })
        switch decision {
        case .refused(let error, let reason):
            return WHIPResponses.plain(Self.status(for: error), reason)
        case .accepted(let publication):
            do {
                try await media.start(prepared, publication: publication, participantId: claims.participantId,
                                      clientAddress: clientAddress)
            } catch {
                publication.ended(reason: "the media transport refused the session: \(error)")
                if let refusal = error as? WebRTCIngestError, refusal.kind == .tooManySessions {
                    requestLogger.notice("WHIP publish refused: session cap", metadata: ["reason": "\(refusal.message)"])
                    return WHIPResponses.plain(.tooManyRequests, refusal.message)
                }
                return WHIPResponses.plain(.serviceUnavailable, "\(error)")
            }
        }
        var headers = WHIPResponses.cors(allow: "POST, OPTIONS")
        headers[.contentType] = "application/sdp"
        headers[.location] = "/whip/\(stageId)/\(id)"
        headers[.eTag] = "\"\(id)\""
        return Response(status: .created, headers: headers, body: .init(byteBuffer: ByteBuffer(string: prepared.answer)))
    }

    static func status(for error: IngestPublishError) -> HTTPResponse.Status {
        switch error {
        case .reuseOfStreamKey: return .conflict
        case .quotaExceeded: return .tooManyRequests
        case .internalServerException: return .serviceUnavailable
        case .invalidInput, .invalidStreamKey: return .notFound
        default: return .forbidden
        }
    }

}

enum WHIPResponses {
    enum Offer {
        case body(ByteBuffer)
        case refused(Response)
    }

    /// An SDP offer's body (WHIP's and WHEP's POST): `application/sdp`, at most `limit` bytes,
    /// arriving within the body deadline; otherwise the answer that says which.
    static func offer(of request: Request, upTo limit: Int) async -> Offer {
        guard let contentType = request.headers[.contentType], contentType.lowercased().hasPrefix("application/sdp") else {
            return .refused(plain(.unsupportedMediaType, "Content-Type must be application/sdp"))
        }
        do {
            return .body(try await HTTPLimits.collect(request, upTo: limit))
        } catch .tooSlow {
            return .refused(plain(.requestTimeout, "the offer did not arrive within \(HTTPLimits.bodyDeadline)"))
        } catch {
            return .refused(plain(.contentTooLarge, "an SDP offer is at most \(limit) bytes"))
        }
    }

    static func cors(allow: String) -> HTTPFields {
        [.accessControlAllowOrigin: "*",
         .accessControlAllowMethods: allow,
         .accessControlAllowHeaders: "Authorization, Content-Type, If-Match",
         .accessControlExposeHeaders: "Location, ETag, Link",
         .init("Accept-Post")!: "application/sdp"]
    }

    static func plain(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        if fields[.accessControlAllowOrigin] == nil { fields[.accessControlAllowOrigin] = "*" }
        fields[.contentType] = "text/plain; charset=utf-8"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: message + "\n")))
    }
}

extension TokenParticipant {
    init(_ claims: ParticipantTokenClaims) {
        self.init(stageArn: claims.stageArn, participantId: claims.participantId, userId: claims.userId ?? "",
                  attributes: claims.attributes, expiresAt: claims.expiresAt, keyArn: claims.keyArn.isEmpty ? nil : claims.keyArn,
                  capabilities: claims.capabilityNames)
    }
}
