import Foundation
import Layout

/// Resolves `--layout`: a preset name from layouts/ or a LayoutConfiguration JSON file.
enum LayoutResolver {
    static func resolve(_ nameOrPath: String) throws -> LayoutConfiguration {
        do {
            let configuration = try LayoutPresets.resolve(nameOrPath, searchDirectories: LayoutPresets.defaultSearchDirectories())
            try configuration.validate()
            return configuration
        } catch {
            throw CLIFailure("--layout: \(error)")
        }
    }
}
