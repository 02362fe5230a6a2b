// Appends each event as one JSON line to a file (default
// /var/lib/stage-compositor/events.jsonl). One write(2) per line on an O_APPEND
// descriptor keeps lines whole even with other writers; fsync after each line because
// events are rare and a crash should not lose the last ones.

public import Events
public import Logging

/// An append-only JSON-lines file of events; an actor, so concurrent callers are serialized.
public actor JSONLinesFileEventSink: EventSink {
    public nonisolated let path: String
    private let logger: Logger
    private let syncEachLine: Bool
    private var descriptor: Int32?
    /// Lines that could not be written (open or write failed); the event is lost, not retried.
    public private(set) var failedWrites = 0
    public private(set) var writtenLines = 0

    /// The file is opened (created 0640 if absent) at the first event, and again after a failure.
    public init(path: String, syncEachLine: Bool = true, logger: Logger) {
        self.path = path
        self.syncEachLine = syncEachLine
        self.logger = logger
    }

    public func publish(_ event: CompositionStateChangeEvent) async {
        write(Array((event.jsonLine + "\n").utf8), eventID: event.id)
    }

    /// Closes the file; the next event reopens it (e.g. after log rotation).
    public func close() {
        if let descriptor { FileDescriptorWriter.closeDescriptor(descriptor) }
        descriptor = nil
    }

    private func write(_ line: [UInt8], eventID: String) {
        if descriptor == nil {
            let opened = FileDescriptorWriter.openForAppending(path)
            guard let fd = opened.descriptor else {
                fail(eventID: eventID, "cannot open: \(FileDescriptorWriter.describe(opened.errno))")
                return
            }
            descriptor = fd
        }
        guard let fd = descriptor else { return }
        if let code = FileDescriptorWriter.writeAll(line, to: fd) {
            fail(eventID: eventID, "cannot write: \(FileDescriptorWriter.describe(code))")
            close()
            return
        }
        if syncEachLine, let code = FileDescriptorWriter.sync(fd) {
            logger.warning("event file fsync failed", metadata: [
                "events.file": "\(path)", "error": "\(FileDescriptorWriter.describe(code))"])
        }
        writtenLines += 1
    }

    private func fail(eventID: String, _ message: String) {
        failedWrites += 1
        logger.error("event not written to file", metadata: [
            "events.file": "\(path)", "event.id": "\(eventID)", "error": "\(message)"])
    }

    deinit {
        if let descriptor { FileDescriptorWriter.closeDescriptor(descriptor) }
    }
}
