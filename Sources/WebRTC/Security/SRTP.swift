// One direction of SRTP/SRTCP over libsrtp2: inbound unprotects what publishers send, outbound
// protects our RTCP feedback. The replay window is 1024 packets, so NACK retransmissions that
// arrive on the original SSRC long after their neighbours are still accepted. A packet that
// fails is dropped and counted — never logged per packet (a flood would flood the log).

import CSRTP
import CWebRTCShim

public struct SRTPStatistics: Sendable, Equatable {
    public var authenticationFailures: Int64 = 0
    public var replayedPackets: Int64 = 0
    public var otherFailures: Int64 = 0
    public init() {}
}

public final class SRTPSession {
    public enum Direction: Sendable { case inbound, outbound }

    private var session: srtp_t?
    public let direction: Direction
    public let profile: SRTPProfile
    public private(set) var statistics = SRTPStatistics()
    /// Room for the authentication tag or AEAD tag (and MKI) that protect appends.
    private static let trailerRoom = 148

    public init(profile: SRTPProfile, keyAndSalt: [UInt8], direction: Direction, replayWindow: Int = 1024) throws(DTLSError) {
        guard keyAndSalt.count == profile.keyLength + profile.saltLength else {
            throw DTLSError(reason: "SRTP key of \(keyAndSalt.count) bytes for a profile that takes \(profile.keyLength + profile.saltLength)")
        }
        guard scw_srtp_init() == 0 else { throw DTLSError(reason: "libsrtp could not be initialised") }
        self.direction = direction
        self.profile = profile
        var created: srtp_t?
        let status = keyAndSalt.withUnsafeBufferPointer {
            scw_srtp_create(&created, profile.id, $0.baseAddress, direction == .inbound ? 1 : 0, UInt(replayWindow))
        }
        guard status == 0, let created else { throw DTLSError(reason: "libsrtp refused the session (status \(status))") }
        session = created
    }

    deinit {
        if let session { srtp_dealloc(session) }
    }

    /// Decrypts in place; false (and counted) when the packet must be dropped.
    public func unprotectRTP(_ packet: inout [UInt8]) -> Bool {
        transform(&packet) { session, bytes, length in srtp_unprotect(session, bytes, length) }
    }

    public func unprotectRTCP(_ packet: inout [UInt8]) -> Bool {
        transform(&packet) { session, bytes, length in srtp_unprotect_rtcp(session, bytes, length) }
    }

    /// Encrypts in place (the packet grows by the tag).
    public func protectRTP(_ packet: inout [UInt8]) -> Bool {
        transform(&packet, room: Self.trailerRoom) { session, bytes, length in srtp_protect(session, bytes, length) }
    }

    public func protectRTCP(_ packet: inout [UInt8]) -> Bool {
        transform(&packet, room: Self.trailerRoom) { session, bytes, length in srtp_protect_rtcp(session, bytes, length) }
    }

    private func transform(_ packet: inout [UInt8], room: Int = 0,
                           _ body: (srtp_t, UnsafeMutableRawPointer, UnsafeMutablePointer<Int32>) -> srtp_err_status_t) -> Bool {
        guard let session, packet.count >= 4, packet.count <= 8192 else {
            statistics.otherFailures += 1
            return false
        }
        let original = packet.count
        if room > 0 { packet.append(contentsOf: repeatElement(0, count: room)) }
        var length = Int32(original)
        let status = packet.withUnsafeMutableBytes { body(session, $0.baseAddress!, &length) }
        guard status == srtp_err_status_ok, length >= 0, Int(length) <= packet.count else {
            packet.removeLast(packet.count - original)
            switch status {
            case srtp_err_status_auth_fail: statistics.authenticationFailures += 1
            case srtp_err_status_replay_fail, srtp_err_status_replay_old: statistics.replayedPackets += 1
            default: statistics.otherFailures += 1
            }
            return false
        }
        packet.removeLast(packet.count - Int(length))
        return true
    }
}
