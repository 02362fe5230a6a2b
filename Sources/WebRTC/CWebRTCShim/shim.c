#include "CWebRTCShim.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

int scw_generate_certificate(const char *common_name, int days, EVP_PKEY **key_out, X509 **cert_out) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (key == NULL) return 0;
    X509 *cert = X509_new();
    if (cert == NULL) { EVP_PKEY_free(key); return 0; }
    uint64_t serial = 0;
    if (RAND_bytes((unsigned char *)&serial, sizeof serial) != 1) goto fail;
    serial &= 0x7FFFFFFFFFFFFFFFULL;
    if (X509_set_version(cert, 2) != 1) goto fail;
    if (ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert), serial) != 1) goto fail;
    if (X509_gmtime_adj(X509_getm_notBefore(cert), -86400) == NULL) goto fail;
    if (X509_gmtime_adj(X509_getm_notAfter(cert), (long)days * 86400) == NULL) goto fail;
    if (X509_set_pubkey(cert, key) != 1) goto fail;
    X509_NAME *name = X509_get_subject_name(cert);
    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)common_name, -1, -1, 0) != 1) goto fail;
    if (X509_set_issuer_name(cert, name) != 1) goto fail;
    if (X509_sign(cert, key, EVP_sha256()) == 0) goto fail;
    *key_out = key;
    *cert_out = cert;
    return 1;
fail:
    X509_free(cert);
    EVP_PKEY_free(key);
    return 0;
}

int scw_certificate_sha256(X509 *cert, uint8_t out[32]) {
    unsigned int length = 0;
    return X509_digest(cert, EVP_sha256(), out, &length) == 1 && length == 32;
}

struct scw_expectation {
    uint8_t fingerprint[32];
    int mismatched;
};

/// WebRTC peers use self-signed certificates: the chain is not verified, the leaf's
/// fingerprint is (against the SDP), when one is expected.
static int scw_verify_certificate(int preverify, X509_STORE_CTX *context) {
    (void)preverify;
    if (X509_STORE_CTX_get_error_depth(context) != 0) return 1;
    SSL *ssl = X509_STORE_CTX_get_ex_data(context, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct scw_expectation *expectation = ssl == NULL ? NULL : SSL_get_app_data(ssl);
    if (expectation == NULL) return 1;
    uint8_t digest[32];
    X509 *certificate = X509_STORE_CTX_get_current_cert(context);
    if (certificate == NULL || !scw_certificate_sha256(certificate, digest)) {
        expectation->mismatched = 1;
        return 0;
    }
    uint8_t difference = 0;
    for (int index = 0; index < 32; index++) difference |= digest[index] ^ expectation->fingerprint[index];
    if (difference != 0) {
        expectation->mismatched = 1;
        return 0;
    }
    return 1;
}

int scw_dtls_expect_fingerprint(SSL *ssl, const uint8_t fingerprint[32]) {
    struct scw_expectation *expectation = calloc(1, sizeof *expectation);
    if (expectation == NULL) return 0;
    memcpy(expectation->fingerprint, fingerprint, 32);
    free(SSL_get_app_data(ssl));
    return SSL_set_app_data(ssl, expectation);
}

int scw_dtls_fingerprint_mismatched(SSL *ssl) {
    struct scw_expectation *expectation = SSL_get_app_data(ssl);
    return expectation != NULL && expectation->mismatched;
}

void scw_dtls_free(SSL *ssl) {
    free(SSL_get_app_data(ssl));
    SSL_set_app_data(ssl, NULL);
    SSL_free(ssl);
}

SSL_CTX *scw_dtls_context(EVP_PKEY *key, X509 *cert, const char *srtp_profiles) {
    SSL_CTX *context = SSL_CTX_new(DTLS_method());
    if (context == NULL) return NULL;
    if (SSL_CTX_set_min_proto_version(context, DTLS1_2_VERSION) != 1) goto fail;
    if (SSL_CTX_use_certificate(context, cert) != 1) goto fail;
    if (SSL_CTX_use_PrivateKey(context, key) != 1) goto fail;
    if (SSL_CTX_check_private_key(context) != 1) goto fail;
    if (SSL_CTX_set_cipher_list(context, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
                                         "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:"
                                         "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-SHA") != 1) goto fail;
    // 0 means success for this one.
    if (SSL_CTX_set_tlsext_use_srtp(context, srtp_profiles) != 0) goto fail;
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, scw_verify_certificate);
    SSL_CTX_set_read_ahead(context, 1);
    return context;
fail:
    SSL_CTX_free(context);
    return NULL;
}

