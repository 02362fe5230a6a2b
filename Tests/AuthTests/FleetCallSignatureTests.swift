import Auth
import Foundation
import Testing

@Suite struct FleetCallSignatureTests {
    let secret = "a-fleet-secret-of-some-length"
    let body = Data(#"{"stageArn":"arn:aws:ivs:us-east-1:123456789012:stage/abc"}"#.utf8)
    let nonce = "0123456789abcdef0123456789abcdef"

    func signed(at time: Int64 = 1_000_000) -> String {
        FleetCallSignature.sign(secret: secret, method: "POST", path: "/StartComposition", query: "", timeMs: time, nonce: nonce, body: body)
    }

    @Test("a call signed with the shared secret verifies within the skew, giving its time")
    func verifies() {
        #expect(FleetCallSignature.verify(secret: secret, method: "post", path: "/StartComposition", query: "", timeText: "1000000",
                                          nonce: nonce, signature: signed(), body: body, nowMs: 1_000_000 + 29_999) == 1_000_000)
        #expect(FleetCallSignature.verify(secret: secret, method: "POST", path: "/StartComposition", query: "", timeText: "1000000",
                                          nonce: nonce, signature: signed().uppercased(), body: body, nowMs: 1_000_000 - 30_000) == 1_000_000)
    }

    @Test("any change refuses it: secret, path, query, body, time, nonce, signature, or a clock too far")
    func refuses() {
        let good = signed()
        func verify(secret: String? = nil, path: String = "/StartComposition", query: String = "", time: String = "1000000",
                    nonce: String? = nil, signature: String? = nil, body: Data? = nil, now: Int64 = 1_000_000) -> Bool {
            FleetCallSignature.verify(secret: secret ?? self.secret, method: "POST", path: path, query: query, timeText: time,
                                      nonce: nonce ?? self.nonce, signature: signature ?? good, body: body ?? self.body, nowMs: now) != nil
        }
        #expect(verify())
        #expect(!verify(secret: "another-secret-of-some-length"))
        #expect(!verify(path: "/StopComposition"))
        #expect(!verify(query: "x=1"))
        #expect(!verify(time: "1000001"))
        #expect(!verify(body: Data("{}".utf8)))
        #expect(!verify(nonce: "1123456789abcdef0123456789abcdef"))
        #expect(!verify(nonce: ""))
        #expect(!verify(nonce: "0123456789ABCDEF0123456789ABCDEF"))
        #expect(!verify(signature: String(good.dropLast()) + (good.hasSuffix("0") ? "1" : "0")))
        #expect(!verify(signature: String(good.prefix(63))))
        #expect(!verify(now: 1_000_000 + 30_001))
        #expect(!verify(time: "-9223372036854775808", now: Int64.max))
        #expect(!verify(time: "not a number"))
    }

    @Test("nonces are new each call and have the checked shape")
    func nonces() {
        let made = (0..<1_000).map { _ in FleetCallSignature.makeNonce() }
        #expect(Set(made).count == made.count)
        #expect(made.allSatisfy(FleetCallSignature.isNonce))
        #expect(!FleetCallSignature.isNonce(String(repeating: "g", count: 32)))
        #expect(!FleetCallSignature.isNonce(String(repeating: "a", count: 33)))
    }
}
