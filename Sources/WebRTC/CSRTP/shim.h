// Debian's libsrtp2 (libsrtp2-dev). Only WebRTCSecurity imports it.
#include <srtp2/srtp.h>
