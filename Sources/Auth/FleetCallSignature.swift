// Calls between the nodes of a fleet (an API call forwarded to the node that owns the stage)
// are signed with the secret every node shares: HMAC-SHA256 over the method, the path, the
// query, the sender's time in milliseconds, a nonce and the body's SHA-256. The receiver
// accepts a signature only within `skewMs` of its own clock, and each nonce once (it keeps
// them in the shared database for the window), so a captured call cannot be replayed at all.
// Between nodes on an untrusted network, use HTTPS (`listen.tls`, `database.fleet.caFile`).
public import Foundation
import Crypto

public enum FleetCallSignature {
    /// Header names: the sending node, its time (ms since 1970), the signature (hex).
    public static let nodeHeader = "x-stage-compositor-fleet-node"
    public static let timeHeader = "x-stage-compositor-fleet-time"
    public static let signatureHeader = "x-stage-compositor-fleet-signature"
    /// A new random value per call (32 hex digits): the receiver takes each one once.
    public static let nonceHeader = "x-stage-compositor-fleet-nonce"
    /// How far the sender's clock may be from the receiver's.
    public static let skewMs: Int64 = 30_000

    /// 128 random bits as 32 lowercase hex digits.
    public static func makeNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let value = generator.next() as UInt64
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// Whether `text` has a nonce's shape (what the network sends is checked before it is kept).
    public static func isNonce(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    public static func sign(secret: String, method: String, path: String, query: String, timeMs: Int64, nonce: String,
                            body: Data) -> String {
        let bodyHash = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        let text = [method.uppercased(), path, query, String(timeMs), nonce, bodyHash].joined(separator: "\n")
        let code = HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    /// The call's time (ms since 1970) when `signature` signs it, `nonce` is a nonce and the
    /// time is within the skew of `nowMs`; nil otherwise. The caller then takes the nonce
    /// (once) until the time plus the skew. Every input is the network's: nothing traps on it.
    public static func verify(secret: String, method: String, path: String, query: String, timeText: String, nonce: String,
                              signature: String, body: Data, nowMs: Int64) -> Int64? {
        guard let time = Int64(timeText), signature.utf8.count == 64, isNonce(nonce) else { return nil }
        let (difference, overflow) = nowMs.subtractingReportingOverflow(time)
        guard !overflow, difference.magnitude <= UInt64(skewMs) else { return nil }
        let expected = Array(sign(secret: secret, method: method, path: path, query: query, timeMs: time, nonce: nonce, body: body).utf8)
        var mismatch: UInt8 = 0
        for (a, b) in zip(expected, Array(signature.lowercased().utf8)) { mismatch |= a ^ b }
        return mismatch == 0 ? time : nil
    }
}
