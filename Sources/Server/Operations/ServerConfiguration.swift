// The daemon's configuration file (JSON): where it listens, what it may read and write
// (stages, buckets, state directory), the channels it can push to, quotas and lifecycle
// timings. Relative paths are resolved against the file's folder. `validate()` collects
// every problem at once so `stage-compositor config check` can print them all.
import Foundation
import APIModels
import PostgresStore
import Pipeline
public import Fleet
public import Composition

public struct ServerConfiguration: Codable, Sendable, Equatable {
    public struct Listen: Codable, Sendable, Equatable {
        public var host: String
        public var port: Int
        /// With auth off, host names (besides localhost and the listen address) the API
        /// answers to; any other `Host` is refused (DNS rebinding).
        public var allowedHosts: [String]?
        /// Serve the API on a non-loopback address without authentication anyway (on a
        /// network you trust completely). Without it, `serve` refuses to start that way.
        public var allowUnauthenticated: Bool?
        /// Open API connections at once, in all (default 1,000) and from one address (100).
        public var maxConnections: Int?
        public var maxConnectionsPerAddress: Int?
        /// An API connection idle this long is closed (default 30 s).
        public var idleTimeoutSeconds: Double?
        /// HTTPS for the API (and WHIP): the production setting for a fleet, whose nodes call
        /// each other at `database.fleet.internalURL` (https://...).
        public var tls: TLS?

        public struct TLS: Codable, Sendable, Equatable {
            /// PEM certificate chain and private key.
            public var certificateFile: String
            public var privateKeyFile: String
            public init(certificateFile: String, privateKeyFile: String) {
                self.certificateFile = certificateFile
                self.privateKeyFile = privateKeyFile
            }
        }

        public init(host: String = "127.0.0.1", port: Int = 8086, allowedHosts: [String]? = nil, allowUnauthenticated: Bool? = nil) {
            self.host = host
            self.port = port
            self.allowedHosts = allowedHosts
            self.allowUnauthenticated = allowUnauthenticated
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Listen()
            host = try c.decodeIfPresent(String.self, forKey: .host) ?? d.host
            port = try c.decodeIfPresent(Int.self, forKey: .port) ?? d.port
            allowedHosts = try c.decodeIfPresent([String].self, forKey: .allowedHosts)
            allowUnauthenticated = try c.decodeIfPresent(Bool.self, forKey: .allowUnauthenticated)
            maxConnections = try c.decodeIfPresent(Int.self, forKey: .maxConnections)
            maxConnectionsPerAddress = try c.decodeIfPresent(Int.self, forKey: .maxConnectionsPerAddress)
            idleTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .idleTimeoutSeconds)
            tls = try c.decodeIfPresent(TLS.self, forKey: .tls)
        }

