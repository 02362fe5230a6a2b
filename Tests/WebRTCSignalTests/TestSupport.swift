// Test-only helpers for the signalling tests. (Seeded generators, hex and the injected
// HMAC-SHA1 come from TestSupport.)
import WebRTCSignal

extension TransportAddress {
    static func v4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) -> TransportAddress {
        TransportAddress(ip: .ipv4(a, b, c, d), port: port)
    }
}
