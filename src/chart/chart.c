/*
 * chart: qr_chart_draw and qr_chart_areas. A spec is checked, copied with
 * every string made valid UTF-8, laid out (layout.c) on a cairo context
 * and, when drawing, drawn back to front and written as a PNG (png.c);
 * the clickable areas come from the layout. See chart.h and chart-int.h.
 */
#include "chart/chart-int.h"

#include <cairo.h>
#include <math.h>
#include <stdlib.h>

static enum qr_status
check_spec(const struct qr_chart_spec *sp, const char *path,
	   struct qr_diag *d)
{
	const char *name = path != NULL ? path : "(no path)";
	size_t i;

	if (path == NULL || sp == NULL || sp->n_series == 0 ||
	    sp->series == NULL)
		return qr_errorf(d, QR_EUSAGE, "chart '%s': no series", name);
	if (sp->width < 64 || sp->height < 64 || sp->width > 8192 ||
	    sp->height > 8192)
		return qr_errorf(d, QR_EUSAGE, "chart '%s': size %dx%d is not "
				 "in 64..8192", name, sp->width, sp->height);
	for (i = 0; i < sp->n_series; i++) {
		const struct qr_series *s = &sp->series[i];

		if (s->n == 0 || s->y == NULL)
			return qr_errorf(d, QR_EUSAGE, "chart '%s': series "
					 "%zu is empty", name, i);
		if (s->style > QR_STYLE_BAND)
			return qr_errorf(d, QR_EUSAGE, "chart '%s': series "
					 "%zu has unknown style %d", name, i,
					 (int)s->style);
		if (s->style == QR_STYLE_BAND && s->y2 == NULL)
			return qr_errorf(d, QR_EUSAGE, "chart '%s': band "
					 "series %zu has no y2", name, i);
	}
	if ((sp->n_marks > 0 && sp->marks == NULL) ||
	    (sp->n_hlines > 0 && sp->hlines == NULL))
		return qr_errorf(d, QR_EUSAGE, "chart '%s': marks or hlines "
				 "missing", name);
	for (i = 0; i < sp->n_marks; i++)
		if (sp->marks[i].series >= sp->n_series ||
		    sp->marks[i].index >= sp->series[sp->marks[i].series].n)
			return qr_errorf(d, QR_EUSAGE, "chart '%s': mark %zu "
					 "points at no point", name, i);
	return QR_OK;
}

/* A context on a new w x h logical-pixel image (w, h may be 1 when it
 * only measures), scaled for SCALE. */
static cairo_t *
new_context(int w, int h)
{
	static const cairo_user_data_key_t key;
	int stride = cairo_format_stride_for_width(CAIRO_FORMAT_ARGB32,
						   w * SCALE);
	/* not zeroed (cairo's own surfaces are): every chart paints its
	 * white background first */
	unsigned char *px = xreallocarray(NULL, (size_t)(h * SCALE),
					  (size_t)stride);
	cairo_surface_t *surf;
	cairo_t *cr;

	surf = cairo_image_surface_create_for_data(px, CAIRO_FORMAT_ARGB32,
						   w * SCALE, h * SCALE,
						   stride);
	if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS ||
	    cairo_surface_set_user_data(surf, &key, px, free) !=
		    CAIRO_STATUS_SUCCESS)
		qr_fatal("cairo: %s",
			 cairo_status_to_string(cairo_surface_status(surf)));
	cr = cairo_create(surf);
	cairo_surface_destroy(surf); /* cr holds it */
	cairo_scale(cr, SCALE, SCALE);
	/* Shapes (not text) with cairo's 4x4-sample rasterizer: at 2x it
	 * looks the same as the default and draws a dense line chart three
	 * times faster. */
	cairo_set_antialias(cr, CAIRO_ANTIALIAS_FAST);
	return cr;
}
/* Replace, in place, every byte that does not start a valid UTF-8
 * sequence (RFC 3629: no overlongs, surrogates or values past U+10FFFF)
 * with '?': cairo refuses invalid UTF-8 and model names can hold any
 * bytes. */
static void
fix_utf8(char *str)
{
	unsigned char *s = (unsigned char *)str;
	size_t n, k;

	if (s == NULL)
		return;
	while (*s != '\0') {
		unsigned c = s[0];

		if (c < 0x80) {
			s++;
			continue;
		}
		n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 :
		    c >= 0xf0 && c <= 0xf4 ? 4 : 0;
		for (k = 1; k < n; k++)
			if ((s[k] & 0xc0) != 0x80)
				n = 0;
		if (n == 3 && ((c == 0xe0 && s[1] < 0xa0) ||
			       (c == 0xed && s[1] >= 0xa0)))
			n = 0;
		if (n == 4 && ((c == 0xf0 && s[1] < 0x90) ||
			       (c == 0xf4 && s[1] >= 0x90)))
			n = 0;
		if (n == 0) {
			*s++ = '?';
			continue;
		}
		s += n;
	}
}

/* A copy of spec whose every string is valid UTF-8. */
static struct qr_chart_spec *
utf8_copy(const struct qr_chart_spec *spec)
{
	struct qr_chart_spec *safe = qr_chart_spec_copy(spec);
	size_t i, nt = 0;

	fix_utf8((char *)safe->title);
	fix_utf8((char *)safe->xlabel);
	fix_utf8((char *)safe->ylabel);
	for (i = 0; i < safe->n_series; i++) {
		fix_utf8((char *)safe->series[i].label);
		if (safe->series[i].n > nt)
			nt = safe->series[i].n;
	}
	for (i = 0; safe->xticks != NULL && i < nt; i++)
		fix_utf8((char *)safe->xticks[i]);
	for (i = 0; safe->hlines != NULL && i < safe->n_hlines; i++)
		fix_utf8((char *)safe->hlines[i].label);
	return safe;
}

