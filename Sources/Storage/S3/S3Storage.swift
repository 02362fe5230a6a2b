// ObjectStorage on any S3-compatible endpoint: SigV4-signed single PUTs (our objects are
// segments, playlists, JSON and JPEGs of a few MB), GET, HEAD and ListObjectsV2, each
// retried with backoff on connection errors, 5xx and SlowDown. The HTTPClient is the
// caller's: it owns its event loops and shuts it down.
public import AsyncHTTPClient
internal import Auth
public import Foundation
public import Logging
internal import NIOCore
internal import NIOHTTP1

public struct S3Storage: ObjectStorage {
    public let configuration: S3StorageConfiguration
    let httpClient: HTTPClient
    let logger: Logger
    let signer: SigV4Signer
    let retryPolicy: S3RetryPolicy

    /// Largest object `get` reads into memory, and largest error/list body read.
    static let maximumObjectBytes = 256 << 20
    static let maximumResponseBytes = 16 << 20
    /// ListObjectsV2 page size; S3 never returns more than 1000.
    let listPageSize: Int

    /// - Parameters:
    ///   - httpClient: used for every request; the caller keeps it alive while the storage is
    ///     in use and shuts it down afterwards.
    ///   - listPageSize: keys per ListObjectsV2 page (1...1000); tests lower it to exercise
    ///     continuation tokens.
    public init(configuration: S3StorageConfiguration, httpClient: HTTPClient,
                logger: Logger = Logger(label: "stage-compositor.storage.s3"), listPageSize: Int = 1000) {
        self.configuration = configuration
        self.httpClient = httpClient
        self.logger = logger
        self.signer = SigV4Signer(accessKeyId: configuration.accessKeyId, secret: configuration.secretAccessKey,
                                  region: configuration.region, service: "s3")
        self.retryPolicy = S3RetryPolicy(maxAttempts: configuration.maxAttempts,
                                         baseDelay: configuration.baseRetryDelay,
                                         maximumDelay: configuration.maximumRetryDelay)
        self.listPageSize = min(max(listPageSize, 1), 1000)
    }

    // MARK: - ObjectStorage

    public func put(_ data: Data, key: String, contentType: String?) async throws(StorageError) {
        try ObjectKey.validate(key)
        var headers: [(name: String, value: String)] = []
        if let contentType { headers.append((name: "Content-Type", value: contentType)) }
        let response = try await send(.PUT, key: key, objectKey: configuration.objectKeyPrefix + key,
                                      headers: headers, body: Array(data))
        guard response.status == 200 else { throw failure(response, key: key, operation: "PUT") }
    }

    public func get(key: String) async throws(StorageError) -> Data {
        try ObjectKey.validate(key)
        let response = try await send(.GET, key: key, objectKey: configuration.objectKeyPrefix + key,
                                      responseLimit: Self.maximumObjectBytes)
        guard response.status == 200 else { throw failure(response, key: key, operation: "GET") }
        return Data(response.body)
    }

    /// False for a missing object, and also when the request fails (the protocol has no
    /// error here); failures are logged.
    public func exists(key: String) async -> Bool {
        guard (try? ObjectKey.validate(key)) != nil else { return false }
        do {
            let response = try await send(.HEAD, key: key, objectKey: configuration.objectKeyPrefix + key)
            if response.status == 200 { return true }
            if response.status != 404 {
                logger.warning("S3 HEAD failed", metadata: ["storage.key": "\(key)", "http.status": "\(response.status)"])
            }
            return false
        } catch {
            logger.warning("S3 HEAD failed", metadata: ["storage.key": "\(key)", "error": "\(error)"])
            return false
        }
    }