        /// Whether only this machine can reach the address.
        public var isLoopback: Bool {
            host == "localhost" || host == "::1" || host.hasPrefix("127.")
        }
    }

    /// /metrics: open by default (loopback); with `bearerToken` it needs
    /// `Authorization: Bearer <token>` (Prometheus: `authorization: {credentials: ...}`).
    /// Where the control-plane state lives. Without `url`: SQLite in the state directory (one
    /// host). With a postgres:// URL: that PostgreSQL database, which daemons of a fleet share.
    public struct Database: Codable, Sendable, Equatable {
        public var url: String?
        /// How long one store call may wait for the database before the API answers with an
        /// error (default 10 s): a database outage never hangs a request.
        public var callTimeoutSeconds: Double?
        /// This daemon's name among those registered in the database (default: the host name).
        public var nodeId: String?
        /// The node's lease on the database clock (default 10 s) and how often it is renewed
        /// (default 1 s). A daemon that cannot renew within the lease stops (fences itself).
        public var leaseTtlSeconds: Double?
        public var heartbeatSeconds: Double?
        /// Fleet mode: several daemons on this database act as one endpoint. Without it, one
        /// live node per database.
        public var fleet: Fleet?
        public init(url: String? = nil, callTimeoutSeconds: Double? = nil, nodeId: String? = nil,
                    leaseTtlSeconds: Double? = nil, heartbeatSeconds: Double? = nil, fleet: Fleet? = nil) {
            self.fleet = fleet
            self.url = url
            self.callTimeoutSeconds = callTimeoutSeconds
            self.nodeId = nodeId
            self.leaseTtlSeconds = leaseTtlSeconds
            self.heartbeatSeconds = heartbeatSeconds
        }

        /// The lease settings; the margin is a tenth of the TTL.
        public var leaseSettings: LeaseKeeper.Settings {
            let ttl = Int64(((leaseTtlSeconds ?? 10) * 1000).rounded())
            return LeaseKeeper.Settings(ttlMs: ttl, heartbeatMs: Int64(((heartbeatSeconds ?? 1) * 1000).rounded()),
                                        safetyMarginMs: ttl / 10)
        }

        public var resolvedNodeId: String { nodeId ?? ProcessInfo.processInfo.hostName }

        /// A node of a fleet: how the others reach it and how much it takes on.
        public struct Fleet: Codable, Sendable, Equatable {
            /// Shared by every node: calls between nodes carry an HMAC made with it.
            public var secret: String
            /// Where the other nodes reach this one's API (default: http://<listen.host>:<listen.port>).
            public var internalURL: String?
            /// This node's API as publishers and clients see it (WHIP redirects point there;
            /// default: the internal URL).
            public var advertisedURL: String?
            /// CPU offered to stages, in thousandths of a core (default: 1000 per core).
            public var capacityMillicores: Int?
            /// On SIGTERM the node takes no new stages and lets its running compositions end
            /// on their own (StopComposition, the idle timeout) for up to this long, then stops
            /// what still runs as a plain shutdown does (default 15 s; systemd's TimeoutStopSec
            /// must cover it plus lifecycle.shutdownGraceSeconds).
            public var drainTimeoutSeconds: Double?
            public static let defaultDrainTimeoutSeconds: Double = 15
            /// PEM file of the certificate authorities that sign the nodes' API certificates, when
            /// internal URLs are https:// under a private authority (default: the system's).
            /// Calls between nodes always verify the certificate chain and host name.
            public var caFile: String?

            public init(secret: String, internalURL: String? = nil, advertisedURL: String? = nil, capacityMillicores: Int? = nil,
                        drainTimeoutSeconds: Double? = nil) {
                self.drainTimeoutSeconds = drainTimeoutSeconds
                self.secret = secret
                self.internalURL = internalURL
                self.advertisedURL = advertisedURL
                self.capacityMillicores = capacityMillicores
            }
        }
    }

    /// Where compositions' overlays (StartComposition's and UpdateComposition's `overlays`)
    /// take their image files and fonts from.
    public struct Overlays: Codable, Sendable, Equatable {
        /// The folder image `file`s are relative to (default `<stateDirectory>/overlays`); a
        /// description cannot name a file outside it.
        public var directory: String?
        /// The font family of text that names none (fontconfig's name; Debian: fonts-dejavu-core).
        public var defaultFont: String
        /// A folder of fonts added to the system's (fontconfig's) for overlays: a brand's own
        /// typeface, by family name in descriptions.
        public var fontDirectory: String?

        public static let defaultFontFamily = "DejaVu Sans"

        public init(directory: String? = nil, defaultFont: String = Overlays.defaultFontFamily, fontDirectory: String? = nil) {
            self.directory = directory
            self.defaultFont = defaultFont
            self.fontDirectory = fontDirectory
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            directory = try c.decodeIfPresent(String.self, forKey: .directory)
            defaultFont = try c.decodeIfPresent(String.self, forKey: .defaultFont) ?? Self.defaultFontFamily
            fontDirectory = try c.decodeIfPresent(String.self, forKey: .fontDirectory)
        }

        func problems() -> [String] {
            var problems: [String] = []
            if directory?.isEmpty == true { problems.append("overlays.directory: must not be empty") }
            if fontDirectory?.isEmpty == true { problems.append("overlays.fontDirectory: must not be empty") }
            if !(1...128).contains(defaultFont.utf8.count) || defaultFont.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                problems.append("overlays.defaultFont: a font family name, 1 to 128 bytes without control characters")
            }
            return problems
        }
    }

    public struct Metrics: Codable, Sendable, Equatable {
        public var bearerToken: String?
        public init(bearerToken: String? = nil) { self.bearerToken = bearerToken }
    }

    /// The secret deploy/config.example.json ships with: never accepted as a real one.
    public static let placeholderSecret = "change-this-secret"

    /// A stage defined by the file: an ARN (or a bare ID) and, for a recorded stage, its
    /// directory. Without `source` the stage is live: its publishers join through ingest.
    public struct StageEntry: Codable, Sendable, Equatable {
        public var arn: String?
        public var id: String?
        public var name: String?
        /// Recorded stage directory (holds manifest.json); nil for a live stage.
        public var source: String?
        public init(arn: String? = nil, id: String? = nil, name: String? = nil, source: String? = nil) {
            self.arn = arn
            self.id = id
            self.name = name
            self.source = source
        }
    }

    /// A channel this server may push to (see ConfiguredChannel).
    public typealias ChannelEntry = ConfiguredChannel

    /// SigV4 verification of every API request (service `ivs`, this region).
    public struct Authentication: Codable, Sendable, Equatable {
        public var enabled: Bool
        /// Access key ID → secret access key.
        public var accessKeys: [String: String]
        public init(enabled: Bool = false, accessKeys: [String: String] = [:]) {
            self.enabled = enabled
            self.accessKeys = accessKeys
        }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? false
            accessKeys = try c.decodeIfPresent([String: String].self, forKey: .accessKeys) ?? [:]
        }
    }

    public struct Quotas: Codable, Sendable, Equatable {
        public var concurrentCompositions: Int
        public var encoderConfigurations: Int
        public var storageConfigurations: Int
        public var publishersPerStage: Int
        /// IngestConfiguration objects (IVS: 100).
        public var ingestConfigurations: Int
        /// Stages created through CreateStage (IVS: 1,000 per region); the configuration
        /// file's own stages do not count.
        public var stages: Int
        public init(concurrentCompositions: Int = 5, encoderConfigurations: Int = 20,
                    storageConfigurations: Int = 5, publishersPerStage: Int = 12, ingestConfigurations: Int = 100,
                    stages: Int = 1_000) {
            self.ingestConfigurations = ingestConfigurations
            self.stages = stages
            self.concurrentCompositions = concurrentCompositions
            self.encoderConfigurations = encoderConfigurations
            self.storageConfigurations = storageConfigurations
            self.publishersPerStage = publishersPerStage
        }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Quotas()
            concurrentCompositions = try c.decodeIfPresent(Int.self, forKey: .concurrentCompositions) ?? d.concurrentCompositions
            encoderConfigurations = try c.decodeIfPresent(Int.self, forKey: .encoderConfigurations) ?? d.encoderConfigurations
            storageConfigurations = try c.decodeIfPresent(Int.self, forKey: .storageConfigurations) ?? d.storageConfigurations
            publishersPerStage = try c.decodeIfPresent(Int.self, forKey: .publishersPerStage) ?? d.publishersPerStage
            ingestConfigurations = try c.decodeIfPresent(Int.self, forKey: .ingestConfigurations) ?? d.ingestConfigurations
            stages = try c.decodeIfPresent(Int.self, forKey: .stages) ?? d.stages
        }
    }

    public struct Lifecycle: Codable, Sendable, Equatable {
        /// Auto-shutdown after this long with nobody publishing (IVS: 60 s).
        public var idleTimeoutSeconds: Double
        public var maximumDurationSeconds: Double
        /// STOPPED/FAILED compositions stay visible this long (IVS: 5 min).
        public var retentionSeconds: Double
        /// On SIGTERM/SIGINT, how long running compositions get to finalize.
        public var shutdownGraceSeconds: Double
        public init(idleTimeoutSeconds: Double = 60, maximumDurationSeconds: Double = 86_400,
                    retentionSeconds: Double = 300, shutdownGraceSeconds: Double = 20) {
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.maximumDurationSeconds = maximumDurationSeconds
            self.retentionSeconds = retentionSeconds
            self.shutdownGraceSeconds = shutdownGraceSeconds
        }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Lifecycle()
            idleTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .idleTimeoutSeconds) ?? d.idleTimeoutSeconds
            maximumDurationSeconds = try c.decodeIfPresent(Double.self, forKey: .maximumDurationSeconds) ?? d.maximumDurationSeconds
            retentionSeconds = try c.decodeIfPresent(Double.self, forKey: .retentionSeconds) ?? d.retentionSeconds
            shutdownGraceSeconds = try c.decodeIfPresent(Double.self, forKey: .shutdownGraceSeconds) ?? d.shutdownGraceSeconds
        }
    }

    public struct Events: Codable, Sendable, Equatable {
        /// POST each event to `url` in the background, `maxAttempts` tries per event.
        public struct Webhook: Codable, Sendable, Equatable {
            public var url: String
            public var maxAttempts: Int
            public init(url: String, maxAttempts: Int = 5) {
                self.url = url
                self.maxAttempts = maxAttempts
            }
            public init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                url = try c.decode(String.self, forKey: .url)
                maxAttempts = try c.decodeIfPresent(Int.self, forKey: .maxAttempts) ?? 5
            }
        }

        /// JSON-lines file; relative to the state directory. Default "events.jsonl"; "" disables.
        public var file: String?
        /// Also print each event as one JSON line on standard output.
        public var stdout: Bool?
        /// nil (or JSON null): no webhook.
        public var webhook: Webhook?
        public init(file: String? = nil, stdout: Bool? = nil, webhook: Webhook? = nil) {
            self.file = file
            self.stdout = stdout
            self.webhook = webhook
        }
    }

    /// Live publishers: where RTMP/RTMPS ingest listens and how live media is handled.
    public struct Ingest: Codable, Sendable, Equatable {
        public struct Listener: Codable, Sendable, Equatable {
            public var enabled: Bool
            public var host: String
            public var port: Int
            /// E-RTMP multitrack publishers are composed from the smallest track that covers
            /// every tile showing them (a 12-person grid decodes a small rendition); when
            /// false, always the largest. Recordings and replicas take the largest.
            public var multitrackFitsTiles: Bool
            public init(enabled: Bool = true, host: String = "127.0.0.1", port: Int, multitrackFitsTiles: Bool = true) {
                self.enabled = enabled
                self.host = host
                self.port = port
                self.multitrackFitsTiles = multitrackFitsTiles
            }
            public init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? true
                host = try c.decodeIfPresent(String.self, forKey: .host) ?? "127.0.0.1"
                port = try c.decodeIfPresent(Int.self, forKey: .port) ?? Self.defaultPort(key: decoder.codingPath.last)
                multitrackFitsTiles = try c.decodeIfPresent(Bool.self, forKey: .multitrackFitsTiles) ?? true
            }

            /// `ingest.rtmps` listens on 1936 unless told otherwise, `ingest.rtmp` on 1935.
            static func defaultPort(key: (any CodingKey)?) -> Int {
                key?.stringValue == "rtmps" ? Ingest().rtmps.port : Ingest().rtmp.port
            }
        }

        /// WHIP publishers: the HTTP side is the API listener (`/whip`); media arrives on one UDP port.
        public struct WHIP: Codable, Sendable, Equatable {
            public var enabled: Bool
            /// The UDP socket for ICE, DTLS and SRTP.
            public var host: String
            public var port: Int
            /// What answers tell publishers to send to, for NAT 1:1 (default: host and port).
            public var advertisedHost: String?
            public var advertisedPort: Int?
            /// A publisher without ICE checks or media for this long has left (RFC 7675: 30 s).
            public var consentTimeoutSeconds: Double
            /// Base URL publishers POST to, in the stages' `endpoints.whip` (default: the API
            /// listener's, `http://host:port`).
            public var publicURL: String?
            /// Receive every layer of a simulcast publisher; when false, simulcast is declined
            /// and a browser sends only its first encoding.
            public var acceptSimulcast: Bool
            /// Compose the smallest simulcast layer that covers every tile showing the
            /// publisher (a 12-person grid decodes half- or quarter-size layers); when false,
            /// always the largest. Recordings and replicas of a participant take the largest.
            public var simulcastLayerFitsTiles: Bool
            /// WHIP sessions at once, and per client address (the HTTP peer that POSTed the
            /// offer); beyond either, a POST gets 429 and nothing is allocated.
            public var maxSessions: Int
            public var maxSessionsPerAddress: Int
            /// SSRCs one session may have SRTP state for; packets of more are dropped undecrypted.
            public var maxStreamsPerSession: Int
            /// DTLS datagrams one session may make us process: a burst, then so many per second.
            public var dtlsDatagramBurst: Int
            public var dtlsDatagramsPerSecond: Int
            /// WHEP viewers (`/whep/composition/<id>`, on the same UDP socket): at once, per
            /// client address, and per composition; beyond any, a POST gets 429.
            public var maxViewers: Int
            public var maxViewersPerAddress: Int
            public var maxViewersPerComposition: Int

            public init(enabled: Bool = true, host: String = "127.0.0.1", port: Int = 1937, advertisedHost: String? = nil,
                        advertisedPort: Int? = nil, consentTimeoutSeconds: Double = 30, publicURL: String? = nil,
                        acceptSimulcast: Bool = true, simulcastLayerFitsTiles: Bool = true, maxSessions: Int = 256,
                        maxSessionsPerAddress: Int = 32, maxStreamsPerSession: Int = 16, dtlsDatagramBurst: Int = 24,
                        dtlsDatagramsPerSecond: Int = 8, maxViewers: Int = 500, maxViewersPerAddress: Int = 64,
                        maxViewersPerComposition: Int = 50) {
                self.maxViewers = maxViewers
                self.maxViewersPerAddress = maxViewersPerAddress
                self.maxViewersPerComposition = maxViewersPerComposition
                self.simulcastLayerFitsTiles = simulcastLayerFitsTiles
                self.maxStreamsPerSession = maxStreamsPerSession
                self.dtlsDatagramBurst = dtlsDatagramBurst
                self.dtlsDatagramsPerSecond = dtlsDatagramsPerSecond
                self.maxSessions = maxSessions
                self.maxSessionsPerAddress = maxSessionsPerAddress
                self.enabled = enabled
                self.host = host
                self.port = port
                self.advertisedHost = advertisedHost
                self.advertisedPort = advertisedPort
                self.consentTimeoutSeconds = consentTimeoutSeconds
                self.publicURL = publicURL
                self.acceptSimulcast = acceptSimulcast
            }

            public init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                let d = WHIP()
                enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? d.enabled
                host = try c.decodeIfPresent(String.self, forKey: .host) ?? d.host
                port = try c.decodeIfPresent(Int.self, forKey: .port) ?? d.port
                advertisedHost = try c.decodeIfPresent(String.self, forKey: .advertisedHost)
                advertisedPort = try c.decodeIfPresent(Int.self, forKey: .advertisedPort)
                consentTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .consentTimeoutSeconds) ?? d.consentTimeoutSeconds
                publicURL = try c.decodeIfPresent(String.self, forKey: .publicURL)
                acceptSimulcast = try c.decodeIfPresent(Bool.self, forKey: .acceptSimulcast) ?? d.acceptSimulcast
                simulcastLayerFitsTiles = try c.decodeIfPresent(Bool.self, forKey: .simulcastLayerFitsTiles) ?? d.simulcastLayerFitsTiles
                maxSessions = try c.decodeIfPresent(Int.self, forKey: .maxSessions) ?? d.maxSessions
                maxSessionsPerAddress = try c.decodeIfPresent(Int.self, forKey: .maxSessionsPerAddress) ?? d.maxSessionsPerAddress
                maxStreamsPerSession = try c.decodeIfPresent(Int.self, forKey: .maxStreamsPerSession) ?? d.maxStreamsPerSession
                dtlsDatagramBurst = try c.decodeIfPresent(Int.self, forKey: .dtlsDatagramBurst) ?? d.dtlsDatagramBurst
                dtlsDatagramsPerSecond = try c.decodeIfPresent(Int.self, forKey: .dtlsDatagramsPerSecond) ?? d.dtlsDatagramsPerSecond
                maxViewers = try c.decodeIfPresent(Int.self, forKey: .maxViewers) ?? d.maxViewers
                maxViewersPerAddress = try c.decodeIfPresent(Int.self, forKey: .maxViewersPerAddress) ?? d.maxViewersPerAddress
                maxViewersPerComposition = try c.decodeIfPresent(Int.self, forKey: .maxViewersPerComposition) ?? d.maxViewersPerComposition
            }
        }

        /// Plain RTMP (only ingest configurations with insecureIngest may use it).
        public var rtmp: Listener
        /// RTMP over TLS, the IVS default.
        public var rtmps: Listener
        public var whip: WHIP
        /// PEM certificate chain and private key for RTMPS; when absent a self-signed pair is
        /// generated once under the state directory (for local use: publishers must trust it).
        public var certificateFile: String?
        public var privateKeyFile: String?
        /// Host name or address publishers use, in the stages' `endpoints` (default: the
        /// listener's host).
        public var publicHost: String?
        /// The jitter allowance, at most: a publisher is shown this long after its least-delayed
        /// media arrives, or less when its packets come on time (see `minimumLatencyMs`).
        public var latencyMs: Int
        /// The jitter allowance, at least: each publisher's is measured from how late its
        /// packets arrive (the latest of the last 5–10 s, plus 40 ms for the composition's
        /// tick), between this and `latencyMs`. Equal to `latencyMs`: fixed for everyone.
        public var minimumLatencyMs: Int
        /// No video for this long shows a publisher as stopped video.
        public var videoStoppedAfterSeconds: Double
        /// A publisher above this (averaged over 5 s) is disconnected with BITRATE_EXCEEDED.
        public var maxBitrate: Int
        /// A connection must finish the handshake and start publishing within this time.
        public var handshakeTimeoutSeconds: Double
        /// A connection that sends nothing for this long is closed (half-open TCP, a stall).
        public var idleTimeoutSeconds: Double
        /// Open RTMP and RTMPS connections at once, in all and from one address.
        public var maxConnections: Int
        public var maxConnectionsPerAddress: Int
        /// RTMP messages a publisher may send: at most this many in any one second, and this
        /// many per second averaged over 5 s (zero-length messages cost the sender too).
        public var maxMessagesPerSecondBurst: Int
        public var maxMessagesPerSecond: Int
        /// The packets since the last keyframe each publisher keeps for compositions that
        /// join mid-stream, bounded in bytes and in packets.
        public var keyframeCacheBytes: Int
        public var keyframeCachePackets: Int

        public init(rtmp: Listener = Listener(port: 1935), rtmps: Listener = Listener(port: 1936), whip: WHIP = WHIP(),
                    certificateFile: String? = nil, privateKeyFile: String? = nil, publicHost: String? = nil,
                    latencyMs: Int = 200, minimumLatencyMs: Int = 40, videoStoppedAfterSeconds: Double = 3,
                    maxBitrate: Int = 8_500_000,
                    handshakeTimeoutSeconds: Double = 10, idleTimeoutSeconds: Double = 10, maxConnections: Int = 1_000,
                    maxConnectionsPerAddress: Int = 50, maxMessagesPerSecondBurst: Int = 5_000, maxMessagesPerSecond: Int = 1_000,
                    keyframeCacheBytes: Int = 4 << 20, keyframeCachePackets: Int = 600) {
            self.maxMessagesPerSecondBurst = maxMessagesPerSecondBurst
            self.maxMessagesPerSecond = maxMessagesPerSecond
            self.keyframeCacheBytes = keyframeCacheBytes
            self.keyframeCachePackets = keyframeCachePackets
            self.maxConnections = maxConnections
            self.maxConnectionsPerAddress = maxConnectionsPerAddress
            self.rtmp = rtmp
            self.rtmps = rtmps
            self.whip = whip
            self.certificateFile = certificateFile
            self.privateKeyFile = privateKeyFile
            self.publicHost = publicHost
            self.latencyMs = latencyMs
            self.minimumLatencyMs = minimumLatencyMs
            self.videoStoppedAfterSeconds = videoStoppedAfterSeconds
            self.maxBitrate = maxBitrate
            self.handshakeTimeoutSeconds = handshakeTimeoutSeconds
            self.idleTimeoutSeconds = idleTimeoutSeconds
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Ingest()
            rtmp = try c.decodeIfPresent(Listener.self, forKey: .rtmp) ?? d.rtmp
            rtmps = try c.decodeIfPresent(Listener.self, forKey: .rtmps) ?? d.rtmps
            whip = try c.decodeIfPresent(WHIP.self, forKey: .whip) ?? d.whip
            certificateFile = try c.decodeIfPresent(String.self, forKey: .certificateFile)
            privateKeyFile = try c.decodeIfPresent(String.self, forKey: .privateKeyFile)
            publicHost = try c.decodeIfPresent(String.self, forKey: .publicHost)
            latencyMs = try c.decodeIfPresent(Int.self, forKey: .latencyMs) ?? d.latencyMs
            // A configuration that names only the (formerly fixed) latency below the default
            // minimum keeps it fixed.
            minimumLatencyMs = try c.decodeIfPresent(Int.self, forKey: .minimumLatencyMs) ?? min(d.minimumLatencyMs, latencyMs)
            videoStoppedAfterSeconds = try c.decodeIfPresent(Double.self, forKey: .videoStoppedAfterSeconds) ?? d.videoStoppedAfterSeconds
            maxBitrate = try c.decodeIfPresent(Int.self, forKey: .maxBitrate) ?? d.maxBitrate
            handshakeTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .handshakeTimeoutSeconds) ?? d.handshakeTimeoutSeconds
            idleTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .idleTimeoutSeconds) ?? d.idleTimeoutSeconds
            maxConnections = try c.decodeIfPresent(Int.self, forKey: .maxConnections) ?? d.maxConnections
            maxConnectionsPerAddress = try c.decodeIfPresent(Int.self, forKey: .maxConnectionsPerAddress) ?? d.maxConnectionsPerAddress
            maxMessagesPerSecondBurst = try c.decodeIfPresent(Int.self, forKey: .maxMessagesPerSecondBurst) ?? d.maxMessagesPerSecondBurst
            maxMessagesPerSecond = try c.decodeIfPresent(Int.self, forKey: .maxMessagesPerSecond) ?? d.maxMessagesPerSecond
            keyframeCacheBytes = try c.decodeIfPresent(Int.self, forKey: .keyframeCacheBytes) ?? d.keyframeCacheBytes
            keyframeCachePackets = try c.decodeIfPresent(Int.self, forKey: .keyframeCachePackets) ?? d.keyframeCachePackets
        }

        /// `rtmp://host:port/app/`, as IVS's `endpoints.rtmp`; nil when disabled.
        public var rtmpEndpoint: String? { rtmp.enabled ? "rtmp://\(hostForURL(rtmp)):\(rtmp.port)/app/" : nil }
        public var rtmpsEndpoint: String? { rtmps.enabled ? "rtmps://\(hostForURL(rtmps)):\(rtmps.port)/app/" : nil }

        private func hostForURL(_ listener: Listener) -> String {
            let host = publicHost ?? (listener.host == "0.0.0.0" || listener.host == "::" ? "127.0.0.1" : listener.host)
            return host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        }
    }

    public var region: String
    public var account: String
    public var listen: Listen
    public var ingest: Ingest
    public var auth: Authentication
    /// SQLite database (unless `database.url`), events file; created if missing.
    public var stateDirectory: String
    public var database: Database
    /// Folders that CreateStage's `stage-compositor:source` tag may point into.
    public var stageSourceRoots: [String]
    public var stages: [StageEntry]
    public var channels: [ChannelEntry]
    /// S3 bucket name → a local directory standing in for it, or an S3-compatible endpoint.
    public var buckets: [String: Bucket]
    /// Local disk in front of S3 buckets.
    public var spool: Spool
    public var quotas: Quotas
    public var lifecycle: Lifecycle
    public var events: Events
    public var maxRequestBodyBytes: Int
    /// x264 preset for compositions ("veryfast" suits small machines).
    public var encoderPreset: String
    /// trace, debug, info, notice, warning, error, critical.
    public var logLevel: String
    /// "text" (default) or "json": one object a line, for log shippers.
    public var logFormat: String
    public var metrics: Metrics
    public var overlays: Overlays

    public init(region: String = "us-east-1", account: String = "123456789012", listen: Listen = Listen(),
                auth: Authentication = Authentication(), stateDirectory: String = "state", stageSourceRoots: [String] = [], stages: [StageEntry] = [],
                channels: [ChannelEntry] = [], buckets: [String: Bucket] = [:], spool: Spool = Spool(), quotas: Quotas = Quotas(),
                lifecycle: Lifecycle = Lifecycle(), events: Events = Events(), maxRequestBodyBytes: Int = 1 << 20,
                encoderPreset: String = "veryfast", logLevel: String = "info", ingest: Ingest = Ingest(),
                metrics: Metrics = Metrics(), database: Database = Database(), logFormat: String = "text",
                overlays: Overlays = Overlays()) {
        self.overlays = overlays
        self.logFormat = logFormat
        self.metrics = metrics
        self.database = database
        self.ingest = ingest
        self.region = region
        self.account = account
        self.listen = listen
        self.auth = auth
        self.stateDirectory = stateDirectory
        self.stageSourceRoots = stageSourceRoots
        self.stages = stages
        self.channels = channels
        self.buckets = buckets
        self.spool = spool
        self.quotas = quotas
        self.lifecycle = lifecycle
        self.events = events
        self.maxRequestBodyBytes = maxRequestBodyBytes
        self.encoderPreset = encoderPreset
        self.logLevel = logLevel
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case region, account, listen, auth, stateDirectory, stageSourceRoots, stages, channels, buckets, spool, quotas,
             lifecycle, events, maxRequestBodyBytes, encoderPreset, logLevel, logFormat, ingest, metrics, database, overlays
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = ServerConfiguration()
        region = try c.decode(String.self, forKey: .region)
        account = try c.decode(String.self, forKey: .account)
        listen = try c.decodeIfPresent(Listen.self, forKey: .listen) ?? d.listen
        auth = try c.decodeIfPresent(Authentication.self, forKey: .auth) ?? d.auth
        stateDirectory = try c.decode(String.self, forKey: .stateDirectory)
        stageSourceRoots = try c.decodeIfPresent([String].self, forKey: .stageSourceRoots) ?? []
        stages = try c.decodeIfPresent([StageEntry].self, forKey: .stages) ?? []
        channels = try c.decodeIfPresent([ChannelEntry].self, forKey: .channels) ?? []
        buckets = try c.decodeIfPresent([String: Bucket].self, forKey: .buckets) ?? [:]
        spool = try c.decodeIfPresent(Spool.self, forKey: .spool) ?? d.spool
        quotas = try c.decodeIfPresent(Quotas.self, forKey: .quotas) ?? d.quotas
        lifecycle = try c.decodeIfPresent(Lifecycle.self, forKey: .lifecycle) ?? d.lifecycle
        events = try c.decodeIfPresent(Events.self, forKey: .events) ?? d.events
        maxRequestBodyBytes = try c.decodeIfPresent(Int.self, forKey: .maxRequestBodyBytes) ?? d.maxRequestBodyBytes
        encoderPreset = try c.decodeIfPresent(String.self, forKey: .encoderPreset) ?? d.encoderPreset
        logLevel = try c.decodeIfPresent(String.self, forKey: .logLevel) ?? d.logLevel
        logFormat = try c.decodeIfPresent(String.self, forKey: .logFormat) ?? d.logFormat
        ingest = try c.decodeIfPresent(Ingest.self, forKey: .ingest) ?? d.ingest
        metrics = try c.decodeIfPresent(Metrics.self, forKey: .metrics) ?? d.metrics
        database = try c.decodeIfPresent(Database.self, forKey: .database) ?? d.database
        overlays = try c.decodeIfPresent(Overlays.self, forKey: .overlays) ?? d.overlays
    }

    // MARK: Loading

    public struct LoadError: Error, Sendable, CustomStringConvertible {
        public var file: String
        public var problems: [String]
        /// What was found besides the problems (a stage not installed yet, ignored keys).
        public var warnings: [String] = []
        public var description: String {
            "\(file): " + (problems.count == 1 ? problems[0] : "\n" + problems.map { "  - \($0)" }.joined(separator: "\n"))
        }
    }

    /// Keys in the file that nothing reads (a misspelt one takes its default silently): `config
    /// check` rejects them, `serve` warns and starts.
    public enum UnknownKeys: Sendable {
        case warn, reject
    }

    /// Reads, decodes, resolves relative paths against the file's folder, and validates.
    public static func load(path: String, unknownKeys: UnknownKeys = .warn) throws(LoadError)
        -> (ServerConfiguration, warnings: [String]) {
        let url = URL(fileURLWithPath: path)
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw LoadError(file: path, problems: ["cannot read the file: \(error.localizedDescription)"])
        }
        let report = check(data, relativeTo: url.deletingLastPathComponent().path, unknownKeys: unknownKeys)
        guard let configuration = report.configuration else {
            throw LoadError(file: path, problems: report.problems, warnings: report.warnings)
        }
        return (configuration, report.warnings)
    }

    /// Every problem with a configuration file's text, found in one pass.
    struct CheckReport: Sendable {
        /// The configuration, paths resolved; nil when there is any problem.
        var configuration: ServerConfiguration?
        /// One line each, naming its key: wrong types, missing keys, unknown keys (when
        /// rejected), invalid values, bucket directories that cannot be written.
        var problems: [String]
        var warnings: [String]
    }

    /// Decodes `data` (a partial object takes the defaults for what it leaves out), reports
    /// unknown keys with the nearest known one, resolves paths against `base`, validates, and
    /// checks that the bucket directories can be written.
    static func check(_ data: Data, relativeTo base: String, unknownKeys: UnknownKeys) -> CheckReport {
        let reading = ConfigurationReading(ServerConfiguration.self, from: data)
        var problems = reading.problems
        var warnings: [String] = []
        switch unknownKeys {
        case .reject: problems += reading.unknownKeys.map(\.description)
        case .warn: warnings += reading.unknownKeys.map { "\($0) (ignored)" }
        }
        guard let decoded = reading.value else { return CheckReport(configuration: nil, problems: problems, warnings: warnings) }
        let configuration = decoded.resolvingPaths(relativeTo: base)
        warnings += configuration.availabilityWarnings()
        // A key whose value was reported and stood in for: checks of it, or of what holds it,
        // would only repeat the problem.
        let substituted = reading.substitutedKeys.filter { !$0.isEmpty }
        func within(_ inner: String, _ outer: String) -> Bool {
            inner == outer || inner.hasPrefix(outer + ".") || inner.hasPrefix(outer + "[")
        }
        problems += configuration.validate().filter { problem in
            let key = problem.prefix { $0 != ":" }.description
            return !substituted.contains { within(key, $0) || within($0, key) }
        }
        let buckets = configuration.bucketDirectoryCheck()
        problems += buckets.problems
        warnings += buckets.warnings
        return CheckReport(configuration: problems.isEmpty ? configuration : nil, problems: problems, warnings: warnings)
    }

    /// Absolute paths everywhere (relative ones are taken from `base`).
    public func resolvingPaths(relativeTo base: String) -> ServerConfiguration {
        func absolute(_ path: String) -> String {
            guard !path.isEmpty else { return path }
            let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : URL(fileURLWithPath: base).appendingPathComponent(path)
            return url.standardizedFileURL.path
        }
        var copy = self
        copy.stateDirectory = absolute(stateDirectory)
        copy.stageSourceRoots = stageSourceRoots.map(absolute)
        copy.stages = stages.map { var s = $0; s.source = s.source.map(absolute); return s }
        copy.buckets = buckets.mapValues { bucket in
            guard case .s3(var s3) = bucket else { return .directory(absolute(bucket.directory ?? "")) }
            if case .file(let path, let profile) = s3.credentials { s3.credentials = .file(path: absolute(path), profile: profile) }
            return .s3(s3)
        }
        copy.spool.directory = spool.directory.map(absolute)
        copy.channels = channels.map { var c = $0; c.caFile = c.caFile.map(absolute); return c }
        copy.ingest.certificateFile = ingest.certificateFile.map(absolute)
        copy.ingest.privateKeyFile = ingest.privateKeyFile.map(absolute)
        copy.listen.tls = listen.tls.map { Listen.TLS(certificateFile: absolute($0.certificateFile), privateKeyFile: absolute($0.privateKeyFile)) }
        copy.database.fleet?.caFile = database.fleet?.caFile.map(absolute)
        copy.overlays.directory = overlays.directory.map(absolute)
        copy.overlays.fontDirectory = overlays.fontDirectory.map(absolute)
        return copy
    }

    /// Every problem, each naming its key. Empty when the configuration is usable.
    public func validate() -> [String] {
        var problems: [String] = []
        if !Self.isRegionName(region) { problems.append("region: \"\(region)\" is not a region name (like us-east-1 or eu-west-2)") }
        if !(account.count == 12 && account.allSatisfy(\.isASCII) && account.allSatisfy(\.isNumber)) {
            problems.append("account: \"\(account)\" is not an account ID (12 digits)")
        }
        if listen.host.isEmpty { problems.append("listen.host: must not be empty") }
        if let tls = listen.tls, tls.certificateFile.isEmpty || tls.privateKeyFile.isEmpty {
            problems.append("listen.tls: certificateFile and privateKeyFile must both be given")
        }
        if let url = database.fleet?.internalURL, !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            problems.append("database.fleet.internalURL: \(url) is not an http:// or https:// URL")
        }
        if !(0...65_535).contains(listen.port) { problems.append("listen.port: \(listen.port) is outside 0...65535") }
        if stateDirectory.isEmpty { problems.append("stateDirectory: must not be empty") }
        if let url = database.url, case .failure(let error) = PostgresDatabaseURL.parse(url) { problems.append(error.message) }
        if let timeout = database.callTimeoutSeconds, !(0.1...300).contains(timeout) {
            problems.append("database.callTimeoutSeconds: \(timeout) is outside 0.1...300")
        }
        if let ttl = database.leaseTtlSeconds, !(0.5...600).contains(ttl) {
            problems.append("database.leaseTtlSeconds: \(ttl) is outside 0.5...600")
        } else if let heartbeat = database.heartbeatSeconds, !(0.05...60).contains(heartbeat) {
            problems.append("database.heartbeatSeconds: \(heartbeat) is outside 0.05...60")
        } else {
            problems += database.leaseSettings.problems.map { "database: \($0)" }
        }
        if let fleet = database.fleet {
            if database.url == nil { problems.append("database.fleet: needs database.url (the PostgreSQL database the nodes share)") }
            if fleet.secret.utf8.count < 16 { problems.append("database.fleet.secret: at least 16 characters, the same on every node") }
            if let drain = fleet.drainTimeoutSeconds, !(0...86_400).contains(drain) {
                problems.append("database.fleet.drainTimeoutSeconds: \(drain) is outside 0...86400")
            }
            if let capacity = fleet.capacityMillicores, !(0...1_000_000).contains(capacity) {
                problems.append("database.fleet.capacityMillicores: \(capacity) is outside 0...1000000")
            }
            for url in [fleet.internalURL, fleet.advertisedURL].compactMap({ $0 }) where URL(string: url)?.host == nil {
                problems.append("database.fleet: \(url) is not an http(s) URL with a host")
            }
            // A directory on a host that dies cannot be finalized by the node that takes over.
            for (name, bucket) in buckets.sorted(by: { $0.key < $1.key }) where bucket.directory != nil {
                problems.append("buckets.\(name): in fleet mode recordings go to S3-compatible storage, not a local directory "
                                + "(a survivor finalizes a dead node's recordings)")
            }
        }
        if let node = database.nodeId, node.isEmpty || node.count > 128 || node.contains(where: { $0.isWhitespace }) {
            problems.append("database.nodeId: 1 to 128 characters without spaces")
        }
        var stageArns = Set<String>()
        for (index, entry) in stages.enumerated() {
            let key = "stages[\(index)]"
            guard let arn = stageArn(for: entry) else {
                problems.append("\(key): give \"arn\" (arn:aws:ivs:\(region):\(account):stage/<id>) or \"id\" ([a-zA-Z0-9-]+)")
                continue
            }
            if let parsed = IVSARN(parsing: arn, expecting: .stage), parsed.region != region || parsed.account != account {
                problems.append("\(key).arn: \(arn) is not in region \(region) / account \(account)")
            }
            if !stageArns.insert(arn).inserted { problems.append("\(key).arn: \(arn) is defined twice") }
        }
        var channelArns = Set<String>()
        for (index, channel) in channels.enumerated() {
            let key = "channels[\(index)]"
            if IVSARN(parsing: channel.arn, expecting: .channel) == nil {
                problems.append("\(key).arn: \(channel.arn) is not a channel ARN (arn:aws:ivs:<region>:<account>:channel/<id>)")
            }
            if !channelArns.insert(channel.arn).inserted { problems.append("\(key).arn: \(channel.arn) is defined twice") }
            if !(channel.ingestEndpoint.hasPrefix("rtmp://") || channel.ingestEndpoint.hasPrefix("rtmps://")) {
                problems.append("\(key).ingestEndpoint: must start with rtmp:// or rtmps://")
            }
            if channel.streamKey.isEmpty { problems.append("\(key).streamKey: must not be empty") }
            if let caFile = channel.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
                problems.append("\(key).caFile: \(caFile) cannot be read")
            }
            if let reconnect = channel.reconnect {
                if reconnect.maxRetries < 0 { problems.append("\(key).reconnect.maxRetries: must not be negative") }
                if !(reconnect.baseIntervalSeconds > 0) { problems.append("\(key).reconnect.baseIntervalSeconds: must be positive") }
            }
        }
        problems += bucketProblems()
        problems += overlays.problems()
        for (index, root) in stageSourceRoots.enumerated() where root.isEmpty || root == "/" {
            problems.append("stageSourceRoots[\(index)]: \"\(root)\" is too broad")
        }
        let q = quotas
        for (name, value) in [("concurrentCompositions", q.concurrentCompositions), ("encoderConfigurations", q.encoderConfigurations),
                              ("storageConfigurations", q.storageConfigurations), ("publishersPerStage", q.publishersPerStage),
                              ("ingestConfigurations", q.ingestConfigurations), ("stages", q.stages)]
            where value < 0 {
            problems.append("quotas.\(name): must not be negative")
        }
        let l = lifecycle
        if !(l.idleTimeoutSeconds > 0) { problems.append("lifecycle.idleTimeoutSeconds: must be positive") }
        if !(l.maximumDurationSeconds > 0) { problems.append("lifecycle.maximumDurationSeconds: must be positive") }
        if !(l.retentionSeconds >= 0) { problems.append("lifecycle.retentionSeconds: must not be negative") }
        if !(l.shutdownGraceSeconds > 0) { problems.append("lifecycle.shutdownGraceSeconds: must be positive") }
        if auth.enabled, auth.accessKeys.isEmpty {
            problems.append("auth.accessKeys: at least one access key is needed when auth.enabled is true")
        }
        if auth.enabled {
            for (id, secret) in auth.accessKeys.sorted(by: { $0.key < $1.key }) where secret == Self.placeholderSecret {
                problems.append("auth.accessKeys.\(id): \"\(secret)\" is the example's placeholder; set a secret of your own")
            }
        }
        if !auth.enabled, !listen.isLoopback, listen.allowUnauthenticated != true {
            problems.append("listen.host: \(listen.host) is reachable from other machines and auth.enabled is false: "
                            + "enable auth, listen on 127.0.0.1, or set listen.allowUnauthenticated: true")
        }
        if let value = listen.maxConnections, value < 1 { problems.append("listen.maxConnections: must be at least 1") }
        if let value = listen.maxConnectionsPerAddress, value < 1 { problems.append("listen.maxConnectionsPerAddress: must be at least 1") }
        if let value = listen.idleTimeoutSeconds, !(value >= 1 && value <= 3_600) {
            problems.append("listen.idleTimeoutSeconds: must be within 1...3600")
        }
        if let token = metrics.bearerToken, token.count < 16 {
            problems.append("metrics.bearerToken: at least 16 characters")
        }
        for (id, secret) in auth.accessKeys.sorted(by: { $0.key < $1.key }) where id.isEmpty || secret.isEmpty {
            problems.append("auth.accessKeys.\(id): access key IDs and secrets must not be empty")
        }
        if let webhook = events.webhook {
            if !(webhook.url.hasPrefix("http://") || webhook.url.hasPrefix("https://")) || URL(string: webhook.url)?.host == nil {
                problems.append("events.webhook.url: \(webhook.url) is not an http:// or https:// URL")
            }
            if webhook.maxAttempts < 1 { problems.append("events.webhook.maxAttempts: must be at least 1") }
        }
        let i = ingest
        for (name, listener) in [("rtmp", i.rtmp), ("rtmps", i.rtmps)] {
            if listener.host.isEmpty { problems.append("ingest.\(name).host: must not be empty") }
            if !(0...65_535).contains(listener.port) { problems.append("ingest.\(name).port: \(listener.port) is outside 0...65535") }
        }
        if i.rtmp.enabled, i.rtmps.enabled, i.rtmp.port == i.rtmps.port, i.rtmp.port != 0, i.rtmp.host == i.rtmps.host {
            problems.append("ingest.rtmps.port: \(i.rtmps.port) is also the rtmp port")
        }
        if i.whip.host.isEmpty { problems.append("ingest.whip.host: must not be empty") }
        if !(0...65_535).contains(i.whip.port) { problems.append("ingest.whip.port: \(i.whip.port) is outside 0...65535") }
        if let port = i.whip.advertisedPort, !(1...65_535).contains(port) {
            problems.append("ingest.whip.advertisedPort: \(port) is outside 1...65535")
        }
        if i.whip.enabled, i.whip.advertisedHost == nil, ["0.0.0.0", "::"].contains(i.whip.host) {
            problems.append("ingest.whip.advertisedHost: needed when ingest.whip.host is a wildcard address (publishers must be told one address)")
        }
        if let host = i.whip.advertisedHost, !Self.isIPAddress(host) {
            problems.append("ingest.whip.advertisedHost: \(host) is not an IP address (ICE candidates carry addresses)")
        }
        for (key, value) in [("maxViewers", i.whip.maxViewers), ("maxViewersPerAddress", i.whip.maxViewersPerAddress),
                             ("maxViewersPerComposition", i.whip.maxViewersPerComposition)] where !(0...100_000).contains(value) {
            problems.append("ingest.whip.\(key): \(value) is outside 0...100000")
        }
        if !(i.whip.consentTimeoutSeconds >= 5) { problems.append("ingest.whip.consentTimeoutSeconds: must be at least 5") }
        if let url = i.whip.publicURL, !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            problems.append("ingest.whip.publicURL: \(url) is not an http:// or https:// URL")
        }
        if (i.certificateFile == nil) != (i.privateKeyFile == nil) {
            problems.append("ingest.certificateFile/privateKeyFile: give both or neither")
        }
        if !(0...5_000).contains(i.latencyMs) { problems.append("ingest.latencyMs: \(i.latencyMs) is outside 0...5000") }
        if i.minimumLatencyMs < 0 || i.minimumLatencyMs > i.latencyMs {
            problems.append("ingest.minimumLatencyMs: \(i.minimumLatencyMs) is outside 0...\(i.latencyMs) (ingest.latencyMs is the most)")
        }
        if !(i.videoStoppedAfterSeconds > 0) { problems.append("ingest.videoStoppedAfterSeconds: must be positive") }
        if i.maxBitrate < 100_000 { problems.append("ingest.maxBitrate: must be at least 100000") }
        if !(i.handshakeTimeoutSeconds > 0) { problems.append("ingest.handshakeTimeoutSeconds: must be positive") }
        if !(i.idleTimeoutSeconds > 0) { problems.append("ingest.idleTimeoutSeconds: must be positive") }
        if i.maxConnections < 1 { problems.append("ingest.maxConnections: must be at least 1") }
        if i.maxConnectionsPerAddress < 1 { problems.append("ingest.maxConnectionsPerAddress: must be at least 1") }
        if maxRequestBodyBytes < 1024 { problems.append("maxRequestBodyBytes: must be at least 1024") }
        let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"]
        if !presets.contains(encoderPreset) { problems.append("encoderPreset: one of \(presets.joined(separator: ", "))") }
        if !["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(logLevel) {
            problems.append("logLevel: one of trace, debug, info, notice, warning, error, critical")
        }
        if DaemonLogHandler.Format(rawValue: logFormat) == nil { problems.append("logFormat: \"text\" or \"json\"") }
        return problems
    }

    /// Things that may be fixed after start-up (a recorded stage not installed yet): the
    /// daemon runs, and compositions on such a stage fail with "Session Failure".
    public func availabilityWarnings() -> [String] { availabilityWarnings(environment: ProcessInfo.processInfo.environment) }

    /// The same, with S3 credentials looked up in `environment`.
    public func availabilityWarnings(environment: [String: String]) -> [String] {
        var warnings = bucketWarnings(environment: environment) + stages.enumerated().compactMap { index, entry in
            guard let source = entry.source else { return nil }
            return FileManager.default.fileExists(atPath: source + "/manifest.json") ? nil
                : "stages[\(index)].source: \(source) has no manifest.json (not a recorded stage directory); "
                    + "compositions on this stage will fail until it is there"
        }
        if let directory = overlays.directory, !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            warnings.append("overlays.directory: \(directory) does not exist; overlays that name image files are refused until it does")
        }
        // fontconfig is process-wide: the font folder is added here, where the daemon and
        // `config check` both judge the configuration, before the default font is looked for.
        if let fontDirectory = overlays.fontDirectory, !fontDirectory.isEmpty {
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: fontDirectory, isDirectory: &isDirectory) || !isDirectory.boolValue {
                warnings.append("overlays.fontDirectory: \(fontDirectory) is not a folder; only the system's fonts are used")
            } else if !OverlayAssets.addFontDirectory(fontDirectory) {
                warnings.append("overlays.fontDirectory: fontconfig cannot read \(fontDirectory); only the system's fonts are used")
            }
        }
        if !OverlayAssets(directory: nil, defaultFont: overlays.defaultFont).defaultFontExists {
            warnings.append("overlays.defaultFont: no font of the family '\(overlays.defaultFont)' is installed; "
                            + "text that names no font is drawn in the one fontconfig substitutes")
        }
        return warnings
    }

    /// The stage's ARN: `arn` as given, or built from `id` in this region/account.
    public func stageArn(for entry: StageEntry) -> String? {
        if let arn = entry.arn { return IVSARN(parsing: arn, expecting: .stage)?.description }
        guard let id = entry.id else { return nil }
        return IVSARN(region: region, account: account, resourceType: .stage, resourceID: id)?.description
    }

    public var databasePath: String { stateDirectory + "/stage-compositor.sqlite" }

    /// The folder overlay image files are read from.
    public var overlayDirectory: String { overlays.directory ?? stateDirectory + "/overlays" }

    /// A composition's WHEP playback URL: `<base>/whep/composition/<composition id>`; nil when
    /// the WHIP transport (which carries WHEP too) is off.
    public func whepEndpoint(compositionId: String) -> String? {
        guard let whip = whipEndpoint(stageId: "x") else { return nil }
        return String(whip.dropLast("/whip/x".count)) + "/whep/composition/\(compositionId)"
    }

    /// `endpoints.whip` of a live stage: `<base>/whip/<stage id>`; nil when WHIP is off.
    public func whipEndpoint(stageId: String) -> String? {
        guard ingest.whip.enabled else { return nil }
        var base = ingest.whip.publicURL ?? {
            let host = ingest.publicHost ?? (listen.host == "0.0.0.0" || listen.host == "::" ? "127.0.0.1" : listen.host)
            return "http://\(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host):\(listen.port)"
        }()
        while base.hasSuffix("/") { base.removeLast() }
        return "\(base)/whip/\(stageId)"
    }

    /// `us-east-1`, `ap-southeast-2`, `us-gov-west-1`: two letters, words, a number.
    static func isRegionName(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        func letters(_ part: Substring) -> Bool { !part.isEmpty && part.allSatisfy { ("a"..."z").contains($0) } }
        guard parts.count >= 3, let first = parts.first, let last = parts.last, first.count == 2, letters(first),
              !last.isEmpty, last.allSatisfy({ ("0"..."9").contains($0) }) else { return false }
        return parts.dropFirst().dropLast().allSatisfy(letters)
    }

    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// nil when the file sink is disabled.
    public var eventsFilePath: String? {
        let file = events.file ?? "events.jsonl"
        if file.isEmpty { return nil }
        return file.hasPrefix("/") ? file : stateDirectory + "/" + file
    }
}

