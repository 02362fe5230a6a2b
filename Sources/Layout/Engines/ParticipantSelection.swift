// Who is shown and in which order: the rules shared by the grid and PiP engines
// (omitStoppedVideo, participantOrderAttribute, the "true" attribute flags, AUTO aspect).

public import MediaCore

extension LayoutParticipant {
    /// Whether the participant has video the compositor can draw.
    var hasVideo: Bool { video.isPublishing }

    /// A flag attribute (featured, PiP) is set when its value is exactly the string "true".
    /// An empty or absent attribute name never matches (IVS default `""` = no such slot).
    func isFlagged(by attribute: String?) -> Bool {
        guard let attribute, !attribute.isEmpty else { return false }
        return attributes[attribute] == "true"
    }

    var tileContent: TileContent { hasVideo ? .video : .cameraOff }
}

extension VideoState {
    public var isPublishing: Bool {
        if case .publishing = self { return true }
        return false
    }

    /// The display size while publishing.
    public var size: PixelSize? {
        if case .publishing(let size) = self { return size }
        return nil
    }
}

/// Sort key for `participantOrderAttribute`. Values that parse as integers sort first,
/// numerically; other values follow, compared by their UTF-8 bytes; participants without
/// the attribute (or with `""`) come last. Ties (and the unkeyed group) go by arrival,
/// then by participantId — so the order is total and independent of the input order.
enum OrderKey: Comparable {
    case number(Int)
    case text([UInt8])
    case none

    init(_ value: String?) {
        guard let value, !value.isEmpty else { self = .none; return }
        if let number = Int(value) { self = .number(number) } else { self = .text(Array(value.utf8)) }
    }

    private var rank: Int {
        switch self {
        case .number: 0
        case .text: 1
        case .none: 2
        }
    }

    static func < (lhs: OrderKey, rhs: OrderKey) -> Bool {
        switch (lhs, rhs) {
        case (.number(let a), .number(let b)): a < b
        case (.text(let a), .text(let b)): a.lexicographicallyPrecedes(b)
        default: lhs.rank < rhs.rank
        }
    }
}

enum ParticipantSelection {
    /// The participants a layout shows, in layout order.
    /// `omitStoppedVideo` leaves out `.stopped` and also `.audioOnly` participants (neither
    /// has a picture; IVS renders >1080p publishers "as audio-only", i.e. like stopped video).
    static func ordered(_ participants: [LayoutParticipant], omitStoppedVideo: Bool,
                        orderAttribute: String?) -> [LayoutParticipant] {
        let shown = omitStoppedVideo ? participants.filter(\.hasVideo) : participants
        let attribute = (orderAttribute?.isEmpty ?? true) ? nil : orderAttribute
        let keyed = shown.map { participant in
            (key: OrderKey(attribute.flatMap { participant.attributes[$0] }), participant: participant)
        }
        return keyed.sorted { a, b in
            if a.key != b.key { return a.key < b.key }
            if a.participant.arrivalIndex != b.participant.arrivalIndex {
                return a.participant.arrivalIndex < b.participant.arrivalIndex
            }
            return a.participant.participantId.utf8.lexicographicallyPrecedes(b.participant.participantId.utf8)
        }.map(\.participant)
    }

    /// Removes and returns the first participant (in layout order) flagged by `attribute`.
    /// Further flagged participants stay where they are (e.g. in the grid or strip).
    static func takeFirstFlagged(_ attribute: String?, from participants: inout [LayoutParticipant]) -> LayoutParticipant? {
        guard let index = participants.firstIndex(where: { $0.isFlagged(by: attribute) }) else { return nil }
        return participants.remove(at: index)
    }

    /// `videoAspectRatio: AUTO`: the most common aspect among the publishing participants
    /// (sizes whose width/height
    /// rounds to the same hundredth count as one aspect), ties to the one seen first in layout order;
    /// 16:9 when nobody publishes video.
    static func autoAspect(of participants: [LayoutParticipant]) -> AspectRatio {
        var buckets: [(key: Int, aspect: AspectRatio, count: Int)] = []
        for participant in participants {
            guard let size = participant.video.size, let aspect = AspectRatio(size) else { continue }
            let key = (size.width * 100 + size.height / 2) / size.height
            if let index = buckets.firstIndex(where: { $0.key == key }) {
                buckets[index].count += 1
            } else {
                buckets.append((key, aspect, 1))
            }
        }
        var best: (aspect: AspectRatio, count: Int)?
        for bucket in buckets where bucket.count > (best?.count ?? 0) {
            best = (bucket.aspect, bucket.count)
        }
        return best?.aspect ?? .video
    }

    /// The aspect of one participant's video, or `fallback` when it has none.
    static func aspect(of participant: LayoutParticipant, fallback: AspectRatio) -> AspectRatio {
        participant.video.size.flatMap(AspectRatio.init) ?? fallback
    }
}
