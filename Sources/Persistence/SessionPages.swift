// Keyset pages of a stage's sessions, a session's participants and a participant's events:
// the text keys their pages hand back (which a List operation's nextToken carries), and the
// participant filters, applied the same way by every store while it reads a page.
public import APIModels

/// Where a page of a stage's sessions starts: after this session, newest first.
public struct StageSessionPosition: Sendable, Hashable {
    /// Seconds since 1970 (what the stores keep as the session's start).
    public var startTime: Int64
    public var sessionId: String

    public init(startTime: Int64, sessionId: String) {
        self.startTime = startTime
        self.sessionId = sessionId
    }

    public init(_ stored: StoredStageSession) {
        self.init(startTime: stored.session.startTime?.secondsSince1970 ?? 0, sessionId: stored.session.sessionId ?? "")
    }
}

/// The keys of session, participant and event pages as text. Each sorts in byte order as its
/// rows do, and parses back only from text of the form this service makes, so a token that
/// names anything else is refused before a store sees it.
public enum PageKey {
    /// A place in a sequence (a participant's join order, an event's place; never negative):
    /// 20 digits.
    public static func sequence(_ value: Int64) -> String { twentyDigits(UInt64(clamping: value)) }

    /// The value of a `sequence` key: exactly 20 ASCII digits, at most `Int64.max`.
    public static func sequence(parsing key: String) -> Int64? {
        guard let value = twentyDigits(parsing: key.utf8) else { return nil }
        return Int64(exactly: value)
    }

    /// A session's key: 20 digits that fall as the start time rises (newest first), then the
    /// session ID, whose bytes break ties.
    public static func session(_ position: StageSessionPosition) -> String {
        twentyDigits(UInt64.max - orderPreserving(position.startTime)) + position.sessionId
    }

    /// The position in a `session` key: 20 ASCII digits (at most `UInt64.max`), then any ID.
    public static func session(parsing key: String) -> StageSessionPosition? {
        guard let value = twentyDigits(parsing: key.utf8.prefix(20)) else { return nil }
        let rank = UInt64.max - value
        return StageSessionPosition(startTime: Int64(bitPattern: rank ^ (1 << 63)),
                                    sessionId: String(decoding: key.utf8.dropFirst(20), as: UTF8.self))
    }

    /// Int64 onto UInt64, keeping the order (the sign bit flipped).
    private static func orderPreserving(_ value: Int64) -> UInt64 { UInt64(bitPattern: value) ^ (1 << 63) }

    private static func twentyDigits(_ value: UInt64) -> String {
        let digits = String(value)
        return String(repeating: "0", count: 20 - digits.count) + digits
    }

    /// Exactly 20 ASCII digits, at most `UInt64.max`.
    private static func twentyDigits(parsing bytes: some Collection<UInt8>) -> UInt64? {
        guard bytes.count == 20 else { return nil }
        var value: UInt64 = 0
        for byte in bytes {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow, !carry else { return nil }
            value = sum
        }
        return value
    }
}

/// ListParticipants' filters (the API takes one at a time; here any combination works). A
/// participant without the field filtered on does not match.
public struct ParticipantFilter: Sendable, Hashable {
    public var userId: String?
    public var published: Bool?
    public var state: ParticipantState?
    public var recordingState: ParticipantRecordingState?

    public init(userId: String? = nil, published: Bool? = nil, state: ParticipantState? = nil,
                recordingState: ParticipantRecordingState? = nil) {
        self.userId = userId
        self.published = published
        self.state = state
        self.recordingState = recordingState
    }

    /// Every participant.
    public static var all: ParticipantFilter { ParticipantFilter() }

    public var keepsEveryone: Bool { self == .all }

    public func matches(_ participant: Participant) -> Bool {
        (userId.map { participant.userId == $0 } ?? true)
            && (published.map { participant.published == $0 } ?? true)
            && (state.map { participant.state == $0 } ?? true)
            && (recordingState.map { participant.recordingState == $0 } ?? true)
    }

    /// Rows read per query while filtering: a page of a filter few participants match needs
    /// more rows than it shows, and memory stays within this many documents.
    public static let rowsPerRead = 256

    /// A filtered page from rows read in join order: `read(afterJoinOrder, count)` gives up to
    /// `count` rows after that place (every row when nil), read on until `limit + 1` match or
    /// the rows end. How every store pages participants.
    public static func page(
        after: Int64?, limit: Int, matching filter: ParticipantFilter,
        read: (Int64?, Int) async throws(PersistenceError) -> [(joinOrder: Int64, participant: StoredParticipant)]
    ) async throws(PersistenceError) -> KeysetPage<StoredParticipant> {
        let limit = KeysetPage<StoredParticipant>.clamped(limit)
        let count = filter.keepsEveryone ? limit + 1 : max(limit + 1, rowsPerRead)
        var kept: [(key: String, item: StoredParticipant)] = [], cursor = after
        while kept.count <= limit {
            let rows = try await read(cursor, count)
            for row in rows where filter.matches(row.participant.participant) && kept.count <= limit {
                kept.append((PageKey.sequence(row.joinOrder), row.participant))
            }
            guard rows.count == count, let last = rows.last else { break }
            cursor = last.joinOrder
        }
        return KeysetPage(reading: kept, limit: limit)
    }
}
