// Runs botocore_sign.py once for every case the tests need (one Python start-up), so
// the verifier is tested against the signer of the AWS CLI itself, not against our own.

import Auth
import Foundation
import TestSupport

struct BotocoreCase: Encodable, Sendable {
    enum Kind: String, Encodable, Sendable { case client, raw }
    var kind: Kind
    var operation: String? = nil
    var params: [String: JSONValue]? = nil
    var method: String? = nil
    var url: String? = nil
    var headers: [String: String]? = nil
    var body: String? = nil
    var time = BotocoreFixture.isoTime
    var endpoint = BotocoreFixture.endpoint
    var region = BotocoreFixture.region
    var akid = BotocoreFixture.accessKeyId
    var secret = BotocoreFixture.secret
}

enum JSONValue: Encodable, Sendable {
    case string(String), number(Int), array([JSONValue]), object([String: JSONValue])

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

struct BotocoreSigned: Decodable, Sendable {
    var method: String
    var url: String
    var headers: [[String]]
    var body_b64: String
    var canonical_request: String
    var string_to_sign: String

    var body: [UInt8] { Array(Data(base64Encoded: body_b64) ?? Data()) }

    /// The request as the daemon receives it: urllib3 adds the Host header botocore signed.
    var received: SignedRequest {
        let afterScheme = url.range(of: "://")!.upperBound
        let slash = url[afterScheme...].firstIndex(of: "/") ?? url.endIndex
        let host = String(url[afterScheme..<slash])
        var headerLines = headers.map { (name: $0[0], value: $0[1]) }
        headerLines.insert((name: "Host", value: host), at: 0)
        return SignedRequest(method: method, target: String(url[slash...]), headers: headerLines, body: body)
    }
}

enum BotocoreFixture {
    static let region = "us-east-1"
    static let accessKeyId = "AKIDSTAGECOMPOSITOR"
    static let secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
    static let endpoint = "http://127.0.0.1:8086"
    static let isoTime = "2026-11-22T05:12:19"
    /// The same instant as `isoTime`.
    static let signingDate = Date(timeIntervalSince1970: 1_795_324_339)
    static let stageArn = "arn:aws:ivs:us-east-1:123456789012:stage/AbCdEfGhIjKl"

    enum Failure: Error, CustomStringConvertible {
        case python(String)
        var description: String { switch self { case .python(let text): text } }
    }

    /// Signs every case with botocore; throws with Python's stderr when it fails.
    static func sign(_ cases: [BotocoreCase]) throws -> [BotocoreSigned] {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("botocore_sign.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path]
        let input = Pipe.closedOnExec(), output = Pipe.closedOnExec(), errors = Pipe.closedOnExec()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(try JSONEncoder().encode(cases))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure.python(errorText) }
        return try JSONDecoder().decode([BotocoreSigned].self, from: data)
    }
}
