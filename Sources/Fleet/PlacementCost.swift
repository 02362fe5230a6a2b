// What a stage costs the node it is placed on, in thousandths of a CPU core, before anything
// is measured. Calibrated on camera-like content: one 4×720p30 → 720p30 composition takes
// about 1.2 cores, of which encoding the 720p30 output is the larger part and decoding each
// 720p publisher about a tenth of a core. Pure and bounded: every input is clamped, so no
// configuration can make the arithmetic trap.
public enum PlacementCost {
    /// Encoding 1280×720 at 30 frames per second.
    public static let referenceEncodeMillicores = 800
    /// Decoding and scaling one publisher into the canvas.
    public static let perParticipantMillicores = 100
    /// Receiving one publisher (ingest, recording remux) on the stage's node.
    public static let perPublisherMillicores = 50

    /// One output rendition: its width, height and frame rate.
    public struct Rendition: Sendable, Equatable {
        public var width: Int
        public var height: Int
        public var framerate: Double

        public init(width: Int, height: Int, framerate: Double) {
            self.width = width
            self.height = height
            self.framerate = framerate
        }
    }

    /// A composition encoding `renditions` (each once) of a stage with `participants`
    /// publishing now (counted as at least one): the encoders in proportion to their pixel
    /// rate against 720p30, rounded up, plus each participant's decoding.
    public static func composition(renditions: [Rendition], participants: Int) -> Int {
        let reference = 1280.0 * 720.0 * 30.0
        var encode = 0
        for rendition in renditions {
            // Each factor bounded (the API allows at most 1920×1920 at 60 fps).
            let width = Double(min(max(rendition.width, 1), 8192)), height = Double(min(max(rendition.height, 1), 8192))
            let framerate = rendition.framerate.isFinite ? min(max(rendition.framerate, 1), 240) : 30
            encode += Int((Double(referenceEncodeMillicores) * width * height * framerate / reference).rounded(.up))
        }
        return encode + perParticipantMillicores * min(max(participants, 1), 1_000)
    }

    /// Publishers being received.
    public static func publishers(_ count: Int) -> Int { perPublisherMillicores * min(max(count, 0), 10_000) }
}
