// The Makefile (`make release`, `make deb`) writes `stage_compositor_commit.h`, one line
// `#define STAGE_COMPOSITOR_COMMIT "abc1234"`, into its scratch folder and passes that folder
// with `-Xcc -I`. The header is rewritten only when the commit changes, so a new commit
// recompiles this file alone (a `-Xcc -D` flag would change every module's command line and
// rebuild them all). A plain `swift build` finds no header and says "unknown".
#include "CBuildInfo.h"

#if defined(__has_include)
#if __has_include("stage_compositor_commit.h")
#include "stage_compositor_commit.h"
#endif
#endif

#ifndef STAGE_COMPOSITOR_COMMIT
#define STAGE_COMPOSITOR_COMMIT "unknown"
#endif

const char *stage_compositor_build_commit(void) {
    return STAGE_COMPOSITOR_COMMIT;
}
