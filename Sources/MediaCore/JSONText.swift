/// JSON string literals for the hand-rendered, order-preserving JSON we write (API errors,
/// events, recording metadata): RFC 8259 escaping, `/` left alone as IVS writes it.
public enum JSONText {
    public static func quote(_ value: String) -> String {
        var out = ""
        append(value, to: &out)
        return out
    }

    public static func append(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
