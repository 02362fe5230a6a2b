// The sinks named by the configuration's `events` object, built in one place for the
// daemon: `events.file`, `events.stdout`, `events.webhook {url, maxAttempts}`.

public import AsyncHTTPClient
public import Logging

/// Every configured sink behind one fan-out; the webhook is also a Service to run.
public struct ConfiguredEventSinks: Sendable {
    /// Publish every event here.
    public let sink: FanOutEventSink
    /// Add to the ServiceGroup (after the composition manager, so it shuts down later
    /// and flushes the last events).
    public let webhook: WebhookEventSink?
    public let file: JSONLinesFileEventSink?

    public init(file: String?, standardOutput: Bool, webhook: WebhookConfiguration?,
                httpClient: HTTPClient, logger: Logger) {
        var sinks: [any EventSink] = []
        self.file = file.map { JSONLinesFileEventSink(path: $0, logger: logger) }
        if let fileSink = self.file { sinks.append(fileSink) }
        if standardOutput { sinks.append(StandardOutputEventSink()) }
        self.webhook = webhook.map { WebhookEventSink(configuration: $0, httpClient: httpClient, logger: logger) }
        if let webhookSink = self.webhook { sinks.append(webhookSink) }
        sink = FanOutEventSink(sinks)
    }
}
