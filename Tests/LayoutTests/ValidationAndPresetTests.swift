import Foundation
import Testing
@testable import Layout

@Suite struct ValidationTests {
    func message(_ configuration: LayoutConfiguration) -> String? {
        do {
            try configuration.validate()
            return nil
        } catch {
            return error.description
        }
    }

    @Test func validConfigurationsPass() {
        #expect(message(LayoutConfiguration()) == nil)
        #expect(message(.defaultGrid) == nil)
        #expect(message(LayoutConfiguration(grid: GridConfiguration(featuredParticipantAttribute: "", gridGap: 0))) == nil)
        #expect(message(LayoutConfiguration(pip: PipConfiguration(
            pipParticipantAttribute: String(repeating: "a-_Z9", count: 25) + "abc", pipOffset: 0, pipWidth: 1, pipHeight: 1))) == nil)
    }

    @Test func exactlyOneOfGridOrPip() {
        #expect(message(LayoutConfiguration(grid: GridConfiguration(), pip: PipConfiguration()))
            == "layout: specify either grid or pip, not both")
    }

    @Test(arguments: [
        (LayoutConfiguration(grid: GridConfiguration(gridGap: -1)), "layout.grid.gridGap: must be at least 0 (got -1)"),
        (LayoutConfiguration(pip: PipConfiguration(gridGap: -2)), "layout.pip.gridGap: must be at least 0 (got -2)"),
        (LayoutConfiguration(pip: PipConfiguration(pipOffset: -1)), "layout.pip.pipOffset: must be at least 0 (got -1)"),
        (LayoutConfiguration(pip: PipConfiguration(pipWidth: 0)), "layout.pip.pipWidth: must be at least 1 (got 0)"),
        (LayoutConfiguration(pip: PipConfiguration(pipHeight: -5)), "layout.pip.pipHeight: must be at least 1 (got -5)"),
        (LayoutConfiguration(grid: GridConfiguration(featuredParticipantAttribute: "is featured")),
         "layout.grid.featuredParticipantAttribute: 'is featured' must match [a-zA-Z0-9-_]*"),
        (LayoutConfiguration(grid: GridConfiguration(participantOrderAttribute: "seat.no")),
         "layout.grid.participantOrderAttribute: 'seat.no' must match [a-zA-Z0-9-_]*"),
        (LayoutConfiguration(pip: PipConfiguration(pipParticipantAttribute: "pïp")),
         "layout.pip.pipParticipantAttribute: 'pïp' must match [a-zA-Z0-9-_]*"),
        (LayoutConfiguration(pip: PipConfiguration(featuredParticipantAttribute: String(repeating: "a", count: 129))),
         "layout.pip.featuredParticipantAttribute: length must be between 0 and 128 characters (got 129)"),
        (LayoutConfiguration(pip: PipConfiguration(participantOrderAttribute: "a/b")),
         "layout.pip.participantOrderAttribute: 'a/b' must match [a-zA-Z0-9-_]*"),
    ])
    func invalidFieldsAreNamed(configuration: LayoutConfiguration, expected: String) {
        #expect(message(configuration) == expected)
    }

    @Test func errorIsTypedWithFieldAndReason() {
        #expect(throws: LayoutValidationError.invalidField(field: "layout.pip.pipWidth", reason: "must be at least 1 (got 0)")) {
            try LayoutConfiguration(pip: PipConfiguration(pipWidth: 0)).validate()
        }
    }

    @Test func jsonRoundTripsInTheIVSShape() throws {
        let json = #"{"pip":{"pipParticipantAttribute":"isPip","pipOffset":10,"pipPosition":"TOP_RIGHT","pipBehavior":"DYNAMIC","videoFillMode":"CONTAIN"}}"#
        let configuration = try JSONDecoder().decode(LayoutConfiguration.self, from: Data(json.utf8))
        #expect(configuration.grid == nil)
        #expect(configuration.pip == PipConfiguration(videoFillMode: .contain, pipParticipantAttribute: "isPip",
                                                      pipBehavior: .dynamic, pipOffset: 10, pipPosition: .topRight))
        let again = try JSONDecoder().decode(LayoutConfiguration.self, from: JSONEncoder().encode(configuration))
        #expect(again == configuration)
        #expect(VideoAspectRatio.allCases.map(\.rawValue) == ["AUTO", "VIDEO", "SQUARE", "PORTRAIT"])
        #expect(PipPosition.allCases.map(\.rawValue) == ["TOP_LEFT", "TOP_RIGHT", "BOTTOM_LEFT", "BOTTOM_RIGHT"])
        #expect(PipBehavior.allCases.map(\.rawValue) == ["STATIC", "DYNAMIC"])
        #expect(VideoFillMode.allCases.map(\.rawValue) == ["FILL", "COVER", "CONTAIN"])
    }
}

