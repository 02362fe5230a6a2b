// An Opus stream that arrives as bare packets (RTP, RFC 7587), as a decoder needs it: the
// identification header a container would have carried, and where each packet's audio is in
// time. An Opus encoder looks ahead: what a packet decodes to begins with what entered the
// encoder `preSkip` samples before the packet's own timestamp (RFC 7845 §4.2; Ogg and Matroska
// time Opus so, the first packet at -preSkip). Timed by its RTP timestamps alone, Opus audio
// would play 6.5 ms late against its video.

public enum OpusStream {
    /// libopus' lookahead at 48 kHz (2.5 ms, plus 4 ms of delay compensation) with the VOIP
    /// and AUDIO applications, which browsers, aiortc, GStreamer's opusenc and OBS use.
    public static let preSkip = 312
    public static let sampleRate = 48_000

    /// RFC 7845 §5.1 identification header: version 1, 2 channels (mono and stereo packets
    /// both decode), `preSkip`, 48 kHz input, 0 dB output gain, channel mapping family 0.
    public static let identificationHeader: [UInt8] = Array("OpusHead".utf8) + [
        1, 2, UInt8(preSkip & 0xFF), UInt8(preSkip >> 8),
        UInt8(sampleRate & 0xFF), UInt8((sampleRate >> 8) & 0xFF), UInt8((sampleRate >> 16) & 0xFF), UInt8(sampleRate >> 24),
        0, 0, 0]

    /// The decoding timestamp (µs) of a packet whose first sample is at `microseconds` on the
    /// sender's clock (its RTP time): `preSkip` earlier, so that once the decoder has dropped
    /// the first `preSkip` samples of the stream (and moved that frame's timestamp past them)
    /// every decoded sample is at the time it was captured.
    public static func decodeTime(ofPacketAt microseconds: Int64) -> Int64 {
        microseconds - Int64(preSkip) * 1_000_000 / Int64(sampleRate)
    }
}
