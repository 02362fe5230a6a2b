// A connected participant's attributes change while it publishes: a producer's backend calls
// UpdateParticipant (any transport), or a WHIP publisher exchanges its token. Either is kept
// as IVS keeps a token exchange (the participant's record, a TOKEN_EXCHANGED event) and every
// composition of the stage lays out again from its next frame.
public import APIModels
import Foundation
import LiveStage
import Logging
import Persistence
import Stages

extension StageRuntime {
    /// Gives the connected participant `newToken`'s attributes and user ID. Nil when it is
    /// not connected to the stage (on this node).
    func exchangeToken(stageArn: String, participantId: String, to newToken: SessionTokenSnapshot,
                       previousCapabilities: [String]? = nil, previousExpirationTime: Int64? = nil) async -> SessionParticipant? {
        let effects = book.exchangeToken(stageArn: stageArn, participantId: participantId, to: newToken,
                                         previousCapabilities: previousCapabilities,
                                         previousExpirationTime: previousExpirationTime, at: seconds())
        guard !effects.isEmpty else { return nil }
        // The picture first: compositions see the change on their next frame, the records follow.
        hub.updateAttributes(stageArn: stageArn, participantId: participantId, attributes: newToken.attributes)
        await apply(effects)
        logger.info("participant attributes changed", metadata: [
            "stage.arn": "\(stageArn)", "participant.id": "\(participantId)", "attributes": "\(newToken.attributes.keys.sorted())"])
        return book.participant(stageArn: stageArn, participantId: participantId)
    }

    /// A WHIP publisher exchanged its token (the endpoint checked IVS's rules): its new
    /// attributes, user ID, capabilities and expiry. False when it is not connected here.
    func exchangeToken(stageArn: String, participantId: String, from current: TokenParticipant, to next: TokenParticipant) async -> Bool {
        let key = "whip:\(stageArn)/\(participantId)"
        guard connections[key] != nil else { return false }
        let snapshot = SessionTokenSnapshot(attributes: next.attributes, userId: next.userId, capabilities: next.capabilities,
                                            expirationTime: next.expiresAt)
        guard await exchangeToken(stageArn: stageArn, participantId: participantId, to: snapshot,
                                  previousCapabilities: current.capabilities, previousExpirationTime: current.expiresAt) != nil else {
            return false
        }
        // A revocation lasts until the new token expires; deleting the new key ends the session.
        connections[key]?.tokenExpiresAt = next.expiresAt
        connections[key]?.tokenKeyArn = next.keyArn
        return true
    }

    /// UpdateParticipant: a producer's backend sets a publishing participant's attributes.
    public func updateParticipant(_ request: UpdateParticipantRequest) async throws(APIError) -> Participant {
        guard let current = book.participant(stageArn: request.stageArn, participantId: request.participantId),
              book.isConnected(stageArn: request.stageArn, participantId: request.participantId) else {
            throw .resourceNotFound("participantId: participant \(request.participantId) is not connected to \(request.stageArn)")
        }
        let newToken = SessionTokenSnapshot(attributes: request.attributes, userId: current.userId)
        guard let updated = await exchangeToken(stageArn: request.stageArn, participantId: request.participantId, to: newToken) else {
            throw .resourceNotFound("participantId: participant \(request.participantId) is not connected to \(request.stageArn)")
        }
        return Participant(participantId: updated.participantId, userId: updated.userId,
                           state: updated.isConnected ? .connected : .disconnected,
                           firstJoinTime: APITimestamp(secondsSince1970: updated.firstJoinTime), attributes: updated.attributes,
                           published: updated.hasPublished, protocol: ParticipantProtocol(rawValue: updated.transport) ?? .unknown,
                           ingestConfigurationArn: updated.ingestConfigurationArn)
    }
}

extension ExchangedParticipantToken {
    init(_ snapshot: SessionTokenSnapshot) {
        self.init(capabilities: snapshot.capabilities?.compactMap(ParticipantTokenCapability.init(rawValue:)),
                  attributes: snapshot.attributes, userId: snapshot.userId,
                  expirationTime: snapshot.expirationTime.map { APITimestamp(secondsSince1970: $0) })
    }
}
