// The daemon's metrics, created from an injected swift-metrics factory (the Prometheus
// registry behind /metrics in the daemon; tests pass their own). Never bootstrapped globally.
// Every metric's `# HELP` text is in `ServerMetrics.help`, the one list of what we export.
public import CoreMetrics
public import Pipeline
import Synchronization

public final class ServerMetrics: Sendable {
    public let framesComposed: Counter
    public let activeSpeakerSwitches: Counter
    /// Frames that were due before the previous was done (repeated instead of composed).
    public let framesDropped: Counter
    /// Compose + encode time per output frame (pacer waits excluded).
    public let frameWorkTime: Timer
    private let compositionGauges: [String: Gauge]
    private let destinationGauges: [String: Gauge]
    private let publishersGauge: Gauge
    /// Bytes written per destination type ("s3", "channel"); rate() of it is the output bitrate.
    public let outputBytes: [String: Counter]

    /// Live ingest: publishers on live stages now, publishes admitted, refused (by the model's
    /// error code) and broken off after admission (by code), and media bytes received.
    public let livePublishers: Gauge
    /// Recording objects (and their bytes) spooled on local disk, not yet in their S3 bucket.
    public let spoolObjects: Gauge
    public let spoolBytes: Gauge
    /// The WHIP socket's event loop: the worst lateness of its 10 ms tick over the last second.
    public let whipLoopLag: Gauge
    public let ingestAdmitted: Counter
    /// Refused publishes that made no Participant Publish Error event (too many refusals of
    /// the participant, or from the address, lately).
    public let ingestRefusalEventsSuppressed: Counter
    private let ingestRefused: [String: Counter]
    private let ingestPublishErrors: [String: Counter]
    /// This process, read from /proc/self when /metrics is served.
    private let processCPUSeconds: FloatingPointCounter
    private let processResidentMemory: Gauge
    private let processOpenFDs: Gauge
    /// The CPU seconds counted into `processCPUSeconds` so far (a counter only goes up by steps).
    private let processCPUCounted = Mutex<Double>(0)
    private let factory: any MetricsFactory

    public static let compositionStates = ["STARTING", "ACTIVE", "STOPPING", "STOPPED", "FAILED"]
    public static let destinationStates = ["STARTING", "ACTIVE", "STOPPING", "RECONNECTING", "STOPPED", "FAILED"]

    public init(factory: any MetricsFactory) {
        framesComposed = Counter(label: "stage_compositor_frames_composed_total", factory: factory)
        activeSpeakerSwitches = Counter(label: "stage_compositor_active_speaker_switches_total", factory: factory)
        framesDropped = Counter(label: "stage_compositor_frames_dropped_total", factory: factory)
        frameWorkTime = Timer(label: "stage_compositor_frame_encode_seconds", factory: factory)
        outputBytes = Dictionary(uniqueKeysWithValues: ["s3", "channel"].map { type in
            (type, Counter(label: "stage_compositor_output_bytes_total", dimensions: [("destination_type", type)], factory: factory))
        })
        var gauges: [String: Gauge] = [:]
        for state in Self.compositionStates {
            gauges[state] = Gauge(label: "stage_compositor_compositions", dimensions: [("state", state)], factory: factory)
        }
        compositionGauges = gauges
        var destinations: [String: Gauge] = [:]
        for state in Self.destinationStates {
            destinations[state] = Gauge(label: "stage_compositor_destinations", dimensions: [("state", state)], factory: factory)
        }
        destinationGauges = destinations
        publishersGauge = Gauge(label: "stage_compositor_publishers", factory: factory)
        self.factory = factory
        livePublishers = Gauge(label: "stage_compositor_live_publishers", factory: factory)
        spoolObjects = Gauge(label: "stage_compositor_spool_objects", factory: factory)
        spoolBytes = Gauge(label: "stage_compositor_spool_bytes", factory: factory)
        whipLoopLag = Gauge(label: "stage_compositor_whip_loop_lag_seconds", factory: factory)
        ingestAdmitted = Counter(label: "stage_compositor_ingest_admitted_total", factory: factory)
        ingestRefusalEventsSuppressed = Counter(label: "stage_compositor_ingest_refusal_events_suppressed_total", factory: factory)
        let codes = ["INSUFFICIENT_CAPABILITIES", "INVALID_STREAM_KEY", "INVALID_PROTOCOL", "REUSE_OF_STREAM_KEY", "QUOTA_EXCEEDED", "BITRATE_EXCEEDED",
                     "RESOLUTION_EXCEEDED", "INVALID_VIDEO_CODEC", "INVALID_AUDIO_CODEC", "INVALID_INPUT",
                     "STREAM_DURATION_EXCEEDED", "INTERNAL_SERVER_EXCEPTION"]
        ingestRefused = Dictionary(uniqueKeysWithValues: codes.map { code in
            (code, Counter(label: "stage_compositor_ingest_refused_total", dimensions: [("code", code)], factory: factory))
        })
        ingestPublishErrors = Dictionary(uniqueKeysWithValues: codes.map { code in
            (code, Counter(label: "stage_compositor_ingest_publish_errors_total", dimensions: [("code", code)], factory: factory))
        })
        processCPUSeconds = FloatingPointCounter(label: "process_cpu_seconds_total", factory: factory)
        processResidentMemory = Gauge(label: "process_resident_memory_bytes", factory: factory)
        processOpenFDs = Gauge(label: "process_open_fds", factory: factory)
        Gauge(label: "stage_compositor_build_info", dimensions: [("version", BuildInfo.version), ("commit", BuildInfo.commit)],
              factory: factory).record(1)
    }

