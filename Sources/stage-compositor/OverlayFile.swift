// An overlay description read from a file (`compose --overlays`, `composition update
// --overlays`): JSON whose unknown fields are refused (a typo is an error, not a setting
// silently ignored), checked by the same rules and with the same messages as the API's
// `overlays` field.
import APIModels
import Foundation
import Layout
import Pipeline

enum OverlayFile {
    /// The description in `path`; a problem names `option`, the file and the field.
    static func read(_ path: String, option: String = "--overlays") throws -> OverlayConfiguration {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw CLIFailure("\(option): cannot read \(path): \(error.localizedDescription)")
        }
        let json: Any
        do { json = try JSONSerialization.jsonObject(with: data) } catch {
            throw CLIFailure("\(option): \(path): not valid JSON")
        }
        guard json is [String: Any] else { throw CLIFailure("\(option): \(path): not an overlay description (a JSON object)") }
        if let problem = unknownField(in: json) { throw CLIFailure("\(option): \(path): \(problem)") }
        let configuration: OverlayConfiguration
        do { configuration = try APIJSON.decode(OverlayConfiguration.self, from: data) } catch {
            throw CLIFailure("\(option): \(path): overlays.\(error.message)")
        }
        do throws(LayoutValidationError) {
            try configuration.validate(prefix: "overlays")
        } catch {
            throw CLIFailure("\(option): \(path): \(error)")
        }
        return configuration
    }

    /// The description in `path` as a composition takes it: its image files read from the
    /// file's folder and decoded, its fonts checked.
    static func prepare(_ path: String, option: String = "--overlays") throws -> PreparedOverlays {
        let configuration = try read(path, option: option)
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        do throws(LayoutValidationError) {
            return try OverlayAssets(directory: folder).prepare(configuration, prefix: "overlays")
        } catch {
            throw CLIFailure("\(option): \(path): \(error)")
        }
    }

    /// The fields each object of a description may have: the Codable types' own properties.
    static let knownFields: [String: [String]] = [
        "overlays": fields(of: OverlayConfiguration()),
        "labels": fields(of: LabelOverlay()),
        "images": fields(of: ImageOverlay(file: "")),
        "background": fields(of: BackgroundOverlay()),
        "slate": fields(of: SlateOverlay()),
        "banners": fields(of: BannerOverlay(id: "", text: "")),
    ]

    private static func fields(of value: Any) -> [String] { Mirror(reflecting: value).children.compactMap(\.label) }

    /// `overlays.images[1].fil: unknown field (expected one of: ...)` for the first field no
    /// type knows; nil when there is none. Values of the wrong type are left to the decoder.
    static func unknownField(in json: Any) -> String? {
        func check(_ object: [String: Any], kind: String, path: String) -> String? {
            let known = knownFields[kind] ?? []
            for key in object.keys.sorted() where !known.contains(key) {
                return "\(path).\(key): unknown field (expected one of: \(known.joined(separator: ", ")))"
            }
            return nil
        }
        guard let top = json as? [String: Any] else { return nil }
        if let problem = check(top, kind: "overlays", path: "overlays") { return problem }
        for kind in ["labels", "background", "slate"] {
            if let object = top[kind] as? [String: Any], let problem = check(object, kind: kind, path: "overlays.\(kind)") { return problem }
        }
        for kind in ["images", "banners"] {
            for (index, element) in ((top[kind] as? [Any]) ?? []).enumerated() {
                if let object = element as? [String: Any], let problem = check(object, kind: kind, path: "overlays.\(kind)[\(index)]") {
                    return problem
                }
            }
        }
        return nil
    }
}
