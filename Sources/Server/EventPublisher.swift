// Where "IVS Composition State Change" events go. The daemon publishes through this one
// protocol; sinks (JSON-lines file, stdout, webhooks...) plug in behind it.
public import Events
import Foundation
import Synchronization

public protocol EventPublisher: Sendable {
    /// Delivers one event. Must not throw: a sink that fails logs and goes on.
    func publish(_ event: CompositionStateChangeEvent) async
}

/// Keeps every event in memory, in order (tests).
public final class InMemoryEventPublisher: EventPublisher {
    private let stored = Mutex<[CompositionStateChangeEvent]>([])
    public init() {}
    public func publish(_ event: CompositionStateChangeEvent) async { stored.withLock { $0.append(event) } }
    public var events: [CompositionStateChangeEvent] { stored.withLock { $0 } }
}

/// Appends one JSON line per event to a file (created if missing), flushed per event so a
/// crash loses nothing already published.
public final class JSONLinesFileEventPublisher: EventPublisher {
    private let handle: Mutex<FileHandle>
    public let path: String

    public init(path: String) throws {
        self.path = path
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
            }
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        self.handle = Mutex(handle)
    }

    public func publish(_ event: CompositionStateChangeEvent) async {
        let line = Data((event.jsonLine + "\n").utf8)
        handle.withLock { handle in
            try? handle.write(contentsOf: line)
            try? handle.synchronize()
        }
    }
}

/// One JSON line per event on standard output.
public struct StandardOutputEventPublisher: EventPublisher {
    public init() {}
    public func publish(_ event: CompositionStateChangeEvent) async {
        FileHandle.standardOutput.write(Data((event.jsonLine + "\n").utf8))
    }
}

/// Fans out to several publishers, in order.
public struct MultiEventPublisher: EventPublisher {
    public let publishers: [any EventPublisher]
    public init(_ publishers: [any EventPublisher]) { self.publishers = publishers }
    public func publish(_ event: CompositionStateChangeEvent) async {
        for publisher in publishers { await publisher.publish(event) }
    }
}
