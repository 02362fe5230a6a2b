/// Errors of the composition pipeline, worded for the person running it.
public enum PipelineError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A participant's media cannot be opened or decoded at all.
    case media(file: String, message: String)
    /// The encoder or a muxer failed; the composition cannot go on.
    case encoder(String)
    /// An output (recording, channel) failed.
    case output(String)
    case cancelled

    public var description: String {
        switch self {
        case .media(let file, let message): return "\(file): \(message)"
        case .encoder(let message): return "encoder: \(message)"
        case .output(let message): return "output: \(message)"
        case .cancelled: return "cancelled"
        }
    }
}
