// StageSessionBook: sessions start with the first join and end with the last leave; events
// and stage updates in the model's order.
import Stages
import Synchronization
import Testing

struct StageSessionBookTests {
    let stage = "arn:aws:ivs:us-east-1:123456789012:stage/abc"

    func book() -> StageSessionBook {
        let counter = Mutex(0)
        return StageSessionBook(makeSessionID: {
            let n = counter.withLock { $0 += 1; return $0 }
            return "st-session\(String(repeating: "0", count: 5 - String(n).count))\(n)"
        })
    }

    func events(_ effects: [StageSessionEffect]) -> [String] {
        effects.compactMap { effect in
            if case .appendEvent(_, _, let event) = effect { return "\(event.participantId):\(event.name.rawValue)" }
            return nil
        }
    }

    @Test("the first join starts a session; the last leave ends it")
    func sessionLifetime() {
        var book = book()
        let first = book.joinAndPublish(stageArn: stage, participantId: "a", userId: "ua", attributes: [:], transport: "RTMP",
                                        ingestConfigurationArn: nil, at: 100)
        #expect(first.first == .saveSession(StageSessionRecord(stageArn: stage, sessionId: "st-session00001", startTime: 100)))
        #expect(events(first) == ["a:JOINED", "a:PUBLISH_STARTED"])
        #expect(first.last == .notify(.published(stageArn: stage, sessionId: "st-session00001", userId: "ua", participantId: "a")))
        let second = book.joinAndPublish(stageArn: stage, participantId: "b", userId: "ub", attributes: ["k": "v"], transport: "RTMPS",
                                         ingestConfigurationArn: "arn:x", at: 105)
        #expect(!second.contains { if case .saveSession = $0 { return true }; return false })
        #expect(book.connectedCount(stageArn: stage) == 2)
        let leaveA = book.leave(stageArn: stage, participantId: "a", at: 110)
        #expect(events(leaveA) == ["a:PUBLISH_STOPPED", "a:LEFT"])
        #expect(book.activeSession(stageArn: stage) == "st-session00001")
        let leaveB = book.leave(stageArn: stage, participantId: "b", at: 120)
        #expect(leaveB.last == .saveSession(StageSessionRecord(stageArn: stage, sessionId: "st-session00001", startTime: 100, endTime: 120)))
        #expect(book.activeSession(stageArn: stage) == nil)
        // A new join is a new session.
        let again = book.joinAndPublish(stageArn: stage, participantId: "a", userId: "ua", attributes: [:], transport: "RTMP",
                                        ingestConfigurationArn: nil, at: 130)
        #expect(again.first == .saveSession(StageSessionRecord(stageArn: stage, sessionId: "st-session00002", startTime: 130)))
    }

    @Test("a reconnect in the same session keeps the participant and its first join time")
    func reconnect() {
        var book = book()
        _ = book.joinAndPublish(stageArn: stage, participantId: "a", userId: "ua", attributes: [:], transport: "RTMP", ingestConfigurationArn: nil, at: 1)
        _ = book.joinAndPublish(stageArn: stage, participantId: "b", userId: "ub", attributes: [:], transport: "RTMP", ingestConfigurationArn: nil, at: 2)
        _ = book.leave(stageArn: stage, participantId: "a", at: 3)
        let back = book.joinAndPublish(stageArn: stage, participantId: "a", userId: "ua", attributes: [:], transport: "RTMPS",
                                       ingestConfigurationArn: nil, at: 4)
        let saved = back.compactMap { effect -> SessionParticipant? in
            if case .saveParticipant(let p) = effect { return p }
            return nil
        }
        #expect(saved.count == 1 && saved[0].firstJoinTime == 1 && saved[0].isConnected && saved[0].transport == "RTMPS")
        #expect(book.activeSession(stageArn: stage) == "st-session00001")
    }

    @Test("leaving twice, or leaving a stage one never joined, does nothing")
    func idempotentLeave() {
        var book = book()
        #expect(book.leave(stageArn: stage, participantId: "x", at: 1).isEmpty)
        _ = book.joinAndPublish(stageArn: stage, participantId: "a", userId: "ua", attributes: [:], transport: "RTMP", ingestConfigurationArn: nil, at: 1)
        #expect(!book.leave(stageArn: stage, participantId: "a", at: 2).isEmpty)
        #expect(book.leave(stageArn: stage, participantId: "a", at: 3).isEmpty)
    }

    @Test("publish errors: recorded for a joined participant; a refusal only notifies, with the session if any")
    func errors() {
        var book = book()
        #expect(book.refused(stageArn: stage, participantId: "z", userId: "uz", errorCode: "INVALID_PROTOCOL")
                == [.notify(.publishError(stageArn: stage, sessionId: nil, userId: "uz", participantId: "z", errorCode: "INVALID_PROTOCOL"))])
        _ = book.joinAndPublish(stageArn: stage, participantId: "a", userId: "ua", attributes: [:], transport: "RTMP", ingestConfigurationArn: nil, at: 1)
        let error = book.publishError(stageArn: stage, participantId: "a", errorCode: "BITRATE_EXCEEDED", at: 5)
        #expect(error == [
            .appendEvent(stageArn: stage, sessionId: "st-session00001",
                         SessionParticipantEvent(name: .publishError, participantId: "a", time: 5, errorCode: "BITRATE_EXCEEDED")),
            .notify(.publishError(stageArn: stage, sessionId: "st-session00001", userId: "ua", participantId: "a", errorCode: "BITRATE_EXCEEDED")),
        ])
        #expect(book.refused(stageArn: stage, participantId: "z", userId: "uz", errorCode: "QUOTA_EXCEEDED")
                == [.notify(.publishError(stageArn: stage, sessionId: "st-session00001", userId: "uz", participantId: "z", errorCode: "QUOTA_EXCEEDED"))])
        #expect(book.publishError(stageArn: stage, participantId: "nobody", errorCode: "X", at: 6).isEmpty)
    }

    @Test("stages are independent")
    func twoStages() {
        var book = book()
        let other = "arn:aws:ivs:us-east-1:123456789012:stage/other"
        _ = book.joinAndPublish(stageArn: stage, participantId: "a", userId: "ua", attributes: [:], transport: "RTMP", ingestConfigurationArn: nil, at: 1)
        _ = book.joinAndPublish(stageArn: other, participantId: "a", userId: "ua", attributes: [:], transport: "RTMP", ingestConfigurationArn: nil, at: 1)
        #expect(book.activeSession(stageArn: stage) != book.activeSession(stageArn: other))
        _ = book.leave(stageArn: stage, participantId: "a", at: 2)
        #expect(book.activeSession(stageArn: stage) == nil && book.isConnected(stageArn: other, participantId: "a"))
    }
}
