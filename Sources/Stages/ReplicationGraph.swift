// Participant replication as a directed graph of stages: an edge source → destination for
// each replica of one participant. A new replica must not close a cycle, or its media would
// go round the cycle for ever (each forwarder feeding the next the same packets).

/// The replicas of one participant, as edges between stage ARNs.
public struct ReplicationGraph: Sendable {
    private var next: [String: [String]] = [:]

    public init(edges: some Sequence<(String, String)>) {
        for (source, destination) in edges { next[source, default: []].append(destination) }
        for key in next.keys { next[key]?.sort() }
    }

    /// The stages from `start` to `goal` following replicas (both ends included), or nil
    /// when `goal` cannot be reached. A replica `goal → start` would close a cycle exactly
    /// when there is such a path; `start == goal` is a path of one stage.
    public func path(from start: String, to goal: String) -> [String]? {
        var previous: [String: String] = [start: start]
        var frontier = [start]
        while !frontier.isEmpty {
            var following: [String] = []
            for stage in frontier {
                if stage == goal {
                    var path = [goal]
                    while let before = previous[path[0]], before != path[0] { path.insert(before, at: 0) }
                    return path
                }
                for destination in next[stage] ?? [] where previous[destination] == nil {
                    previous[destination] = stage
                    following.append(destination)
                }
            }
            frontier = following
        }
        return nil
    }
}
