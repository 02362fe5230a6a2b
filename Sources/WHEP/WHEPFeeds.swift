// Every running composition's WHEP feed, by composition ID: the pipeline registers its feed
// when it launches and removes it when it ends; the WHEP endpoint finds a composition's feed
// here to add a viewer. The transport connects itself once it exists (`connect`), so feeds
// made before it (or without it) simply wake no one.

public import Pipeline
import Synchronization

public final class WHEPFeeds: Sendable {
    private let feeds = Mutex<[String: WHEPFeed]>([:])
    private let transport = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// µs, the clock the transport polls viewers on.
    public let clock: @Sendable () -> Int64
    /// Viewers per composition.
    public let maxViewersPerComposition: Int

    public init(maxViewersPerComposition: Int = 50, clock: @escaping @Sendable () -> Int64) {
        self.maxViewersPerComposition = maxViewersPerComposition
        self.clock = clock
    }

    /// The transport to wake (with the composition's ID) after each frame a feed hands its viewers.
    public func connect(wake: @escaping @Sendable (String) -> Void) {
        transport.withLock { $0 = wake }
    }

    /// A feed for a composition that is launching, registered until `unregister`.
    public func makeFeed(compositionId: String, director: CompositionDirector?) -> WHEPFeed {
        let feed = WHEPFeed(name: "WHEP viewers", director: director, maxViewers: maxViewersPerComposition, clock: clock,
                            wake: { [weak self] in self?.wakeTransport(compositionId) })
        feeds.withLock { $0[compositionId] = feed }
        return feed
    }

    private func wakeTransport(_ compositionId: String) { transport.withLock { $0 }?(compositionId) }

    /// Removes the feed if it is still `feed`, ending its viewers.
    public func unregister(compositionId: String, feed: WHEPFeed) {
        feeds.withLock { feeds in
            if feeds[compositionId] === feed { feeds[compositionId] = nil }
        }
        feed.close()
    }

    public func feed(compositionId: String) -> WHEPFeed? { feeds.withLock { $0[compositionId] } }

}
