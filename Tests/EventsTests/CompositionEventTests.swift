import Testing
import Foundation
import Events
import Lifecycle

/// The user guide's example values ("Examples: Composition State Change").
private let builder = CompositionEventBuilder(
    region: "us-east-1", account: "aws_account_id",
    makeID: { "01234567-0123-0123-0123-012345678901" },
    secondsSince1970: { 1_497_263_023 })  // 2017-06-12T10:23:43Z
private let compositionArn = "arn:aws:ivs:us-east-1:aws_account_id:composition/123456789012"

private func seedEvent(_ notification: CompositionNotification) -> CompositionStateChangeEvent {
    builder.event(for: notification, compositionArn: compositionArn, stageArn: "<stage-arn>")
}

/// The seed's envelope, with its `detail` members (the guide's trailing commas dropped).
private func seedText(_ detail: String) -> String {
    """
    {
      "version": "0",
      "id": "01234567-0123-0123-0123-012345678901",
      "detail-type": "IVS Composition State Change",
      "source": "aws.ivs",
      "account": "aws_account_id",
      "time": "2017-06-12T10:23:43Z",
      "region": "us-east-1",
      "resources": [
        "arn:aws:ivs:us-east-1:aws_account_id:composition/123456789012"
      ],
      "detail": {
    \(detail)
      }
    }
    """
}

@Suite struct SeedExampleTests {
    @Test func destinationFailure() {
        #expect(seedEvent(.destinationFailure(destinationID: "<Destination-id>", reason: "eg. stream key invalid")).prettyJSON == seedText("""
            "event_name": "Destination Failure",
            "stage_arn": "<stage-arn>",
            "id": "<Destination-id>",
            "reason": "eg. stream key invalid"
        """))
    }

    @Test func destinationStart() {
        #expect(seedEvent(.destinationStart(destinationID: "<destination-id>")).prettyJSON == seedText("""
            "event_name": "Destination Start",
            "stage_arn": "<stage-arn>",
            "id": "<destination-id>"
        """))
    }

    @Test func destinationEnd() {
        #expect(seedEvent(.destinationEnd(destinationID: "<Destination-id>")).prettyJSON == seedText("""
            "event_name": "Destination End",
            "stage_arn": "<stage-arn>",
            "id": "<Destination-id>"
        """))
    }

    @Test func destinationReconnecting() {
        #expect(seedEvent(.destinationReconnecting(destinationID: "<Destination-id>")).prettyJSON == seedText("""
            "event_name": "Destination Reconnecting",
            "stage_arn": "<stage-arn>",
            "id": "<Destination-id>"
        """))
    }

    @Test func sessionStart() {
        #expect(seedEvent(.sessionStart).prettyJSON == seedText("""
            "event_name": "Session Start",
            "stage_arn": "<stage-arn>"
        """))
    }

    @Test func sessionEnd() {
        #expect(seedEvent(.sessionEnd).prettyJSON == seedText("""
            "event_name": "Session End",
            "stage_arn": "<stage-arn>"
        """))
    }

    @Test func sessionFailure() {
        #expect(seedEvent(.sessionFailure(reason: "eg. no participants in the stage")).prettyJSON == seedText("""
            "event_name": "Session Failure",
            "stage_arn": "<stage-arn>",
            "reason": "eg. no participants in the stage"
        """))
    }
}

@Suite struct EventEncodingTests {
    @Test func jsonLineIsCompactAndOrdered() {
        let line = seedEvent(.destinationFailure(destinationID: "bD9rRoN91fHU", reason: "rtmp \"connect\" refused\n"))
            .jsonLine
        #expect(line == #"{"version":"0","id":"01234567-0123-0123-0123-012345678901","detail-type":"IVS Composition State Change","source":"aws.ivs","account":"aws_account_id","time":"2017-06-12T10:23:43Z","region":"us-east-1","resources":["arn:aws:ivs:us-east-1:aws_account_id:composition/123456789012"],"detail":{"event_name":"Destination Failure","stage_arn":"<stage-arn>","id":"bD9rRoN91fHU","reason":"rtmp \"connect\" refused\n"}}"#)
        #expect(!line.contains("\n"))
    }

    @Test func linesDecodeBackToTheEvent() throws {
        for notification in [CompositionNotification.sessionStart, .destinationFailure(destinationID: "d", reason: "r\u{1}")] {
            let event = seedEvent(notification)
            let decoded = try JSONDecoder().decode(CompositionStateChangeEvent.self, from: Data(event.jsonLine.utf8))
            #expect(decoded == event)
            let pretty = try JSONDecoder().decode(CompositionStateChangeEvent.self, from: Data(event.prettyJSON.utf8))
            #expect(pretty == event)
        }
    }

    @Test func builderTakesOnlyEmitActions() {
        let actions: [CompositionAction] = [
            .cancelTimer(.maximumDuration), .emit(.destinationEnd(destinationID: "a")), .emit(.sessionEnd), .finalize(.stopped),
        ]
        let events = builder.events(for: actions, compositionArn: compositionArn, stageArn: "s")
        #expect(events.map(\.detail.eventName) == ["Destination End", "Session End"])
        #expect(events.map(\.detail.id) == ["a", nil])
    }

    @Test func lifecycleToEventsEndToEnd() {
        var machine = CompositionStateMachine(destinationIDs: ["d1"], createdAt: .zero, publisherCount: 1)
        var lines: [String] = []
        for event in [CompositionEvent.pipelineStarted, .destinationOutput(destinationID: "d1"), .stopRequested, .allDestinationsFlushed] {
            let actions = machine.on(event, at: .seconds(1))
            lines += builder.events(for: actions, compositionArn: compositionArn, stageArn: "st").map(\.detail.eventName)
        }
        #expect(lines == ["Session Start", "Destination Start", "Destination End", "Session End"])
    }

    @Test func defaultIDsAreLowercaseUUIDsAndTimeIsUTC() {
        let live = CompositionEventBuilder(region: "eu-west-1", account: "123456789012")
        let event = live.event(for: .sessionStart, compositionArn: "c", stageArn: "s")
        #expect(UUID(uuidString: event.id) != nil && event.id == event.id.lowercased())
        #expect(event.time.count == 20 && event.time.hasSuffix("Z"))
        #expect(CompositionEventBuilder.formatTime(0) == "1970-01-01T00:00:00Z")
        #expect(CompositionEventBuilder.formatTime(1_709_251_199) == "2024-02-29T23:59:59Z")
        #expect(CompositionEventBuilder.formatTime(-86_401) == "1969-12-30T23:59:59Z")
    }
}
