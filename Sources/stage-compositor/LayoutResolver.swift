import Foundation
import Layout

/// Resolves `--layout`: a file path (JSON LayoutConfiguration) or a preset name.
enum LayoutResolver {
    static func resolve(_ nameOrPath: String) throws -> LayoutConfiguration {
        if nameOrPath == "grid" { return .defaultGrid }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: nameOrPath)) } catch {
            throw CLIFailure("--layout: cannot read \(nameOrPath)")
        }
        do { return try JSONDecoder().decode(LayoutConfiguration.self, from: data) } catch {
            throw CLIFailure("--layout: \(nameOrPath): \(error)")
        }
    }
}
