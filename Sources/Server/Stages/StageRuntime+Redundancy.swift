// Redundant ingest on the stage runtime: an ingest configuration with `redundantIngest` has a
// second stream key (credential 1, the backup; credential 0, the primary, is its own key).
// The first of the two connections admits the participant through the one admission path; the
// second joins that participant. Each connection publishes into a feed of its own, and
// LiveStage's RedundantIngest shows one feed as the participant (RedundantFeedSelector's
// rule). The participant leaves when both connections are gone; DisconnectParticipant and a
// deleted configuration close both.
import APIModels
import LiveStage
import Logging
import Synchronization

/// A redundant participant's switch and how to close each of its two connections.
final class RedundantFeeds: Sendable {
    private struct State {
        var ingest: RedundantIngest?
        var disconnects: [(@Sendable (String) -> Void)?] = [nil, nil]
    }

    private let state = Mutex(State())

    var ingest: RedundantIngest? { state.withLock { $0.ingest } }

    func install(_ ingest: RedundantIngest) { state.withLock { $0.ingest = ingest } }

    func setDisconnect(_ feed: Int, _ disconnect: (@Sendable (String) -> Void)?) {
        state.withLock { $0.disconnects[feed] = disconnect }
    }

    /// Closes both connections (the participant is disconnected, whoever asks).
    func disconnectAll(_ reason: String) {
        for disconnect in state.withLock({ $0.disconnects }) { disconnect?(reason) }
    }
}

extension StageRuntime {
    /// A redundant participant on a stage now: its feeds and what it holds of the placement.
    struct RedundantEntry {
        let feeds: RedundantFeeds
        var reservation: StageReservation?
    }

    static func redundantKey(stageArn: String, participantId: String) -> String { "\(stageArn)/\(participantId)" }

    /// Where a feed's own publisher is kept on the hub: no composition subscribes there.
    static func feedNamespace(_ feed: Int, stageArn: String) -> String { "redundant-\(feed):\(stageArn)" }

    /// The connection key of a configuration's feed: its ARN (the primary), `<ARN>#backup`.
    static func connectionKey(ingestConfigurationArn arn: String, feed: Int?) -> String {
        feed == RedundantFeedSelector.backup ? arn + "#backup" : arn
    }

    /// Admits one connection of a redundant configuration: the first through `admit` (the
    /// participant joins), the second onto the participant the first made.
    func admitRedundant(_ candidate: PublishCandidate, feed: Int, disconnect: @escaping @Sendable (String) -> Void,
                        logger: Logger) async -> Result<Void, AdmissionRefusal> {
        let groupKey = Self.redundantKey(stageArn: candidate.stageArn, participantId: candidate.participantId)
        guard let connectionKey = candidate.connectionKey, let arn = candidate.ingestConfigurationArn else {
            return .failure(.storeFailed("a redundant feed without its ingest configuration"))
        }
        if let entry = redundant[groupKey], let ingest = entry.feeds.ingest {
            if let refusal = candidate.protocolRefusal { return .failure(.wrongProtocol(refusal)) }
            guard connections[connectionKey] == nil, !ingest.isConnected(feed) else { return .failure(.alreadyPublishing) }
            let publisher = hub.join(stageArn: Self.feedNamespace(feed, stageArn: candidate.stageArn), identity: candidate.identity,
                                     disconnect: disconnect)
            entry.feeds.setDisconnect(feed, disconnect)
            ingest.attach(feed, publisher: publisher)
            connections[connectionKey] = Connection(publication: Publication(publisher: publisher, runtime: self, stageArn: candidate.stageArn),
                                                    stageArn: candidate.stageArn, participantId: candidate.participantId,
                                                    ingestConfigurationArn: arn, redundantFeed: feed)
            logger.info("redundant ingest: the second feed joined its participant", metadata: [
                "stage.arn": "\(candidate.stageArn)", "participant.id": "\(candidate.participantId)", "feed": "\(Self.feedName(feed))"])
            return .success(())
        }
        let feeds = RedundantFeeds()
        feeds.setDisconnect(feed, disconnect)
        let hub = self.hub, runtimeLogger = self.logger
        let outcome = await admit(candidate, disconnect: { reason in feeds.disconnectAll(reason) }, record: true,
                                  logger: logger) { participant, reservation in
            let ingest = RedundantIngest(participant: participant, clock: hub.clock, settings: hub.settings) { change in
                // A switch between the two (not the first joining, nor the last leaving).
                guard change.from != nil, change.to != nil else { return }
                runtimeLogger.info("redundant ingest switched", metadata: [
                    "stage.arn": "\(candidate.stageArn)", "participant.id": "\(candidate.participantId)",
                    "from": "\(change.from.map(Self.feedName) ?? "none")", "to": "\(change.to.map(Self.feedName) ?? "none")",
                    "reason": "\(change.reason.rawValue)"])
            }
            feeds.install(ingest)
            let publisher = hub.join(stageArn: Self.feedNamespace(feed, stageArn: candidate.stageArn), identity: candidate.identity,
                                     disconnect: disconnect)
            ingest.attach(feed, publisher: publisher)
            self.redundant[groupKey] = RedundantEntry(feeds: feeds, reservation: reservation)
            return Connection(publication: Publication(publisher: publisher, runtime: self, stageArn: candidate.stageArn), stageArn: candidate.stageArn,
                              participantId: candidate.participantId, ingestConfigurationArn: arn, redundantFeed: feed)
        }
        return outcome.map { _ in () }
    }

    /// A redundant feed's connection ended: the other goes on as the participant, or, when it
    /// was the last, the participant leaves. True when the participant left.
    func redundantFeedEnded(_ connection: Connection, feed: Int) async -> Bool {
        let groupKey = Self.redundantKey(stageArn: connection.stageArn, participantId: connection.participantId)
        guard let entry = redundant[groupKey] else { return true }
        entry.feeds.setDisconnect(feed, nil)
        let last = entry.feeds.ingest?.detach(feed, publisher: connection.publication.publisher) ?? true
        guard last else {
            logger.info("redundant ingest: a feed left; the other goes on", metadata: [
                "stage.arn": "\(connection.stageArn)", "participant.id": "\(connection.participantId)", "feed": "\(Self.feedName(feed))"])
            return false
        }
        redundant[groupKey] = nil
        entry.feeds.ingest?.participant.leave()
        if let reservation = entry.reservation { await ownership.release(reservation) }
        return true
    }

    static func feedName(_ feed: Int) -> String { feed == RedundantFeedSelector.primary ? "primary" : "backup" }

    /// Which credential of `configuration` a stream key's secret is: nil for none (0 when the
    /// configuration is not redundant and it is its key).
    static func credential(of secret: String, in configuration: IngestConfiguration) -> Int? {
        if let own = StreamKey(parsing: configuration.streamKey), constantTimeEqual(own.secret, secret) {
            return RedundantFeedSelector.primary
        }
        guard configuration.redundantIngest == true else { return nil }
        for credential in (configuration.redundantIngestCredentials ?? []).dropFirst() {
            if let key = credential.streamKey.flatMap(StreamKey.init(parsing:)), constantTimeEqual(key.secret, secret) {
                return RedundantFeedSelector.backup
            }
        }
        return nil
    }
}
