// List pagination: an opaque `nextToken` that remembers the last key returned, so items
// added or deleted between pages neither repeat nor get skipped.
import Foundation

public enum Pagination {
    /// The model's maxResults defaults (documented per operation): 100 for compositions and
    /// encoder and storage configurations, 50 for the rest.
    public static func defaultMaxResults(for operation: APIOperation) -> Int {
        switch operation {
        case .listStages, .listStageSessions, .listParticipants, .listParticipantEvents, .listIngestConfigurations,
             .listPublicKeys, .listParticipantReplicas:
            50
        default:
            100
        }
    }

    /// One page of `items` ordered by `key` (ascending; ARNs make a stable order), starting
    /// after the key in `nextToken`. `nextToken` in the result is nil on the last page.
    public static func page<Item>(
        _ items: [Item], key: (Item) -> String, nextToken: String?, maxResults: Int?, defaultMaxResults: Int
    ) throws(APIError) -> (items: [Item], nextToken: String?) {
        let (after, limit) = try start(nextToken: nextToken, maxResults: maxResults, defaultMaxResults: defaultMaxResults)
        let sorted = items.map { (key($0), $0) }.sorted { $0.0 < $1.0 }
        var remaining = sorted[...]
        if let after { remaining = sorted.drop { $0.0 <= after } }
        let page = remaining.prefix(limit)
        let token = remaining.count > limit ? page.last.map { encodeToken(lastKey: $0.0) } : nil
        return (page.map(\.1), token)
    }

    /// Where a page starts: after the key in `nextToken` (nil for the first page), with at
    /// most `maxResults` items (else `defaultMaxResults`). A token this service did not make
    /// is a ValidationException.
    public static func start(nextToken: String?, maxResults: Int?, defaultMaxResults: Int)
        throws(APIError) -> (after: String?, limit: Int) {
        let limit = maxResults ?? defaultMaxResults
        guard limit >= 1 else { throw Rule.fail("maxResults", "must be at least 1 (got \(limit))") }
        guard let nextToken, !nextToken.isEmpty else { return (nil, limit) }
        return (try decodeToken(nextToken), limit)
    }

    static let tokenPrefix = "v1:"

    /// Base64 of "v1:<last key>": within the model's `[a-zA-Z0-9+/=_-]*` pattern.
    public static func encodeToken(lastKey: String) -> String {
        Data((tokenPrefix + lastKey).utf8).base64EncodedString()
    }

    static func decodeToken(_ token: String) throws(APIError) -> String {
        guard let data = Data(base64Encoded: token),
              let text = String(data: data, encoding: .utf8), text.hasPrefix(tokenPrefix),
              // No key this service issues holds a NUL, which PostgreSQL's text cannot.
              !text.utf8.contains(0) else {
            throw Rule.fail("nextToken", "is not a token returned by this service")
        }
        return String(text.dropFirst(tokenPrefix.count))
    }
}

/// A List operation's request: where the page starts and how long it may be.
public protocol PagedRequest {
    var nextToken: String? { get }
    var maxResults: Int? { get }
}

extension ListCompositionsRequest: PagedRequest {}
extension ListEncoderConfigurationsRequest: PagedRequest {}
extension ListStorageConfigurationsRequest: PagedRequest {}
extension ListStagesRequest: PagedRequest {}
extension ListStageSessionsRequest: PagedRequest {}
extension ListParticipantsRequest: PagedRequest {}
extension ListParticipantEventsRequest: PagedRequest {}
extension ListIngestConfigurationsRequest: PagedRequest {}
extension ListPublicKeysRequest: PagedRequest {}
extension ListParticipantReplicasRequest: PagedRequest {}
