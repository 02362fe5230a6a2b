// Access units of one WHIP publisher into its LivePublisher: the same media path as RTMP
// (queues, the stage clock, the compositions' decoders). H.264 arrives as Annex B with its
// parameter sets in band, VP8 as frames, Opus as packets; each stream is announced before its
// first frame, with an OpusHead for Opus (`OpusStream`: always 48 kHz; two channels decode
// mono and stereo), and Opus packets are timed back by the encoder's lookahead.

public import LiveStage
import MediaCore
import WebRTCMedia
public import WebRTCPublisher

public struct WebRTCMediaForwarder {
    public let publisher: LivePublisher
    private var videoCodec: WebRTCCodec?
    private var audioAnnounced = false

    public init(publisher: LivePublisher) {
        self.publisher = publisher
    }

    public mutating func forward(_ unit: ReceivedAccessUnit) {
        switch unit.codec {
        case .h264, .vp8:
            if videoCodec != unit.codec {
                // Until the first keyframe a decoder has nothing to start from.
                guard unit.isKeyframe else { return }
                videoCodec = unit.codec
                publisher.announce(CodecConfiguration(codec: unit.codec.compressed))
            }
            publisher.push(.video, data: unit.data, timestamp: unit.time, isKeyframe: unit.isKeyframe)
        case .opus:
            if !audioAnnounced {
                audioAnnounced = true
                publisher.announce(CodecConfiguration(codec: .opus, extradata: OpusStream.identificationHeader,
                                                      sampleRate: OpusStream.sampleRate, channelCount: 2))
            }
            publisher.push(.audio, data: unit.data, timestamp: OpusStream.decodeTime(ofPacketAt: unit.time), isKeyframe: true)
        }
    }
}
