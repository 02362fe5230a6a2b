// Calls between the nodes of a fleet (an API call forwarded to the node that owns the stage)
// are signed with the secret every node shares: HMAC-SHA256 over the method, the path, the
// query, the sender's time in milliseconds and the body's SHA-256. The receiver accepts a
// signature only within `skewMs` of its own clock, so a captured call cannot be replayed later.
public import Foundation
import Crypto

public enum FleetCallSignature {
    /// Header names: the sending node, its time (ms since 1970), the signature (hex).
    public static let nodeHeader = "x-stage-compositor-fleet-node"
    public static let timeHeader = "x-stage-compositor-fleet-time"
    public static let signatureHeader = "x-stage-compositor-fleet-signature"
    /// How far the sender's clock may be from the receiver's.
    public static let skewMs: Int64 = 30_000

    public static func sign(secret: String, method: String, path: String, query: String, timeMs: Int64, body: Data) -> String {
        let bodyHash = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        let text = [method.uppercased(), path, query, String(timeMs), bodyHash].joined(separator: "\n")
        let code = HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `signature` signs this call and `timeText` is within the skew of `nowMs`.
    /// Every input is the network's: nothing here traps on it.
    public static func verify(secret: String, method: String, path: String, query: String, timeText: String, signature: String,
                              body: Data, nowMs: Int64) -> Bool {
        guard let time = Int64(timeText), signature.utf8.count == 64 else { return false }
        let (difference, overflow) = nowMs.subtractingReportingOverflow(time)
        guard !overflow, difference.magnitude <= UInt64(skewMs) else { return false }
        let expected = Array(sign(secret: secret, method: method, path: path, query: query, timeMs: time, body: body).utf8)
        var mismatch: UInt8 = 0
        for (a, b) in zip(expected, Array(signature.lowercased().utf8)) { mismatch |= a ^ b }
        return mismatch == 0
    }
}
