// Which layer of a simulcast publisher is composed. A browser sends each layer on its own
// SSRC; the compositor decodes one: the smallest that covers the size it is drawn at
// (`wanted`, from the tiles showing the publisher), or the largest when nothing smaller
// covers it or no size is wanted (a recording, a replica). Layers are ranked by that rule:
// it moves to a better layer at that layer's keyframe (a sender that gains bandwidth turns
// its upper layers on, each starting with a keyframe; a tile that shrinks asks the smaller
// layer for one), and when the layer in use goes silent (a sender that loses bandwidth turns
// it off) to the next keyframe of any layer still sending, while asking the best of them for
// one. Switching only at keyframes keeps the decoder on a clean picture; the other layers'
// frames are dropped before decoding.

public struct SimulcastLayerSelector: Sendable, Equatable {
    /// A layer that sent nothing for this long (µs) is taken as switched off.
    public var silenceTimeout: Int64
    /// The size the picture is drawn at: the smallest layer at least this large in both
    /// dimensions is composed. Nil: the largest.
    public var wanted: PictureSize?

    struct Layer: Sendable, Equatable {
        /// Of its latest keyframe; nil before the first one.
        var pictureSize: PictureSize?
        var lastPacketAt: Int64
    }

    private var layers: [UInt32: Layer] = [:]
    /// The SSRC whose frames are delivered; nil until the first keyframe.
    public private(set) var selected: UInt32?
    /// Changes of layer after the first choice.
    public private(set) var switches: Int64 = 0

    public init(silenceTimeout: Int64 = 1_000_000, wanted: PictureSize? = nil) {
        self.silenceTimeout = silenceTimeout
        self.wanted = wanted
    }

    public var layerCount: Int { layers.count }

    /// The picture size of the layer in use, as of its latest keyframe.
    public var selectedPictureSize: PictureSize? {
        selected.flatMap { layers[$0]?.pictureSize }
    }

    public mutating func packetReceived(ssrc: UInt32, now: Int64) {
        layers[ssrc, default: Layer(lastPacketAt: now)].lastPacketAt = now
    }

    /// A complete frame of `ssrc`, ready for the decoder: true if it is to be delivered.
    public mutating func admit(ssrc: UInt32, isKeyframe: Bool, pictureSize: PictureSize?, now: Int64) -> Bool {
        var layer = layers[ssrc] ?? Layer(lastPacketAt: now)
        // A keyframe whose size does not parse still counts, as the smallest picture.
        if isKeyframe { layer.pictureSize = pictureSize ?? PictureSize(width: 0, height: 0) }
        layers[ssrc] = layer
        if ssrc == selected { return true }
        guard isKeyframe else { return false }
        if let current = selected, let inUse = layers[current], !isSilent(inUse, now: now),
           !isBetter(layer.pictureSize, than: inUse.pictureSize) {
            return false
        }
        if selected != nil { switches += 1 }
        selected = ssrc
        return true
    }

    /// Whether keyframe requests for `ssrc` may go out: for the layer in use, for a layer not
    /// yet seen to decode (its size is unknown), and for the layer to move to. Requests for
    /// the others would only make the sender spend bits on them.
    public func wantsKeyframes(from ssrc: UInt32, now: Int64) -> Bool {
        guard let layer = layers[ssrc], layer.pictureSize != nil, ssrc != selected else { return true }
        return target(now: now) == ssrc
    }

    /// The layer to move to at its next keyframe, which the owner should ask for: the best
    /// still sending, when the one in use went silent or is worse (after a fall back to the
    /// first keyframe that came, or after `wanted` changed).
    public func target(now: Int64) -> UInt32? {
        guard let current = selected, let inUse = layers[current] else { return nil }
        let silent = isSilent(inUse, now: now)
        var best: (ssrc: UInt32, size: PictureSize)?
        for (ssrc, layer) in layers where ssrc != current && !isSilent(layer, now: now) {
            guard let size = layer.pictureSize, silent || isBetter(size, than: inUse.pictureSize) else { continue }
            if let chosen = best {
                // Equally good: the lower SSRC, so the choice does not depend on table order.
                if isBetter(chosen.size, than: size) || (!isBetter(size, than: chosen.size) && chosen.ssrc < ssrc) { continue }
            }
            best = (ssrc, size)
        }
        return best?.ssrc
    }

    /// `a` serves the wanted size better than `b`: covering it beats not covering it; among
    /// layers that cover it the smaller is better, among those that do not the larger.
    func isBetter(_ a: PictureSize?, than b: PictureSize?) -> Bool {
        let a = a ?? PictureSize(width: 0, height: 0), b = b ?? PictureSize(width: 0, height: 0)
        guard let wanted else { return a.area > b.area }
        let aCovers = a.covers(wanted), bCovers = b.covers(wanted)
        if aCovers != bCovers { return aCovers }
        return aCovers ? a.area < b.area : a.area > b.area
    }

    private func isSilent(_ layer: Layer, now: Int64) -> Bool {
        now &- layer.lastPacketAt > silenceTimeout
    }
}

extension PictureSize {
    /// At least as large as `other` in both dimensions.
    public func covers(_ other: PictureSize) -> Bool {
        width >= other.width && height >= other.height
    }
}
