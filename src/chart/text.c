/*
 * chart: the palette, colours, fonts, and text drawn and fitted to a
 * width. See chart-int.h.
 */
#include "chart/chart-int.h"

#include <cairo.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FONT "DejaVu Sans"
#define LABEL_BYTES 200   /* bytes of a name kept before fitting */

/* Okabe-Ito, reordered so the first colours are the most distinct on white
 * and the weak yellow comes last. */
static const unsigned palette[8] = {
	0x0072b2, 0xe69f00, 0x009e73, 0xd55e00,
	0xcc79a7, 0x56b4e9, 0x000000, 0xf0e442,
};

/* Palette colour i as 0xRRGGBB; any int maps onto the 8 colours. */
unsigned
qr_chart_color(int i)
{
	return palette[((i % 8) + 8) % 8];
}

void
qr_chart_set_color(cairo_t *cr, unsigned rgb, double alpha)
{
	cairo_set_source_rgba(cr, ((rgb >> 16) & 0xff) / 255.0,
			      ((rgb >> 8) & 0xff) / 255.0, (rgb & 0xff) / 255.0,
			      alpha);
}

void
qr_chart_set_font(cairo_t *cr, double size, int bold)
{
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL,
			       bold ? CAIRO_FONT_WEIGHT_BOLD :
				      CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
}

double
qr_chart_font_h(cairo_t *cr)
{
	cairo_font_extents_t fe;

	cairo_font_extents(cr, &fe);
	return fe.ascent + fe.descent;
}

double
qr_chart_text_w(cairo_t *cr, const char *s)
{
	cairo_text_extents_t te;

	cairo_text_extents(cr, s, &te);
	return te.x_advance;
}

/*
 * Draw s with its box anchored at (x, y): ha and va are fractions of the
 * box (0 left/top, 1 right/bottom), the box turned by deg about the anchor.
 */
void
qr_chart_draw_text(cairo_t *cr, const char *s, double x, double y,
		   double ha, double va, double deg)
{
	cairo_font_extents_t fe;

	cairo_font_extents(cr, &fe);
	cairo_save(cr);
	cairo_translate(cr, x, y);
	if (deg != 0)
		cairo_rotate(cr, deg * M_PI / 180);
	cairo_move_to(cr, -ha * qr_chart_text_w(cr, s),
		      fe.ascent - va * (fe.ascent + fe.descent));
	cairo_show_text(cr, s);
	cairo_restore(cr);
}

static size_t
utf8_back(const char *s, size_t i)
{
	while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
		i--;
	return i;
}

static size_t
utf8_fwd(const char *s, size_t i)
{
	while (s[i] != '\0' && ((unsigned char)s[i] & 0xc0) == 0x80)
		i++;
	return i;
}

/*
 * s as a new string no wider than maxw in the current font. Long names lose
 * their middle ("/backbone/…/conv2/Conv"): layer names differ most at the
 * end, so the tail keeps two thirds of what fits.
 */
char *
qr_chart_fit_text(cairo_t *cr, const char *s, double maxw)
{
	size_t len, lo, hi, mid, head, tail;
	char *out = NULL, *t;

	s = s != NULL ? s : "";
	len = strlen(s);
	if (len <= LABEL_BYTES && qr_chart_text_w(cr, s) <= maxw)
		return xstrdup(s);
	lo = 0;
	hi = len < LABEL_BYTES ? len : LABEL_BYTES;
	while (lo < hi) {
		mid = (lo + hi + 1) / 2;
		head = utf8_back(s, mid / 3);
		tail = utf8_fwd(s, len - (mid - mid / 3));
		t = xasprintf("%.*s\u2026%s", (int)head, s, s + tail);
		if (qr_chart_text_w(cr, t) <= maxw) {
			lo = mid;
			free(out);
			out = t;
		} else {
			hi = mid - 1;
			free(t);
		}
	}
	return out != NULL ? out : xstrdup("\u2026");
}
