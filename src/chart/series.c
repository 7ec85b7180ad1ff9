/*
 * chart: the data drawn in the plot: bands, bars, lines and markers, then
 * the reference lines and the rings round highlighted points. See
 * chart-int.h.
 */
#include "chart/chart-int.h"

#include <cairo.h>
#include <math.h>

/* The place of point i of series s: the top of its bar for bars. */
static int
point_xy(const struct qr_chart_layout *L, const struct qr_chart_spec *sp,
	 size_t si, size_t i, double *x, double *y)
{
	const struct qr_series *s = &sp->series[si];
	double t, r[4];
	size_t b = 0, k;

	if (i >= s->n || !qr_chart_tv(L, s->y[i], &t))
		return 0;
	if (s->style != QR_STYLE_BARS) {
		qr_chart_xy(L, (double)i, t, x, y);
		return 1;
	}
	for (k = 0; k < si; k++)
		b += sp->series[k].style == QR_STYLE_BARS;
	qr_chart_bar_rect(L, s, b, i, r);
	qr_chart_xy(L, (double)i, t, x, y);
	if (L->horiz)
		*y = (r[1] + r[3]) / 2;
	else
		*x = (r[0] + r[2]) / 2;
	return 1;
}

static void
draw_band(cairo_t *cr, const struct qr_chart_layout *L,
	  const struct qr_series *s)
{
	double t, t2, x, y;
	size_t i, start, j;

	for (i = 0; i < s->n;) {
		if (!qr_chart_tv(L, s->y[i], &t) ||
		    !qr_chart_tv(L, s->y2[i], &t2)) {
			i++;
			continue;
		}
		start = i;
		while (i < s->n && qr_chart_tv(L, s->y[i], &t) &&
		       qr_chart_tv(L, s->y2[i], &t2))
			i++;
		for (j = start; j < i; j++) {
			qr_chart_tv(L, s->y[j], &t);
			qr_chart_xy(L, (double)j, t, &x, &y);
			if (j == start)
				cairo_move_to(cr, x, y);
			else
				cairo_line_to(cr, x, y);
		}
		for (j = i; j-- > start;) {
			qr_chart_tv(L, s->y2[j], &t2);
			qr_chart_xy(L, (double)j, t2, &x, &y);
			cairo_line_to(cr, x, y);
		}
		if (i - start > 1) {
			cairo_close_path(cr);
			qr_chart_set_color(cr, qr_chart_color(s->color), 0.25);
			cairo_fill(cr);
			continue;
		}
		/* a lone sample: its min..max as a short stroke */
		qr_chart_set_color(cr, qr_chart_color(s->color), 0.4);
		cairo_set_line_width(cr, 2 * L->mark_r);
		cairo_stroke(cr);
	}
}

static void
draw_line(cairo_t *cr, const struct qr_chart_layout *L,
	  const struct qr_series *s)
{
	static const double dash[2] = { 4, 2.5 };
	double t, x, y;
	size_t i, run = 0;

	qr_chart_set_color(cr, qr_chart_color(s->color), 1);
	cairo_set_line_width(cr, L->line_w);
	cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
	cairo_set_line_cap(cr, s->style == QR_STYLE_DOTTED ?
				       CAIRO_LINE_CAP_BUTT :
				       CAIRO_LINE_CAP_ROUND);
	cairo_set_dash(cr, dash, s->style == QR_STYLE_DOTTED ? 2 : 0, 0);
	for (i = 0; i < s->n; i++) {
		if (!qr_chart_tv(L, s->y[i], &t)) {
			run = 0;
			continue;
		}
		qr_chart_xy(L, (double)i, t, &x, &y);
		if (run++ == 0)
			cairo_move_to(cr, x, y);
		else
			cairo_line_to(cr, x, y);
	}
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
	/* a point between gaps would not show as a line: a dot instead */
	for (i = 0; i < s->n; i++) {
		if (!qr_chart_tv(L, s->y[i], &t) ||
		    (i > 0 && qr_chart_tv(L, s->y[i - 1], &x)) ||
		    (i + 1 < s->n && qr_chart_tv(L, s->y[i + 1], &x)))
			continue;
		qr_chart_xy(L, (double)i, t, &x, &y);
		cairo_new_sub_path(cr);
		cairo_arc(cr, x, y, L->line_w * 1.3, 0, 2 * M_PI);
	}
	cairo_fill(cr);
}

