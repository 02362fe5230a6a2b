// The contract between the compositor and the layout engines: who is on stage in, tiles out.

public import MediaCore

/// How a video is fitted into its tile (IVS `videoFillMode`).
public enum VideoFillMode: String, Codable, Sendable, CaseIterable {
    /// Stretch to the tile, ignoring aspect ratio.
    case fill = "FILL"
    /// Scale to cover the tile, cropping the overflow (centred).
    case cover = "COVER"
    /// Scale to fit inside the tile, letterboxing the rest.
    case contain = "CONTAIN"
}

/// A participant's video as the layout sees it.
public enum VideoState: Hashable, Sendable {
    /// Publishing video of this size (display size, after rotation).
    case publishing(PixelSize)
    /// Video stopped by the publisher (camera off).
    case stopped
    /// No video track, or one the compositor will not render (above 1080p, SPEC §4).
    case audioOnly
}

/// One publishing participant on the stage, as input to a layout.
public struct LayoutParticipant: Hashable, Sendable {
    public var participantId: String
    public var userId: String
    public var attributes: [String: String]
    /// Order of arrival on the stage (smaller = earlier); ties break by participantId.
    public var arrivalIndex: Int
    public var video: VideoState

    public init(participantId: String, userId: String = "", attributes: [String: String] = [:],
                arrivalIndex: Int, video: VideoState) {
        self.participantId = participantId
        self.userId = userId
        self.attributes = attributes
        self.arrivalIndex = arrivalIndex
        self.video = video
    }
}

/// What a tile shows.
public enum TileContent: Hashable, Sendable {
    /// The participant's latest video frame, fitted with `fillMode`.
    case video
    /// A "camera off" placeholder (stopped video, audio-only, or video above 1080p).
    case cameraOff
}

/// One participant's place on the canvas for one output frame.
public struct Tile: Hashable, Sendable, CustomStringConvertible {
    public var participantId: String
    public var rect: Rect
    public var fillMode: VideoFillMode
    /// Drawing order: higher is drawn later (on top). The PiP window is the only overlap.
    public var zIndex: Int
    public var content: TileContent

    public init(participantId: String, rect: Rect, fillMode: VideoFillMode, zIndex: Int, content: TileContent) {
        self.participantId = participantId
        self.rect = rect
        self.fillMode = fillMode
        self.zIndex = zIndex
        self.content = content
    }

    public var description: String { "\(participantId)@\(rect)[\(fillMode.rawValue),z\(zIndex),\(content)]" }
}

/// A layout: participants in, tiles out, sorted by `zIndex` (draw order). Pure and
/// deterministic; the compositor calls it whenever the stage changes.
public protocol LayoutEngine: Sendable {
    func tiles(canvas: PixelSize, participants: [LayoutParticipant]) -> [Tile]
}
