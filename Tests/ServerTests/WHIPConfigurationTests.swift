// `ingest.whip` and the ingest limits in the daemon's configuration: omitted fields take
// their defaults, given ones are read.
import Foundation
@testable import Server
import Testing

@Suite struct WHIPConfigurationTests {
    func whip(_ json: String) throws -> ServerConfiguration.Ingest.WHIP {
        try JSONDecoder().decode(ServerConfiguration.Ingest.WHIP.self, from: Data(json.utf8))
    }

    @Test("simulcast is accepted unless turned off; the other defaults hold")
    func simulcast() throws {
        let defaults = try whip("{}")
        #expect(defaults.acceptSimulcast)
        #expect(defaults == ServerConfiguration.Ingest.WHIP())
        #expect(defaults.port == 1937 && defaults.consentTimeoutSeconds == 30)
        #expect(try whip(#"{"acceptSimulcast": false}"#).acceptSimulcast == false)
        #expect(try whip(#"{"acceptSimulcast": true, "port": 7000}"#) == ServerConfiguration.Ingest.WHIP(port: 7000))
    }

    @Test("the WHIP session caps and per-session bounds are read, with their defaults")
    func sessionBounds() throws {
        let defaults = try whip("{}")
        #expect(defaults.maxSessions == 256 && defaults.maxSessionsPerAddress == 32)
        #expect(defaults.maxStreamsPerSession == 16 && defaults.dtlsDatagramBurst == 24 && defaults.dtlsDatagramsPerSecond == 8)
        let given = try whip(#"{"maxSessions": 9, "maxSessionsPerAddress": 3, "maxStreamsPerSession": 5, "dtlsDatagramBurst": 7, "dtlsDatagramsPerSecond": 2}"#)
        #expect(given == ServerConfiguration.Ingest.WHIP(maxSessions: 9, maxSessionsPerAddress: 3, maxStreamsPerSession: 5,
                                                          dtlsDatagramBurst: 7, dtlsDatagramsPerSecond: 2))
    }

    @Test("the RTMP message rate and keyframe cache limits are read, with their defaults")
    func ingestLimits() throws {
        let decode = { (json: String) in try JSONDecoder().decode(ServerConfiguration.Ingest.self, from: Data(json.utf8)) }
        let defaults = try decode("{}")
        #expect(defaults.maxMessagesPerSecondBurst == 5_000 && defaults.maxMessagesPerSecond == 1_000)
        #expect(defaults.keyframeCacheBytes == 4 << 20 && defaults.keyframeCachePackets == 600)
        let given = try decode(#"{"maxMessagesPerSecondBurst": 50, "maxMessagesPerSecond": 10, "keyframeCacheBytes": 1000, "keyframeCachePackets": 4}"#)
        #expect(given.maxMessagesPerSecondBurst == 50 && given.maxMessagesPerSecond == 10)
        #expect(given.keyframeCacheBytes == 1000 && given.keyframeCachePackets == 4)
    }
}
