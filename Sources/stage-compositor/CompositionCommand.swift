// `stage-compositor composition update ...`: directs a running composition through the
// daemon's API (UpdateComposition, an extension in the IVS style), signed with SigV4 from the
// same environment the AWS CLI reads (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION).
import APIModels
import ArgumentParser
import AsyncHTTPClient
import Auth
import Foundation
import Layout
import MediaCore
import NIOCore

struct CompositionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "composition",
        abstract: "Direct a running composition on a daemon.",
        subcommands: [Update.self])
}

extension CompositionCommand {
    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change a running composition's layout, participants' audio and overlays (from its next frame; UpdateComposition).")

        @Option(help: "The daemon's API endpoint, e.g. http://127.0.0.1:8080 (default: $AWS_ENDPOINT_URL).")
        var endpoint: String?

        @Option(help: "The composition's ARN.")
        var arn: String

        @Option(help: "Preset name (looked up in the layouts directories) or path to a LayoutConfiguration JSON file.")
        var layout: String?

        @Option(help: "Milliseconds the tiles glide and fade into the new layout (0...2000; 0 is a cut).")
        var transition: Int?

        @Option(help: "A participant's gain, ID=GAIN (0...2; 0.5 is -6 dB). Repeatable.")
        var gain: [String] = []

        @Option(help: "A participant to mute. Repeatable.")
        var mute: [String] = []

        @Option(help: "A participant to unmute. Repeatable.")
        var unmute: [String] = []

        @Option(help: ArgumentHelp("The overlays from now on: an overlay description (JSON) replacing the one in force ({} removes "
                                   + "them); the image files it names are looked up in the daemon's overlays.directory.",
                                   valueName: "file"))
        var overlays: String?

        @Option(help: "The signing region (default: $AWS_REGION, $AWS_DEFAULT_REGION, us-east-1).")
        var region: String?

        func run() async throws {
            try await reportingFailures {
                let request = try makeRequest()
                let environment = ProcessInfo.processInfo.environment
                guard let endpoint = endpoint ?? environment["AWS_ENDPOINT_URL"] else {
                    throw CLIFailure("give --endpoint (or set AWS_ENDPOINT_URL)")
                }
                let client = try APIClient(endpoint: endpoint, region: region, environment: environment)
                let answer = try await client.call(.updateComposition, body: try APIJSON.encode(request))
                print(String(decoding: answer, as: UTF8.self))
            }
        }

        func makeRequest() throws -> UpdateCompositionRequest {
            var audio: [String: ParticipantAudio] = [:]
            for item in gain {
                let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let value = Double(parts[1]) else { throw CLIFailure("--gain \(item): expected ID=GAIN, e.g. p1=0.5") }
                audio[parts[0], default: ParticipantAudio()].gain = value
            }
            for id in mute { audio[id, default: ParticipantAudio()].muted = true }
            for id in unmute { audio[id, default: ParticipantAudio()].muted = false }
            let resolved: LayoutConfiguration?
            do {
                resolved = try layout.map(LayoutResolver.resolve)
            } catch {
                throw CLIFailure("--layout: \(error)")
            }
            let request = UpdateCompositionRequest(arn: arn, layout: resolved, transitionMs: transition,
                                                   audio: audio.isEmpty ? nil : audio, overlays: try overlays.map { try OverlayFile.read($0) })
            // The daemon's own rules, before anything is sent.
            do {
                try request.validate(options: ValidationOptions())
            } catch {
                throw CLIFailure(error.message)
            }
            return request
        }
    }
}

/// Calls the daemon's API as the AWS SDKs do: `POST /<Operation>`, JSON, SigV4 (service ivs).
struct APIClient {
    let endpoint: URL
    let signer: SigV4Signer
    let sessionToken: String?

    init(endpoint text: String, region: String?, environment: [String: String]) throws {
        var trimmed = text
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let url = URL(string: trimmed), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw CLIFailure("--endpoint \(text): not an http(s) URL")
        }
        guard let key = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"] else {
            throw CLIFailure("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the daemon's api.credentials) to sign the call")
        }
        endpoint = url
        signer = SigV4Signer(accessKeyId: key, secret: secret,
                             region: region ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? "us-east-1")
        sessionToken = environment["AWS_SESSION_TOKEN"]
    }

    /// The answer's body; an IVS error becomes a CLIFailure with its type and message.
    func call(_ operation: APIOperation, body: Data) async throws -> Data {
        let path = operation.requestURI
        var host = endpoint.host ?? ""
        if let port = endpoint.port { host += ":\(port)" }
        var headers: [(name: String, value: String)] = [("host", host), ("content-type", "application/json")]
        if let sessionToken { headers.append(("x-amz-security-token", sessionToken)) }
        let bytes = [UInt8](body)
        let signed = signer.sign(SignedRequest(method: "POST", path: path, headers: headers, payload: .bytes(bytes)),
                                 at: SigV4Time(secondsSince1970: Int64(Date().timeIntervalSince1970)), body: bytes)
        var request = HTTPClientRequest(url: endpoint.absoluteString + path)
        request.method = .POST
        for header in signed.headers where header.name.lowercased() != "host" { request.headers.add(name: header.name, value: header.value) }
        request.body = .bytes(ByteBuffer(bytes: bytes))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let answer = Data(buffer: try await response.body.collect(upTo: 4 << 20))
        guard response.status.code == 200 else {
            let type = response.headers.first(name: "x-amzn-ErrorType") ?? "HTTP \(response.status.code)"
            let message = (try? JSONSerialization.jsonObject(with: answer) as? [String: Any])?["message"] as? String
                ?? String(decoding: answer, as: UTF8.self)
            throw CLIFailure("\(operation.name): \(type): \(message)")
        }
        return answer
    }
}
