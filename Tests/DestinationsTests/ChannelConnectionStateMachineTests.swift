import Destinations
import MediaCore
import Testing

@Suite struct ChannelConnectionStateMachineTests {
    typealias Machine = ChannelConnectionStateMachine
    let refused = ChannelFailure(.connectionRefused)
    let lost = ChannelFailure(.connectionLost)

    func at(_ milliseconds: Int64) -> MediaTime { .milliseconds(milliseconds) }

    @Test func startsThenBecomesActiveOnFirstAcceptedData() {
        var machine = Machine(policy: .default, streamKey: "sk")
        #expect(machine.destinationState == .starting)
        #expect(machine.on(.start(now: at(0))) == .init(step: .connect(streamKey: "sk")))
        #expect(machine.destinationState == .starting)
        #expect(machine.on(.dataAccepted) == .init(announce: .active, step: .send))
        #expect(machine.destinationState == .active)
        #expect(machine.on(.dataAccepted) == .init(step: .send))
        #expect(machine.on(.stop) == .init(announce: .ended, step: .close))
        #expect(machine.destinationState == .stopped)
        #expect(machine.on(.dataAccepted) == .init(step: .close))
    }

    @Test func linearBackoffThenFailureAfterMaxRetries() {
        let policy = ChannelReconnectPolicy(maxRetries: 5, baseInterval: .seconds(2))
        var machine = Machine(policy: policy, streamKey: "sk")
        _ = machine.on(.start(now: at(0)))
        _ = machine.on(.dataAccepted)
        // Attempt n waits n × 2 s from the failure that precedes it.
        #expect(machine.on(.failure(lost, now: at(10_000)))
                == .init(announce: .reconnecting(lost), step: .connectAfter(deadline: at(12_000), streamKey: "sk")))
        #expect(machine.destinationState == .reconnecting)
        var now: Int64 = 12_000
        for attempt in 2...5 {
            #expect(machine.on(.failure(refused, now: at(now)))
                    == .init(step: .connectAfter(deadline: at(now + Int64(attempt) * 2_000), streamKey: "sk")))
            now += Int64(attempt) * 2_000
        }
        #expect(machine.on(.failure(refused, now: at(now))) == .init(announce: .failed(refused), step: .close))
        #expect(machine.destinationState == .failed)
        #expect(machine.failure == refused)
        // FAILED is final: stop does not turn it into STOPPED.
        #expect(machine.on(.stop) == .init(step: .close))
        #expect(machine.destinationState == .failed)
        #expect(policy.totalBackoff == .seconds(30))
    }

    @Test func recoveryResetsTheRetryCount() {
        var machine = Machine(policy: ChannelReconnectPolicy(maxRetries: 2, baseInterval: .seconds(1)), streamKey: "sk")
        _ = machine.on(.start(now: at(0)))
        _ = machine.on(.dataAccepted)
        _ = machine.on(.failure(lost, now: at(0)))
        _ = machine.on(.failure(refused, now: at(1_000)))   // attempt 1 failed, attempt 2 scheduled
        #expect(machine.on(.dataAccepted) == .init(announce: .active, step: .send))
        // A new outage gets the full budget again, starting at 1 × base.
        #expect(machine.on(.failure(lost, now: at(5_000)))
                == .init(announce: .reconnecting(lost), step: .connectAfter(deadline: at(6_000), streamKey: "sk")))
        #expect(machine.on(.failure(refused, now: at(6_000))).step == .connectAfter(deadline: at(8_000), streamKey: "sk"))
        #expect(machine.on(.failure(refused, now: at(8_000))).announce == .failed(refused))
    }

    @Test func initialConnectFailureIsRetriedToo() {
        var machine = Machine(policy: ChannelReconnectPolicy(maxRetries: 1, baseInterval: .milliseconds(500)), streamKey: "sk")
        _ = machine.on(.start(now: at(0)))
        #expect(machine.on(.failure(refused, now: at(3)))
                == .init(announce: .reconnecting(refused), step: .connectAfter(deadline: at(503), streamKey: "sk")))
        #expect(machine.on(.failure(refused, now: at(503))) == .init(announce: .failed(refused), step: .close))
    }

    @Test func rejectedStreamFailsWithoutRetrying() {
        let rejected = ChannelFailure(.streamRejected, detail: "server closed the connection")
        var machine = Machine(policy: .default, streamKey: "sk")
        _ = machine.on(.start(now: at(0)))
        #expect(machine.on(.failure(rejected, now: at(0))) == .init(announce: .failed(rejected), step: .close))

        // Also while reconnecting.
        var other = Machine(policy: .default, streamKey: "sk")
        _ = other.on(.start(now: at(0)))
        _ = other.on(.dataAccepted)
        _ = other.on(.failure(lost, now: at(0)))
        #expect(other.on(.failure(rejected, now: at(2_000))) == .init(announce: .failed(rejected), step: .close))
    }

    @Test func disabledReconnectFailsOnFirstFailure() {
        var machine = Machine(policy: ChannelReconnectPolicy(enabled: false), streamKey: "sk")
        _ = machine.on(.start(now: at(0)))
        _ = machine.on(.dataAccepted)
        #expect(machine.on(.failure(lost, now: at(0))) == .init(announce: .failed(lost), step: .close))
    }

    @Test func stopWhileReconnectingEnds() {
        var machine = Machine(policy: .default, streamKey: "sk")
        _ = machine.on(.start(now: at(0)))
        _ = machine.on(.dataAccepted)
        _ = machine.on(.failure(lost, now: at(0)))
        #expect(machine.on(.stop) == .init(announce: .ended, step: .close))
        #expect(machine.destinationState == .stopped)
    }

    @Test func streamTakeoverAppendsAnIncreasingPriority() {
        var machine = Machine(policy: ChannelReconnectPolicy(maxRetries: 5, baseInterval: .seconds(1), streamTakeover: true),
                              streamKey: "sk_us-west-2_abc")
        #expect(machine.on(.start(now: at(0))).step == .connect(streamKey: "sk_us-west-2_abc?priority=1"))
        _ = machine.on(.dataAccepted)
        #expect(machine.on(.failure(lost, now: at(0))).step == .connectAfter(deadline: at(1_000), streamKey: "sk_us-west-2_abc?priority=2"))
        #expect(machine.on(.failure(refused, now: at(1_000))).step == .connectAfter(deadline: at(3_000), streamKey: "sk_us-west-2_abc?priority=3"))
        _ = machine.on(.dataAccepted)
        // Every attempt over the session's life counts, as in the broadcast SDK.
        #expect(machine.on(.failure(lost, now: at(9_000))).step == .connectAfter(deadline: at(10_000), streamKey: "sk_us-west-2_abc?priority=4"))
    }

    @Test func publishURLSplitsIntoIngestAndKey() throws {
        let configuration = try ChannelDestinationConfiguration.parse(publishURL: "rtmps://abc.global-contribute.live-video.net:443/app/sk_us-west-2_xyz")
        #expect(configuration.ingestURL == "rtmps://abc.global-contribute.live-video.net:443/app")
        #expect(configuration.streamKey == "sk_us-west-2_xyz")
        let local = try ChannelDestinationConfiguration.parse(publishURL: "rtmp://127.0.0.1:1935/live/key")
        #expect(local.ingestURL == "rtmp://127.0.0.1:1935/live")
        #expect(local.streamKey == "key")
        for bad in ["http://host/app/key", "rtmp://host", "rtmp://host/key", "rtmp:///app/key", "not a url"] {
            #expect(throws: ChannelDestinationConfiguration.ParseError.self) {
                _ = try ChannelDestinationConfiguration.parse(publishURL: bad)
            }
        }
        // The stream key never shows in the message.
        do {
            _ = try ChannelDestinationConfiguration.parse(publishURL: "http://host/app/secretkey")
        } catch {
            #expect(!error.description.contains("secretkey"))
        }
    }
}
