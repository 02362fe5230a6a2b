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
            let sessions = try await storeCall { try await store.stageSessions(stageArn: request.stageArn) }
            // Newest first, stable across pages: the key orders by descending start time.
            let page = try onePage(sessions, key: { Self.descending($0.session.startTime?.secondsSince1970 ?? 0) + ($0.session.sessionId ?? "") }, request, .listStageSessions)
            return try APIJSON.encode(ListStageSessionsResponse(stageSessions: page.items.map(\.session.summary), nextToken: page.nextToken))
        case .getStageSession:
            let request = try decode(GetStageSessionRequest.self, body)
            guard let found = try await storeCall({ try await store.stageSession(stageArn: request.stageArn, sessionId: request.sessionId) }) else {
                throw .resourceNotFound("sessionId: stage session \(request.sessionId) of \(request.stageArn) not found")
            }
            return try APIJSON.encode(GetStageSessionResponse(stageSession: found.session))
        case .listParticipants:
            let request = try decode(ListParticipantsRequest.self, body)
            let stored = try await storeCall { try await store.participants(stageArn: request.stageArn, sessionId: request.sessionId) }
            let matching = stored.enumerated().filter { _, entry in
                let p = entry.participant
                return (request.filterByUserId.map { p.userId == $0 } ?? true)
                    && (request.filterByPublished.map { p.published == $0 } ?? true)
                    && (request.filterByState.map { p.state == $0 } ?? true)
                    && (request.filterByRecordingState.map { p.recordingState == $0 } ?? true)
            }
            let page = try onePage(matching, key: { Self.ascending(Int64($0.offset)) }, request, .listParticipants)
            return try APIJSON.encode(ListParticipantsResponse(participants: page.items.map(\.element.participant.summary),
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
            let events = try await storeCall {
                try await store.participantEvents(stageArn: request.stageArn, sessionId: request.sessionId, participantId: request.participantId)
            }
            let page = try onePage(Array(events.enumerated()), key: { Self.ascending(Int64($0.offset)) }, request, .listParticipantEvents)
            return try APIJSON.encode(ListParticipantEventsResponse(events: page.items.map(\.element), nextToken: page.nextToken))
        case .disconnectParticipant:
            let request = try decode(DisconnectParticipantRequest.self, body)
            _ = try await stage(request.stageArn)
            if let answer = try await forward(request.stageArn) { return answer }
            guard await runtime.disconnect(stageArn: request.stageArn, participantId: request.participantId,
                                           reason: request.reason ?? "DisconnectParticipant", revoke: true) else {
                throw .resourceNotFound("participantId: participant \(request.participantId) is not connected to \(request.stageArn)")
            }
            return try APIJSON.encode(DisconnectParticipantResponse())
        default:
            throw .internalServer("\(operation.name) is not a participant operation")
        }
    }
}
