// Outputs of a composition (HLS recording, RTMP channel). One encode feeds every sink.

public import FFmpeg
public import MediaCore

public protocol PacketSink: AnyObject {
    /// A name for logs and errors ("s3 destination abc").
    var name: String { get }
    /// The API destination it writes (events about the sink are that destination's); nil
    /// for sinks no destination owns (probes, previews).
    var destinationId: String? { get }
    /// Called once, before any packet, with the encoders whose output follows.
    func start(video: Encoder, audio: Encoder) throws(PipelineError)
    /// One encoded packet; timestamps are in the encoder's time base. The packet is shared:
    /// reference it, do not keep or modify it.
    func write(_ packet: Packet, media: MediaType) throws(PipelineError)
    /// The composition ended (`failure` nil: normally). Flush and finalize.
    func finish(failure: String?) throws(PipelineError)
    /// The composed picture of output frame `tick`, before encoding (for thumbnails). Must
    /// not keep or modify the frame.
    func composed(_ canvas: Frame, tick: Int64) throws(PipelineError)
    /// Before `start`: the wall-clock time (ms since 1970) of output time 0, when the stage
    /// knows it (a live stage; a re-render of recordings that carry it).
    func anchor(wallClockOriginMs: Int64)
    /// Whether it wants the mix once more as Opus (WebRTC viewers), asked every output frame:
    /// the Opus encoder runs only while a sink does; wanted at a frame, the sound of the
    /// frames after it is sent.
    var wantsViewerAudio: Bool { get }
    /// One Opus packet of the mix (48 kHz, 20 ms; pts in samples on the mix's clock, the same
    /// clock as the video's), while `wantsViewerAudio`. Shared: reference it, do not keep it.
    func writeViewerAudio(_ packet: Packet) throws(PipelineError)
}

extension PacketSink {
    public var destinationId: String? { nil }
    public var wantsViewerAudio: Bool { false }
    public func writeViewerAudio(_ packet: Packet) throws(PipelineError) {}
    public func composed(_ canvas: Frame, tick: Int64) throws(PipelineError) {}
    public func anchor(wallClockOriginMs: Int64) {}
}
