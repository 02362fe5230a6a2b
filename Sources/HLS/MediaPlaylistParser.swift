// Reading a media playlist back (RFC 8216 §4.3): what a re-render and crash recovery need —
// segments with exact durations, discontinuities, initialization sections and
// program date-times. Pure; the text comes from storage, so it is hostile: bounded, and no
// arithmetic on it can trap.
import MediaCore

public struct PlaylistParseError: Error, Equatable, Sendable, CustomStringConvertible {
    public var line: Int
    public var message: String

    public var description: String { "line \(line): \(message)" }
}

extension MediaPlaylist {
    /// Playlists longer than this many segments are refused (a day of 1 s segments).
    public static let maxParsedSegments = 86_400

    /// Parses a media playlist. Unknown tags are skipped (RFC 8216 §4.1); a segment without
    /// EXTINF, a malformed value, or a multivariant playlist is an error naming the line.
    public static func parse(_ text: String) throws(PlaylistParseError) -> MediaPlaylist {
        var playlist = MediaPlaylist(targetDurationSeconds: 1, mediaSequence: 0, playlistType: .event, independentSegments: false)
        var sawHeader = false
        var pendingDuration: MediaTime?
        var pendingDiscontinuity = false
        var pendingDate: Int64?
        var currentMap: String?
        var number = 0
        // "\r\n" is one Character in Swift: split on any line break.
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            number += 1
            func fail(_ message: String) -> PlaylistParseError { PlaylistParseError(line: number, message: message) }
            if !sawHeader {
                guard line == "#EXTM3U" else { throw fail("not an HLS playlist (no #EXTM3U)") }
                sawHeader = true
                continue
            }
            if line.isEmpty { continue }
            guard line.hasPrefix("#") else {
                guard let duration = pendingDuration else { throw fail("segment \(line) has no #EXTINF") }
                guard playlist.segments.count < maxParsedSegments else { throw fail("more than \(maxParsedSegments) segments") }
                playlist.segments.append(HLSSegment(uri: String(line), duration: duration, discontinuity: pendingDiscontinuity,
                                                    initSegmentURI: currentMap, programDateTimeMs: pendingDate))
                pendingDuration = nil
                pendingDiscontinuity = false
                pendingDate = nil
                continue
            }
            let (tag, value) = split(line)
            switch tag {
            case "#EXTINF":
                let digits = value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                guard let micro = microseconds(digits) else { throw fail("EXTINF duration '\(digits)' is not a decimal number of seconds") }
                pendingDuration = .microseconds(micro)
            case "#EXT-X-TARGETDURATION":
                guard let seconds = Int(value), (0...86_400).contains(seconds) else { throw fail("EXT-X-TARGETDURATION '\(value)'") }
                playlist.targetDurationSeconds = seconds
            case "#EXT-X-MEDIA-SEQUENCE":
                guard let sequence = Int(value), sequence >= 0 else { throw fail("EXT-X-MEDIA-SEQUENCE '\(value)'") }
                playlist.mediaSequence = sequence
            case "#EXT-X-PLAYLIST-TYPE":
                guard let type = PlaylistType(rawValue: String(value)) else { throw fail("EXT-X-PLAYLIST-TYPE '\(value)'") }
                playlist.playlistType = type
            case "#EXT-X-ENDLIST":
                playlist.endList = true
            case "#EXT-X-INDEPENDENT-SEGMENTS":
                playlist.independentSegments = true
            case "#EXT-X-DISCONTINUITY":
                pendingDiscontinuity = true
            case "#EXT-X-PROGRAM-DATE-TIME":
                guard let date = UTCTimestamp.parseMilliseconds(String(value)) else { throw fail("EXT-X-PROGRAM-DATE-TIME '\(value)'") }
                pendingDate = date
            case "#EXT-X-MAP":
                guard let uri = quotedAttribute("URI", in: value) else { throw fail("EXT-X-MAP without URI") }
                currentMap = uri
                if playlist.segments.isEmpty { playlist.initSegmentURI = uri }
            case "#EXT-X-STREAM-INF":
                throw fail("a multivariant playlist, not a media playlist")
            default:
                continue
            }
        }
        guard sawHeader else { throw PlaylistParseError(line: 1, message: "empty: not an HLS playlist") }
        return playlist
    }

    private static func split(_ line: Substring) -> (Substring, Substring) {
        guard let colon = line.firstIndex(of: ":") else { return (line, "") }
        return (line[..<colon], line[line.index(after: colon)...])
    }

    /// "2.955" → 2_955_000; at most 9 integer digits, extra fraction digits truncated.
    static func microseconds(_ text: Substring) -> Int64? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 9, whole.allSatisfy(\.isASCIIDigit),
              let seconds = Int64(whole) else { return nil }
        var fraction: Int64 = 0
        if parts.count == 2 {
            let digits = parts[1]
            guard !digits.isEmpty, digits.count <= 32, digits.allSatisfy(\.isASCIIDigit) else { return nil }
            for (index, digit) in digits.enumerated() where index < 6 { fraction = fraction * 10 + Int64(digit.asciiValue! - 48) }
            for _ in min(digits.count, 6)..<6 { fraction *= 10 }
        }
        return seconds * 1_000_000 + fraction
    }

    /// The value of `NAME="..."` in an attribute list.
    static func quotedAttribute(_ name: String, in list: Substring) -> String? {
        guard let range = list.range(of: name + "=\"") else { return nil }
        let rest = list[range.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
