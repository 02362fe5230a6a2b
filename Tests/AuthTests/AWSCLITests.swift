import Auth
import Foundation
import Testing
import TestSupport

/// A request the loopback server in aws_cli_capture.py received from the real `aws` CLI.
private struct CapturedRequest: Decodable {
    var method: String
    var target: String
    var headers: [[String]]
    var body_b64: String

    var signedRequest: SignedRequest {
        SignedRequest(method: method, target: target, headers: headers.map { (name: $0[0], value: $0[1]) },
                      body: Array(Data(base64Encoded: body_b64) ?? Data()))
    }
}

@Suite("SigV4 with the real aws CLI over HTTP")
struct AWSCLITests {
    @Test("list-compositions, untag-resource and tag-resource as sent by `aws ivs-realtime` are allowed")
    func cliRequestsVerify() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("aws_cli_capture.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, BotocoreFixture.accessKeyId, BotocoreFixture.secret,
                             BotocoreFixture.region]
        let output = Pipe.closedOnExec()
        process.standardOutput = output
        try process.run()
        // Wait on a Dispatch thread: the CLI takes seconds, and the test pool is small.
        let data = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: data)
            }
        }
        let captured = try JSONDecoder().decode([CapturedRequest].self, from: data)
        try #require(captured.count == 3, "is the aws CLI installed? captured \(captured.count) requests")

        let verifier = SigV4Verifier(credentials: [BotocoreFixture.accessKeyId: BotocoreFixture.secret],
                                     region: BotocoreFixture.region)
        for request in captured {
            #expect(verifier.verify(request.signedRequest) == .allowed(accessKeyId: BotocoreFixture.accessKeyId),
                    "\(request.method) \(request.target)")
        }
        #expect(captured[1].target.hasPrefix("/tags/arn%3Aaws%3Aivs%3A"))
        var tampered = captured[2].signedRequest
        tampered.payload = .bytes(Array(#"{"tags":{"team":"evil"}}"#.utf8))
        #expect(verifier.verify(tampered) == .denied(.signatureMismatch))
    }
}