static void
draw_markers(cairo_t *cr, const struct qr_chart_layout *L,
	     const struct qr_series *s)
{
	double t, x, y;
	size_t i;

	qr_chart_set_color(cr, qr_chart_color(s->color), 1);
	for (i = 0; i < s->n; i++) {
		if (!qr_chart_tv(L, s->y[i], &t))
			continue;
		qr_chart_xy(L, (double)i, t, &x, &y);
		cairo_new_sub_path(cr);
		cairo_arc(cr, x, y, L->mark_r, 0, 2 * M_PI);
	}
	cairo_fill(cr);
}

static void
draw_bars(cairo_t *cr, const struct qr_chart_layout *L,
	  const struct qr_series *s, size_t b)
{
	double r[4];
	size_t i;

	qr_chart_set_color(cr, qr_chart_color(s->color), 1);
	for (i = 0; i < s->n; i++)
		if (qr_chart_bar_rect(L, s, b, i, r))
			cairo_rectangle(cr, r[0], r[1], r[2] - r[0],
					r[3] - r[1]);
	cairo_fill(cr);
}

void
qr_chart_draw_data(cairo_t *cr, const struct qr_chart_layout *L,
		   const struct qr_chart_spec *sp)
{
	size_t si, b = 0;
	int pass;

	cairo_save(cr);
	cairo_rectangle(cr, L->x0 - 6, L->y0 - 6, L->x1 - L->x0 + 12,
			L->y1 - L->y0 + 12);
	cairo_clip(cr);
	/* bands under bars under lines under markers */
	for (pass = 0; pass < 4; pass++) {
		for (si = 0; si < sp->n_series; si++) {
			const struct qr_series *s = &sp->series[si];

			if (pass == 0 && s->style == QR_STYLE_BAND)
				draw_band(cr, L, s);
			if (pass == 1 && s->style == QR_STYLE_BARS)
				draw_bars(cr, L, s, b++);
			if (pass == 2 && (s->style == QR_STYLE_LINE ||
					  s->style == QR_STYLE_DOTTED))
				draw_line(cr, L, s);
			if (pass == 3 && s->style == QR_STYLE_MARKERS)
				draw_markers(cr, L, s);
		}
	}
	cairo_restore(cr);
}

void
qr_chart_draw_hlines(cairo_t *cr, const struct qr_chart_layout *L,
		     const struct qr_chart_spec *sp)
{
	static const double dash[2] = { 5, 3 };
	double t, p, r[4];
	size_t i;

	qr_chart_set_font(cr, FS_TICK, 0);
	for (i = 0; i < sp->n_hlines; i++) {
		if (!qr_chart_tv(L, sp->hlines[i].y, &t))
			continue;
		p = qr_chart_snap(qr_chart_vpos(L, t));
		qr_chart_set_color(cr, C_REF, 1);
		cairo_set_line_width(cr, 1);
		cairo_set_dash(cr, dash, 2, 0);
		qr_chart_value_line(cr, L, p);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		if (!qr_chart_has_text(sp->hlines[i].label))
			continue;
		qr_chart_hline_label_box(cr, L, t, sp->hlines[i].label, r);
		qr_chart_set_color(cr, 0xffffff, 0.8);
		cairo_rectangle(cr, r[0] - 2, r[1], r[2] - r[0] + 4,
				r[3] - r[1]);
		cairo_fill(cr);
		qr_chart_set_color(cr, C_REF, 1);
		qr_chart_draw_text(cr, sp->hlines[i].label, r[0], r[1], 0, 0,
				   0);
	}
}

void
qr_chart_draw_marks(cairo_t *cr, const struct qr_chart_layout *L,
		    const struct qr_chart_spec *sp)
{
	double x, y, rad = fmax(L->mark_r + 2.5, 4.5);
	size_t i;

	qr_chart_set_color(cr, C_RING, 1);
	cairo_set_line_width(cr, 1.5);
	for (i = 0; i < sp->n_marks; i++) {
		if (!point_xy(L, sp, sp->marks[i].series, sp->marks[i].index,
			      &x, &y))
			continue;
		cairo_new_sub_path(cr);
		cairo_arc(cr, x, y, rad, 0, 2 * M_PI);
	}
	cairo_stroke(cr);
}
