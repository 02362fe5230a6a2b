// When to try an S3 request again, and how long to wait first. Pure, so the schedule has
// exact tests; the storage supplies the random number.

/// Bounded exponential backoff with jitter, as the AWS SDKs do it.
struct S3RetryPolicy: Sendable, Equatable {
    var maxAttempts: Int
    var baseDelay: Duration
    var maximumDelay: Duration

    /// Connection failures, 5xx (503 SlowDown included) and 429 are worth another try;
    /// any other 4xx will fail the same way again.
    static func isRetryable(status: Int) -> Bool { status >= 500 || status == 429 }

    /// The wait before attempt `attempt + 1` (after `attempt` failures, from 1): half of
    /// `min(maximum, base·2^(attempt-1))` plus a random share of the other half, so waits grow
    /// but concurrent uploaders do not retry in lockstep. `random` is in 0...1.
    func delay(afterAttempt attempt: Int, random: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(maximumDelay, baseDelay * (1 << exponent))
        let half = ceiling / 2
        return half + half * min(max(random, 0), 1)
    }
}
