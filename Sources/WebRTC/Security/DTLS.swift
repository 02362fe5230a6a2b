// DTLS-SRTP for WebRTC publishers (RFC 5763/5764), over Debian's OpenSSL 3: the handshake
// runs over memory BIOs, so an endpoint is a value fed datagrams and `now` that returns the
// datagrams to send — no sockets, no threads. Once connected, the peer's certificate must
// match the SDP fingerprint, and the SRTP keys come from the keying-material exporter.
//
// This module is the only importer of COpenSSL, CSRTP and CWebRTCShim.

import COpenSSL
import CWebRTCShim

public struct DTLSError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { reason }

    /// The reason plus OpenSSL's queued error, which is then cleared.
    static func openSSL(_ what: String) -> DTLSError {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return DTLSError(reason: what) }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return DTLSError(reason: "\(what): \(text)")
    }
}

/// An ECDSA P-256 key and its self-signed certificate: what the SDP fingerprint names.
public struct DTLSCertificate: Sendable {
    final class Storage: @unchecked Sendable {
        // Read-only after init: OpenSSL allows concurrent use of a key and certificate.
        let key: OpaquePointer
        let certificate: OpaquePointer
        let context: OpaquePointer

        init(key: OpaquePointer, certificate: OpaquePointer, context: OpaquePointer) {
            self.key = key
            self.certificate = certificate
            self.context = context
        }

        deinit {
            SSL_CTX_free(context)
            X509_free(certificate)
            EVP_PKEY_free(key)
        }
    }

    let storage: Storage
    /// SHA-256 over the certificate's DER.
    public let fingerprintSHA256: [UInt8]

    /// Valid from a day ago for 30 days: sessions are short, and a daemon makes a new one at
    /// each start.
    public static func generate() throws(DTLSError) -> DTLSCertificate {
        var key: OpaquePointer?
        var certificate: OpaquePointer?
        guard scw_generate_certificate("stage-compositor", 30, &key, &certificate) == 1, let key, let certificate else {
            throw DTLSError.openSSL("cannot generate the DTLS certificate")
        }
        var digest = [UInt8](repeating: 0, count: 32)
        guard scw_certificate_sha256(certificate, &digest) == 1 else {
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw DTLSError.openSSL("cannot hash the DTLS certificate")
        }
        guard let context = scw_dtls_context(key, certificate, SRTPProfile.offer) else {
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw DTLSError.openSSL("cannot make the DTLS context")
        }
        return DTLSCertificate(storage: Storage(key: key, certificate: certificate, context: context), fingerprintSHA256: digest)
    }

    /// "AB:CD:…", as SDP's a=fingerprint carries it.
    public var fingerprintSHA256Text: String {
        fingerprintSHA256.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }.joined(separator: ":")
    }
}

/// Client is SDP `setup:active`, server `setup:passive`.
public enum DTLSRole: Sendable, Equatable { case client, server }

/// The SRTP protection profiles (RFC 5764, RFC 7714), AEAD preferred.
public enum SRTPProfile: Sendable, Equatable, CaseIterable {
    case aeadAES128GCM, aeadAES256GCM, aes128CmSha1_80

    /// RFC 5764 §4.1.2 profile ID.
    public var id: Int32 {
        switch self {
        case .aes128CmSha1_80: 0x0001
        case .aeadAES128GCM: 0x0007
        case .aeadAES256GCM: 0x0008
        }
    }

    init?(id: Int32) {
        guard let profile = Self.allCases.first(where: { $0.id == id }) else { return nil }
        self = profile
    }

    var openSSLName: String {
        switch self {
        case .aes128CmSha1_80: "SRTP_AES128_CM_SHA1_80"
        case .aeadAES128GCM: "SRTP_AEAD_AES_128_GCM"
        case .aeadAES256GCM: "SRTP_AEAD_AES_256_GCM"
        }
    }

    static let offer = allCases.map(\.openSSLName).joined(separator: ":")

