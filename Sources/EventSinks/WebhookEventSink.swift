// POSTs each event to a webhook, with bounded retries, without ever making a composition
// wait: `publish` only enqueues into a bounded buffer (the oldest event is dropped and
// counted when it is full) and `run()`, a Service, delivers in order in the background.
//
//   publish ──► buffer (newest N) ──► run(): POST, retry on refused/timeout/408/429/5xx
//                                            with capped backoff, give up after maxAttempts
//
// On graceful shutdown the buffer is closed and what is in it is flushed for at most
// `shutdownFlushTimeout`; then the attempt in flight is cancelled and what is left is
// abandoned (counted).

public import Events
public import Logging
public import ServiceLifecycle
public import AsyncHTTPClient
internal import Synchronization

/// Delay between webhook attempts.
public enum WebhookBackoff: Sendable, Equatable {
    /// `step`, `2 × step`, `3 × step`, ... capped at `maximum`.
    case linear(step: Duration, maximum: Duration)
    /// `initial`, `2 × initial`, `4 × initial`, ... capped at `maximum`.
    case exponential(initial: Duration, maximum: Duration)

    /// The wait after failed attempt number `attempt` (1-based).
    public func delay(afterAttempt attempt: Int) -> Duration {
        let n = max(1, attempt)
        switch self {
        case .linear(let step, let maximum):
            return min(step * n, maximum)
        case .exponential(let initial, let maximum):
            let factor = n > 30 ? Int(1 << 30) : 1 << (n - 1)
            return min(initial * factor, maximum)
        }
    }
}

public struct WebhookConfiguration: Sendable, Equatable {
    public var url: String
    /// Attempts per event, the first included.
    public var maxAttempts: Int
    public var backoff: WebhookBackoff
    /// Per attempt.
    public var requestTimeout: Duration
    /// Events waiting for delivery; beyond it the oldest is dropped.
    public var bufferCapacity: Int
    /// How long graceful shutdown may keep delivering what is buffered.
    public var shutdownFlushTimeout: Duration

    public init(url: String, maxAttempts: Int = 5,
                backoff: WebhookBackoff = .exponential(initial: .milliseconds(500), maximum: .seconds(30)),
                requestTimeout: Duration = .seconds(10), bufferCapacity: Int = 1000,
                shutdownFlushTimeout: Duration = .seconds(5)) {
        self.url = url
        self.maxAttempts = max(1, maxAttempts)
        self.backoff = backoff
        self.requestTimeout = requestTimeout
        self.bufferCapacity = max(1, bufferCapacity)
        self.shutdownFlushTimeout = shutdownFlushTimeout
    }
}

/// Counters of a ``WebhookEventSink`` (for logs and `/metrics`).
public struct WebhookStatistics: Sendable, Equatable {
    /// Events the webhook accepted (2xx).
    public var delivered = 0
    /// Attempts after the first, over all events.
    public var retries = 0
    /// Events given up after `maxAttempts`, or refused with a non-retryable status.
    public var failed = 0
    /// Events pushed out of a full buffer, or published after shutdown.
    public var dropped = 0
    /// Events still undelivered when the shutdown flush time ran out.
    public var abandoned = 0

    public init() {}
}

/// Delivers events to an HTTP webhook in the background. Add it to the ServiceGroup.
public final class WebhookEventSink: EventSink, Service {
    public let configuration: WebhookConfiguration
    private let transport: any WebhookTransport
    private let logger: Logger
    private let buffer: AsyncStream<CompositionStateChangeEvent>
    private let input: AsyncStream<CompositionStateChangeEvent>.Continuation
    /// Fires once when shutdown starts (graceful shutdown or `finish()`).
    private let shutdownSignal: AsyncStream<Void>
    private let shutdownTrigger: AsyncStream<Void>.Continuation
    private let state = Mutex(State())

    private struct State {
        var statistics = WebhookStatistics()
        /// Enqueued and not yet taken by the runner.
        var queued = 0
    }

    public init(configuration: WebhookConfiguration, transport: any WebhookTransport, logger: Logger) {
        self.configuration = configuration
        self.transport = transport
        var logger = logger
        logger[metadataKey: "webhook.url"] = "\(configuration.url)"
        self.logger = logger
        (buffer, input) = AsyncStream.makeStream(of: CompositionStateChangeEvent.self,
                                                 bufferingPolicy: .bufferingNewest(configuration.bufferCapacity))
        (shutdownSignal, shutdownTrigger) = AsyncStream.makeStream(of: Void.self)
    }

