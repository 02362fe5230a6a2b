// Caps on open connections, in total and per remote address, taken before a connection gets
// any handler or buffer: thousands of idle sockets from one host cost it, not us, and one
// address cannot take every place from the others.
import Synchronization

public struct ConnectionLimits: Sendable, Equatable {
    public var total: Int
    public var perAddress: Int

    public init(total: Int = 1_000, perAddress: Int = 50) {
        self.total = total
        self.perAddress = perAddress
    }
}

public final class ConnectionLimiter: Sendable {
    public let limits: ConnectionLimits
    private struct State {
        var total = 0
        var byAddress: [String: Int] = [:]
        var refused: Int64 = 0
    }

    private let state = Mutex(State())

    public init(limits: ConnectionLimits) {
        self.limits = limits
    }

    /// Takes a place for a connection from `address`; false (and counted) when full.
    public func acquire(_ address: String) -> Bool {
        state.withLock { state in
            let current = state.byAddress[address, default: 0]
            guard state.total < limits.total, current < limits.perAddress else {
                state.refused += 1
                return false
            }
            state.total += 1
            state.byAddress[address] = current + 1
            return true
        }
    }

    /// Gives back the place of a connection from `address` that closed.
    public func release(_ address: String) {
        state.withLock { state in
            guard let current = state.byAddress[address] else { return }
            state.total -= 1
            state.byAddress[address] = current > 1 ? current - 1 : nil
        }
    }

    public var counts: (open: Int, refused: Int64) { state.withLock { ($0.total, $0.refused) } }
}
