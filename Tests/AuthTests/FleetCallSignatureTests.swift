import Auth
import Foundation
import Testing

@Suite struct FleetCallSignatureTests {
    let secret = "a-fleet-secret-of-some-length"
    let body = Data(#"{"stageArn":"arn:aws:ivs:us-east-1:123456789012:stage/abc"}"#.utf8)

    func signed(at time: Int64 = 1_000_000) -> String {
        FleetCallSignature.sign(secret: secret, method: "POST", path: "/StartComposition", query: "", timeMs: time, body: body)
    }

    @Test("a call signed with the shared secret verifies within the skew")
    func verifies() {
        #expect(FleetCallSignature.verify(secret: secret, method: "post", path: "/StartComposition", query: "", timeText: "1000000",
                                          signature: signed(), body: body, nowMs: 1_000_000 + 29_999))
        #expect(FleetCallSignature.verify(secret: secret, method: "POST", path: "/StartComposition", query: "", timeText: "1000000",
                                          signature: signed().uppercased(), body: body, nowMs: 1_000_000 - 30_000))
    }

    @Test("any change refuses it: secret, path, query, body, time, signature, or a clock too far")
    func refuses() {
        let good = signed()
        func verify(secret: String? = nil, path: String = "/StartComposition", query: String = "", time: String = "1000000",
                    signature: String? = nil, body: Data? = nil, now: Int64 = 1_000_000) -> Bool {
            FleetCallSignature.verify(secret: secret ?? self.secret, method: "POST", path: path, query: query, timeText: time,
                                      signature: signature ?? good, body: body ?? self.body, nowMs: now)
        }
        #expect(!verify(secret: "another-secret-of-some-length"))
        #expect(!verify(path: "/StopComposition"))
        #expect(!verify(query: "x=1"))
        #expect(!verify(time: "1000001"))
        #expect(!verify(body: Data("{}".utf8)))
        #expect(!verify(signature: String(good.dropLast()) + (good.hasSuffix("0") ? "1" : "0")))
        #expect(!verify(signature: String(good.prefix(63))))
        #expect(!verify(now: 1_000_000 + 30_001))
        #expect(!verify(time: "-9223372036854775808", now: Int64.max))
        #expect(!verify(time: "not a number"))
    }
}