/* One rectangle per category of the first series, in logical px. */
static struct qr_area *
make_areas(const struct qr_chart_layout *L, size_t n)
{
	struct qr_area *a = xcalloc(n, sizeof *a);
	double lo, hi, half = L->slot / 2;
	long c0, c1, v0, v1;
	size_t i;

	for (i = 0; i < n; i++) {
		lo = fmax(qr_chart_cpos(L, (double)i) - half,
			  L->horiz ? L->y0 : L->x0);
		hi = fmin(qr_chart_cpos(L, (double)i) + half,
			  L->horiz ? L->y1 : L->x1);
		c0 = lround(lo);
		c1 = lround(hi);
		if (c1 <= c0)
			c1 = c0 + 1;
		v0 = lround(L->horiz ? L->x0 : L->y0);
		v1 = lround(L->horiz ? L->x1 : L->y1);
		a[i].index = i;
		a[i].series = 0;
		if (L->horiz) {
			a[i].x0 = (int)v0, a[i].x1 = (int)v1;
			a[i].y0 = (int)c0, a[i].y1 = (int)c1;
		} else {
			a[i].x0 = (int)c0, a[i].x1 = (int)c1;
			a[i].y0 = (int)v0, a[i].y1 = (int)v1;
		}
	}
	return a;
}

/* The areas of the first series' n points, when asked for. */
static void
give_areas(const struct qr_chart_layout *L,
	   const struct qr_chart_spec *spec, struct qr_area **areas,
	   size_t *n_areas)
{
	if (areas == NULL)
		return;
	*areas = make_areas(L, spec->series[0].n);
	if (n_areas != NULL)
		*n_areas = spec->series[0].n;
}

/* Drawing back to front: grid, data, reference lines, rings, axes,
 * titles, legend; then the PNG written to path. */
static enum qr_status
draw_chart(cairo_t *cr, const struct qr_chart_layout *L,
	   const struct qr_chart_spec *spec, const char *path,
	   struct qr_diag *d)
{
	cairo_surface_t *surf = cairo_get_target(cr);

	qr_chart_set_color(cr, 0xffffff, 1);
	cairo_paint(cr);
	qr_chart_draw_grid(cr, L);
	qr_chart_draw_data(cr, L, spec);
	qr_chart_draw_hlines(cr, L, spec);
	qr_chart_draw_marks(cr, L, spec);
	qr_chart_draw_axes(cr, L);
	if (L->empty) {
		qr_chart_set_font(cr, FS_LABEL, 0);
		qr_chart_set_color(cr, C_REF, 1);
		qr_chart_draw_text(cr, L->log ? "no positive values" :
						"no finite values",
				   (L->x0 + L->x1) / 2, (L->y0 + L->y1) / 2,
				   0.5, 0.5, 0);
	}
	qr_chart_draw_titles(cr, L, spec);
	qr_chart_draw_legend(cr, L, spec);
	if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
		qr_fatal("cairo: %s", cairo_status_to_string(cairo_status(cr)));

	cairo_surface_flush(surf);
	return qr_png_write_argb32(path, cairo_image_surface_get_data(surf),
				   cairo_image_surface_get_width(surf),
				   cairo_image_surface_get_height(surf),
				   cairo_image_surface_get_stride(surf), d);
}

/*
 * Check spec and lay out a copy of it whose every string is valid UTF-8;
 * when draw, draw it and write it to path, else measure it on a 1x1
 * image (text metrics depend on the font and the scale, not on the image
 * size, so the areas are those drawing gives). Then the areas, when asked
 * for and all went well. path names the chart in error messages.
 */
static enum qr_status
chart_run(const struct qr_chart_spec *spec, const char *path, int draw,
	  struct qr_area **areas, size_t *n_areas, struct qr_diag *d)
{
	struct qr_chart_spec *safe;
	struct qr_chart_layout L;
	enum qr_status st;
	cairo_t *cr;

	if (areas != NULL)
		*areas = NULL;
	if (n_areas != NULL)
		*n_areas = 0;
	st = check_spec(spec, path, d);
	if (st != QR_OK)
		return st;
	safe = utf8_copy(spec);
	cr = draw ? new_context(safe->width, safe->height) : new_context(1, 1);
	qr_chart_lay_out(cr, safe, &L);
	if (draw)
		st = draw_chart(cr, &L, safe, path, d);
	if (st == QR_OK)
		give_areas(&L, safe, areas, n_areas);
	qr_chart_free_labels(&L);
	cairo_destroy(cr);
	qr_chart_spec_free(safe);
	return st;
}

/* Draw a copy of spec whose every string is valid UTF-8. */
enum qr_status
qr_chart_draw(const struct qr_chart_spec *spec, const char *path,
	      struct qr_area **areas, size_t *n_areas, struct qr_diag *d)
{
	return chart_run(spec, path, 1, areas, n_areas, d);
}

/* Lay out a copy of spec whose every string is valid UTF-8, as
 * qr_chart_draw does, and draw nothing. */
enum qr_status
qr_chart_areas(const struct qr_chart_spec *spec, const char *name,
	       struct qr_area **areas, size_t *n_areas, struct qr_diag *d)
{
	return chart_run(spec, name, 0, areas, n_areas, d);
}