    /// Fleet: seconds since this node last renewed its lease, and the events waiting in the
    /// outbox (read when /metrics is served).
    public func recordFleet(leaseAgeSeconds: Double?, eventsNotAppended: Int, eventsNotDelivered: Int) {
        if let leaseAgeSeconds { Gauge(label: "stage_compositor_fleet_lease_age_seconds", factory: factory).record(leaseAgeSeconds) }
        Gauge(label: "stage_compositor_fleet_outbox_backlog", dimensions: [("stage", "not_appended")], factory: factory)
            .record(eventsNotAppended)
        Gauge(label: "stage_compositor_fleet_outbox_backlog", dimensions: [("stage", "not_delivered")], factory: factory)
            .record(eventsNotDelivered)
    }

    /// A fleet call to the database that failed; `operation` is one of a fixed set (renew,
    /// outbox_append, outbox_deliver).
    public func fleetDatabaseError(operation: String) {
        Counter(label: "stage_compositor_fleet_database_errors_total", dimensions: [("operation", operation)], factory: factory).increment()
    }

    /// One control-plane API request answered. `operation` is an APIOperation's name or
    /// "unknown" and `status` one of the codes the server answers with: both fixed sets.
    public func apiRequest(operation: String, status: Int) {
        Counter(label: "stage_compositor_api_requests_total", dimensions: [("operation", operation), ("status", String(status))],
                factory: factory).increment()
    }

    /// This process's CPU time, resident memory and open files (nil where /proc cannot be read).
    public func recordProcess(_ stats: ProcessStats) {
        let step = processCPUCounted.withLock { counted in
            let step = max(0, stats.cpuSeconds - counted)
            counted += step
            return step
        }
        if step > 0 { processCPUSeconds.increment(by: step) }
        processResidentMemory.record(stats.residentMemoryBytes)
        processOpenFDs.record(stats.openFileDescriptors)
    }

    public func ingestRefused(code: String) { ingestRefused[code]?.increment() }

    /// Open connections and those refused by a cap, per listener ("ingest": RTMP and RTMPS;
    /// "api": the HTTP API and WHIP), read when /metrics is served.
    public func recordConnections(listener: String, open: Int, refused: Int64) {
        Gauge(label: "stage_compositor_connections_open", dimensions: [("listener", listener)], factory: factory).record(open)
        Gauge(label: "stage_compositor_connections_refused", dimensions: [("listener", listener)], factory: factory).record(refused)
    }

