// Debian's text stack for overlays: fontconfig finds fonts and per-character fallbacks,
// FriBidi orders right-to-left text, HarfBuzz shapes it, FreeType loads the fonts and Cairo
// rasterizes glyphs and boxes into premultiplied ARGB. Only OverlayDrawing imports it.
#include <hb.h>
#include <hb-ot.h>
#include <ft2build.h>
#include FT_FREETYPE_H
#include <fontconfig/fontconfig.h>
#include <fribidi/fribidi.h>
#include <cairo/cairo.h>
#include <cairo/cairo-ft.h>