@Suite struct PresetTests {
    /// The repository's layouts/ directory.
    static let repositoryLayouts = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("layouts").path

    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("layout-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func resolveError(_ nameOrPath: String, _ directories: [String]) -> LayoutValidationError? {
        do {
            _ = try LayoutPresets.resolve(nameOrPath, searchDirectories: directories)
            return nil
        } catch {
            return error
        }
    }

    @Test func shippedPresetsResolveAndMatchTheirNames() throws {
        let directories = [Self.repositoryLayouts]
        #expect(LayoutPresets.availableNames(in: directories) == [
            "grid", "grid-featured", "grid-portrait", "grid-square", "pip-bottom-left", "pip-bottom-right",
            "pip-dynamic", "pip-top-left", "pip-top-right",
        ])
        #expect(try LayoutPresets.resolve("grid", searchDirectories: directories) == LayoutConfiguration(grid: GridConfiguration()))
        #expect(try LayoutPresets.resolve("grid-featured", searchDirectories: directories).grid?.featuredParticipantAttribute == "isFeatured")
        #expect(try LayoutPresets.resolve("grid-square", searchDirectories: directories).grid?.videoAspectRatio == .square)
        #expect(try LayoutPresets.resolve("grid-portrait", searchDirectories: directories).grid?.videoAspectRatio == .portrait)
        for (name, position) in [("pip-top-left", PipPosition.topLeft), ("pip-top-right", .topRight),
                                 ("pip-bottom-left", .bottomLeft), ("pip-bottom-right", .bottomRight)] {
            let pip = try LayoutPresets.resolve(name, searchDirectories: directories).pip
            #expect(pip?.pipPosition == position)
            #expect(pip?.pipParticipantAttribute == "isPip")
        }
        let dynamic = try LayoutPresets.resolve("pip-dynamic", searchDirectories: directories)
        #expect(dynamic.pip?.pipBehavior == .dynamic)
        #expect(dynamic.pip?.pipParticipantAttribute == "isPip")
    }

    @Test func pathsAreReadDirectly() throws {
        let byPath = try LayoutPresets.resolve(Self.repositoryLayouts + "/pip-top-left.json", searchDirectories: [])
        #expect(byPath.pip?.pipPosition == .topLeft)
        let directory = try Self.temporaryDirectory()
        let file = directory + "/mine.json"
        try Data(#"{"grid":{"gridGap":8}}"#.utf8).write(to: URL(fileURLWithPath: file))
        #expect(try LayoutPresets.resolve(file, searchDirectories: []).grid?.gridGap == 8)
        // A name is looked up in order: the first directory with NAME.json wins.
        try Data(#"{"pip":{}}"#.utf8).write(to: URL(fileURLWithPath: directory + "/grid.json"))
        #expect(try LayoutPresets.resolve("grid", searchDirectories: [directory, Self.repositoryLayouts]).pip != nil)
        #expect(try LayoutPresets.resolve("grid", searchDirectories: [Self.repositoryLayouts, directory]).grid != nil)
    }

    @Test func unknownPresetListsTheAvailableNames() {
        let error = resolveError("gird", [Self.repositoryLayouts, "/nonexistent"])
        guard case .unknownPreset(let name, let available, _) = error else {
            Issue.record("expected unknownPreset, got \(String(describing: error))")
            return
        }
        #expect(name == "gird")
        #expect(available.contains("grid") && available.contains("pip-dynamic"))
        #expect(error!.description.hasPrefix("unknown layout preset 'gird' (available: grid, grid-featured,"))
    }

    @Test(arguments: [
        (#"{"grid":{"gridGap":"two"}}"#, "bad.json: grid.gridGap: expected an integer"),
        (#"{"grid":{"gridgap":2}}"#, "bad.json: grid.gridgap: unknown field"),
        (#"{"grid":{"videoFillMode":"STRETCH"}}"#, "bad.json: grid.videoFillMode: must be one of FILL, COVER, CONTAIN"),
        (#"{"pip":{"pipPosition":"CENTER"}}"#, "bad.json: pip.pipPosition: must be one of TOP_LEFT, TOP_RIGHT, BOTTOM_LEFT, BOTTOM_RIGHT"),
        (#"{"pip":{"pipWidth":0}}"#, "bad.json: layout.pip.pipWidth: must be at least 1 (got 0)"),
        (#"{"grid":{},"pip":{}}"#, "bad.json: layout: specify either grid or pip, not both"),
        (#"{"grid":{"omitStoppedVideo":"yes"}}"#, "bad.json: grid.omitStoppedVideo: expected a boolean"),
        (#"{"mosaic":{}}"#, "bad.json: mosaic: unknown field (expected grid or pip)"),
        (#"{"grid":[1]}"#, "bad.json: grid: expected an object"),
        (#"["grid"]"#, #"bad.json: expected a JSON object like {"grid":{...}} or {"pip":{...}}"#),
        (#"{"grid":{"#, "bad.json: not valid JSON"),
    ])
    func malformedPresetsNameTheFileAndField(json: String, expected: String) {
        do {
            _ = try LayoutPresets.decode(Data(json.utf8), path: "bad.json")
            Issue.record("\(json) decoded")
        } catch {
            #expect(error.description == expected)
        }
    }

    @Test func missingFileIsUnreadable() {
        let error = resolveError("/nonexistent/layout.json", [])
        #expect(error == .unreadableFile(path: "/nonexistent/layout.json", reason: "no such file"))
    }

    @Test func defaultSearchDirectoriesOrderAndDevBuildDiscovery() throws {
        let root = try Self.temporaryDirectory()
        let fileManager = FileManager.default
        try fileManager.createDirectory(atPath: root + "/checkout/layouts", withIntermediateDirectories: true)
        try fileManager.createDirectory(atPath: root + "/checkout/.build/debug", withIntermediateDirectories: true)
        try Data("// manifest".utf8).write(to: URL(fileURLWithPath: root + "/checkout/Package.swift"))
        try fileManager.createDirectory(atPath: root + "/env-layouts", withIntermediateDirectories: true)
        try fileManager.createDirectory(atPath: root + "/cwd/layouts", withIntermediateDirectories: true)
        try fileManager.createDirectory(atPath: root + "/prefix/bin", withIntermediateDirectories: true)
        try fileManager.createDirectory(atPath: root + "/prefix/share/stage-compositor/layouts", withIntermediateDirectories: true)

        let dev = LayoutPresets.defaultSearchDirectories(
            environment: ["STAGE_COMPOSITOR_LAYOUTS": root + "/env-layouts:" + root + "/missing"],
            currentDirectory: root + "/cwd", executablePath: root + "/checkout/.build/debug/stage-compositor")
        #expect(dev.map { URL(fileURLWithPath: $0).standardizedFileURL.path } == [
            root + "/env-layouts", root + "/cwd/layouts", root + "/checkout/layouts",
        ].map { URL(fileURLWithPath: $0).standardizedFileURL.path })

        let installed = LayoutPresets.defaultSearchDirectories(
            environment: [:], currentDirectory: root, executablePath: root + "/prefix/bin/stage-compositor")
        #expect(installed.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
            == [URL(fileURLWithPath: root + "/prefix/share/stage-compositor/layouts").standardizedFileURL.path])
    }
}
