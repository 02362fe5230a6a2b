// Debian's OpenSSL 3 (libssl-dev), for DTLS. Only WebRTCSecurity imports it.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/rand.h>
