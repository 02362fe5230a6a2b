/// Random `nextToken`s within the model's character set (base64 and URL-safe symbols), for
/// checking that a List operation answers any token with a page or a ValidationException.
public enum PageTokens {
    public static func random(count: Int, seed: UInt64) -> [String] {
        var generator = SeededGenerator(seed: seed)
        let alphabet = Array("abcXYZ0189+/=_-")
        return (0..<count).map { _ in
            String((0..<Int.random(in: 0...64, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
        }
    }
}
