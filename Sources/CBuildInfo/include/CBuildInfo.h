// The commit this binary was built from, for `--version` and `stage_compositor_build_info`.
// C only because a compiler flag or a header found on the include path can set it without
// touching a tracked file (see build_info.c).
#ifndef STAGE_COMPOSITOR_BUILD_INFO_H
#define STAGE_COMPOSITOR_BUILD_INFO_H

/// The short commit hash stamped in by the Makefile, or "unknown". A static string: never freed.
const char *stage_compositor_build_commit(void);

#endif