    /// Through a shared AsyncHTTPClient (owned, and shut down, by the caller).
    public convenience init(configuration: WebhookConfiguration, httpClient: HTTPClient, logger: Logger) {
        self.init(configuration: configuration, transport: HTTPClientWebhookTransport(httpClient: httpClient),
                  logger: logger)
    }

    public var statistics: WebhookStatistics {
        state.withLock { $0.statistics }
    }

    /// Enqueues; never waits for the network.
    public func publish(_ event: CompositionStateChangeEvent) async {
        // Under the lock so `queued` matches the buffer when the runner takes events concurrently.
        let result = state.withLock { state in
            let result = input.yield(event)
            switch result {
            case .enqueued: state.queued += 1
            case .dropped, .terminated: state.statistics.dropped += 1
            @unknown default: break
            }
            return result
        }
        switch result {
        case .dropped(let oldest):
            logger.warning("webhook buffer full, dropped the oldest event", metadata: [
                "event.id": "\(oldest.id)", "webhook.dropped": "\(statistics.dropped)"])
        case .terminated:
            logger.warning("webhook sink stopped, event dropped", metadata: ["event.id": "\(event.id)"])
        default:
            break
        }
    }

    /// Delivers until graceful shutdown or ``finish()`` (then keeps delivering what is
    /// buffered for at most `shutdownFlushTimeout`, and cancels what is still in flight),
    /// or until cancelled (then returns at once). Call once.
    public func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.deliverBuffered() }
                group.addTask { await self.boundFlushAfterShutdown() }
                await group.next()
                group.cancelAll()
            }
        } onGracefulShutdown: { [self] in
            finish()
        }
        let final = state.withLock { state in
            state.statistics.abandoned += state.queued
            state.queued = 0
            return state.statistics
        }
        logger.info("webhook sink stopped", metadata: [
            "webhook.delivered": "\(final.delivered)", "webhook.failed": "\(final.failed)",
            "webhook.dropped": "\(final.dropped)", "webhook.abandoned": "\(final.abandoned)"])
    }

    /// Stops accepting events and starts the bounded flush; `run()` returns when the buffer
    /// is delivered or the flush time is over. Graceful shutdown calls it.
    public func finish() {
        state.withLock { _ in input.finish() }
        shutdownTrigger.yield()
        shutdownTrigger.finish()
    }

    private func deliverBuffered() async {
        for await event in buffer {
            state.withLock { $0.queued -= 1 }
            await deliver(event)
            if Task.isCancelled { return }
        }
    }

    /// Returns `shutdownFlushTimeout` after shutdown starts (or when cancelled).
    private func boundFlushAfterShutdown() async {
        for await _ in shutdownSignal { break }
        guard !Task.isCancelled else { return }
        try? await Task.sleep(for: configuration.shutdownFlushTimeout)
    }

    private func deliver(_ event: CompositionStateChangeEvent) async {
        let body = Array(event.jsonLine.utf8)
        var metadata: Logger.Metadata = ["event.id": "\(event.id)"]
        for attempt in 1...configuration.maxAttempts {
            if attempt > 1 { state.withLock { $0.statistics.retries += 1 } }
            metadata["webhook.attempt"] = "\(attempt)"
            let outcome: String
            do {
                let status = try await transport.post(body, to: configuration.url,
                                                      timeout: configuration.requestTimeout)
                if (200..<300).contains(status) {
                    state.withLock { $0.statistics.delivered += 1 }
                    logger.debug("webhook delivered", metadata: metadata)
                    return
                }
                guard Self.isRetryable(status: status) else {
                    state.withLock { $0.statistics.failed += 1 }
                    metadata["http.status"] = "\(status)"
                    logger.error("webhook refused the event; not retrying", metadata: metadata)
                    return
                }
                outcome = "HTTP \(status)"
            } catch {
                if Task.isCancelled { return abandon(event) }
                outcome = "\(error)"
            }
            metadata["error"] = "\(outcome)"
            guard attempt < configuration.maxAttempts else { break }
            logger.warning("webhook attempt failed; retrying", metadata: metadata)
            do {
                try await Task.sleep(for: configuration.backoff.delay(afterAttempt: attempt))
            } catch {
                return abandon(event)
            }
        }
        state.withLock { $0.statistics.failed += 1 }
        logger.error("webhook gave up on the event", metadata: metadata)
    }

    private func abandon(_ event: CompositionStateChangeEvent) {
        state.withLock { $0.statistics.abandoned += 1 }
        logger.warning("webhook event abandoned at shutdown", metadata: ["event.id": "\(event.id)"])
    }

    static func isRetryable(status: Int) -> Bool {
        status == 408 || status == 429 || (500..<600).contains(status)
    }
}
