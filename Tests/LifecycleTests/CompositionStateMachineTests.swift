import Testing
import Lifecycle
import MediaCore

private let t0 = MediaTime.seconds(1000)
private func at(_ seconds: Int64) -> MediaTime { t0 + .seconds(seconds) }

/// A machine with destinations "ch" and "s3", driven to `status`.
private func machine(in status: CompositionState, publishers: Int = 1,
                     configuration: CompositionLifecycleConfiguration = .init()) -> CompositionStateMachine {
    var m = CompositionStateMachine(destinationIDs: ["ch", "s3"], createdAt: t0, publisherCount: publishers,
                                    configuration: configuration)
    switch status {
    case .starting: break
    case .active:
        _ = m.on(.pipelineStarted, at: at(1))
        _ = m.on(.destinationOutput(destinationID: "ch"), at: at(2))
        _ = m.on(.destinationOutput(destinationID: "s3"), at: at(2))
    case .stopping:
        _ = m.on(.pipelineStarted, at: at(1))
        _ = m.on(.destinationOutput(destinationID: "ch"), at: at(2))
        _ = m.on(.destinationOutput(destinationID: "s3"), at: at(2))
        _ = m.on(.stopRequested, at: at(3))
    case .stopped:
        _ = m.on(.pipelineStarted, at: at(1))
        _ = m.on(.stopRequested, at: at(3))
        _ = m.on(.allDestinationsFlushed, at: at(4))
    case .failed:
        _ = m.on(.sourceFailed(reason: "stage not found"), at: at(1))
    }
    #expect(m.status == status)
    return m
}

private enum Outcome: Sendable, CustomStringConvertible {
    case ignored
    case rejected
    case moves(to: CompositionState)

    var description: String {
        switch self {
        case .ignored: "ignored"
        case .rejected: "rejected"
        case .moves(let to): "→ \(to.rawValue)"
        }
    }
}

private let events: [(String, CompositionEvent)] = [
    ("pipelineStarted", .pipelineStarted),
    ("destinationOutput", .destinationOutput(destinationID: "ch")),
    ("destinationOutput(unknown)", .destinationOutput(destinationID: "zz")),
    ("destinationDropped", .destinationDropped(destinationID: "ch", reason: "connection reset")),
    ("destinationRecovered", .destinationRecovered(destinationID: "ch")),
    ("destinationFailed", .destinationFailed(destinationID: "ch", reason: "stream key invalid")),
    ("stopRequested", .stopRequested),
    ("allDestinationsFlushed", .allDestinationsFlushed),
    ("publishersChanged(0)", .publishersChanged(count: 0)),
    ("publishersChanged(2)", .publishersChanged(count: 2)),
    ("publishersChanged(-1)", .publishersChanged(count: -1)),
    ("tick", .tick),
    ("sourceFailed", .sourceFailed(reason: "subscription lost")),
    ("maxDurationReached", .maxDurationReached),
]

/// Every (state, event) pair. Rows follow `events`.
private let table: [CompositionState: [Outcome]] = [
    .starting: [.moves(to: .active), .rejected, .rejected, .rejected, .rejected, .ignored /* ch failed, s3 alive: still STARTING */,
                .moves(to: .stopping), .rejected, .ignored /* already 1→0 arms the timer: status stays */, .ignored,
                .rejected, .ignored, .moves(to: .failed), .moves(to: .stopping)],
    .active: [.ignored, .ignored, .rejected, .ignored /* ch RECONNECTING, composition stays ACTIVE */, .ignored,
              .ignored /* one destination left */, .moves(to: .stopping), .rejected, .ignored, .ignored,
              .rejected, .ignored, .moves(to: .failed), .moves(to: .stopping)],
    .stopping: [.ignored, .ignored, .rejected, .ignored /* ch fails while flushing; s3 still flushing */, .ignored,
                .ignored, .ignored, .moves(to: .stopped), .ignored, .ignored,
                .rejected, .ignored, .ignored, .ignored],
    .stopped: Array(repeating: .ignored, count: 14),
    .failed: Array(repeating: .ignored, count: 14),
]