    public var keyLength: Int { self == .aeadAES256GCM ? 32 : 16 }
    public var saltLength: Int { self == .aes128CmSha1_80 ? 14 : 12 }
}

/// Keys for both directions, each key || salt.
public struct SRTPKeyingMaterial: Sendable, Equatable {
    public var profile: SRTPProfile
    public var localKeyAndSalt: [UInt8]
    public var remoteKeyAndSalt: [UInt8]
}

public enum DTLSState: Sendable, Equatable {
    case handshaking
    case connected(SRTPKeyingMaterial)
    case failed(DTLSError)
    /// The peer closed (close_notify).
    case closed
}

/// One DTLS association. Not thread-safe: the owner serializes calls.
public final class DTLSEndpoint {
    private let ssl: OpaquePointer
    private let certificate: DTLSCertificate
    public let role: DTLSRole
    private let remoteFingerprint: (algorithm: String, bytes: [UInt8])
    private let mtu: Int
    public private(set) var state: DTLSState = .handshaking
    /// Handshake retransmission deadline, while one runs.
    public private(set) var nextTimeout: ContinuousClock.Instant?

    public init(role: DTLSRole, certificate: DTLSCertificate, remoteFingerprint: (algorithm: String, bytes: [UInt8]),
                mtu: Int = 1200) throws(DTLSError) {
        guard let ssl = scw_dtls_connection(certificate.storage.context, role == .server ? 1 : 0, Int32(mtu)) else {
            throw DTLSError.openSSL("cannot make a DTLS connection")
        }
        self.ssl = ssl
        if remoteFingerprint.algorithm.lowercased() == "sha-256", remoteFingerprint.bytes.count == 32 {
            _ = remoteFingerprint.bytes.withUnsafeBufferPointer { scw_dtls_expect_fingerprint(ssl, $0.baseAddress) }
        }
        self.certificate = certificate
        self.role = role
        self.remoteFingerprint = (remoteFingerprint.algorithm.lowercased(), remoteFingerprint.bytes)
        self.mtu = mtu
    }

    deinit { scw_dtls_free(ssl) }

    /// The client's first flight; nothing for a server, which waits for the ClientHello.
    public func start(now: ContinuousClock.Instant) -> [[UInt8]] {
        guard role == .client, state == .handshaking else { return [] }
        return advance(now: now)
    }

    /// One received DTLS datagram (first byte 20–63).
    public func receive(_ datagram: [UInt8], now: ContinuousClock.Instant) -> [[UInt8]] {
        switch state {
        case .failed, .closed: return []
        case .handshaking, .connected: break
        }
        guard !datagram.isEmpty, datagram.count <= 65_535 else { return [] }
        _ = datagram.withUnsafeBufferPointer { scw_dtls_feed(ssl, $0.baseAddress, Int32($0.count)) }
        return advance(now: now)
    }

    /// Retransmits the last flight when its timer expired.
    public func handleTimeout(now: ContinuousClock.Instant) -> [[UInt8]] {
        guard state == .handshaking, let deadline = nextTimeout, deadline <= now else { return [] }
        if scw_dtls_handle_timeout(ssl) < 0 {
            state = .failed(DTLSError.openSSL("DTLS handshake timed out"))
            nextTimeout = nil
            return []
        }
        let flights = drain()
        updateTimeout(now: now)
        return flights
    }

    // MARK: Steps

    private func advance(now: ContinuousClock.Instant) -> [[UInt8]] {
        if state == .handshaking {
            let result = SSL_do_handshake(ssl)
            if result == 1 {
                state = connectedState()
            } else {
                let error = SSL_get_error(ssl, result)
                if scw_dtls_fingerprint_mismatched(ssl) == 1 {
                    ERR_clear_error()
                    state = .failed(DTLSError(reason: "DTLS fingerprint mismatch: the peer's certificate is not the one its SDP names"))
                } else if error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE {
                    state = .failed(DTLSError.openSSL("DTLS handshake failed"))
                }
            }
        }
        if case .connected = state { readApplicationData() }
        ERR_clear_error()
        let flights = drain()
        updateTimeout(now: now)
        return flights
    }

