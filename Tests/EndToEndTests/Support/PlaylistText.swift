// A deliberately small, independent reader of the playlists we wrote (not the HLS module's
// renderer), so the checks do not just mirror the code under test.
import Foundation

struct ParsedMediaPlaylist {
    struct Segment { var duration: Double; var durationText: String; var uri: String }
    var lines: [String]
    var segments: [Segment] = []

    init(_ text: String) {
        lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var pending: (Double, String)?
        for line in lines {
            if line.hasPrefix("#EXTINF:") {
                let value = line.dropFirst("#EXTINF:".count).split(separator: ",", omittingEmptySubsequences: false).first ?? ""
                pending = (Double(value) ?? .nan, String(value))
            } else if !line.isEmpty, !line.hasPrefix("#"), let (duration, text) = pending {
                segments.append(Segment(duration: duration, durationText: text, uri: line))
                pending = nil
            }
        }
    }

    /// Value of the first `#TAG:value` line, nil when absent.
    func tag(_ name: String) -> String? {
        lines.first { $0.hasPrefix("#\(name):") }.map { String($0.dropFirst(name.count + 2)) }
    }

    func has(_ line: String) -> Bool { lines.contains(line) }

    var totalMilliseconds: Int64 {
        // EXTINF is written with millisecond precision: sum the integers, not the doubles.
        segments.reduce(0) { $0 + Int64(($1.duration * 1000).rounded()) }
    }
}

func readJSONObject(_ url: URL) throws -> [String: Any] {
    let data = try Data(contentsOf: url)
    guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
        throw SubprocessError(description: "\(url.path) is not a JSON object")
    }
    return object
}
