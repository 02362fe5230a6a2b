// Stage sessions, participants and their events (from the store, on any node), and
// DisconnectParticipant (on the stage's node).
import APIModels
import Foundation
import Persistence

extension ControlPlane {

    func handleParticipants(_ operation: APIOperation, body: Data, forward: (String) async throws(APIError) -> Data?)
        async throws(APIError) -> Data {
        switch operation {
        case .listStageSessions:
            let request = try decode(ListStageSessionsRequest.self, body)
            // Newest first (start time descending, then session ID), a page read at a time.
            let page = try await keysetPage(request, .listStageSessions, position: PageKey.session(parsing:)) {
                after, limit throws(PersistenceError) in
                try await store.stageSessions(stageArn: request.stageArn, after: after, limit: limit)
            }
            return try APIJSON.encode(ListStageSessionsResponse(stageSessions: page.items.map(\.session.summary), nextToken: page.nextToken))
        case .getStageSession:
            let request = try decode(GetStageSessionRequest.self, body)
            guard let found = try await storeCall({ try await store.stageSession(stageArn: request.stageArn, sessionId: request.sessionId) }) else {
                throw .resourceNotFound("sessionId: stage session \(request.sessionId) of \(request.stageArn) not found")
            }
            return try APIJSON.encode(GetStageSessionResponse(stageSession: found.session))
        case .listParticipants:
            let request = try decode(ListParticipantsRequest.self, body)
            let filter = ParticipantFilter(userId: request.filterByUserId, published: request.filterByPublished,
                                           state: request.filterByState, recordingState: request.filterByRecordingState)
            // In join order; the store filters while it reads.
            let page = try await keysetPage(request, .listParticipants, position: PageKey.sequence(parsing:)) {
                after, limit throws(PersistenceError) in
                try await store.participants(stageArn: request.stageArn, sessionId: request.sessionId, matching: filter,
                                             afterJoinOrder: after, limit: limit)
            }
            return try APIJSON.encode(ListParticipantsResponse(participants: page.items.map(\.participant.summary),
                                                               nextToken: page.nextToken))
        case .getParticipant:
            let request = try decode(GetParticipantRequest.self, body)
            guard let found = try await storeCall({
                try await store.participant(stageArn: request.stageArn, sessionId: request.sessionId, participantId: request.participantId)
            }) else {
                throw .resourceNotFound("participantId: participant \(request.participantId) not found in session \(request.sessionId)")
            }
            return try APIJSON.encode(GetParticipantResponse(participant: found.participant))
        case .listParticipantEvents:
            let request = try decode(ListParticipantEventsRequest.self, body)
            // In the order they happened.
            let page = try await keysetPage(request, .listParticipantEvents, position: PageKey.sequence(parsing:)) {
                after, limit throws(PersistenceError) in
                try await store.participantEvents(stageArn: request.stageArn, sessionId: request.sessionId,
                                                  participantId: request.participantId, afterSequence: after, limit: limit)
            }
            return try APIJSON.encode(ListParticipantEventsResponse(events: page.items, nextToken: page.nextToken))
        case .disconnectParticipant:
            let request = try decode(DisconnectParticipantRequest.self, body)
            _ = try await stage(request.stageArn)
            if let answer = try await forward(request.stageArn) { return answer }
            guard await runtime.disconnect(stageArn: request.stageArn, participantId: request.participantId,
                                           reason: request.reason ?? "DisconnectParticipant", revoke: true) else {
                throw .resourceNotFound("participantId: participant \(request.participantId) is not connected to \(request.stageArn)")
            }
            return try APIJSON.encode(DisconnectParticipantResponse())
        case .updateParticipant:
            let request = try decode(UpdateParticipantRequest.self, body)
            _ = try await stage(request.stageArn)
            if let answer = try await forward(request.stageArn) { return answer }
            return try APIJSON.encode(UpdateParticipantResponse(participant: try await runtime.updateParticipant(request)))
        default:
            throw .internalServer("\(operation.name) is not a participant operation")
        }
    }
}

extension ControlPlane {
    /// One page of a List operation whose store reads the page itself, filters included: the
    /// request's nextToken names a position (`position` parses it; nil is a ValidationException,
    /// before the store sees it), `read(after, limit)` gives the page, and the next token
    /// carries the store's next key.
    func keysetPage<Position, Item>(
        _ request: some PagedRequest, _ operation: APIOperation, position: (String) -> Position?,
        read: (Position?, Int) async throws(PersistenceError) -> KeysetPage<Item>
    ) async throws(APIError) -> (items: [Item], nextToken: String?) {
        let (after, limit) = try Pagination.start(nextToken: request.nextToken, maxResults: request.maxResults,
                                                  defaultMaxResults: Pagination.defaultMaxResults(for: operation))
        var start: Position?
        if let after {
            guard let parsed = position(after) else { throw .validation("nextToken: is not a token returned by this service") }
            start = parsed
        }
        let page = try await storeCall { try await read(start, limit) }
        return (page.items, page.nextKey.map { Pagination.encodeToken(lastKey: $0) })
    }
}
