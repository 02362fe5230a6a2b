// WHEP viewers on the WHIP socket: offers negotiated into answers, sessions kept in a table
// on the socket's event loop beside the publishers', datagrams the publishers' table does
// not claim routed here (STUN by ufrag, the rest by the address a check selected), and media
// sent when a composition hands its viewers a frame (`wakeViewers`) or a timer is due.

import LiveStage
import Logging
import NIOCore
import Synchronization
public import WebRTCMedia
import WebRTCSecurity
public import WebRTCSignal

/// An offer negotiated into an answer, waiting to be started.
public struct PreparedWHEPSession: Sendable {
    /// The WHEP resource ID (the Location's last segment): unguessable.
    public let id: String
    public let answer: String
    public let negotiation: WHEPNegotiation
    let localCredentials: IceCredentials
}

/// What a viewer's session tells its owner (on the socket's event loop; return quickly).
public struct WebRTCViewerEvents: Sendable {
    public var connected: @Sendable () -> Void
    public var keyframeWanted: @Sendable () -> Void
    public var ended: @Sendable (String) -> Void

    public init(connected: @escaping @Sendable () -> Void = {}, keyframeWanted: @escaping @Sendable () -> Void,
                ended: @escaping @Sendable (String) -> Void) {
        self.connected = connected
        self.keyframeWanted = keyframeWanted
        self.ended = ended
    }
}

extension WebRTCIngestServer {
    /// Negotiates a viewer's offer for a stream of `videoProfileLevelID`. Errors name what the
    /// offer lacks (for a 400).
    public func prepareViewer(offer: String, videoProfileLevelID: H264ProfileLevelID,
                              profileMatching: H264ProfileMatching = .anyOffered) throws(WebRTCIngestError) -> PreparedWHEPSession {
        guard let port, let candidate = advertisedAddress(port: port) else {
            throw WebRTCIngestError(kind: .notListening, message: "WebRTC media transport is not listening")
        }
        var generator = SystemRandomNumberGenerator()
        let credentials = IceCredentials.random(using: &generator)
        let options = WHEPAnswerOptions(localCredentials: credentials, localFingerprintSHA256: certificate.fingerprintSHA256Text,
                                        candidates: [candidate], sessionID: UInt64.random(in: 1...UInt64(Int64.max), using: &generator),
                                        videoProfileLevelID: videoProfileLevelID, profileMatching: profileMatching,
                                        streams: .random(using: &generator))
        let negotiation: WHEPNegotiation
        do {
            negotiation = try WHEPNegotiator.negotiate(offer: offer, options: options)
        } catch {
            throw WebRTCIngestError(kind: error.isServerFault ? .internalError : .offer, message: error.description)
        }
        let id = (0..<3).map { _ in String(UInt64.random(in: 0...UInt64.max, using: &generator), radix: 36) }.joined()
        return PreparedWHEPSession(id: id, answer: negotiation.answer, negotiation: negotiation, localCredentials: credentials)
    }

