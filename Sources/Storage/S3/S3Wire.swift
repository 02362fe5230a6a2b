// The few bits of S3's wire format the storage needs: key encoding in paths and queries,
// the ListObjectsV2 result, and the <Error> body. A tiny parser instead of XMLParser: the
// documents are flat, and FoundationXML would drag libxml2 into the daemon.
internal import Auth
internal import Foundation

enum SigV4Path {
    /// S3 URI-encoding of a key: every byte but `A-Z a-z 0-9 - . _ ~` and `/` as `%XX`.
    static func encode(_ key: String) -> String { SigV4Canonical.percentEncode(key, keepSlash: true) }
    /// A query value: `/` is encoded too.
    static func encodeQueryValue(_ value: String) -> String { SigV4Canonical.percentEncode(value, keepSlash: false) }
}

/// One page of a ListObjectsV2 answer.
struct S3ListPage: Equatable, Sendable {
    var keys: [String]
    var isTruncated: Bool
    var nextContinuationToken: String?
}

/// An S3 `<Error><Code>…</Code><Message>…</Message></Error>` body.
struct S3ErrorBody: Equatable, Sendable {
    var code: String
    var message: String
}

enum S3XML {
    /// Parses a `ListBucketResult`. Only `<Key>` inside `<Contents>` counts (never the
    /// `<Prefix>` echo or `<CommonPrefixes>`).
    static func listPage(_ text: String) -> S3ListPage? {
        guard text.contains("<ListBucketResult") else { return nil }
        var keys: [String] = []
        for contents in elements(named: "Contents", in: text[...]) {
            if let key = elements(named: "Key", in: contents).first { keys.append(unescape(key)) }
        }
        let truncated = elements(named: "IsTruncated", in: text[...]).first.map { $0.trimmingSpaces == "true" } ?? false
        let token = elements(named: "NextContinuationToken", in: text[...]).first.map(unescape)
        return S3ListPage(keys: keys, isTruncated: truncated, nextContinuationToken: token)
    }

    static func error(_ text: String) -> S3ErrorBody? {
        guard let body = elements(named: "Error", in: text[...]).first,
              let code = elements(named: "Code", in: body).first else { return nil }
        return S3ErrorBody(code: unescape(code), message: elements(named: "Message", in: body).first.map(unescape) ?? "")
    }

    /// The inner text of every `<name>…</name>` (or empty `<name/>`) at any depth, in order.
    static func elements(named name: String, in text: Substring) -> [Substring] {
        var found: [Substring] = []
        let open = "<\(name)", close = "</\(name)>"
        var rest = text
        while let start = rest.range(of: open) {
            let afterName = rest[start.upperBound...]
            guard let next = afterName.first else { break }
            // `<Key>` must not match `<KeyCount>`.
            guard next == ">" || next == " " || next == "/" || next == "\n" || next == "\t" || next == "\r",
                  let tagEnd = afterName.firstIndex(of: ">") else {
                rest = afterName
                continue
            }
            if tagEnd > afterName.startIndex, afterName[afterName.index(before: tagEnd)] == "/" {
                found.append(afterName[tagEnd..<tagEnd])
                rest = afterName[afterName.index(after: tagEnd)...]
                continue
            }
            let inner = afterName[afterName.index(after: tagEnd)...]
            guard let end = inner.range(of: close) else { break }
            found.append(inner[..<end.lowerBound])
            rest = inner[end.upperBound...]
        }
        return found
    }

    /// XML character references and the five predefined entities; CDATA kept verbatim.
    static func unescape(_ text: Substring) -> String {
        if text.hasPrefix("<![CDATA["), text.hasSuffix("]]>") {
            return String(text.dropFirst(9).dropLast(3))
        }
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = text
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semi = rest[amp...].firstIndex(of: ";") else { break }
            let entity = rest[rest.index(after: amp)..<semi]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                let scalar: Unicode.Scalar? = if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                    UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                } else if entity.hasPrefix("#") {
                    UInt32(entity.dropFirst(), radix: 10).flatMap(Unicode.Scalar.init)
                } else { nil }
                if let scalar { out.unicodeScalars.append(scalar) } else { out += rest[amp...semi] }
            }
            rest = rest[rest.index(after: semi)...]
        }
        out += rest
        return out
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }
}
