// The module rule: README.md's table says which of our modules each module may import; every
// `import` in Sources/ is checked against it, so a dependency that points up (ingest importing
// FFmpeg, the live hub importing Pipeline, one ingest kind importing the other) fails the suite.
import Foundation
import Testing

struct ModuleRule: Equatable {
    var module: String
    var folder: String
    var allowed: Set<String>
}

/// A source file's import of one of our modules that its module's row does not allow, or a
/// source file no row claims.
struct ImportViolation: Equatable, CustomStringConvertible {
    var file: String
    var line: Int
    var message: String
    var description: String { "\(file):\(line): \(message)" }
}

enum ModuleImportRule {
    /// C modules: not rows (no Swift sources), but importable only where a row names them.
    static let cModules: Set<String> = ["CFFmpeg", "CFFmpegShim", "COpenSSL", "CSRTP", "CWebRTCShim", "CTextStack"]

    /// The rows between the README's `module-rule` markers.
    static func parse(readme: String) throws -> [ModuleRule] {
        guard let begin = readme.range(of: "<!-- module-rule:begin -->"),
              let end = readme.range(of: "<!-- module-rule:end -->", range: begin.upperBound..<readme.endIndex) else {
            throw RuleError("README.md has no module-rule markers")
        }
        var rules: [ModuleRule] = []
        for line in readme[begin.upperBound..<end.lowerBound].split(separator: "\n") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 5, !cells[1].isEmpty, cells[1] != "module", !cells[1].hasPrefix("---") else { continue }
            let folder = cells[2].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let allowed = cells[3] == "—" ? [] : cells[3].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            rules.append(ModuleRule(module: cells[1], folder: folder, allowed: Set(allowed)))
        }
        return rules
    }

    /// Checks `files` (path relative to the repository, contents) against `rules`.
    static func violations(rules: [ModuleRule], files: [(path: String, text: String)]) -> [ImportViolation] {
        let ours = Set(rules.map(\.module)).union(cModules)
        var found: [ImportViolation] = []
        for rule in rules {
            for name in rule.allowed where !ours.contains(name) {
                found.append(ImportViolation(file: "README.md", line: 0, message: "\(rule.module) allows unknown module \(name)"))
            }
        }
        for file in files {
            // The longest folder that holds the file is its module (Sources/Ingest/RTMP, not Sources/Ingest).
            let owner = rules.filter { file.path.hasPrefix($0.folder + "/") }.max { $0.folder.count < $1.folder.count }
            guard let owner else {
                found.append(ImportViolation(file: file.path, line: 0, message: "no module row in README.md claims this folder"))
                continue
            }
            for (index, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                guard let imported = importedModule(line), ours.contains(imported), imported != owner.module,
                      !owner.allowed.contains(imported) else { continue }
                found.append(ImportViolation(file: file.path, line: index + 1,
                                             message: "\(owner.module) may not import \(imported) (README.md, module table)"))
            }
        }
        return found
    }

    /// The module an `import` line names (`@testable import X`, `public import X`, `import struct X.Y` …).
    static func importedModule(_ line: Substring) -> String? {
        var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        while let first = words.first, first.hasPrefix("@") || ["public", "internal", "package", "private", "fileprivate"].contains(first) {
            words.removeFirst()
        }
        guard words.count >= 2, words[0] == "import" else { return nil }
        let kinds: Set<String> = ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"]
        let target = kinds.contains(words[1]) && words.count >= 3 ? words[2] : words[1]
        return String(target.split(separator: ".").first ?? "")
    }

    struct RuleError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

@Suite("The module rule (README.md's table)")
struct ModuleImportTests {
    static func sourceFiles() throws -> [(path: String, text: String)] {
        let sources = repositoryRoot.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else { return [] }
        var files: [(path: String, text: String)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let relative = String(url.standardizedFileURL.path.dropFirst(repositoryRoot.standardizedFileURL.path.count + 1))
            files.append((relative, try String(contentsOf: url, encoding: .utf8)))
        }
        return files.sorted { $0.path < $1.path }
    }

    @Test("every import in Sources/ is one its module's row allows, and every folder has a row")
    func theTreeFollowsTheRule() throws {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let rules = try ModuleImportRule.parse(readme: readme)
        #expect(rules.count >= 25, "the table was not read: \(rules.count) rows")
        let files = try Self.sourceFiles()
        #expect(files.count > 200)
        let violations = ModuleImportRule.violations(rules: rules, files: files)
        #expect(violations.isEmpty, "\(violations.map(\.description).joined(separator: "\n"))")
    }

    @Test("the rules the issue names are in the table: ingest needs neither FFmpeg nor Pipeline nor the other ingest")
    func theTableSaysWhatTheDesignSays() throws {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let rules = Dictionary(uniqueKeysWithValues: try ModuleImportRule.parse(readme: readme).map { ($0.module, $0.allowed) })
        #expect(rules["LiveStage"] == ["MediaCore"])
        #expect(rules["MediaCore"] == [])
        for ingest in ["IngestServer", "WebRTCIngest"] {
            let allowed = try #require(rules[ingest])
            #expect(allowed.isDisjoint(with: ["FFmpeg", "Pipeline", "IngestServer", "WebRTCIngest", "Server"]), "\(ingest): \(allowed)")
        }
        for pure in ["MediaCore", "Layout", "Lifecycle", "HLS", "APIModels", "Events", "Stages", "RTMP", "WebRTCSignal", "WebRTCMedia"] {
            #expect(try #require(rules[pure]).isDisjoint(with: ["FFmpeg", "CFFmpeg", "Pipeline", "Server"]), "\(pure)")
        }
    }

    @Test("a forbidden import, an unclaimed folder and an unknown allowed module are each reported with their line")
    func violationsAreFound() {
        let rules = [ModuleRule(module: "MediaCore", folder: "Sources/MediaCore", allowed: []),
                     ModuleRule(module: "LiveStage", folder: "Sources/LiveStage", allowed: ["MediaCore"]),
                     ModuleRule(module: "FFmpeg", folder: "Sources/FFmpeg", allowed: ["MediaCore", "CFFmpeg", "Nope"])]
        let files: [(path: String, text: String)] = [
            ("Sources/LiveStage/Hub.swift", "// a comment: import FFmpeg\nimport Foundation\npublic import MediaCore\n@preconcurrency internal import FFmpeg\n"),
            ("Sources/LiveStage/Other.swift", "import struct FFmpeg.Packet\nimport CFFmpeg\n"),
            ("Sources/FFmpeg/Wrap.swift", "internal import CFFmpeg\nimport MediaCore\nimport LiveStage\n"),
            ("Sources/Elsewhere/X.swift", "import MediaCore\n"),
        ]
        let found = ModuleImportRule.violations(rules: rules, files: files).map(\.description)
        #expect(found == [
            "README.md:0: FFmpeg allows unknown module Nope",
            "Sources/LiveStage/Hub.swift:4: LiveStage may not import FFmpeg (README.md, module table)",
            "Sources/LiveStage/Other.swift:1: LiveStage may not import FFmpeg (README.md, module table)",
            "Sources/LiveStage/Other.swift:2: LiveStage may not import CFFmpeg (README.md, module table)",
            "Sources/FFmpeg/Wrap.swift:3: FFmpeg may not import LiveStage (README.md, module table)",
            "Sources/Elsewhere/X.swift:0: no module row in README.md claims this folder",
        ])
    }
}
