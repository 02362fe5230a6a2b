// `ingest.whip` in the daemon's configuration: omitted fields take their defaults.
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
}
