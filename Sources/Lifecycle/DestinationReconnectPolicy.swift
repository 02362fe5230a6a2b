// How a dropped destination retries: linear backoff with a bounded number of attempts,
// like the IVS broadcast SDK's auto-reconnect (up to 5 retries, linear backoff).
public import MediaCore

public struct DestinationReconnectPolicy: Sendable, Hashable {
    /// Attempt n waits n × `baseDelay` after the drop (or after attempt n-1 failed).
    public var baseDelay: MediaTime
    /// Attempts before the destination is declared FAILED; 0 disables reconnecting.
    public var maximumAttempts: Int
    /// The destination output reconnects by itself (the RTMP channel sink does): the machine
    /// only records RECONNECTING and waits for `.destinationRecovered`/`.destinationOutput`
    /// or `.destinationFailed`; it schedules no reconnect timer and never gives up on its own.
    public var retriedByDestination: Bool

    public init(baseDelay: MediaTime = .seconds(2), maximumAttempts: Int = 5, retriedByDestination: Bool = false) {
        precondition(maximumAttempts >= 0, "maximumAttempts must not be negative")
        self.baseDelay = baseDelay
        self.maximumAttempts = maximumAttempts
        self.retriedByDestination = retriedByDestination
    }

    public static let `default` = DestinationReconnectPolicy()

    /// Retries belong to the destination output; see `retriedByDestination`.
    public static let byDestination = DestinationReconnectPolicy(maximumAttempts: 0, retriedByDestination: true)

    /// The wait before attempt `attempt` (1-based); nil once the attempts are used up.
    public func delay(beforeAttempt attempt: Int) -> MediaTime? {
        guard attempt >= 1, attempt <= maximumAttempts else { return nil }
        return MediaTime(ticks: baseDelay.ticks * Int64(attempt), timeBase: baseDelay.timeBase)
    }
}
