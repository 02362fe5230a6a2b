// Imported public keys: IVS participant tokens are ES384 JWTs, so a customer key must be an
// ECDSA P-384 public key in PEM. Its fingerprint is the SHA-256 of the key's DER encoding.
import APIModels
import Crypto

enum PublicKeyMaterial {
    static func fingerprint(of pem: String) throws(APIError) -> String {
        let key: P384.Signing.PublicKey
        do {
            key = try P384.Signing.PublicKey(pemRepresentation: pem)
        } catch {
            throw .validation("publicKeyMaterial: not an ECDSA P-384 public key in PEM (participant tokens are ES384)")
        }
        return SHA256.hash(data: key.derRepresentation).map { String($0, radix: 16).leftPadded(2) }.joined(separator: ":")
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
