// Prefixed C helpers for WebRTCSecurity: OpenSSL 3 macros and variadic calls, and libsrtp2
// policy set-up, which Swift cannot call (or call clearly) by itself.
#ifndef CWEBRTCSHIM_H
#define CWEBRTCSHIM_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>
#include <srtp2/srtp.h>

/// A fresh ECDSA P-256 key and a self-signed certificate for it (SHA-256, valid from a day ago
/// for `days`, random serial, CN=`common_name`). 1 on success; the caller frees both.
int scw_generate_certificate(const char *common_name, int days, EVP_PKEY **key_out, X509 **cert_out);

/// SHA-256 of the certificate's DER encoding into `out` (32 bytes). 1 on success.
int scw_certificate_sha256(X509 *cert, uint8_t out[32]);

/// A DTLS 1.2 context with this certificate, peer certificates requested and accepted
/// whatever their issuer (WebRTC checks the SDP fingerprint instead), and `srtp_profiles`
/// offered (OpenSSL's colon-separated names). NULL on failure.
SSL_CTX *scw_dtls_context(EVP_PKEY *key, X509 *cert, const char *srtp_profiles);

/// A DTLS connection over two memory BIOs (`SSL_free` frees them), in the given role, with
/// this MTU and no MTU queries. NULL on failure.
SSL *scw_dtls_connection(SSL_CTX *context, int is_server, int mtu);

/// The SHA-256 fingerprint the peer's certificate must have (from its SDP): checked while the
/// handshake runs, so a mismatch aborts it with a fatal alert. 1 on success.
int scw_dtls_expect_fingerprint(SSL *ssl, const uint8_t fingerprint[32]);
/// 1 when the handshake failed because the peer's certificate did not match.
int scw_dtls_fingerprint_mismatched(SSL *ssl);
/// Frees the connection and what scw_dtls_expect_fingerprint attached.
void scw_dtls_free(SSL *ssl);

/// Feeds one received datagram to the connection's read BIO.
int scw_dtls_feed(SSL *ssl, const uint8_t *bytes, int length);
/// Bytes waiting in the write BIO (records to send), and reading them out.
size_t scw_dtls_pending(SSL *ssl);
int scw_dtls_drain(SSL *ssl, uint8_t *buffer, int capacity);

/// DTLSv1_get_timeout: 1 and the time left (µs) when a retransmission timer runs, else 0.
int scw_dtls_timeout(SSL *ssl, int64_t *microseconds_left);
/// DTLSv1_handle_timeout.
int scw_dtls_handle_timeout(SSL *ssl);

/// The negotiated SRTP protection profile's ID (RFC 5764 §4.1.2), or 0.
int scw_dtls_srtp_profile(SSL *ssl);
/// SHA-256 of the peer certificate's DER into `out`; 0 when the peer sent none.
int scw_dtls_peer_sha256(SSL *ssl, uint8_t out[32]);

/// One-time libsrtp initialisation (thread-safe; later calls return the first result).
int scw_srtp_init(void);
/// A libsrtp session for one direction. `profile` is the RFC 5764 ID; `key` is key || salt.
/// `inbound`: any inbound SSRC; else any outbound. 0 (srtp_err_status_ok) on success.
int scw_srtp_create(srtp_t *session, int profile, const uint8_t *key, int inbound, unsigned long window);

#endif