    /// Follows continuation tokens until the listing is complete.
    public func list(prefix: String) async throws(StorageError) -> [String] {
        if prefix.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) || prefix.hasPrefix("/") {
            throw .invalidKey(key: prefix, reason: "not a relative key prefix")
        }
        let fullPrefix = configuration.objectKeyPrefix + prefix
        var keys: [String] = []
        var token: String?
        repeat {
            var query = [(name: "list-type", value: "2"), (name: "max-keys", value: "\(listPageSize)")]
            if !fullPrefix.isEmpty { query.append((name: "prefix", value: SigV4Path.encodeQueryValue(fullPrefix))) }
            if let token { query.append((name: "continuation-token", value: SigV4Path.encodeQueryValue(token))) }
            let response = try await send(.GET, key: prefix, objectKey: nil, query: query)
            guard response.status == 200 else { throw failure(response, key: prefix, operation: "ListObjectsV2") }
            guard let page = S3XML.listPage(String(decoding: response.body, as: UTF8.self)) else {
                throw .ioFailure(key: prefix, message: "ListObjectsV2 answer is not a ListBucketResult")
            }
            keys += page.keys.compactMap { $0.hasPrefix(fullPrefix) ? String($0.dropFirst(configuration.objectKeyPrefix.count)) : nil }
            guard page.isTruncated else { break }
            guard let next = page.nextContinuationToken, !next.isEmpty, next != token else {
                throw .ioFailure(key: prefix, message: "ListObjectsV2 truncated without a new continuation token")
            }
            token = next
        } while true
        return keys.sorted()
    }

    // MARK: - Requests

    struct Response: Sendable {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]
    }

    /// Signs and sends one request, retrying retryable failures. Returns the last response
    /// (any status); throws only when no response came back from the final attempt.
    /// `key` is what errors name; `objectKey` the full S3 key (nil: the bucket).
    func send(_ method: HTTPMethod, key: String, objectKey: String?,
              query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = [],
              body: [UInt8] = [], responseLimit: Int = maximumResponseBytes) async throws(StorageError) -> Response {
        var attempt = 0
        while true {
            attempt += 1
            let outcome: Result<Response, any Error>
            do {
                outcome = .success(try await sendOnce(method, objectKey: objectKey, query: query, headers: headers,
                                                      body: body, responseLimit: responseLimit))
            } catch {
                outcome = .failure(error)
            }
            let retryable: Bool
            let reason: String
            switch outcome {
            case .success(let response):
                retryable = S3RetryPolicy.isRetryable(status: response.status)
                reason = "HTTP \(response.status)" + (S3XML.error(String(decoding: response.body, as: UTF8.self)).map { " \($0.code)" } ?? "")
                if !retryable || attempt >= retryPolicy.maxAttempts { return response }
            case .failure(let error):
                retryable = true
                reason = "\(error)"
                if attempt >= retryPolicy.maxAttempts {
                    throw .ioFailure(key: key, message: "\(method.rawValue) failed after \(attempt) attempts: \(error)")
                }
            }
            precondition(retryable)
            let delay = retryPolicy.delay(afterAttempt: attempt, random: Double.random(in: 0...1))
            logger.notice("S3 request failed, retrying", metadata: [
                "storage.key": "\(key)", "http.method": "\(method.rawValue)", "s3.attempt": "\(attempt)",
                "s3.reason": "\(reason)", "s3.retry_delay": "\(delay)"])
            do {
                try await Task.sleep(for: delay)
            } catch {
                throw .ioFailure(key: key, message: "\(method.rawValue) cancelled while retrying (\(reason))")
            }
        }
    }

    /// A request ready to send: full URL and every header, signed.
    struct PreparedRequest: Sendable {
        var url: String
        var headers: [(name: String, value: String)]
    }

    /// Signs a request the way botocore's S3 signer does: `host`, every given header,
    /// `x-amz-date`, `x-amz-content-sha256` (the real payload hash) and the session token
    /// are signed; the canonical URI is the path as sent.
    func prepare(_ method: String, objectKey: String?, query: [(name: String, value: String)],
                 headers: [(name: String, value: String)], body: [UInt8], at time: SigV4Time) -> PreparedRequest {
        let location = configuration.location(objectKey: objectKey)
        var unsigned = [(name: "Host", value: location.host)] + headers
        if let token = configuration.sessionToken { unsigned.append((name: "X-Amz-Security-Token", value: token)) }
        let signed = signer.sign(SignedRequest(method: method, path: location.path, query: query,
                                               headers: unsigned, payload: .bytes(body)),
                                 at: time, body: body, includeContentHash: true, pathRule: .asSent)
        let queryText = query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
        return PreparedRequest(url: location.url + (queryText.isEmpty ? "" : "?" + queryText), headers: signed.headers)
    }

    private func sendOnce(_ method: HTTPMethod, objectKey: String?, query: [(name: String, value: String)],
                          headers: [(name: String, value: String)], body: [UInt8],
                          responseLimit: Int) async throws -> Response {
        let now = SigV4Time(secondsSince1970: Int64(Date().timeIntervalSince1970))
        let prepared = prepare(method.rawValue, objectKey: objectKey, query: query, headers: headers, body: body, at: now)
        var request = HTTPClientRequest(url: prepared.url)
        request.method = method
        for header in prepared.headers { request.headers.add(name: header.name, value: header.value) }
        if method == .PUT { request.body = .bytes(ByteBuffer(bytes: body)) }

        let response = try await httpClient.execute(request, timeout: .nanoseconds(configuration.requestTimeout.nanoseconds))
        let buffer = method == .HEAD ? ByteBuffer() : try await response.body.collect(upTo: responseLimit)
        return Response(status: Int(response.status.code),
                        headers: response.headers.map { (name: $0.name, value: $0.value) },
                        body: Array(buffer.readableBytesView))
    }

    /// The StorageError for a final non-success response, naming the key and S3's own code
    /// and message.
    func failure(_ response: Response, key: String, operation: String) -> StorageError {
        let error = S3XML.error(String(decoding: response.body, as: UTF8.self))
        let detail = error.map { "\($0.code): \($0.message)" } ?? "HTTP \(response.status)"
        let bucket = configuration.bucket
        switch (response.status, error?.code) {
        case (404, "NoSuchBucket"?):
            return .ioFailure(key: key, message: "\(operation) on bucket '\(bucket)' failed: \(detail)")
        case (404, _) where operation != "ListObjectsV2":
            return .notFound(key: key)
        case (403, _), (401, _):
            return .accessDenied(key: key, message: "\(operation) s3://\(bucket)/\(configuration.objectKeyPrefix)\(key) "
                                 + "refused (HTTP \(response.status)) \(detail)")
        default:
            return .ioFailure(key: key, message: "\(operation) s3://\(bucket)/\(configuration.objectKeyPrefix)\(key) "
                              + "failed (HTTP \(response.status)) \(detail)")
        }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
