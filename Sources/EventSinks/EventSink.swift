// Where composition state-change events go. A sink never throws and never blocks a
// composition for long: failures are logged and counted by the sink itself.

public import Events
internal import Synchronization

/// A destination for composition events. `publish` returns quickly: slow sinks (the
/// webhook) enqueue and deliver in the background.
public protocol EventSink: Sendable {
    func publish(_ event: CompositionStateChangeEvent) async
}

/// Publishes every event to each of its sinks, concurrently.
public struct FanOutEventSink: EventSink {
    public let sinks: [any EventSink]

    public init(_ sinks: [any EventSink]) {
        self.sinks = sinks
    }

    public func publish(_ event: CompositionStateChangeEvent) async {
        await withTaskGroup(of: Void.self) { group in
            for sink in sinks {
                group.addTask { await sink.publish(event) }
            }
        }
    }
}

/// One JSON line per event on standard output (for journald: `journalctl -u stage-compositor`).
public struct StandardOutputEventSink: EventSink {
    private let writeLine: @Sendable (String) -> Void

    /// - Parameter writeLine: receives each line with its trailing newline; standard output
    ///   (one `write(2)` per line, so lines from concurrent callers never interleave) by default.
    public init(writeLine: @escaping @Sendable (String) -> Void = StandardOutputEventSink.writeToStandardOutput) {
        self.writeLine = writeLine
    }

    public func publish(_ event: CompositionStateChangeEvent) async {
        writeLine(event.jsonLine + "\n")
    }

    @Sendable public static func writeToStandardOutput(_ line: String) {
        _ = FileDescriptorWriter.writeAll(Array(line.utf8), to: 1)
    }
}

/// Keeps every event in memory, in order (tests, and embedding the daemon).
public final class InMemoryEventSink: EventSink {
    private let stored = Mutex<[CompositionStateChangeEvent]>([])

    public init() {}

    public func publish(_ event: CompositionStateChangeEvent) async { stored.withLock { $0.append(event) } }

    public var events: [CompositionStateChangeEvent] { stored.withLock { $0 } }
}
