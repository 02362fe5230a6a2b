// Where a frame gets scaled: each tick, ask the layout for tiles and scale every visible
// participant's latest frame once, straight into its rectangle of the YUV420 canvas.
//
// The canvas keeps its pixels between ticks (the encoder copies what it keeps), so only what
// changed is drawn: the background and camera-off tiles once per layout change, a video tile
// when its participant has a new picture, and any tile drawn over one that was redrawn.

import Dispatch
public import FFmpeg
public import Layout
public import Logging
public import MediaCore

public final class VideoCompositor {
    public let canvas: Frame
    public let canvasSize: PixelSize
    private var layout: any LayoutEngine
    /// A layout change asked for (UpdateComposition): the next tick lays out again, gliding
    /// over this long (µs; 0 is a cut).
    private var pendingRelayout: Int64?
    /// How long tiles glide and fade when the stage changes (joins, leaves, attributes; µs).
    public var stageChangeTransition: Int64 = 0
    /// The participant the layout features as the active speaker (`featured: ACTIVE_SPEAKER`).
    public var activeSpeaker: String?
    /// The active speaker's attributes with the featuring one added, kept while theirs are
    /// unchanged (no allocation per tick).
    private var speakerAttributes: (source: [String: String], marked: [String: String])?
    /// The transition under way, if any: every tick draws all of it until it ends.
    public private(set) var transition: LayoutTransition?
    /// The stage time of the tick laid out last (µs): a transition starts there, so the
    /// first frame after a change is already one frame into it.
    private var lastLayoutTime: Int64?
    private var scalers: [String: TileScaler] = [:]
    private var layoutInput: [LayoutParticipant] = []
    private var previousInput: [LayoutParticipant] = []
    public private(set) var tiles: [Tile] = []
    /// How many times the tiles changed (joins, leaves, video stop/start, size changes).
    public private(set) var layoutChanges = 0
    /// What each tile (by index in `tiles`) shows now; nil: must be drawn.
    private var drawn: [DrawnTile?] = []
    /// Counts draws; a tile whose `pass` is the current one was drawn this tick.
    private var pass: UInt64 = 0
    private var backgroundDrawn = false
    /// Tile scalings done and skipped (the picture and placement were unchanged).
    public private(set) var tilesScaled: Int64 = 0
    public private(set) var tilesReused: Int64 = 0
    /// Off: every tile is drawn every tick (for comparisons; the output is the same).
    public var reuseUnchangedTiles = true
    /// A tick shows each participant's latest frame due no later than this (µs) after it. Half
    /// an output frame shows the frame nearest to the tick, as ffmpeg's fps filter does: video
    /// is then within half a frame of its audio either way, where showing only frames already
    /// due made it 0 to 1 frame late (17 ms on average at 30 fps).
    public var frameLead: Int64 = 0
    /// Decode the participants' video side by side (one decoder thread each) instead of one
    /// after another: a decoder's own frame threads cost a context and frames per thread,
    /// where participants give parallel work for free. Off: in turn on the calling thread.
    public var parallelDecoding = true
    /// Decode every participant's video, shown or not (for comparisons). Off: the video of a
    /// participant who is not shown (stopped, not published) is read on the stage clock but
    /// not decoded, and decoding resumes from its latest keyframe when it is shown again.
    public var decodeHiddenVideo = false
    /// Overlays drawn over (and under) the tiles; nil: none.
    public var overlays: OverlayPainter? {
        didSet { invalidate() }
    }
    /// The subscribers a tick brings to its time (kept: no allocation per tick).
    private var advancing: [ParticipantSubscriber] = []
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
        advanceVideo(participants: participants, source: source, stageTime: stageTime)
        updateLayout(participants: participants, source: source, stageTime: stageTime)
        // What the last frame's overlays covered is put back before anything is drawn, so
        // the tiles kept from it are as they were drawn.
        overlays?.restore(canvasFrame)
        draw(source: source, stageTime: stageTime)
        overlays?.paint(canvasFrame, tiles: tiles, participants: participants, stageTime: stageTime)
    }

    /// The canvas's planes, for drawing.
    private var canvasFrame: PlanarYUV420 {
        let planes = canvas.yuvPlanes
        return PlanarYUV420(yPlane: planes.y, uPlane: planes.u, vPlane: planes.v,
                            yStride: planes.yStride, uStride: planes.uStride, vStride: planes.vStride,
                            width: planes.width, height: planes.height)
    }

    /// The whole canvas emptied: the overlays' background or slate (nobody on stage), else black.
    private func fillBackground() {
        let whole = Rect(x: 0, y: 0, width: canvasSize.width, height: canvasSize.height)
        if overlays?.fill(whole, of: canvasFrame, slate: tiles.isEmpty, layoutFillMode: tiles.first?.fillMode) != true {
            canvas.fill(whole, y: 16, u: 128, v: 128)
        }
    }

    /// Brings the stage to `stageTime` without drawing (the clock is behind and the previous
    /// picture is shown again): video advanced, tiles laid out, and each participant told the
    /// size its tile draws it at — a composition that cannot keep up must still get the
    /// smaller simulcast layers that would let it.
    public func advance(participants: [StageParticipantState], source: any StageSource, stageTime: Int64) {
        advanceVideo(participants: participants, source: source, stageTime: stageTime)
        updateLayout(participants: participants, source: source, stageTime: stageTime)
        for tile in tiles where tile.content == .video {
            guard let subscriber = source.subscriber(for: tile.participantId), let size = subscriber.currentVideoSize else { continue }
            subscriber.setDrawnSize(TileGeometry.drawnSize(of: size, in: tile.rect, mode: tile.fillMode))
        }
    }

    private func marked(_ attributes: [String: String]) -> [String: String] {
        if let cached = speakerAttributes, cached.source == attributes { return cached.marked }
        var marked = attributes
        marked[ActiveSpeakerAttribute.key] = "true"
        speakerAttributes = (attributes, marked)
        return marked
    }

    /// Lays the stage out with `layout` from the next tick on, gliding there over `transition`
    /// µs (0: a cut on that tick).
    public func setLayout(_ layout: any LayoutEngine, transition: Int64) {
        self.layout = layout
        pendingRelayout = max(0, transition)
    }

    /// The tiles for who is on the stage now (recomputed only when that or the layout changed).
    private func updateLayout(participants: [StageParticipantState], source: any StageSource, stageTime: Int64) {
        layoutInput.removeAll(keepingCapacity: true)
        for state in participants where state.isPublished {
            let subscriber = source.subscriber(for: state.participantId)
            layoutInput.append(LayoutParticipant(
                participantId: state.participantId, userId: state.userId,
                attributes: state.participantId == activeSpeaker ? marked(state.attributes) : state.attributes,
                arrivalIndex: state.arrivalIndex, video: videoState(of: state, subscriber: subscriber, at: stageTime)))
        }
        if let transition, transition.isFinished(at: stageTime) {
            self.transition = nil
            invalidate()
        }
        if pendingRelayout != nil || layoutInput != previousInput {
            let newTiles = layout.tiles(canvas: canvasSize, participants: layoutInput)
            let length = pendingRelayout ?? stageChangeTransition
            pendingRelayout = nil
            // The first picture is a cut: nothing was on screen to glide from.
            if length > 0, newTiles != tiles, lastLayoutTime != nil {
                // From what is on screen now (mid-way through a transition: where its tiles are).
                let onScreen = transition.map { $0.tiles(at: stageTime).filter { $0.opacity > 0 }.map(\.tile) } ?? tiles
                let start = min(stageTime, lastLayoutTime ?? stageTime)
                transition = LayoutTransition(from: onScreen, to: newTiles, start: start, duration: length)
            } else if length == 0 {
                transition = nil // a cut ends any glide under way
            }
            tiles = newTiles
            swap(&layoutInput, &previousInput)
            layoutChanges += 1
            invalidate()
            // Whoever has no picture tile now is drawn at no size; the others are told theirs as
            // their tiles are drawn.
            for state in participants where !tiles.contains(where: { $0.content == .video && $0.participantId == state.participantId }) {
                source.subscriber(for: state.participantId)?.setDrawnSize(nil)
            }
        }
        lastLayoutTime = stageTime
    }

    /// Brings every participant's video to the frame this tick shows (unpublished ones too,
    /// so their media stays on the stage clock, but only shown ones are decoded), without
    /// drawing: the whole tick when it is composed, alone when the clock is behind and the
    /// previous picture is repeated.
    public func advanceVideo(participants: [StageParticipantState], source: any StageSource, stageTime: Int64) {
        let due = stageTime + frameLead
        advancing.removeAll(keepingCapacity: true)
        for state in participants {
            guard let subscriber = source.subscriber(for: state.participantId) else { continue }
            subscriber.setVideoShown(decodeHiddenVideo || (state.isPublished && !state.isVideoStopped))
            advancing.append(subscriber)
        }
        guard parallelDecoding, advancing.count > 1 else {
            for subscriber in advancing { subscriber.advanceVideo(to: due, tickLead: frameLead) }
            return
        }
        let lead = frameLead
        advancing.withUnsafeBufferPointer { buffer in
            let batch = DecodingBatch(subscribers: buffer)
            DispatchQueue.concurrentPerform(iterations: buffer.count) { batch.subscribers[$0].advanceVideo(to: due, tickLead: lead) }
        }
    }

    /// Forgets what the canvas shows: the next tick draws everything.
    public func invalidate() {
        backgroundDrawn = false
    }

    private func videoState(of state: StageParticipantState, subscriber: ParticipantSubscriber?, at time: Int64) -> VideoState {
        guard let subscriber, subscriber.hasVideoStream || subscriber.videoTooLarge else { return .audioOnly }
        if subscriber.videoTooLarge { return .audioOnly }
        if state.isVideoStopped { return .stopped }
        if let end = subscriber.videoEndTime, time >= end + endedVideoGrace { return .stopped }
        guard let size = subscriber.currentVideoSize else { return .stopped }
        return .publishing(size)
    }

    private func draw(source: any StageSource, stageTime: Int64) {
        if let transition {
            drawTransition(transition, source: source, stageTime: stageTime)
            return
        }
        pass &+= 1
        if !reuseUnchangedTiles { backgroundDrawn = false }
        if !backgroundDrawn {
            // A new layout: background once, then every tile.
            fillBackground()
            drawn.removeAll(keepingCapacity: true)
            drawn.append(contentsOf: repeatElement(nil, count: tiles.count))
            backgroundDrawn = true
        }
        for index in tiles.indices {
            let tile = tiles[index]
            // A tile drawn over one redrawn this tick must be drawn again (PiP is on top).
            var coveredByRedraw = false
            for below in 0..<index where drawn[below]?.pass == pass && tiles[below].rect.intersects(tile.rect) {
                coveredByRedraw = true
                break
            }
            guard tile.content == .video,
                  let subscriber = source.subscriber(for: tile.participantId),
                  let size = subscriber.currentVideoSize,
                  let placement = TileGeometry.place(source: size, in: tile.rect, mode: tile.fillMode)
            else {
                if coveredByRedraw || drawn[index]?.isCameraOff != true {
                    drawCameraOff(tile)
                    drawn[index] = DrawnTile(cameraOffAt: pass)
                }
                continue
            }
            subscriber.setDrawnSize(TileGeometry.drawnSize(of: size, in: tile.rect, mode: tile.fillMode))
            if !coveredByRedraw, let last = drawn[index], last.shows(subscriber, placement: placement) {
                tilesReused += 1
                continue
            }
            if placement.destination != tile.rect && (coveredByRedraw || drawn[index]?.placement != placement) {
                let rect = Rect(x: tile.rect.x, y: tile.rect.y, width: tile.rect.width, height: tile.rect.height)
                canvas.fill(rect, y: 16, u: 128, v: 128)
            }
            let scaler = scalers[tile.participantId] ?? makeScaler(for: tile.participantId)
            do {
                try scaler.scale(subscriber.current,
                                 crop: Rect(x: placement.crop.x, y: placement.crop.y, width: placement.crop.width, height: placement.crop.height),
                                 into: canvas,
                                 destination: Rect(x: placement.destination.x, y: placement.destination.y,
                                                        width: placement.destination.width, height: placement.destination.height))
                tilesScaled += 1
                drawn[index] = DrawnTile(subscriber: subscriber, generation: subscriber.videoGeneration, placement: placement, pass: pass)
            } catch {
                logger.warning("scale failed; showing camera-off", metadata: ["participant.id": "\(tile.participantId)", "error": "\(error)"])
                drawCameraOff(tile)
                drawn[index] = DrawnTile(cameraOffAt: pass)
            }
        }
    }

    /// A frame inside a transition: everything drawn afresh, each tile where the transition
    /// has it now, the going and coming ones faded over the background. The canvas is drawn
    /// whole again once the transition ends.
    private func drawTransition(_ transition: LayoutTransition, source: any StageSource, stageTime: Int64) {
        pass &+= 1
        backgroundDrawn = false
        fillBackground()
        for item in transition.tiles(at: stageTime) where item.opacity > 0 {
            let tile = item.tile
            guard tile.rect.x >= 0, tile.rect.y >= 0, tile.rect.maxX <= canvasSize.width, tile.rect.maxY <= canvasSize.height else { continue }
            if tile.content == .video, let subscriber = source.subscriber(for: tile.participantId),
               let size = subscriber.currentVideoSize,
               let placement = TileGeometry.place(source: size, in: tile.rect, mode: tile.fillMode) {
                let scaler = scalers[tile.participantId] ?? makeScaler(for: tile.participantId)
                do {
                    try scaler.scale(subscriber.current, crop: placement.crop, into: canvas, destination: placement.destination)
                    tilesScaled += 1
                } catch {
                    drawCameraOff(tile)
                }
            } else {
                drawCameraOff(tile)
            }
            if item.opacity < 1 { canvas.fade(tile.rect, opacity: item.opacity) }
        }
    }

    private func makeScaler(for participantId: String) -> TileScaler {
        let scaler = TileScaler()
        scalers[participantId] = scaler
        return scaler
    }

    /// The shared camera-off placeholder (the same drawing `layout preview` shows).
    private func drawCameraOff(_ tile: Tile) {
        // With labels, the overlay draws the name large instead of the tile's own small one.
        if overlays?.drawsLabels == true {
            CameraOffTile.draw(into: canvasFrame, rect: tile.rect, label: "")
            return
        }
        let participant = previousInput.first { $0.participantId == tile.participantId }
        let label = participant.map { $0.userId.isEmpty ? $0.participantId : $0.userId } ?? tile.participantId
        CameraOffTile.draw(into: canvasFrame, rect: tile.rect, label: label)
    }
}