@Suite struct TransitionTableTests {
    @Test(arguments: CompositionState.allCases, events.indices)
    func everyStateEventPair(status: CompositionState, eventIndex: Int) throws {
        let (name, event) = events[eventIndex]
        let expected = try #require(table[status]?[eventIndex])
        var m = machine(in: status)
        let actions = m.on(event, at: at(10))
        switch expected {
        case .ignored:
            #expect(m.status == status, "\(status) + \(name)")
            #expect(!actions.contains { if case .rejected = $0 { true } else { false } }, "\(status) + \(name)")
            if status.isTerminal { #expect(actions.isEmpty, "\(status) + \(name)") }
        case .rejected:
            #expect(m.status == status, "\(status) + \(name)")
            #expect(actions.count == 1, "\(status) + \(name)")
            if case .rejected = actions.first {} else { Issue.record("\(status) + \(name): expected rejection, got \(actions)") }
        case .moves(let to):
            #expect(m.status == to, "\(status) + \(name)")
            #expect(!actions.isEmpty, "\(status) + \(name)")
        }
    }

    @Test func statesOnlyMoveForward() {
        let order: [CompositionState] = [.starting, .active, .stopping, .stopped]
        for status in CompositionState.allCases {
            for (_, event) in events {
                var m = machine(in: status)
                _ = m.on(event, at: at(10))
                if status == .failed || m.status == .failed { continue }
                #expect(order.firstIndex(of: m.status)! >= order.firstIndex(of: status)!)
            }
        }
    }
}

@Suite struct LifecycleFlowTests {
    @Test func gracefulStopEmitsDestinationEndsThenSessionEnd() {
        var m = CompositionStateMachine(destinationIDs: ["ch", "s3"], createdAt: t0, publisherCount: 2)
        #expect(m.scheduledTimers.map(\.timer) == [.maximumDuration])
        #expect(m.nextDeadline == t0 + .seconds(86_400))
        #expect(m.on(.pipelineStarted, at: at(1)) == [.emit(.sessionStart)])
        #expect(m.sessionStartedAt == at(1))
        #expect(m.on(.destinationOutput(destinationID: "ch"), at: at(2)) == [.emit(.destinationStart(destinationID: "ch"))])
        #expect(m.on(.destinationOutput(destinationID: "ch"), at: at(3)) == [])
        #expect(m.on(.destinationOutput(destinationID: "s3"), at: at(3)) == [.emit(.destinationStart(destinationID: "s3"))])
        #expect(m.destinationStatus("ch") == .active)
        #expect(m.destinationStartedAt("ch") == at(2))
        #expect(m.on(.stopRequested, at: at(10)) == [.cancelTimer(.maximumDuration), .beginGracefulStop(.stopRequested)])
        #expect(m.stopReason == .stopRequested)
        #expect(m.destinationStatus("ch") == .stopping && m.destinationStatus("s3") == .stopping)
        #expect(m.on(.allDestinationsFlushed, at: at(12)) == [
            .emit(.destinationEnd(destinationID: "ch")), .emit(.destinationEnd(destinationID: "s3")),
            .emit(.sessionEnd), .finalize(.stopped),
        ])
        #expect(m.status == .stopped && m.endedAt == at(12))
        #expect(m.destinationStatus("s3") == .stopped && m.destinationEndedAt("s3") == at(12))
        #expect(m.nextDeadline == nil)
    }

    @Test func autoShutdownSixtySecondsAfterLastPublisherLeaves() {
        var m = machine(in: .active, publishers: 1)
        #expect(m.on(.publishersChanged(count: 0), at: at(20)) == [.scheduleTimer(.idleShutdown, deadline: at(80))])
        #expect(m.on(.publishersChanged(count: 0), at: at(30)) == [], "an armed timer is not pushed back")
        #expect(m.on(.tick, at: at(79)) == [])
        #expect(m.status == .active)
        // Timers are cancelled earliest deadline first.
        #expect(m.on(.tick, at: at(80)) == [.cancelTimer(.idleShutdown), .cancelTimer(.maximumDuration), .beginGracefulStop(.idleTimeout)])
        #expect(m.status == .stopping && m.stopReason == .idleTimeout)
    }

    @Test func publishingAgainCancelsAutoShutdown() {
        var m = machine(in: .active)
        _ = m.on(.publishersChanged(count: 0), at: at(20))
        #expect(m.on(.publishersChanged(count: 1), at: at(50)) == [.cancelTimer(.idleShutdown)])
        #expect(m.on(.tick, at: at(80)) == [])
        #expect(m.status == .active)
        #expect(m.on(.publishersChanged(count: 0), at: at(100)) == [.scheduleTimer(.idleShutdown, deadline: at(160))])
    }

    @Test func configurableIdleTimeout() {
        var m = machine(in: .active, configuration: .init(idleTimeout: .seconds(2)))
        #expect(m.on(.publishersChanged(count: 0), at: at(20)) == [.scheduleTimer(.idleShutdown, deadline: at(22))])
    }

    @Test func noPublishersAtStartFailsTheSessionAfterTheTimeout() {
        var m = CompositionStateMachine(destinationIDs: ["s3"], createdAt: t0, publisherCount: 0)
        #expect(m.scheduledTimers.map(\.timer) == [.idleShutdown, .maximumDuration])
        #expect(m.nextDeadline == at(60))
        #expect(m.on(.tick, at: at(60)) == [
            .cancelTimer(.idleShutdown), .cancelTimer(.maximumDuration),
            .emit(.sessionFailure(reason: "No participants publishing in the stage")),
            .abortPipeline(reason: "No participants publishing in the stage"), .finalize(.failed),
        ])
        #expect(m.status == .failed && m.destinationStatus("s3") == .failed)
        #expect(m.failureReason == "No participants publishing in the stage")
    }

    @Test func maximumDurationStopsLikeStopComposition() {
        var m = machine(in: .active, configuration: .init(maximumDuration: .seconds(3600)))
        #expect(m.nextDeadline == t0 + .seconds(3600))
        #expect(m.on(.tick, at: t0 + .seconds(3600)) == [.cancelTimer(.maximumDuration), .beginGracefulStop(.maximumDuration)])
        var explicit = machine(in: .active)
        #expect(explicit.on(.maxDurationReached, at: at(5)) == [.cancelTimer(.maximumDuration), .beginGracefulStop(.maximumDuration)])
    }

    /// The destination's output retries by itself (ChannelReconnectPolicy): the machine records
    /// RECONNECTING, schedules nothing, never gives up on its own, and hears of the outcome.
    @Test func retriesOwnedByTheDestinationOnlyRecordStates() {
        var m = machine(in: .active)
        #expect(m.on(.destinationDropped(destinationID: "ch", reason: "connection lost"), at: at(10)) == [
            .emit(.destinationReconnecting(destinationID: "ch")),
        ])
        #expect(m.destinationStatus("ch") == .reconnecting)
        #expect(m.on(.destinationDropped(destinationID: "ch", reason: "connection refused"), at: at(12)) == [])
        #expect(m.on(.tick, at: at(600)) == [], "no reconnect timer, no giving up on its own")
        #expect(m.scheduledTimers.map(\.timer) == [.maximumDuration])
        #expect(m.on(.destinationOutput(destinationID: "ch"), at: at(601)) == [.emit(.destinationStart(destinationID: "ch"))])
        #expect(m.destinationStatus("ch") == .active)
        _ = m.on(.destinationDropped(destinationID: "ch", reason: "connection lost"), at: at(602))
        #expect(m.on(.destinationFailed(destinationID: "ch", reason: "connection refused"), at: at(610)) == [
            .emit(.destinationFailure(destinationID: "ch", reason: "connection refused")),
        ])
        #expect(m.destinationStatus("ch") == .failed && m.status == .active, "the s3 destination is still active")
        #expect(m.on(.destinationOutput(destinationID: "ch"), at: at(611)) == [.rejected("destination ch already failed")])
    }

    @Test func recoveredIsTheSameAsOutputFlowingAgain() {
        var m = machine(in: .active)
        _ = m.on(.destinationDropped(destinationID: "ch", reason: "reset"), at: at(10))
        #expect(m.on(.destinationRecovered(destinationID: "ch"), at: at(18)) == [.emit(.destinationStart(destinationID: "ch"))])
        #expect(m.destinationStatus("ch") == .active && m.status == .active)
        #expect(m.on(.destinationRecovered(destinationID: "ch"), at: at(19)) == [], "already ACTIVE")
    }

    @Test func allDestinationsFailedEndsFailed() {
        var m = machine(in: .active)
        _ = m.on(.destinationFailed(destinationID: "ch", reason: "stream key invalid"), at: at(10))
        #expect(m.on(.destinationFailed(destinationID: "s3", reason: "bucket gone"), at: at(11)) == [
            .emit(.destinationFailure(destinationID: "s3", reason: "bucket gone")),
            .cancelTimer(.maximumDuration),
            .emit(.sessionFailure(reason: "All destinations failed")),
            .abortPipeline(reason: "All destinations failed"), .finalize(.failed),
        ])
        #expect(m.status == .failed && m.endedAt == at(11))
    }

    @Test func sourceFailureWhileActiveEndsStartedDestinations() {
        var m = machine(in: .active)
        #expect(m.on(.sourceFailed(reason: "stage deleted"), at: at(10)) == [
            .cancelTimer(.maximumDuration),
            .emit(.destinationEnd(destinationID: "ch")), .emit(.destinationEnd(destinationID: "s3")),
            .emit(.sessionFailure(reason: "stage deleted")), .abortPipeline(reason: "stage deleted"), .finalize(.failed),
        ])
        #expect(m.destinationStatus("ch") == .stopped)
    }

    @Test func stopBeforeAnyOutputEndsQuietlyPerDestination() {
        var m = machine(in: .starting)
        #expect(m.on(.stopRequested, at: at(5)) == [.cancelTimer(.maximumDuration), .beginGracefulStop(.stopRequested)])
        #expect(m.destinationStatus("ch") == .stopped)
        #expect(m.on(.allDestinationsFlushed, at: at(6)) == [.emit(.sessionEnd), .finalize(.stopped)])
    }

    @Test func dropWhileFlushingFailsThatDestinationOnly() {
        var m = machine(in: .stopping)
        #expect(m.on(.destinationDropped(destinationID: "ch", reason: "reset"), at: at(5)) == [
            .emit(.destinationFailure(destinationID: "ch", reason: "reset")),
        ])
        #expect(m.on(.allDestinationsFlushed, at: at(6)) == [
            .emit(.destinationEnd(destinationID: "s3")), .emit(.sessionEnd), .finalize(.stopped),
        ])
    }

    @Test func reconnectingDestinationIsFlushedOnStop() {
        var m = machine(in: .active)
        _ = m.on(.destinationDropped(destinationID: "ch", reason: "reset"), at: at(10))
        #expect(m.on(.stopRequested, at: at(11)) == [.cancelTimer(.maximumDuration), .beginGracefulStop(.stopRequested)])
        #expect(m.destinationStatus("ch") == .stopping)
        #expect(m.on(.tick, at: at(100)) == [])
    }

    @Test func expiryFiveMinutesAfterEnd() {
        let m = machine(in: .stopped)
        #expect(m.endedAt == at(4))
        #expect(!m.isExpired(now: at(4) + .seconds(299)))
        #expect(m.isExpired(now: at(4) + .seconds(300)))
        #expect(!machine(in: .active).isExpired(now: at(100_000)))
    }

    @Test func outputAfterSessionStartIsRequiredForDestinationStart() {
        var m = machine(in: .starting)
        #expect(m.on(.destinationOutput(destinationID: "ch"), at: at(1)) == [.rejected("destination ch produced output before the pipeline started")])
        #expect(m.destinationStatus("ch") == .starting)
        #expect(m.destinationStatus("nope") == nil)
    }
}