    /// Starts sending `source` to the viewer. `owner` names what it watches (only a stop with
    /// the same owner ends it); `clientAddress` is the HTTP peer's IP address, for the
    /// per-address cap.
    public func startViewer(_ prepared: PreparedWHEPSession, source: any ViewerMediaSource, owner: String, events: WebRTCViewerEvents,
                            clientAddress: String) async throws(WebRTCIngestError) {
        guard let (channel, table) = viewerTable() else {
            throw WebRTCIngestError(kind: .notListening, message: "WebRTC media transport is not listening")
        }
        let (maxViewers, perAddress) = (configuration.maxViewers, configuration.maxViewersPerAddress)
        let certificate = self.certificate, session = configuration.session, now = clock.nowMicroseconds()
        let result: Result<Void, WebRTCIngestError>
        do {
            result = try await channel.eventLoop.submit { () -> Result<Void, WebRTCIngestError> in
                guard table.count < maxViewers else {
                    return .failure(WebRTCIngestError(kind: .tooManySessions, message: "too many WHEP viewers (\(maxViewers))"))
                }
                guard table.count(clientAddress: clientAddress) < perAddress else {
                    return .failure(WebRTCIngestError(kind: .tooManySessions,
                                                      message: "too many WHEP viewers from \(clientAddress) (\(perAddress))"))
                }
                do throws(DTLSError) {
                    let viewer = try WebRTCViewerSession(negotiation: prepared.negotiation, localCredentials: prepared.localCredentials,
                                                         certificate: certificate, source: source, configuration: session, now: now)
                    table.add(id: prepared.id, owner: owner, session: viewer, clientAddress: clientAddress, events: events)
                    return .success(())
                } catch {
                    return .failure(WebRTCIngestError(kind: .internalError, message: "DTLS setup failed: \(error.reason)"))
                }
            }.get()
        } catch {
            result = .failure(WebRTCIngestError(kind: .notListening, message: "WebRTC media transport is not listening"))
        }
        if case .failure(let error) = result {
            if error.kind == .tooManySessions { viewerCounts.refused.add(1, ordering: .relaxed) }
            throw error
        }
    }

    /// Ends viewer `id` of `owner` (WHEP DELETE). False when there is no such session.
    @discardableResult
    public func stopViewer(id: String, owner: String, reason: String) async -> Bool {
        guard let (channel, table) = viewerTable() else { return false }
        return (try? await channel.eventLoop.submit { table.end(id: id, owner: owner, reason: reason) }.get()) ?? false
    }

    /// A viewer refused before it reached the transport (its composition's cap), for /metrics.
    public func noteViewerRefused() {
        viewerCounts.refused.add(1, ordering: .relaxed)
    }

    /// `owner` handed its viewers a frame: its viewers send what is due now, without waiting
    /// for the next tick. Cheap to call once per frame; calls while one is pending coalesce
    /// into one task on the event loop.
    public func wakeViewers(owner: String) {
        guard let (channel, table) = viewerTable() else { return }
        guard table.markPending(owner) else { return }
        channel.eventLoop.execute { table.drain() }
    }

    /// Viewers running, and refused by the caps so far (for /metrics).
    public var viewerSessionCounts: (open: Int, refused: Int64) {
        (viewerCounts.open.load(ordering: .relaxed), viewerCounts.refused.load(ordering: .relaxed))
    }

    /// Statistics of a running viewer.
    public func viewerStatistics(id: String) async -> WebRTCViewerStatistics? {
        guard let (channel, table) = viewerTable() else { return nil }
        return try? await channel.eventLoop.submit { table.statistics(id: id) }.get()
    }
}

// MARK: - Event-loop side

/// Every viewer, and the indexes to find one. Touched only on the socket's event loop.
final class ViewerTable: @unchecked Sendable {
    final class Entry: IndexedSession {
        let id: String
        let owner: String
        let clientAddress: String
        let session: WebRTCViewerSession
        let events: WebRTCViewerEvents
        var address: TransportAddress?
        var nextDeadline: Int64?
        var ufrag: String { session.localCredentials.ufrag }

        init(id: String, owner: String, clientAddress: String, session: WebRTCViewerSession, events: WebRTCViewerEvents) {
            self.id = id
            self.owner = owner
            self.clientAddress = clientAddress
            self.session = session
            self.events = events
        }
    }

    var channel: (any Channel)?
    /// Owners whose viewers have frames waiting (any thread adds; `drain` takes them).
    private let pending = Mutex<Set<String>>([])
    private let clock: any MediaClockReading
    private let counts: SessionCounts
    private let logger: Logger
    private var index = SessionIndex<Entry>()
    /// Reused for every session's outputs.
    private var outputs: [WebRTCViewerOutput] = []

    init(clock: any MediaClockReading, counts: SessionCounts, logger: Logger) {
        self.clock = clock
        self.counts = counts
        self.logger = logger
    }

    var count: Int { index.count }

    func count(clientAddress: String) -> Int { index.count(clientAddress: clientAddress) }

