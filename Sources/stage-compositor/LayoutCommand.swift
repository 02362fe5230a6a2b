// `stage-compositor layout ...`: look at what a layout does without running a composition.

import ArgumentParser
import Foundation
import Layout
import MediaCore
import Pipeline

struct LayoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "layout",
        abstract: "Inspect layout presets.",
        subcommands: [Preview.self, Gallery.self])
}

extension LayoutCommand {
    struct Preview: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Render a layout for N sample participants to a PNG.")

        @Option(help: "Preset name (looked up in the layouts directories) or path to a LayoutConfiguration JSON file.")
        var layout: String = "grid"

        @Option(help: "Number of participants (P1...Pn, arriving in that order).")
        var participants: Int

        @Option(help: "1-based index of the participant whose featured attribute is \"true\".")
        var featured: Int?

        @Option(help: "1-based index of the participant whose PiP attribute is \"true\".")
        var pip: Int?

        @Option(help: "Comma-separated 1-based indices of participants with stopped video, e.g. 2,3.")
        var stopped: String?

        @Option(help: "Canvas size WxH.")
        var size: String = "1280x720"

        @Option(help: "Output PNG file.")
        var out: String

        @Option(help: "Render a frame of the glide from this layout (preset or file) to --layout, --progress of the way.")
        var transitionFrom: String?

        @Option(help: "With --transition-from: how far into the transition, 0...1 (0.5: its midpoint in time).")
        var progress: Double = 0.5

        @Option(help: "Draw the overlays of this description (JSON; its files are relative to its folder).")
        var overlays: String?

        @Option(help: "Comma-separated names for the labels of P1...Pn (the `name` attribute), e.g. Alice,Bob.")
        var names: String?

        @Option(help: "Comma-separated 1-based indices of participants whose audio is muted (labels show a badge).")
        var muted: String?

        mutating func validate() throws {
            guard (0...64).contains(participants) else { throw ValidationError("--participants must be 0...64") }
            guard progress.isFinite, (0...1).contains(progress) else { throw ValidationError("--progress must be 0...1") }
            _ = try parseSize(size)
            _ = try parseIndices(stopped)
            _ = try parseIndices(muted)
        }

        mutating func run() throws {
            let configuration = try LayoutPresets.resolve(layout, searchDirectories: LayoutPresets.defaultSearchDirectories())
            let canvas = try parseSize(size)
            let sample = LayoutPreview.sampleParticipants(
                count: participants, featured: Set(featured.map { [$0] } ?? []), pip: Set(pip.map { [$0] } ?? []),
                stopped: try parseIndices(stopped), configuration: configuration)
            var transition: LayoutPreview.Transition?
            if let transitionFrom {
                let from = try LayoutPresets.resolve(transitionFrom, searchDirectories: LayoutPresets.defaultSearchDirectories())
                let fromSample = LayoutPreview.sampleParticipants(
                    count: participants, featured: Set(featured.map { [$0] } ?? []), pip: Set(pip.map { [$0] } ?? []),
                    stopped: try parseIndices(stopped), configuration: from)
                transition = LayoutPreview.Transition(from: from, fromParticipants: fromSample, progress: progress)
            }
            let decoration = try overlays.map { try overlayPreview($0, canvas: canvas, sample: sample) }
            let png = LayoutPreview.renderPNG(configuration: configuration, canvas: canvas, participants: sample, transition: transition,
                                              decoration: decoration)
            try writeOutput(Data(png), to: out)
            if let transition {
                for item in transition.tiles(to: configuration, participants: sample, canvas: canvas) { print(item) }
            } else {
                for tile in configuration.makeEngine().tiles(canvas: canvas, participants: sample) {
                    print(tile)
                }
            }
        }

        /// The overlays of `path`, loaded as `compose --overlays` loads them, over the sample named by `--names`.
        private func overlayPreview(_ path: String, canvas: PixelSize, sample: [LayoutParticipant]) throws -> OverlayPreview {
            let prepared = try OverlayFile.prepare(path)
            let names = names.map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) } ?? []
            let muted = try parseIndices(muted)
            let participants = sample.enumerated().map { index, participant in
                var attributes = participant.attributes
                if index < names.count { attributes["name"] = names[index] }
                return StageParticipantState(participantId: participant.participantId, userId: participant.userId, attributes: attributes,
                                             isPublished: true, isVideoStopped: participant.video == .stopped,
                                             isAudioMuted: muted.contains(index + 1), arrivalIndex: index)
            }
            return OverlayPreview(overlays: prepared, canvas: canvas, participants: participants)
        }
    }

    /// Renders every preset for several participant counts (docs/layouts/).
    struct Gallery: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Render every preset for several participant counts into a directory and print a Markdown table.")

        @Option(help: "Directory for the PNGs.")
        var outDir: String

        @Option(help: "Canvas size WxH.")
        var size: String = "480x270"

        @Option(help: "Comma-separated participant counts.")
        var counts: String = "1,2,3,4,6,9,12"

        mutating func run() throws {
            let directories = LayoutPresets.defaultSearchDirectories()
            let canvas = try parseSize(size)
            let counts = try parseIndices(counts).sorted()
            try FileManager.default.createDirectory(atPath: outDir, withIntermediateDirectories: true)
            print("| preset | " + counts.map { "\($0)" }.joined(separator: " | ") + " |")
            print("|---|" + counts.map { _ in "---" }.joined(separator: "|") + "|")
            for name in LayoutPresets.availableNames(in: directories) {
                let configuration = try LayoutPresets.resolve(name, searchDirectories: directories)
                var cells: [String] = []
                for count in counts {
                    // P1 is featured / in the PiP window; the last of 3+ has its camera off.
                    let sample = LayoutPreview.sampleParticipants(
                        count: count, featured: [1], pip: [1], stopped: count >= 3 ? [count] : [],
                        configuration: configuration)
                    let png = LayoutPreview.renderPNG(configuration: configuration, canvas: canvas, participants: sample)
                    let file = "\(name)-\(count).png"
                    try Data(png).write(to: URL(fileURLWithPath: outDir).appendingPathComponent(file), options: .atomic)
                    cells.append("![\(name) \(count)](\(file))")
                }
                print("| `\(name)` | " + cells.joined(separator: " | ") + " |")
            }
        }
    }
}

private func parseSize(_ text: String) throws -> PixelSize {
    let parts = text.lowercased().split(separator: "x")
    guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]),
          (2...8192).contains(width), (2...8192).contains(height) else {
        throw ValidationError("size must be WxH with each side 2...8192, e.g. 1280x720 (got '\(text)')")
    }
    return PixelSize(width: width, height: height)
}

private func parseIndices(_ text: String?) throws -> Set<Int> {
    guard let text, !text.isEmpty else { return [] }
    var indices = Set<Int>()
    for part in text.split(separator: ",") {
        guard let index = Int(part.trimmingCharacters(in: .whitespaces)), index >= 1 else {
            throw ValidationError("expected comma-separated positive integers (got '\(text)')")
        }
        indices.insert(index)
    }
    return indices
}

/// Writes a file atomically (temp file + rename), except over something that is not a
/// regular file (`/dev/null`, a pipe): renaming over a device would replace it.
func writeOutput(_ data: Data, to path: String) throws {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
       let type = try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType,
       type != .typeRegular {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.write(contentsOf: data)
        return
    }
    try data.write(to: URL(fileURLWithPath: path), options: .atomic)
}
