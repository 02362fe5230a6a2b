// Which layer of a simulcast publisher is composed. A browser sends each layer on its own
// SSRC; the compositor decodes one. It takes the largest picture it has seen a keyframe of,
// moves up when a larger layer's keyframe arrives (a sender that gains bandwidth turns its
// upper layers on, each starting with a keyframe), and down when the layer in use goes
// silent (a sender that loses bandwidth turns it off), at the next keyframe of any layer
// still sending, while asking the largest of them for one. Switching only at keyframes
// keeps the decoder on a clean picture; the other layers' frames are dropped before decoding.

public struct SimulcastLayerSelector: Sendable, Equatable {
    /// A layer that sent nothing for this long (µs) is taken as switched off.
    public var silenceTimeout: Int64

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

    public init(silenceTimeout: Int64 = 1_000_000) {
        self.silenceTimeout = silenceTimeout
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
           (layer.pictureSize?.area ?? 0) <= (inUse.pictureSize?.area ?? 0) {
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

    /// The layer to move to at its next keyframe, which the owner should ask for: the largest
    /// still sending, when the one in use went silent or is smaller (after a fall back to the
    /// first keyframe that came).
    public func target(now: Int64) -> UInt32? {
        guard let current = selected, let inUse = layers[current] else { return nil }
        let silent = isSilent(inUse, now: now)
        let inUseArea = inUse.pictureSize?.area ?? 0
        return layers.filter { entry in
            guard entry.key != current, !isSilent(entry.value, now: now), let size = entry.value.pictureSize else { return false }
            return silent || size.area > inUseArea
        }
        .max { ($0.value.pictureSize?.area ?? 0, $1.key) < ($1.value.pictureSize?.area ?? 0, $0.key) }?.key
    }

    private func isSilent(_ layer: Layer, now: Int64) -> Bool {
        now - layer.lastPacketAt > silenceTimeout
    }
}