    /// After the handshake: alerts and (unexpected) application data; close_notify ends it.
    private func readApplicationData() {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if count > 0 { continue }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_ZERO_RETURN || SSL_get_shutdown(ssl) & SSL_RECEIVED_SHUTDOWN != 0 {
                state = .closed
            }
            return
        }
    }

    private func connectedState() -> DTLSState {
        guard remoteFingerprint.algorithm == "sha-256" else {
            return .failed(DTLSError(reason: "DTLS fingerprint algorithm \(remoteFingerprint.algorithm) is not supported (sha-256 is)"))
        }
        var peer = [UInt8](repeating: 0, count: 32)
        guard scw_dtls_peer_sha256(ssl, &peer) == 1 else {
            return .failed(DTLSError(reason: "the DTLS peer sent no certificate"))
        }
        guard Self.constantTimeEqual(peer, remoteFingerprint.bytes) else {
            return .failed(DTLSError(reason: "DTLS fingerprint mismatch: the peer's certificate is not the one its SDP names"))
        }
        guard let profile = SRTPProfile(id: scw_dtls_srtp_profile(ssl)) else {
            return .failed(DTLSError(reason: "no SRTP protection profile was negotiated (use_srtp)"))
        }
        let keyLength = profile.keyLength, saltLength = profile.saltLength
        var material = [UInt8](repeating: 0, count: 2 * (keyLength + saltLength))
        let label = "EXTRACTOR-dtls_srtp"
        let exported = material.withUnsafeMutableBufferPointer { out in
            SSL_export_keying_material(ssl, out.baseAddress, out.count, label, label.utf8.count, nil, 0, 0)
        }
        guard exported == 1 else { return .failed(DTLSError.openSSL("cannot export the SRTP keys")) }
        // RFC 5764 §4.2: client key, server key, client salt, server salt.
        let clientKey = material[0..<keyLength], serverKey = material[keyLength..<2 * keyLength]
        let clientSalt = material[2 * keyLength..<2 * keyLength + saltLength]
        let serverSalt = material[(2 * keyLength + saltLength)...]
        let client = Array(clientKey + clientSalt), server = Array(serverKey + serverSalt)
        return .connected(SRTPKeyingMaterial(profile: profile, localKeyAndSalt: role == .client ? client : server,
                                             remoteKeyAndSalt: role == .client ? server : client))
    }

    /// What OpenSSL wrote, cut into records and packed into datagrams of at most `mtu` bytes
    /// (a memory BIO keeps no datagram boundaries; each record stays whole).
    private func drain() -> [[UInt8]] {
        let pending = scw_dtls_pending(ssl)
        guard pending > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: pending)
        let read = bytes.withUnsafeMutableBufferPointer { scw_dtls_drain(ssl, $0.baseAddress, Int32($0.count)) }
        guard read > 0 else { return [] }
        return Self.datagrams(fromRecords: bytes[..<Int(read)], mtu: mtu)
    }

    static func datagrams(fromRecords bytes: ArraySlice<UInt8>, mtu: Int) -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        var current: [UInt8] = []
        var index = bytes.startIndex
        while index + 13 <= bytes.endIndex {
            let length = Int(bytes[index + 11]) << 8 | Int(bytes[index + 12])
            let end = min(index + 13 + length, bytes.endIndex)
            let record = bytes[index..<end]
            if !current.isEmpty, current.count + record.count > mtu {
                datagrams.append(current)
                current = []
            }
            current += record
            index = end
        }
        if !current.isEmpty { datagrams.append(current) }
        return datagrams
    }

    private func updateTimeout(now: ContinuousClock.Instant) {
        var left: Int64 = 0
        nextTimeout = state == .handshaking && scw_dtls_timeout(ssl, &left) == 1 ? now.advanced(by: .microseconds(left)) : nil
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