/// One tick's subscribers, handed to the decoding threads: each iteration touches one
/// subscriber only, and each subscriber owns its source and decoder, so nothing is shared;
/// `concurrentPerform` returns when all are done, before the buffer goes away.
private struct DecodingBatch: @unchecked Sendable {
    let subscribers: UnsafeBufferPointer<ParticipantSubscriber>
}

/// What a tile of the canvas shows: a participant's picture (which one, where), or camera-off.
private struct DrawnTile {
    weak var subscriber: ParticipantSubscriber?
    var generation: UInt64
    var placement: TilePlacement?
    /// The draw that put it there.
    var pass: UInt64

    init(subscriber: ParticipantSubscriber, generation: UInt64, placement: TilePlacement, pass: UInt64) {
        self.subscriber = subscriber
        self.generation = generation
        self.placement = placement
        self.pass = pass
    }

    init(cameraOffAt pass: UInt64) {
        subscriber = nil
        generation = 0
        placement = nil
        self.pass = pass
    }

    var isCameraOff: Bool { placement == nil }

    /// The same picture of the same (still living) subscriber at the same place.
    func shows(_ other: ParticipantSubscriber, placement: TilePlacement) -> Bool {
        self.placement == placement && generation == other.videoGeneration && subscriber === other
    }
}