SSL *scw_dtls_connection(SSL_CTX *context, int is_server, int mtu) {
    SSL *ssl = SSL_new(context);
    if (ssl == NULL) return NULL;
    BIO *in = BIO_new(BIO_s_mem());
    BIO *out = BIO_new(BIO_s_mem());
    if (in == NULL || out == NULL) {
        BIO_free(in);
        BIO_free(out);
        SSL_free(ssl);
        return NULL;
    }
    // An empty memory BIO reads as "retry", not end of file.
    BIO_set_mem_eof_return(in, -1);
    BIO_set_mem_eof_return(out, -1);
    SSL_set_bio(ssl, in, out);
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    SSL_set_mtu(ssl, mtu);
    DTLS_set_link_mtu(ssl, mtu);
    if (is_server) SSL_set_accept_state(ssl); else SSL_set_connect_state(ssl);
    return ssl;
}

int scw_dtls_feed(SSL *ssl, const uint8_t *bytes, int length) {
    return BIO_write(SSL_get_rbio(ssl), bytes, length);
}

size_t scw_dtls_pending(SSL *ssl) {
    return BIO_ctrl_pending(SSL_get_wbio(ssl));
}

int scw_dtls_drain(SSL *ssl, uint8_t *buffer, int capacity) {
    return BIO_read(SSL_get_wbio(ssl), buffer, capacity);
}

int scw_dtls_timeout(SSL *ssl, int64_t *microseconds_left) {
    struct timeval left;
    if (DTLSv1_get_timeout(ssl, &left) != 1) return 0;
    *microseconds_left = (int64_t)left.tv_sec * 1000000 + left.tv_usec;
    return 1;
}

int scw_dtls_handle_timeout(SSL *ssl) {
    return (int)DTLSv1_handle_timeout(ssl);
}

int scw_dtls_srtp_profile(SSL *ssl) {
    SRTP_PROTECTION_PROFILE *profile = SSL_get_selected_srtp_profile(ssl);
    return profile == NULL ? 0 : (int)profile->id;
}

int scw_dtls_peer_sha256(SSL *ssl, uint8_t out[32]) {
    X509 *peer = SSL_get1_peer_certificate(ssl);
    if (peer == NULL) return 0;
    int ok = scw_certificate_sha256(peer, out);
    X509_free(peer);
    return ok;
}

static pthread_once_t scw_srtp_once = PTHREAD_ONCE_INIT;
static int scw_srtp_status = -1;

static void scw_srtp_init_once(void) {
    scw_srtp_status = (int)srtp_init();
}

int scw_srtp_init(void) {
    pthread_once(&scw_srtp_once, scw_srtp_init_once);
    return scw_srtp_status;
}

int scw_srtp_create(srtp_t *session, int profile, const uint8_t *key, int inbound, unsigned long window) {
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    switch (profile) {
    case 0x0001:  // SRTP_AES128_CM_HMAC_SHA1_80
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtp);
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtcp);
        break;
    case 0x0007:  // SRTP_AEAD_AES_128_GCM
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp);
        break;
    case 0x0008:  // SRTP_AEAD_AES_256_GCM
        srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtp);
        srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtcp);
        break;
    default:
        return (int)srtp_err_status_bad_param;
    }
    policy.ssrc.type = inbound ? ssrc_any_inbound : ssrc_any_outbound;
    policy.key = (unsigned char *)key;
    policy.window_size = window;
    policy.allow_repeat_tx = 1;
    policy.next = NULL;
    return (int)srtp_create(session, &policy);
}
