// A sink that records one value per composed canvas (a hash, a pixel), for tests that check
// what the compositor drew tick by tick without encoding anything.
import FFmpeg
import MediaCore
import Pipeline

final class CanvasSampler<Value>: PacketSink, @unchecked Sendable {
    let name = "canvas sampler"
    private let sample: (Frame) -> Value
    private(set) var values: [Value] = []

    init(_ sample: @escaping (Frame) -> Value) { self.sample = sample }

    func start(video: Encoder, audio: Encoder) throws(PipelineError) {}
    func write(_ packet: Packet, media: MediaType) throws(PipelineError) {}
    func finish(failure: String?) throws(PipelineError) {}
    func composed(_ canvas: Frame, tick: Int64) throws(PipelineError) { values.append(sample(canvas)) }
}
