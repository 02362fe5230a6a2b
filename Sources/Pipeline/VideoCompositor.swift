// Where a frame gets scaled: each tick, ask the layout for tiles and scale every visible
// participant's latest frame once, straight into its rectangle of the YUV420 canvas.

public import FFmpeg
public import Layout
public import Logging

public final class VideoCompositor {
    public let canvas: Frame
    public let canvasSize: PixelSize
    private let layout: any LayoutEngine
    private var scalers: [String: TileScaler] = [:]
    private var layoutInput: [LayoutParticipant] = []
    private var previousInput: [LayoutParticipant] = []
    public private(set) var tiles: [Tile] = []
    /// How many times the tiles changed (joins, leaves, video stop/start, size changes).
    public private(set) var layoutChanges = 0
    private let logger: Logger
    /// A publisher whose media has ended shows its last frame this long, then camera-off.
    private let endedVideoGrace: Int64 = 500_000

    public init(canvas: Frame, layout: any LayoutEngine, logger: Logger) {
        self.canvas = canvas
        self.canvasSize = PixelSize(width: canvas.width, height: canvas.height)
        self.layout = layout
        self.logger = logger
        layoutInput.reserveCapacity(16)
        previousInput.reserveCapacity(16)
    }

    /// Draws the stage at `stageTime` (µs) into the canvas.
    public func compose(participants: [StageParticipantState], source: any StageSource, stageTime: Int64) {
        layoutInput.removeAll(keepingCapacity: true)
        for state in participants where state.isPublished {
            let subscriber = source.subscriber(for: state.participantId)
            subscriber?.advanceVideo(to: stageTime)
            layoutInput.append(LayoutParticipant(
                participantId: state.participantId, userId: state.userId, attributes: state.attributes,
                arrivalIndex: state.arrivalIndex, video: videoState(of: state, subscriber: subscriber, at: stageTime)))
        }
        // Unpublished participants' media still advances so it stays on the stage clock.
        for state in participants where !state.isPublished {
            source.subscriber(for: state.participantId)?.advanceVideo(to: stageTime)
        }
        if layoutInput != previousInput {
            tiles = layout.tiles(canvas: canvasSize, participants: layoutInput)
            swap(&layoutInput, &previousInput)
            layoutChanges += 1
        }
        draw(source: source)
    }

    private func videoState(of state: StageParticipantState, subscriber: ParticipantSubscriber?, at time: Int64) -> VideoState {
        guard let subscriber, subscriber.hasVideoStream || subscriber.videoTooLarge else { return .audioOnly }
        if subscriber.videoTooLarge { return .audioOnly }
        if state.isVideoStopped { return .stopped }
        if let end = subscriber.videoEndTime, time >= end + endedVideoGrace { return .stopped }
        guard let size = subscriber.currentVideoSize else { return .stopped }
        return .publishing(size)
    }

    private func draw(source: any StageSource) {
        canvas.fill(PixelRect(x: 0, y: 0, width: canvasSize.width, height: canvasSize.height), y: 16, u: 128, v: 128)
        for tile in tiles {
            let rect = PixelRect(x: tile.rect.x, y: tile.rect.y, width: tile.rect.width, height: tile.rect.height)
            guard tile.content == .video,
                  let subscriber = source.subscriber(for: tile.participantId),
                  let size = subscriber.currentVideoSize,
                  let placement = TileGeometry.place(source: size, in: tile.rect, mode: tile.fillMode)
            else {
                drawCameraOff(tile)
                continue
            }
            if placement.destination != tile.rect {
                canvas.fill(rect, y: 16, u: 128, v: 128)
            }
            let scaler = scalers[tile.participantId] ?? makeScaler(for: tile.participantId)
            do {
                try scaler.scale(subscriber.current,
                                 crop: PixelRect(x: placement.crop.x, y: placement.crop.y, width: placement.crop.width, height: placement.crop.height),
                                 into: canvas,
                                 destination: PixelRect(x: placement.destination.x, y: placement.destination.y,
                                                        width: placement.destination.width, height: placement.destination.height))
            } catch {
                logger.warning("scale failed; showing camera-off", metadata: ["participant.id": "\(tile.participantId)", "error": "\(error)"])
                drawCameraOff(tile)
            }
        }
    }

    private func makeScaler(for participantId: String) -> TileScaler {
        let scaler = TileScaler()
        scalers[participantId] = scaler
        return scaler
    }

    /// The shared camera-off placeholder (the same drawing `layout preview` shows).
    private func drawCameraOff(_ tile: Tile) {
        let planes = canvas.yuvPlanes
        let frame = PlanarYUV420(yPlane: planes.y, uPlane: planes.u, vPlane: planes.v,
                                 yStride: planes.yStride, uStride: planes.uStride, vStride: planes.vStride,
                                 width: planes.width, height: planes.height)
        let participant = previousInput.first { $0.participantId == tile.participantId }
        let label = participant.map { $0.userId.isEmpty ? $0.participantId : $0.userId } ?? tile.participantId
        CameraOffTile.draw(into: frame, rect: tile.rect, label: label)
    }
}
