// How a datagram on the shared UDP socket finds its session, for publishers and viewers
// alike: STUN by the USERNAME's first half (our ufrag, which only the offerer learnt from
// our answer), everything else by the address a valid check selected. Event loop only.

import WebRTCSignal

/// A session the index can route to: its resource ID, our ICE ufrag, the HTTP peer that
/// created it (per-address caps), and the path ICE selected (nil before a valid check).
protocol IndexedSession: AnyObject {
    var id: String { get }
    var ufrag: String { get }
    var clientAddress: String { get }
    var address: TransportAddress? { get set }
}

struct SessionIndex<Entry: IndexedSession> {
    private(set) var byID: [String: Entry] = [:]
    private var byUfrag: [String: Entry] = [:]
    private var byAddress: [TransportAddress: Entry] = [:]

    var count: Int { byID.count }
    /// A snapshot: callers may remove entries while walking it.
    var entries: [Entry] { Array(byID.values) }

    func count(clientAddress: String) -> Int { byID.values.count { $0.clientAddress == clientAddress } }

    subscript(id: String) -> Entry? { byID[id] }

    mutating func insert(_ entry: Entry) {
        byID[entry.id] = entry
        byUfrag[entry.ufrag] = entry
    }

    /// The session a datagram from `source` belongs to, if any.
    func route(_ bytes: [UInt8], from source: TransportAddress) -> Entry? {
        if DatagramKind(classifying: bytes) == .stun, let ufrag = Self.localUfrag(bytes), let entry = byUfrag[ufrag] {
            return entry
        }
        return byAddress[source]
    }

    /// After a datagram: the path the session's ICE agent selected now (its media goes there,
    /// and comes from there).
    mutating func select(_ entry: Entry, address selected: TransportAddress?) {
        guard let selected, selected != entry.address else { return }
        if let old = entry.address, byAddress[old] === entry { byAddress[old] = nil }
        entry.address = selected
        byAddress[selected] = entry
    }

    /// False when it was not indexed (removed already).
    @discardableResult
    mutating func remove(_ entry: Entry) -> Bool {
        guard byID[entry.id] === entry else { return false }
        byID[entry.id] = nil
        if byUfrag[entry.ufrag] === entry { byUfrag[entry.ufrag] = nil }
        if let address = entry.address, byAddress[address] === entry { byAddress[address] = nil }
        return true
    }

    /// The first half of a Binding request's USERNAME ("ours:theirs"), without a full decode.
    static func localUfrag(_ bytes: [UInt8]) -> String? {
        guard let message = try? STUNMessage.decode(bytes), let username = message.username,
              let colon = username.firstIndex(of: ":") else { return nil }
        return String(username[..<colon])
    }
}
