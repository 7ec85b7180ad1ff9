/*
 * chart: what frames the data: the value grid, the axes with their ticks
 * and labels, the title and axis labels, and the legend. See
 * chart-int.h.
 */
#include "chart/chart-int.h"

#include <cairo.h>
#include <math.h>
#include <stdlib.h>

/* A line across the plot at p, a place on the value axis (logical px):
 * added to the path, not stroked. */
void
qr_chart_value_line(cairo_t *cr, const struct qr_chart_layout *L, double p)
{
	if (L->horiz) {
		cairo_move_to(cr, p, L->y0);
		cairo_line_to(cr, p, L->y1);
	} else {
		cairo_move_to(cr, L->x0, p);
		cairo_line_to(cr, L->x1, p);
	}
}

void
qr_chart_draw_grid(cairo_t *cr, const struct qr_chart_layout *L)
{
	double p;
	size_t i;

	cairo_set_line_width(cr, 1);
	qr_chart_set_color(cr, C_MINOR, 1);
	for (i = 0; i < L->vt.n_minor; i++) {
		p = qr_chart_snap(qr_chart_vpos(L, L->vt.minor[i]));
		qr_chart_value_line(cr, L, p);
	}
	cairo_stroke(cr);
	qr_chart_set_color(cr, C_GRID, 1);
	for (i = 0; i < L->vt.n; i++) {
		p = qr_chart_snap(qr_chart_vpos(L, L->vt.v[i]));
		qr_chart_value_line(cr, L, p);
	}
	for (i = 0; i < L->ct.n; i++) {
		p = qr_chart_snap(qr_chart_cpos(L, L->ct.v[i]));
		cairo_move_to(cr, p, L->y0);
		cairo_line_to(cr, p, L->y1);
	}
	cairo_stroke(cr);
}

/* Spines, tick marks and tick labels of both axes. */
void
qr_chart_draw_axes(cairo_t *cr, const struct qr_chart_layout *L)
{
	double p, th, off = TICK_LEN + TICK_GAP;
	size_t i;

	qr_chart_set_color(cr, C_AXIS, 1);
	cairo_set_line_width(cr, 1);
	cairo_move_to(cr, qr_chart_snap(L->x0), L->y0);
	cairo_line_to(cr, qr_chart_snap(L->x0), qr_chart_snap(L->y1));
	cairo_line_to(cr, L->x1, qr_chart_snap(L->y1));
	for (i = 0; i < L->vt.n; i++) {
		p = qr_chart_snap(qr_chart_vpos(L, L->vt.v[i]));
		if (L->horiz) {
			cairo_move_to(cr, p, qr_chart_snap(L->y1));
			cairo_rel_line_to(cr, 0, TICK_LEN);
		} else {
			cairo_move_to(cr, qr_chart_snap(L->x0), p);
			cairo_rel_line_to(cr, -TICK_LEN, 0);
		}
	}
	for (i = 0; i < L->ct.n; i++) {
		cairo_move_to(cr, qr_chart_snap(qr_chart_cpos(L, L->ct.v[i])),
			      qr_chart_snap(L->y1));
		cairo_rel_line_to(cr, 0, TICK_LEN);
	}
	for (i = 0; L->lab != NULL && i < L->n; i += L->lab_k) {
		p = qr_chart_snap(qr_chart_cpos(L, (double)i));
		if (L->horiz) {
			cairo_move_to(cr, qr_chart_snap(L->x0), p);
			cairo_rel_line_to(cr, -TICK_LEN, 0);
		} else {
			cairo_move_to(cr, p, qr_chart_snap(L->y1));
			cairo_rel_line_to(cr, 0, TICK_LEN);
		}
	}
	cairo_stroke(cr);

	qr_chart_set_font(cr, FS_TICK, 0);
	th = qr_chart_font_h(cr);
	qr_chart_set_color(cr, C_TEXT, 1);
	for (i = 0; i < L->vt.n; i++) {
		p = qr_chart_vpos(L, L->vt.v[i]);
		if (L->horiz)
			qr_chart_draw_text(cr, L->vt.s[i], p, L->y1 + off, 0.5,
					   0, 0);
		else
			qr_chart_draw_text(cr, L->vt.s[i], L->x0 - off, p, 1,
					   0.5, 0);
	}
	if (L->vt.offset[0] != '\0') {
		if (L->horiz)
			qr_chart_draw_text(cr, L->vt.offset, L->x1,
					   L->y1 + off + th, 1, 0, 0);
		else
			qr_chart_draw_text(cr, L->vt.offset, L->x0, L->y0 - 3,
					   0, 1, 0);
	}
	for (i = 0; i < L->ct.n; i++)
		qr_chart_draw_text(cr, L->ct.s[i], qr_chart_cpos(L, L->ct.v[i]),
				   L->y1 + off, 0.5, 0, 0);
	for (i = 0; L->lab != NULL && i < L->n; i += L->lab_k) {
		p = qr_chart_cpos(L, (double)i);
		if (L->horiz)
			qr_chart_draw_text(cr, L->lab[i], L->x0 - off, p, 1,
					   0.5, 0);
		else if (L->lab_rot)
			qr_chart_draw_text(cr, L->lab[i], p + th * 0.2,
					   L->y1 + off + th * 0.2, 1, 0.5, -45);
		else
			qr_chart_draw_text(cr, L->lab[i], p, L->y1 + off, 0.5,
					   0, 0);
	}
}

