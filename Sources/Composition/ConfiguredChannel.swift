// A channel this server may push to, as the configuration names it (`channels`): the planner
// checks a request's channel ARN against these and builds the push from the entry.

/// An IVS channel a composition may push to.
public struct ConfiguredChannel: Codable, Sendable, Equatable {
    /// The RTMP output's own auto-reconnect (linear backoff): attempt n waits
    /// n × `baseIntervalSeconds`; after `maxRetries` failed attempts the destination FAILS.
    public struct Reconnect: Codable, Sendable, Equatable {
        public var maxRetries: Int
        public var baseIntervalSeconds: Double
        public init(maxRetries: Int = 5, baseIntervalSeconds: Double = 2) {
            self.maxRetries = maxRetries
            self.baseIntervalSeconds = baseIntervalSeconds
        }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Reconnect()
            maxRetries = try c.decodeIfPresent(Int.self, forKey: .maxRetries) ?? d.maxRetries
            baseIntervalSeconds = try c.decodeIfPresent(Double.self, forKey: .baseIntervalSeconds) ?? d.baseIntervalSeconds
        }
    }

    public var arn: String
    /// e.g. rtmps://a1b2c3.global-contribute.live-video.net:443/app/
    public var ingestEndpoint: String
    public var streamKey: String
    /// nil: the defaults (5 retries, 2 s apart and growing).
    public var reconnect: Reconnect?
    /// rtmps: PEM file of the certificate authorities to trust (a private endpoint);
    /// nil: the system's.
    public var caFile: String?
    /// rtmps: nil or true checks the certificate chain and host name; false does not.
    public var verifyCertificate: Bool?
    public init(arn: String, ingestEndpoint: String, streamKey: String, reconnect: Reconnect? = nil,
                caFile: String? = nil, verifyCertificate: Bool? = nil) {
        self.arn = arn
        self.ingestEndpoint = ingestEndpoint
        self.streamKey = streamKey
        self.reconnect = reconnect
        self.caFile = caFile
        self.verifyCertificate = verifyCertificate
    }
}