    /// Per-WHIP-participant gauges, by participant ID (removed when the participant leaves).
    private let whipGauges = Mutex<[String: [String: Gauge]]>([:])
    static let whipGaugeNames = Array(whipGaugeHelp.keys)

    /// Records one WHIP participant's receive statistics.
    public func recordWHIP(participantId: String, values: [String: Double]) {
        let gauges = whipGauges.withLock { all in
            if let existing = all[participantId] { return existing }
            let made = Dictionary(uniqueKeysWithValues: Self.whipGaugeNames.map { name in
                (name, Gauge(label: "stage_compositor_whip_\(name)", dimensions: [("participant_id", participantId)], factory: factory))
            })
            all[participantId] = made
            return made
        }
        for (name, value) in values { gauges[name]?.record(value) }
    }

    public func removeWHIP(participantId: String) {
        let gauges = whipGauges.withLock { $0.removeValue(forKey: participantId) }
        for gauge in gauges?.values ?? [:].values { gauge.destroy() }
    }
    public func ingestPublishError(code: String) { ingestPublishErrors[code]?.increment() }

    /// One running composition's gauges: frames it repeated because it was behind the clock,
    /// and packets its queues dropped per participant (an overloaded host, not a stopped
    /// camera). Gone when the composition ends.
    public func composition(_ compositionId: String) -> CompositionMetrics {
        CompositionMetrics(compositionId: compositionId, factory: factory)
    }

    /// Sets the per-state gauges from a full count (states absent from `counts` read 0).
    public func recordStates(compositions: [String: Int], destinations: [String: Int], publishers: Int) {
        for (state, gauge) in compositionGauges { gauge.record(compositions[state] ?? 0) }
        for (state, gauge) in destinationGauges { gauge.record(destinations[state] ?? 0) }
        publishersGauge.record(publishers)
    }
}

public final class CompositionMetrics: Sendable {
    private let compositionId: String
    private let factory: any MetricsFactory
    private let lagged: Gauge
    private let participantGauges = Mutex<[String: [Gauge]]>([:])

    init(compositionId: String, factory: any MetricsFactory) {
        self.compositionId = compositionId
        self.factory = factory
        lagged = Gauge(label: "stage_compositor_composition_lagged_frames", dimensions: [("composition_id", compositionId)],
                       factory: factory)
    }

    public func record(laggedFrames: Int64) { lagged.record(laggedFrames) }

    static let deliveryLabels = ["stage_compositor_composition_dropped_packets",
                                         "stage_compositor_composition_late_video_frames",
                                         "stage_compositor_composition_audio_gap_seconds",
                                         "stage_compositor_composition_jitter_allowance_seconds",
                                         "stage_compositor_composition_allowance_steps",
                                         "stage_compositor_composition_allowance_stepped_seconds"]

    /// For each participant so far: packets dropped, video frames late, seconds of sound
    /// missing, and its publisher's jitter allowance with its steps up (participants not
    /// listed keep their gauges).
    public func record(delivery: [LiveDelivery]) {
        for entry in delivery {
            let gauges = participantGauges.withLock { all in
                if let gauges = all[entry.participantId] { return gauges }
                let dimensions = [("composition_id", compositionId), ("participant_id", entry.participantId)]
                let gauges = Self.deliveryLabels.map { Gauge(label: $0, dimensions: dimensions, factory: factory) }
                all[entry.participantId] = gauges
                return gauges
            }
            gauges[0].record(entry.droppedPackets)
            gauges[1].record(entry.lateVideoFrames)
            gauges[2].record(entry.audioGapSeconds)
            gauges[3].record(Double(entry.allowance.latency) / 1_000_000)
            gauges[4].record(entry.allowance.steps)
            gauges[5].record(Double(entry.allowance.steppedUp) / 1_000_000)
        }
    }

    /// The composition ended: its series go away.
    public func destroy() {
        lagged.destroy()
        for gauge in participantGauges.withLock({ $0.values.flatMap { $0 } }) { gauge.destroy() }
    }
}
