// The certificate RTMPS ingest presents: the operator's (PEM files from the configuration),
// or, when none is configured, a self-signed ECDSA P-256 certificate generated once and kept
// under the state directory, so a local publisher can pin or trust it across restarts.
import Crypto
import Foundation
public import NIOSSL
import SwiftASN1
import X509

public enum IngestTLS {
    public struct Error: Swift.Error, CustomStringConvertible {
        public var description: String
    }

    /// A TLS server configuration from PEM files.
    public static func serverConfiguration(certificateFile: String, privateKeyFile: String) throws(Error) -> TLSConfiguration {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
            let key = try NIOSSLPrivateKey(file: privateKeyFile, format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) },
                                                                         privateKey: .privateKey(key))
            // TLS 1.0 and 1.1 are deprecated (RFC 8996); every encoder that speaks RTMPS has 1.2.
            configuration.minimumTLSVersion = .tlsv12
            return configuration
        } catch {
            throw Error(description: "RTMPS certificate \(certificateFile) / key \(privateKeyFile): \(error)")
        }
    }

    /// The self-signed pair in `directory` (`rtmps-cert.pem`, `rtmps-key.pem`, mode 0600),
    /// created on first use for `hosts` (names and IP addresses go into subjectAltName).
    /// Returns the configuration and the certificate file's path.
    public static func selfSigned(in directory: String, hosts: [String]) throws(Error) -> (TLSConfiguration, certificateFile: String) {
        let certificateFile = directory + "/rtmps-cert.pem"
        let keyFile = directory + "/rtmps-key.pem"
        if !FileManager.default.fileExists(atPath: certificateFile) || !FileManager.default.fileExists(atPath: keyFile) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
                let (certificatePEM, keyPEM) = try makeSelfSigned(hosts: hosts)
                // Key first, private from birth; then the certificate that makes the pair usable.
                guard FileManager.default.createFile(atPath: keyFile, contents: Data(keyPEM.utf8),
                                                     attributes: [.posixPermissions: 0o600]) else {
                    throw Error(description: "cannot write \(keyFile)")
                }
                try Data(certificatePEM.utf8).write(to: URL(fileURLWithPath: certificateFile), options: .atomic)
            } catch let error as Error {
                throw error
            } catch {
                throw Error(description: "cannot create a self-signed RTMPS certificate in \(directory): \(error)")
            }
        }
        return (try serverConfiguration(certificateFile: certificateFile, privateKeyFile: keyFile), certificateFile)
    }

    /// A fresh ECDSA P-256 key and a certificate for it valid for ten years.
    static func makeSelfSigned(hosts: [String]) throws -> (certificate: String, key: String) {
        let key = P256.Signing.PrivateKey()
        let privateKey = Certificate.PrivateKey(key)
        let name = try DistinguishedName {
            CommonName(hosts.first ?? "stage-compositor")
            OrganizationName("stage-compositor (self-signed)")
        }
        var names: [GeneralName] = []
        for host in Set(hosts + ["localhost", "127.0.0.1", "::1"]).sorted() {
            if let address = ipAddressBytes(host) {
                names.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice(address))))
            } else {
                names.append(.dnsName(host))
            }
        }
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: privateKey.publicKey,
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(10 * 365 * 86_400),
            issuer: name,
            subject: name,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                KeyUsage(digitalSignature: true)
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: privateKey)
        return (try certificate.serializeAsPEM().pemString, key.pemRepresentation)
    }

    /// The 4 or 16 bytes of an IPv4/IPv6 literal, nil for a host name.
    static func ipAddressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