// MARK: Embedded defaults

extension ServerConfiguration {
    /// Where the embedded defaults come from: the process's environment, working directory and
    /// executable, passed in so that the choice is testable.
    public struct Surroundings: Sendable {
        public var environment: [String: String]
        public var workingDirectory: String
        public var executablePath: String
        public init(environment: [String: String], workingDirectory: String, executablePath: String) {
            self.environment = environment
            self.workingDirectory = workingDirectory
            self.executablePath = executablePath
        }

        public static var current: Surroundings {
            Surroundings(environment: ProcessInfo.processInfo.environment,
                         workingDirectory: FileManager.default.currentDirectoryPath,
                         executablePath: Bundle.main.executableURL?.path ?? CommandLine.arguments[0])
        }
    }

    /// The bucket the embedded defaults record into.
    public static let embeddedBucket = "recordings"

    /// `serve` without `--config`: the API on loopback, ingest on loopback, state outside any
    /// checkout: systemd's `$STATE_DIRECTORY`, else `$XDG_STATE_HOME/stage-compositor`, else
    /// `~/.local/state/stage-compositor` (the XDG default), one local bucket `recordings` inside it, and the bundled recorded stages
    /// (the checkout's `fixtures/`, or the installed `share/stage-compositor/stages`), each a
    /// stage whose id is its folder's name. Paths are absolute.
    public static func embeddedDefaults(_ surroundings: Surroundings) -> ServerConfiguration {
        func absolute(_ path: String, base: String) -> String {
            (path.hasPrefix("/") ? URL(fileURLWithPath: path) : URL(fileURLWithPath: base).appendingPathComponent(path))
                .standardizedFileURL.path
        }
        let cwd = surroundings.workingDirectory
        let state: String
        let environment = surroundings.environment
        if let systemd = environment["STATE_DIRECTORY"]?.split(separator: ":").first, !systemd.isEmpty {
            state = absolute(String(systemd), base: cwd)
        } else if let xdg = environment["XDG_STATE_HOME"], !xdg.isEmpty {
            state = absolute(xdg, base: cwd) + "/stage-compositor"
        } else if let home = environment["HOME"], !home.isEmpty {
            state = absolute(home, base: cwd) + "/.local/state/stage-compositor"
        } else {
            state = absolute("stage-compositor-state", base: cwd)
        }
        var configuration = ServerConfiguration(stateDirectory: state, buckets: [embeddedBucket: .directory(state + "/buckets/" + embeddedBucket)])
        let executableFolder = URL(fileURLWithPath: absolute(surroundings.executablePath, base: cwd)).deletingLastPathComponent()
        let candidates = [absolute("fixtures", base: cwd),
                          executableFolder.appendingPathComponent("../share/stage-compositor/stages").standardizedFileURL.path,
                          "/usr/local/share/stage-compositor/stages", "/usr/share/stage-compositor/stages"]
        let files = FileManager.default
        if let root = candidates.first(where: { files.fileExists(atPath: $0) }) {
            let folders = ((try? files.contentsOfDirectory(atPath: root)) ?? []).sorted()
            configuration.stageSourceRoots = [root]
            configuration.stages = folders.compactMap { name in
                let valid = !name.isEmpty && name.unicodeScalars.allSatisfy {
                    ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-"
                }
                guard valid, files.fileExists(atPath: root + "/" + name + "/manifest.json") else { return nil }
                return StageEntry(id: name, name: name, source: root + "/" + name)
            }
        }
        return configuration
    }
}