void
qr_chart_draw_titles(cairo_t *cr, const struct qr_chart_layout *L,
		     const struct qr_chart_spec *sp)
{
	double mid, x;
	char *s;

	qr_chart_set_color(cr, C_TEXT, 1);
	if (qr_chart_has_text(sp->title)) {
		qr_chart_set_font(cr, FS_TITLE, 1);
		s = qr_chart_fit_text(cr, sp->title, L->w - 2 * PAD);
		mid = (L->x0 + L->x1) / 2;
		if (mid - qr_chart_text_w(cr, s) / 2 < PAD)
			mid = L->w / 2;
		qr_chart_draw_text(cr, s, mid, PAD, 0.5, 0, 0);
		free(s);
	}
	qr_chart_set_font(cr, FS_LABEL, 0);
	if (qr_chart_has_text(L->horiz ? sp->ylabel : sp->xlabel)) {
		s = qr_chart_fit_text(cr, L->horiz ? sp->ylabel : sp->xlabel,
				      L->w - 2 * PAD);
		qr_chart_draw_text(cr, s, (L->x0 + L->x1) / 2, L->h - PAD, 0.5,
				   1, 0);
		free(s);
	}
	if (qr_chart_has_text(L->horiz ? sp->xlabel : sp->ylabel)) {
		/* next to the tick labels, however far the plot was pushed */
		x = L->x0 - TICK_LEN - TICK_GAP -
		    (L->horiz ? L->lab_w : L->vt.w) - 6 - qr_chart_font_h(cr);
		s = qr_chart_fit_text(cr, L->horiz ? sp->xlabel : sp->ylabel,
				      L->y1 - L->y0 + 40);
		qr_chart_draw_text(cr, s, fmax(x, PAD), (L->y0 + L->y1) / 2,
				   0.5, 0, -90);
		free(s);
	}
}

void
qr_chart_draw_legend(cairo_t *cr, const struct qr_chart_layout *L,
		     const struct qr_chart_spec *sp)
{
	static const double dash[2] = { 4, 2.5 };
	double x = L->lg_x, y = L->lg_y + 5, cy, r = 3;
	size_t i;
	char *s;

	if (L->n_legend == 0)
		return;
	cairo_new_path(cr);
	cairo_arc(cr, x + L->lg_w - r, L->lg_y + r, r, -M_PI / 2, 0);
	cairo_arc(cr, x + L->lg_w - r, L->lg_y + L->lg_h - r, r, 0, M_PI / 2);
	cairo_arc(cr, x + r, L->lg_y + L->lg_h - r, r, M_PI / 2, M_PI);
	cairo_arc(cr, x + r, L->lg_y + r, r, M_PI, 1.5 * M_PI);
	cairo_close_path(cr);
	qr_chart_set_color(cr, 0xffffff, 0.85);
	cairo_fill_preserve(cr);
	qr_chart_set_color(cr, C_FRAME, 1);
	cairo_set_line_width(cr, 1);
	cairo_stroke(cr);
	qr_chart_set_font(cr, FS_TICK, 0);
	for (i = 0; i < sp->n_series; i++) {
		const struct qr_series *se = &sp->series[i];

		if (!qr_chart_has_text(se->label))
			continue;
		cy = y + L->lg_row / 2;
		qr_chart_set_color(cr, qr_chart_color(se->color), 1);
		switch (se->style) {
		case QR_STYLE_LINE:
		case QR_STYLE_DOTTED:
			cairo_set_line_width(cr, 1.5);
			cairo_set_dash(cr, dash,
				       se->style == QR_STYLE_DOTTED ? 2 : 0, 0);
			cairo_move_to(cr, x + 8, cy);
			cairo_line_to(cr, x + 30, cy);
			cairo_stroke(cr);
			cairo_set_dash(cr, NULL, 0, 0);
			break;
		case QR_STYLE_MARKERS:
			cairo_arc(cr, x + 19, cy, 3, 0, 2 * M_PI);
			cairo_fill(cr);
			break;
		case QR_STYLE_BAND:
			qr_chart_set_color(cr, qr_chart_color(se->color), 0.25);
			/* fall through */
		case QR_STYLE_BARS:
			cairo_rectangle(cr, x + 12, cy - 4.5, 14, 9);
			cairo_fill(cr);
			break;
		}
		qr_chart_set_color(cr, C_TEXT, 1);
		s = qr_chart_fit_text(cr, se->label, L->lg_w - 44);
		qr_chart_draw_text(cr, s, x + 36, cy, 0, 0.5, 0);
		free(s);
		y += L->lg_row;
	}
}
