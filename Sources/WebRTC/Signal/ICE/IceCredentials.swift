/// An ICE username fragment and password (RFC 8839 §5.4), as exchanged in SDP.
public struct IceCredentials: Equatable, Sendable {
    public var ufrag: String
    public var pwd: String

    public init(ufrag: String, pwd: String) {
        self.ufrag = ufrag
        self.pwd = pwd
    }

    /// ice-char: ALPHA / DIGIT / "+" / "/".
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    /// Fresh credentials. 8 characters of ufrag carry 48 bits and 24 of pwd 144 bits, above
    /// the 24 and 128 bits RFC 8445 §5.3 asks for (and above the 4 and 22 characters SDP needs).
    public static func random(using generator: inout some RandomNumberGenerator) -> IceCredentials {
        func draw(_ count: Int) -> String {
            String((0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
        }
        return IceCredentials(ufrag: draw(8), pwd: draw(24))
    }

    /// True when both are made of ice-chars and long enough for SDP (ufrag 4–256, pwd 22–256).
    public var isValidForSDP: Bool {
        func iceChars(_ text: String, _ lengths: ClosedRange<Int>) -> Bool {
            lengths.contains(text.count) && text.allSatisfy { Self.alphabet.contains($0) }
        }
        return iceChars(ufrag, 4...256) && iceChars(pwd, 22...256)
    }
}