    func add(id: String, owner: String, session: WebRTCViewerSession, clientAddress: String, events: WebRTCViewerEvents) {
        let entry = Entry(id: id, owner: owner, clientAddress: clientAddress, session: session, events: events)
        entry.nextDeadline = session.nextDeadline(now: clock.nowMicroseconds())
        index.insert(entry)
        counts.open.store(index.count, ordering: .relaxed)
    }

    func statistics(id: String) -> WebRTCViewerStatistics? { index[id]?.session.statistics }

    /// A datagram the publishers did not claim; false when no viewer does either.
    func receive(_ bytes: [UInt8], from source: TransportAddress) -> Bool {
        guard let entry = index.route(bytes, from: source) else { return false }
        let now = clock.nowMicroseconds()
        entry.session.receive(bytes, from: source, now: now, into: &outputs)
        index.select(entry, address: entry.session.remoteAddress)
        carryOut(for: entry, now: now)
        channel?.flush()
        return true
    }

    /// Timers: every viewer whose deadline has come.
    func tick() {
        let now = clock.nowMicroseconds()
        for entry in index.entries {
            guard let deadline = entry.nextDeadline, deadline <= now else { continue }
            entry.session.poll(now: now, into: &outputs)
            carryOut(for: entry, now: now)
        }
        channel?.flush()
    }

    /// Notes that `owner` has frames waiting; true when no drain was pending (schedule one).
    func markPending(_ owner: String) -> Bool {
        pending.withLock { owners in
            let wasEmpty = owners.isEmpty
            owners.insert(owner)
            return wasEmpty
        }
    }

    /// Frames arrived (or the feed closed): the viewers of the owners that have them send what
    /// is due (a session still connecting only checks whether its source ended).
    func drain() {
        let owners = pending.withLock { owners in
            defer { owners.removeAll(keepingCapacity: true) }
            return owners
        }
        let now = clock.nowMicroseconds()
        for entry in index.entries where owners.contains(entry.owner) {
            entry.session.poll(now: now, into: &outputs)
            carryOut(for: entry, now: now)
        }
        channel?.flush()
    }

    private func carryOut(for entry: Entry, now: Int64) {
        defer { outputs.removeAll(keepingCapacity: true) }
        var ended: String?
        for output in outputs {
            switch output {
            case .send(let bytes, let address):
                guard let channel, let socketAddress = try? SocketAddress(address) else { continue }
                channel.write(AddressedEnvelope(remoteAddress: socketAddress, data: channel.allocator.buffer(bytes: bytes)), promise: nil)
            case .connected:
                logger.info("WHEP viewer connected", metadata: ["whep.session": "\(WebRTCIngestServer.redacted(entry.id))",
                                                                "remote": "\(entry.address.map { "\($0)" } ?? "?")"])
                entry.events.connected()
            case .keyframeWanted:
                entry.events.keyframeWanted()
            case .ended(let reason):
                ended = reason.description
            }
        }
        if let ended {
            remove(entry, reason: ended)
        } else {
            entry.nextDeadline = entry.session.nextDeadline(now: now)
        }
    }

    @discardableResult
    func end(id: String, owner: String, reason: String) -> Bool {
        guard let entry = index[id], entry.owner == owner else { return false }
        remove(entry, reason: reason)
        return true
    }

    func endAll(reason: String) {
        for entry in index.entries { remove(entry, reason: reason) }
    }

    private func remove(_ entry: Entry, reason: String) {
        guard index.remove(entry) else { return }
        counts.open.store(index.count, ordering: .relaxed)
        let statistics = entry.session.statistics
        logger.info("WHEP viewer left", metadata: [
            "whep.session": "\(WebRTCIngestServer.redacted(entry.id))", "reason": "\(reason)",
            "rtp.sent": "\(statistics.packetsSent)", "bytes.sent": "\(statistics.bytesSent)",
            "rtcp.received": "\(statistics.rtcpReceived)"])
        entry.events.ended(reason)
    }
}
