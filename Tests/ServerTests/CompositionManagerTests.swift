// The lifecycle as the manager drives it, in virtual time: a ManualMediaClock and a fake
// pipeline launcher stand in for the wall clock and the media threads.
import APIModels
import Foundation
import Lifecycle
import Logging
import MediaCore
import Persistence
import Destinations
import EventSinks
@testable import Server
import Layout
import Pipeline
import Synchronization
import XCTest

final class FakePipelineLauncher: CompositionPipelineLauncher {
    final class Handle: PipelineHandle {
        let stopped = Atomic<Bool>(false)
        let directions = Mutex<[CompositionDirection]>([])
        func requestStop() { stopped.store(true, ordering: .relaxed) }
        func direct(_ change: CompositionDirection) { directions.withLock { $0.append(change) } }
    }
    let launched = Mutex<[(PipelineJob, Handle)]>([])

    func launch(_ job: PipelineJob, logger: Logger, report: @escaping @Sendable (PipelineReport) -> Void) -> any PipelineHandle {
        let handle = Handle()
        launched.withLock { $0.append((job, handle)) }
        return handle
    }
    var jobs: [PipelineJob] { launched.withLock { $0.map(\.0) } }
    var handles: [Handle] { launched.withLock { $0.map(\.1) } }
}

final class CompositionManagerTests: XCTestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("fixtures")
    let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/twoPeople"
    let encoderArn = "arn:aws:ivs:us-east-1:123456789012:encoder-configuration/AAAAAAAAAAAA"
    let storageArn = "arn:aws:ivs:us-east-1:123456789012:storage-configuration/BBBBBBBBBBBB"
    let channelArn = "arn:aws:ivs:us-east-1:123456789012:channel/CCCCCCCCCCCC"

    struct Harness {
        let manager: CompositionManager<InMemoryCompositionStore>
        let clock: ManualMediaClock
        let events: InMemoryEventSink
        let launcher: FakePipelineLauncher
        let store: InMemoryCompositionStore
        var eventNames: [String] { events.events.map(\.detail.eventName) }
    }

    func makeHarness(idle: Double = 60, overlays: ServerConfiguration.Overlays = .init()) async throws -> Harness {
        let configuration = ServerConfiguration(
            stages: [.init(id: "twoPeople", source: Self.fixtures.appendingPathComponent("two-people").path)],
            channels: [.init(arn: channelArn, ingestEndpoint: "rtmp://127.0.0.1:1935/live/", streamKey: "sk_test",
                             reconnect: .init(maxRetries: 2, baseIntervalSeconds: 0.5))],
            buckets: ["rec-bucket": .directory(FileManager.default.temporaryDirectory.appendingPathComponent("rec-\(UUID())").path)],
            lifecycle: .init(idleTimeoutSeconds: idle), overlays: overlays)
        let store = InMemoryCompositionStore()
        try await store.putEncoderConfiguration(CreateEncoderConfigurationRequest().makeEncoderConfiguration(arn: IVSARN(parsing: encoderArn)!))
        try await store.putStorageConfiguration(CreateStorageConfigurationRequest(s3: .init(bucketName: "rec-bucket"))
            .makeStorageConfiguration(arn: IVSARN(parsing: storageArn)!))
        let clock = ManualMediaClock()
        let events = InMemoryEventSink()
        let launcher = FakePipelineLauncher()
        let buckets = try BucketService(configuration: configuration, environment: [:], logger: Logger(label: "test"))
        let manager = CompositionManager(configuration: configuration, store: store, events: events, launcher: launcher,
                                         buckets: buckets, clock: clock, wallClock: { Date(timeIntervalSince1970: 1_800_000_000) },
                                         metrics: nil, logger: Logger(label: "test"))
        return Harness(manager: manager, clock: clock, events: events, launcher: launcher, store: store)
    }

    func startRequest(token: String? = nil) -> StartCompositionRequest {
        StartCompositionRequest(stageArn: stageArn, idempotencyToken: token,
                                destinations: [DestinationConfiguration(s3: S3DestinationConfiguration(
                                    storageConfigurationArn: storageArn, encoderConfigurationArns: [encoderArn]))])
    }

    /// Start → media → ACTIVE; nobody publishes for 60 s → graceful stop → STOPPED; gone 5 min later.
    func testIdleTimeoutStopsAndRetentionHides() async throws {
        let h = try await makeHarness()
        let started = try await h.manager.start(startRequest())
        XCTAssertEqual(started.state, .starting)
        XCTAssertEqual(h.launcher.jobs.count, 1)
        let destination = started.destinations[0].id
        XCTAssertEqual(started.destinations[0].detail?.s3?.recordingPrefix,
                       "twoPeople/\(started.arn.split(separator: "/").last!)/\(destination)/composite")

        await h.manager.handle(.session(.mediaFlowing), for: started.arn)
        await h.manager.handle(.session(.sinkActive(name: "s3 destination", destinationId: destination)), for: started.arn)
        var now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.state, .active)
        XCTAssertEqual(now.destinations[0].state, .active)

        await h.manager.handle(.session(.publishersChanged(0, at: .seconds(6))), for: started.arn)
        h.clock.advance(by: .seconds(59))
        await h.manager.tick()
        now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.state, .active, "59 s idle is not yet the timeout")
        XCTAssertFalse(h.launcher.handles[0].stopped.load(ordering: .relaxed))

        h.clock.advance(by: .seconds(1))
        await h.manager.tick()
        now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.state, .stopping)
        XCTAssertTrue(h.launcher.handles[0].stopped.load(ordering: .relaxed), "the pipeline was asked to stop")

        await h.manager.handle(.finished(failure: nil), for: started.arn)
        now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.state, .stopped)
        XCTAssertEqual(now.destinations[0].state, .stopped)
        XCTAssertNotNil(now.endTime)
        XCTAssertEqual(h.eventNames, ["Session Start", "Destination Start", "Destination End", "Session End"])
        let persisted = try await h.store.composition(arn: started.arn)
        XCTAssertEqual(persisted?.composition.state, .stopped)

        h.clock.advance(by: .seconds(299))
        await h.manager.tick()
        _ = try await h.manager.composition(arn: started.arn)
        h.clock.advance(by: .seconds(1))
        await h.manager.tick()
        do {
            _ = try await h.manager.composition(arn: started.arn)
            XCTFail("an ended composition disappears 5 minutes after it ended")
        } catch {
            XCTAssertEqual(error.code, .resourceNotFound)
        }
        let listed = try await h.manager.compositions()
        XCTAssertTrue(listed.isEmpty)
    }

    /// UpdateComposition: a running composition's pipeline gets the change; GetComposition and
    /// the store show the layout in force; a repeat of the layout in force sends nothing; an
    /// ended composition refuses with ConflictException; an unknown one is not found.
    func testUpdateReachesThePipelineAndShowsTheLayoutInForce() async throws {
        let h = try await makeHarness()
        let started = try await h.manager.start(startRequest())
        let pip = LayoutConfiguration(pip: PipConfiguration(pipPosition: .topRight))
        // STARTING takes it too (a live composition waiting for its first publisher).
        let shown = try await h.manager.update(UpdateCompositionRequest(arn: started.arn, layout: pip, transitionMs: 300))
        XCTAssertEqual(shown.layout, pip)
        XCTAssertEqual(h.launcher.handles[0].directions.withLock { $0 }, [CompositionDirection(layout: pip, transitionMs: 300)])
        let fetched = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(fetched.layout, pip)
        let persisted = try await h.store.composition(arn: started.arn)
        XCTAssertEqual(persisted?.composition.layout, pip)

        await h.manager.handle(.session(.mediaFlowing), for: started.arn)
        _ = try await h.manager.update(UpdateCompositionRequest(arn: started.arn, layout: pip, transitionMs: 300))
        XCTAssertEqual(h.launcher.handles[0].directions.withLock { $0.count }, 1, "the layout in force again is no change")
        let audio = ["p1": ParticipantAudio(gain: 0.5)]
        _ = try await h.manager.update(UpdateCompositionRequest(arn: started.arn, layout: pip, audio: audio))
        XCTAssertEqual(h.launcher.handles[0].directions.withLock { $0.last }, CompositionDirection(audio: audio))

        try await h.manager.stop(arn: started.arn)
        await h.manager.handle(.finished(failure: nil), for: started.arn)
        do {
            _ = try await h.manager.update(UpdateCompositionRequest(arn: started.arn, layout: .defaultGrid))
            XCTFail("an ended composition cannot be directed")
        } catch {
            XCTAssertEqual(error.code, .conflict)
            XCTAssertTrue(error.message.contains("is STOPPED; only a STARTING or ACTIVE composition can be updated"), error.message)
        }
        do {
            _ = try await h.manager.update(UpdateCompositionRequest(arn: started.arn + "x", layout: .defaultGrid))
            XCTFail("unknown")
        } catch {
            XCTAssertEqual(error.code, .resourceNotFound)
        }
    }

    /// Overlays are prepared (their files read from `overlays.directory`) before anything is
    /// launched or posted: a file that is not there refuses the call with nothing started or
    /// changed; prepared ones reach the plan at start and the pipeline on update (a whole
    /// description, `{}` removing them), and GetComposition and the store show those in force.
    func testOverlaysArePreparedBeforeTheyReachTheComposition() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("overlays-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(PNGEncoder.encodeRGB(width: 2, height: 2, rgb: [UInt8](repeating: 200, count: 12)))
            .write(to: directory.appendingPathComponent("logo.png"))
        let h = try await makeHarness(overlays: .init(directory: directory.path))

        var request = startRequest()
        request.overlays = OverlayConfiguration(images: [ImageOverlay(file: "missing.png")])
        do {
            _ = try await h.manager.start(request)
            XCTFail("a file that is not in the overlay directory")
        } catch {
            XCTAssertEqual(error.code, .validation)
            XCTAssertTrue(error.message.hasPrefix("overlays.images[0].file: "), error.message)
        }
        XCTAssertTrue(h.launcher.jobs.isEmpty)
        let none = try await h.manager.compositions()
        XCTAssertTrue(none.isEmpty)

        let atStart = OverlayConfiguration(images: [ImageOverlay(file: "logo.png", position: .topRight)],
                                           banners: [BannerOverlay(id: "title", text: "Live")])
        request.overlays = atStart
        let started = try await h.manager.start(request)
        XCTAssertEqual(started.overlays, atStart)
        let job = try XCTUnwrap(h.launcher.jobs.first)
        XCTAssertEqual(job.plan.overlays?.configuration, atStart)
        XCTAssertEqual(job.plan.overlays?.images["logo.png"].map { [$0.width, $0.height] }, [2, 2])

        let banner = OverlayConfiguration(banners: [BannerOverlay(id: "title", text: "Back soon", visible: false)])
        let shown = try await h.manager.update(UpdateCompositionRequest(arn: started.arn, overlays: banner))
        XCTAssertEqual(shown.overlays, banner)
        XCTAssertEqual(shown.layout, .defaultGrid)
        var posted = h.launcher.handles[0].directions.withLock { $0 }
        XCTAssertEqual(posted.map(\.overlays?.configuration), [banner])
        XCTAssertEqual(posted.map(\.layout), [nil])
        let persisted = try await h.store.composition(arn: started.arn)
        XCTAssertEqual(persisted?.composition.overlays, banner)

        do {
            _ = try await h.manager.update(UpdateCompositionRequest(arn: started.arn, overlays: OverlayConfiguration(
                background: BackgroundOverlay(file: "missing.jpg"))))
            XCTFail("a file that is not in the overlay directory")
        } catch {
            XCTAssertEqual(error.code, .validation)
            XCTAssertTrue(error.message.hasPrefix("overlays.background.file: "), error.message)
        }
        XCTAssertEqual(h.launcher.handles[0].directions.withLock { $0.count }, 1, "a refused change posts nothing")

        let removed = try await h.manager.update(UpdateCompositionRequest(arn: started.arn, overlays: OverlayConfiguration()))
        XCTAssertNil(removed.overlays)
        posted = h.launcher.handles[0].directions.withLock { $0 }
        XCTAssertEqual(posted.last?.overlays?.configuration, OverlayConfiguration())
        let fetched = try await h.manager.composition(arn: started.arn)
        XCTAssertNil(fetched.overlays)
    }

    /// The RTMP sink reconnects by itself; its reports only move the channel destination's
    /// state, and a failed channel leaves the s3 recording running.
    func testChannelEventsDriveTheChannelDestination() async throws {
        let h = try await makeHarness()
        let request = StartCompositionRequest(stageArn: stageArn, destinations: [
            DestinationConfiguration(s3: S3DestinationConfiguration(storageConfigurationArn: storageArn,
                                                                    encoderConfigurationArns: [encoderArn])),
            DestinationConfiguration(channel: APIModels.ChannelDestinationConfiguration(channelArn: channelArn)),
        ])
        let started = try await h.manager.start(request)
        let (s3, channel) = (started.destinations[0].id, started.destinations[1].id)
        let job = try XCTUnwrap(h.launcher.jobs.first)
        XCTAssertEqual(job.plan.channel?.destinationId, channel)
        XCTAssertEqual(job.plan.channel?.configuration.ingestURL, "rtmp://127.0.0.1:1935/live")
        XCTAssertEqual(job.plan.channel?.configuration.streamKey, "sk_test")
        XCTAssertEqual(job.plan.channel?.configuration.reconnect.maxRetries, 2)
        XCTAssertEqual(job.plan.channel?.configuration.reconnect.baseInterval.microsecondsValue, 500_000)
        XCTAssertEqual(job.plan.recording?.destinationId, s3)

        // A drop reported before "Session Start" waits for it.
        await h.manager.handle(.channel(destinationId: channel, .reconnecting(ChannelFailure(.connectionRefused))), for: started.arn)
        XCTAssertEqual(h.eventNames, [])
        await h.manager.handle(.session(.mediaFlowing), for: started.arn)
        await h.manager.handle(.session(.sinkActive(name: "s3 destination", destinationId: s3)), for: started.arn)
        var now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.destinations.map(\.state), [.active, .reconnecting])
        await h.manager.handle(.channel(destinationId: channel, .active), for: started.arn)
        await h.manager.handle(.channel(destinationId: channel, .reconnecting(ChannelFailure(.connectionLost))), for: started.arn)
        h.clock.advance(by: .seconds(600))
        await h.manager.tick()
        now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.destinations[1].state, .reconnecting, "the lifecycle never retries or gives up by itself")
        await h.manager.handle(.channel(destinationId: channel, .failed(ChannelFailure(.connectionRefused, detail: "ECONNREFUSED"))),
                               for: started.arn)
        now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.state, .active)
        XCTAssertEqual(now.destinations.map(\.state), [.active, .failed])
        XCTAssertFalse(h.launcher.handles[0].stopped.load(ordering: .relaxed), "the recording goes on")
        XCTAssertEqual(h.eventNames, ["Session Start", "Destination Reconnecting", "Destination Start", "Destination Start",
                                      "Destination Reconnecting", "Destination Failure"])
        let failure = try XCTUnwrap(h.events.events.last)
        XCTAssertEqual(failure.detail.id, channel)
        XCTAssertEqual(failure.detail.reason, "connection refused")
    }

    func testAllDestinationsFailedEndsTheCompositionFailed() async throws {
        let h = try await makeHarness()
        let request = StartCompositionRequest(stageArn: stageArn, destinations: [
            DestinationConfiguration(channel: APIModels.ChannelDestinationConfiguration(channelArn: channelArn)),
        ])
        let started = try await h.manager.start(request)
        XCTAssertNil(h.launcher.jobs.first?.plan.recording)
        await h.manager.handle(.session(.mediaFlowing), for: started.arn)
        await h.manager.handle(.channel(destinationId: started.destinations[0].id, .failed(ChannelFailure(.streamRejected))),
                               for: started.arn)
        let now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.state, .failed)
        XCTAssertEqual(now.destinations[0].state, .failed)
        XCTAssertTrue(h.launcher.handles[0].stopped.load(ordering: .relaxed), "the pipeline is torn down")
        XCTAssertEqual(h.eventNames, ["Session Start", "Destination Failure", "Session Failure"])
    }

    func testPublishersReturningCancelTheIdleTimer() async throws {
        let h = try await makeHarness(idle: 2)
        let started = try await h.manager.start(startRequest())
        await h.manager.handle(.session(.mediaFlowing), for: started.arn)
        await h.manager.handle(.session(.publishersChanged(0, at: .zero)), for: started.arn)
        h.clock.advance(by: .seconds(1))
        await h.manager.handle(.session(.publishersChanged(1, at: .seconds(1))), for: started.arn)
        h.clock.advance(by: .seconds(5))
        await h.manager.tick()
        let now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.state, .active)
    }

    func testMaximumDurationStopsTheComposition() async throws {
        let h = try await makeHarness()
        let started = try await h.manager.start(startRequest())
        await h.manager.handle(.session(.mediaFlowing), for: started.arn)
        h.clock.advance(by: .seconds(24 * 3600))
        await h.manager.tick()
        let now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.state, .stopping)
        XCTAssertTrue(h.launcher.handles[0].stopped.load(ordering: .relaxed))
    }

    func testPipelineFailureEndsFailedWithSessionFailure() async throws {
        let h = try await makeHarness()
        let started = try await h.manager.start(startRequest())
        let destination = started.destinations[0].id
        await h.manager.handle(.session(.mediaFlowing), for: started.arn)
        await h.manager.handle(.session(.sinkActive(name: "s3 destination", destinationId: destination)), for: started.arn)
        await h.manager.handle(.finished(failure: "decoder exploded"), for: started.arn)
        let now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.state, .failed)
        XCTAssertEqual(h.eventNames, ["Session Start", "Destination Start", "Destination End", "Session Failure"])
        XCTAssertEqual(h.events.events.last?.detail.reason, "decoder exploded")
        let persisted = try await h.store.composition(arn: started.arn)
        XCTAssertEqual(persisted?.failureReason, "decoder exploded")
    }

    func testStopRequestedFlushesThenStops() async throws {
        let h = try await makeHarness()
        let started = try await h.manager.start(startRequest())
        await h.manager.handle(.session(.mediaFlowing), for: started.arn)
        await h.manager.handle(.session(.sinkActive(name: "s3 destination", destinationId: started.destinations[0].id)), for: started.arn)
        try await h.manager.stop(arn: started.arn)
        var now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.state, .stopping)
        await h.manager.handle(.finished(failure: nil), for: started.arn)
        now = try await h.manager.composition(arn: started.arn)
        XCTAssertEqual(now.state, .stopped)
        // Stopping again is harmless.
        try await h.manager.stop(arn: started.arn)
    }

    /// The same token and request: the same composition. The token with another request (a
    /// layout, tags) is refused, and nothing starts.
    func testIdempotencyTokenReturnsTheSameComposition() async throws {
        let h = try await makeHarness()
        let first = try await h.manager.start(startRequest(token: "abc"))
        let second = try await h.manager.start(startRequest(token: "abc"))
        XCTAssertEqual(first.arn, second.arn)
        XCTAssertEqual(h.launcher.jobs.count, 1)
        var pip = startRequest(token: "abc")
        pip.layout = LayoutConfiguration(pip: PipConfiguration())
        var tagged = startRequest(token: "abc")
        tagged.tags = ["team": "video"]
        for other in [pip, tagged] {
            do {
                _ = try await h.manager.start(other)
                XCTFail("the token with another request")
            } catch {
                XCTAssertEqual(error.code, .conflict)
                XCTAssertTrue(error.message.contains("idempotencyToken"), error.message)
            }
        }
        XCTAssertEqual(h.launcher.jobs.count, 1)
        let again = try await h.manager.start(startRequest(token: "abc"))
        XCTAssertEqual(again.arn, first.arn)
    }

    func testConcurrentCompositionQuota() async throws {
        let h = try await makeHarness()
        for _ in 0..<5 { _ = try await h.manager.start(startRequest()) }
        do {
            _ = try await h.manager.start(startRequest())
            XCTFail("the 6th concurrent composition is over quota")
        } catch {
            XCTAssertEqual(error.code, .serviceQuotaExceeded)
        }
    }

    /// A composition persisted as ACTIVE (the daemon died): restore finalizes its recording
    /// from the segments present and marks it FAILED with the restart reason.
    /// A lost node's compositions that had already ended are adopted for their retention and
    /// then deleted from the store, as their node would have done; another stage's are not touched.
    func testTakeOverExpiresAlreadyEndedCompositionsOfTheLostStages() async throws {
        let h = try await makeHarness()
        func ended(_ id: String, stage: String) -> StoredComposition {
            StoredComposition(composition: Composition(arn: "arn:aws:ivs:us-east-1:123456789012:composition/\(id)", stageArn: stage,
                                                       state: .stopped, layout: .defaultGrid, destinations: [], tags: [:]))
        }
        let lost = ended("EEEEEEEEEEEE", stage: stageArn)
        let other = ended("OOOOOOOOOOOO", stage: "arn:aws:ivs:us-east-1:123456789012:stage/OtherOtherOt")
        try await h.store.putComposition(lost)
        try await h.store.putComposition(other)
        let failed = await h.manager.takeOver(stages: [stageArn], reason: "node-x was lost")
        XCTAssertEqual(failed, 0, "nothing was running")
        XCTAssertEqual(h.eventNames, [], "no event for what had already ended")
        let listed = try await h.manager.composition(arn: lost.arn)
        XCTAssertEqual(listed.state, .stopped)
        h.clock.advance(by: .seconds(300))
        await h.manager.tick()
        let kept = try await h.store.composition(arn: lost.arn)
        XCTAssertNil(kept, "deleted once its retention passed")
        let untouched = try await h.store.composition(arn: other.arn)
        XCTAssertNotNil(untouched, "another stage's composition is not this node's to expire")
    }

    func testRestoreFinalizesRunningCompositions() async throws {
        let h = try await makeHarness()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("restore-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        let prefix = "twoPeople/CCCCCCCCCCCC/DDDDDDDDDDDD/composite"
        let rendition = root.appendingPathComponent(prefix + "/media/hls/720p30-AAAAAAAAAAAA")
        try FileManager.default.createDirectory(at: rendition, withIntermediateDirectories: true)
        for n in 0..<2 { try Data("ts".utf8).write(to: rendition.appendingPathComponent("\(n).ts")) }
        try Data("#EXTM3U\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXTINF:2.000,\n0.ts\n#EXTINF:1.500,\n1.ts\n".utf8)
            .write(to: rendition.appendingPathComponent("playlist.m3u8"))
        let arn = "arn:aws:ivs:us-east-1:123456789012:composition/CCCCCCCCCCCC"
        try await h.store.putComposition(StoredComposition(
            composition: Composition(arn: arn, stageArn: stageArn, state: .active, layout: .defaultGrid,
                                     destinations: [Destination(id: "DDDDDDDDDDDD", state: .active,
                                                                configuration: DestinationConfiguration(name: ""))],
                                     tags: [:], startTime: APITimestamp(secondsSince1970: 1_799_999_000)),
            recording: StoredRecording(destinationId: "DDDDDDDDDDDD", storageRoot: root.path, prefix: prefix,
                                       renditionName: "720p30-AAAAAAAAAAAA", width: 1280, height: 720,
                                       targetSegmentDurationSeconds: 2)))
        try await h.manager.restore()
        let restored = try await h.manager.composition(arn: arn)
        XCTAssertEqual(restored.state, .failed)
        XCTAssertEqual(restored.destinations[0].state, .stopped)
        XCTAssertNotNil(restored.endTime)
        let playlist = try String(contentsOf: rendition.appendingPathComponent("playlist.m3u8"), encoding: .utf8)
        XCTAssertEqual(playlist, """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXTINF:2.000,
            0.ts
            #EXTINF:1.500,
            1.ts
            #EXT-X-ENDLIST

            """)
        let metadata = try String(contentsOf: root.appendingPathComponent(prefix + "/events/recording-failed.json"), encoding: .utf8)
        XCTAssertTrue(metadata.contains("RECORDING_ENDED_WITH_FAILURE"), metadata)
        XCTAssertTrue(metadata.contains("\"duration_ms\": 3500") || metadata.contains("\"duration_ms\":3500"), metadata)
        XCTAssertEqual(h.eventNames, ["Destination End", "Session Failure"])
        XCTAssertEqual(h.events.events.last?.detail.reason, "daemon restarted while the composition was running")
        let persisted = try await h.store.composition(arn: arn)
        XCTAssertEqual(persisted?.composition.state, .failed)
        XCTAssertEqual(persisted?.failureReason, "daemon restarted while the composition was running")
    }
}
