import MediaCore
// A tiny JSON writer that keeps keys in the order given. The recording metadata files are
// compared by people (and our tests) against the field order of IVS's examples, which
// JSONEncoder cannot promise.

indirect enum OrderedJSON: Hashable, Sendable {
    case string(String)
    case integer(Int64)
    case array([OrderedJSON])
    case object([(key: String, value: OrderedJSON)])

    static func == (lhs: OrderedJSON, rhs: OrderedJSON) -> Bool { lhs.rendered() == rhs.rendered() }
    func hash(into hasher: inout Hasher) { hasher.combine(rendered()) }

    /// Pretty-printed with two-space indentation and `"key": value`, like the seed's examples.
    func rendered() -> String {
        var out = ""
        write(into: &out, indent: 0)
        return out
    }

    private func write(into out: inout String, indent: Int) {
        switch self {
        case .string(let text): OrderedJSON.writeString(text, into: &out)
        case .integer(let value): out += String(value)
        case .array(let items):
            guard !items.isEmpty else { out += "[]"; return }
            out += "[\n"
            for (index, item) in items.enumerated() {
                out += String(repeating: "  ", count: indent + 1)
                item.write(into: &out, indent: indent + 1)
                out += index == items.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: "  ", count: indent) + "]"
        case .object(let members):
            guard !members.isEmpty else { out += "{}"; return }
            out += "{\n"
            for (index, member) in members.enumerated() {
                out += String(repeating: "  ", count: indent + 1)
                OrderedJSON.writeString(member.key, into: &out)
                out += ": "
                member.value.write(into: &out, indent: indent + 1)
                out += index == members.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: "  ", count: indent) + "}"
        }
    }

    private static func writeString(_ text: String, into out: inout String) {
        JSONText.append(text, to: &out)
    }
}
