/*
 * chart: the layout of a chart, measured before anything is drawn: the
 * value range, the category labels fitted to their room, the plot
 * rectangle and its ticks, bar rectangles, and the legend's size and
 * place (the first corner of the plot it hides nothing in). See
 * chart-int.h.
 */
#include "chart/chart-int.h"

#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIN45 0.70710678118654752

/* Where bars start: zero, or the axis end when zero is off it (log). */
static double
bar_base(const struct qr_chart_layout *L)
{
	if (L->log)
		return L->v0;
	return fmin(fmax(0, L->v0), L->v1);
}

/*
 * Rectangle of bar i of series s, the b-th of the L->n_bars bars in each
 * group; 0 when the value cannot be drawn. Edges sit on device pixels and
 * a bar is at least 1 logical px thick.
 */
int
qr_chart_bar_rect(const struct qr_chart_layout *L, const struct qr_series *s,
		  size_t b, size_t i, double r[4])
{
	double t, group, bw, c_lo, a0, a1, v0, v1;

	if (!qr_chart_tv(L, s->y[i], &t))
		return 0;
	group = L->slot >= 4 ? 0.8 * L->slot : L->slot;
	bw = group / (double)L->n_bars;
	c_lo = qr_chart_cpos(L, (double)i) - group / 2 + (double)b * bw;
	a0 = qr_chart_snap(c_lo);
	a1 = qr_chart_snap(c_lo + bw);
	if (a1 - a0 < 1)
		a1 = a0 + 1;
	v0 = qr_chart_snap(qr_chart_vpos(L, bar_base(L)));
	v1 = qr_chart_snap(qr_chart_vpos(L, fmin(fmax(t, L->v0), L->v1)));
	if (L->horiz) {
		r[0] = fmin(v0, v1), r[2] = fmax(v0, v1);
		r[1] = a0, r[3] = a1;
	} else {
		r[0] = a0, r[2] = a1;
		r[1] = fmin(v0, v1), r[3] = fmax(v0, v1);
	}
	return 1;
}

static int
box_hits(const double a[4], double x0, double y0, double x1, double y1)
{
	return fmin(x0, x1) <= a[2] && fmax(x0, x1) >= a[0] &&
	       fmin(y0, y1) <= a[3] && fmax(y0, y1) >= a[1];
}

void
qr_chart_hline_label_box(cairo_t *cr, const struct qr_chart_layout *L,
			 double t, const char *label, double r[4])
{
	double w = qr_chart_text_w(cr, label), h = qr_chart_font_h(cr);
	double p = qr_chart_vpos(L, t);

	if (L->horiz) {
		r[0] = p + 3, r[2] = p + 3 + w;
		r[1] = L->y0 + 2, r[3] = L->y0 + 2 + h;
	} else {
		r[0] = L->x1 - 4 - w, r[2] = L->x1 - 4;
		r[3] = p - 2, r[1] = p - 2 - h;
		if (r[1] < L->y0)
			r[1] = p + 2, r[3] = p + 2 + h;
	}
}

/* Grow bounding box b (x0, y0, x1, y1) by point i of s, y or y2. */
static void
grow(const struct qr_chart_layout *L, const struct qr_series *s, size_t i,
     int upper, double b[4])
{
	double t, x, y;

	if (!qr_chart_tv(L, upper ? s->y2[i] : s->y[i], &t))
		return;
	qr_chart_xy(L, (double)i, t, &x, &y);
	b[0] = fmin(b[0], x), b[1] = fmin(b[1], y);
	b[2] = fmax(b[2], x), b[3] = fmax(b[3], y);
}

/* How many drawn things (segments, bars, bands, labels) meet box a. */
static size_t
count_hits(cairo_t *cr, const struct qr_chart_layout *L,
	   const struct qr_chart_spec *sp, const double a[4])
{
	size_t si, i, b = 0, hits = 0;
	double t, r[4];

	for (si = 0; si < sp->n_series; si++) {
		const struct qr_series *s = &sp->series[si];

		for (i = 0; i < s->n; i++) {
			if (s->style == QR_STYLE_BARS) {
				hits += qr_chart_bar_rect(L, s, b, i, r) &&
					box_hits(a, r[0], r[1], r[2], r[3]);
				continue;
			}
			r[0] = r[1] = INFINITY;
			r[2] = r[3] = -INFINITY;
			grow(L, s, i, 0, r);
			if (s->style == QR_STYLE_BAND)
				grow(L, s, i, 1, r);
			if (r[0] > r[2])
				continue;
			if (s->style != QR_STYLE_MARKERS && i + 1 < s->n) {
				grow(L, s, i + 1, 0, r);
				if (s->style == QR_STYLE_BAND)
					grow(L, s, i + 1, 1, r);
			}
			hits += box_hits(a, r[0] - L->mark_r, r[1] - L->mark_r,
					 r[2] + L->mark_r, r[3] + L->mark_r);
		}
		b += s->style == QR_STYLE_BARS;
	}
	qr_chart_set_font(cr, FS_TICK, 0);
	for (i = 0; i < sp->n_hlines; i++) {
		if (!qr_chart_tv(L, sp->hlines[i].y, &t))
			continue;
		if (L->horiz)
			hits += box_hits(a, qr_chart_vpos(L, t), L->y0,
					 qr_chart_vpos(L, t), L->y1);
		else
			hits += box_hits(a, L->x0, qr_chart_vpos(L, t), L->x1,
					 qr_chart_vpos(L, t));
		if (!qr_chart_has_text(sp->hlines[i].label))
			continue;
		qr_chart_hline_label_box(cr, L, t, sp->hlines[i].label, r);
		hits += box_hits(a, r[0], r[1], r[2], r[3]);
	}
	return hits;
}

/* Data range on the value axis, padded the way matplotlib pads it. */
static void
value_range(const struct qr_chart_spec *sp, struct qr_chart_layout *L)
{
	double lo = INFINITY, hi = -INFINITY, t, span;
	size_t si, i;

	for (si = 0; si < sp->n_series; si++) {
		const struct qr_series *s = &sp->series[si];

		for (i = 0; i < s->n; i++) {
			if (qr_chart_tv(L, s->y[i], &t))
				lo = fmin(lo, t), hi = fmax(hi, t);
			if (s->style == QR_STYLE_BAND &&
			    qr_chart_tv(L, s->y2[i], &t))
				lo = fmin(lo, t), hi = fmax(hi, t);
		}
	}
	for (i = 0; i < sp->n_hlines; i++)
		if (qr_chart_tv(L, sp->hlines[i].y, &t))
			lo = fmin(lo, t), hi = fmax(hi, t);
	if (lo > hi) {
		L->empty = 1;
		lo = 0;
		hi = 1;
	}
	if (L->log) {
		if (hi - lo < 1e-12) {
			lo -= 1;
			hi += 1;
		}
		if (floor(hi + 1e-9) - ceil(lo - 1e-9) >= 1 && L->n_bars == 0) {
			/* two decade ticks inside the data: pad like linear */
			span = hi - lo;
			L->v0 = lo - 0.05 * span;
			L->v1 = hi + 0.05 * span;
		} else {
			L->v0 = floor(lo + 1e-9);
			L->v1 = ceil(hi - 1e-9);
		}
		return;
	}
	if (L->n_bars > 0) {
		lo = fmin(lo, 0);
		hi = fmax(hi, 0);
	}
	if (hi - lo <= fabs(hi) * 1e-12) {
		span = hi != 0 ? fabs(hi) * 0.1 : 1;
		lo -= lo != 0 || L->n_bars == 0 ? span : 0;
		hi += span;
	}
	if (!isfinite(hi - lo)) {
		lo /= 2;
		hi /= 2;
	}
	span = hi - lo;
	L->v0 = L->n_bars > 0 && lo == 0 ? 0 : lo - 0.05 * span;
	L->v1 = L->n_bars > 0 && hi == 0 ? 0 : hi + 0.05 * span;
}

/*
 * Bytes of the "/"-separated head and tail that all n names share (0, 0
 * when they share none or a name would be left empty): "/model/enc/…" and
 * "…/MatMul" say nothing on an axis of layers.
 */
static void
common_parts(const char *const *names, size_t n, size_t *head, size_t *tail)
{
	size_t i, k, p, q, len0;
	const char *s0;

	*head = *tail = 0;
	if (n < 2)
		return;
	s0 = names[0] != NULL ? names[0] : "";
	len0 = strlen(s0);
	p = len0;
	q = len0;
	for (i = 1; i < n; i++) {
		const char *s = names[i] != NULL ? names[i] : "";
		size_t len = strlen(s);

		for (k = 0; k < p && s[k] == s0[k]; k++)
			;
		p = k;
		for (k = 0; k < q && k < len && s[len - 1 - k] ==
						    s0[len0 - 1 - k]; k++)
			;
		q = k;
	}
	while (p > 0 && s0[p - 1] != '/')
		p--;
	while (q > 0 && s0[len0 - q] != '/')
		q--;
	*head = p > 2 ? p - 1 : 0;
	*tail = q > 2 ? q : 0;
	for (i = 0; i < n; i++) {
		size_t len = names[i] != NULL ? strlen(names[i]) : 0;

		if (len < *head + *tail + 2) {
			*head = *tail = 0;
			return;
		}
	}
}

/* Category labels fitted to the room they may take. */
static void
fit_labels(cairo_t *cr, const struct qr_chart_spec *sp,
	   struct qr_chart_layout *L)
{
	double maxw, th, widest = 0;
	size_t i, head = 0, tail = 0;
	char num[32], *t;

	if (sp->xticks == NULL && !L->horiz)
		return;
	qr_chart_set_font(cr, FS_TICK, 0);
	th = qr_chart_font_h(cr);
	if (L->horiz)
		maxw = fmax(60, 0.3 * L->w);
	else
		maxw = fmax(60, fmin((0.33 * L->h - th) / SIN45, 0.4 * L->w));
	for (i = 0; sp->xticks != NULL && i < L->n; i++)
		if (sp->xticks[i] != NULL)
			widest = fmax(widest,
				      qr_chart_text_w(cr, sp->xticks[i]));
	if (sp->xticks != NULL && widest > maxw)
		common_parts(sp->xticks, L->n, &head, &tail);
	L->lab = xcalloc(L->n, sizeof *L->lab);
	L->lab_w = 0;
	for (i = 0; i < L->n; i++) {
		if (sp->xticks == NULL) {
			snprintf(num, sizeof num, "%zu", i);
			L->lab[i] = xstrdup(num);
		} else {
			const char *s = sp->xticks[i] != NULL ? sp->xticks[i] :
								 "";

			t = xasprintf("%s%.*s%s", head ? "\u2026" : "",
				      (int)(strlen(s) - head - tail), s + head,
				      tail ? "/\u2026" : "");
			L->lab[i] = qr_chart_fit_text(cr, t, maxw);
			free(t);
		}
		L->lab_w = fmax(L->lab_w, qr_chart_text_w(cr, L->lab[i]));
	}
}

void
qr_chart_free_labels(struct qr_chart_layout *L)
{
	size_t i;

	if (L->lab == NULL)
		return;
	for (i = 0; i < L->n; i++)
		free(L->lab[i]);
	free(L->lab);
	L->lab = NULL;
}

static void
measure_legend(cairo_t *cr, const struct qr_chart_spec *sp,
	       struct qr_chart_layout *L)
{
	double w = 0;
	size_t i;

	qr_chart_set_font(cr, FS_TICK, 0);
	L->n_legend = 0;
	for (i = 0; i < sp->n_series; i++) {
		if (!qr_chart_has_text(sp->series[i].label))
			continue;
		w = fmax(w, qr_chart_text_w(cr, sp->series[i].label));
		L->n_legend++;
	}
	w = fmin(w, 0.3 * L->w);
	L->lg_row = qr_chart_font_h(cr) + 3;
	L->lg_w = 8 + 22 + 6 + w + 8;
	L->lg_h = 5 + (double)L->n_legend * L->lg_row + 5;
}

/* Plot rectangle, ticks and label spacing; lg_out puts the legend right. */
static void
layout(cairo_t *cr, const struct qr_chart_spec *sp, struct qr_chart_layout *L,
       int lg_out)
{
	double th, lh, top, left, right, bottom, len, labh, need, w0;
	int vaxis_bottom = L->horiz;

	qr_chart_set_font(cr, FS_LABEL, 0);
	lh = qr_chart_font_h(cr);
	qr_chart_set_font(cr, FS_TICK, 0);
	th = qr_chart_font_h(cr);
	L->lg_out = lg_out;
	top = PAD;
	if (qr_chart_has_text(sp->title)) {
		qr_chart_set_font(cr, FS_TITLE, 1);
		top += qr_chart_font_h(cr) + 6;
		qr_chart_set_font(cr, FS_TICK, 0);
	} else {
		top += 4;
	}
	right = PAD + (lg_out ? L->lg_w + 10 : 0);

	/* value ticks from a first guess at the axis length */
	len = vaxis_bottom ? L->w - right - PAD - L->lab_w - 30 :
			     L->h - top - 60;
	if (L->log)
		qr_chart_log_ticks(&L->vt, L->v0, L->v1,
				   fmax(3, len / (vaxis_bottom ? 70 : 30)));
	else
		qr_chart_lin_ticks(&L->vt, L->v0, L->v1,
				   fmax(3, len / (vaxis_bottom ? 90 : 45)), 0);
	qr_chart_ticks_width(cr, &L->vt);
	if (L->vt.offset[0] != '\0' && !vaxis_bottom)
		top += th;

	if (L->horiz) {
		left = PAD + (qr_chart_has_text(sp->xlabel) ? lh + 6 : 0) +
		       L->lab_w + TICK_GAP + TICK_LEN;
		right = fmax(right, PAD + L->vt.w / 2);
		bottom = PAD + (qr_chart_has_text(sp->ylabel) ? lh + 6 : 0) +
			 th + TICK_GAP + TICK_LEN;
		L->x0 = left, L->x1 = L->w - right;
		L->y0 = top, L->y1 = L->h - bottom;
		if (L->y1 < L->y0 + 10)
			L->y1 = L->y0 + 10;
		L->slot = (L->y1 - L->y0) / (L->c1 - L->c0);
		L->lab_rot = 0;
		L->lab_k = (size_t)ceil((th + 1) / L->slot);
		goto done;
	}

	left = PAD + (qr_chart_has_text(sp->ylabel) ? lh + 6 : 0) + L->vt.w +
	       TICK_GAP + TICK_LEN;
	L->x0 = left, L->x1 = L->w - right;
	L->slot = (L->x1 - L->x0) / (L->c1 - L->c0);
	if (L->lab != NULL) {
		L->lab_rot = L->lab_w + 6 > L->slot;
		if (L->lab_rot) {
			/* the first label reaches left of the plot */
			w0 = qr_chart_text_w(cr, L->lab[0]);
			need = (w0 + th / 2) * SIN45 + PAD / 2 - L->slot / 2;
			if (need > left) {
				L->x0 = left = need;
				L->slot = (L->x1 - L->x0) / (L->c1 - L->c0);
			}
			L->lab_k = (size_t)ceil((th + 1) / (L->slot * SIN45));
			labh = (L->lab_w + th) * SIN45;
		} else {
			L->lab_k = 1;
			labh = th;
		}
	} else {
		qr_chart_lin_ticks(&L->ct, 0, (double)(L->n - 1),
				   (L->x1 - L->x0) / 70, 1);
		qr_chart_ticks_width(cr, &L->ct);
		if (PAD + L->ct.w / 2 > right) {
			right = PAD + L->ct.w / 2;
			L->x1 = L->w - right;
			L->slot = (L->x1 - L->x0) / (L->c1 - L->c0);
		}
		labh = th;
	}
	bottom = PAD + (qr_chart_has_text(sp->xlabel) ? lh + 6 : 0) + labh +
		 TICK_GAP + TICK_LEN;
	L->y0 = top, L->y1 = L->h - bottom;
	if (L->y1 < L->y0 + 10)
		L->y1 = L->y0 + 10;
done:
	if (L->lab_k < 1)
		L->lab_k = 1;
	L->mark_r = L->slot >= 8 ? 3 : fmin(3, fmax(1, L->slot * 0.4));
	L->line_w = L->slot >= 3 ? 1.5 : 1.0;
}

/* Put the legend in the first free corner; 0 when every corner is busy. */
static int
place_legend(cairo_t *cr, const struct qr_chart_spec *sp,
	     struct qr_chart_layout *L)
{
	double xs[2] = { L->x1 - 6 - L->lg_w, L->x0 + 6 };
	double ys[2] = { L->y0 + 6, L->y1 - 6 - L->lg_h };
	static const int order[4][2] = { { 0, 0 }, { 1, 0 }, { 0, 1 },
					 { 1, 1 } };
	double a[4];
	int i;

	for (i = 0; i < 4; i++) {
		a[0] = xs[order[i][0]], a[1] = ys[order[i][1]];
		a[2] = a[0] + L->lg_w, a[3] = a[1] + L->lg_h;
		if (a[0] < L->x0 || a[1] < L->y0 || a[2] > L->x1 ||
		    a[3] > L->y1)
			continue;
		if (count_hits(cr, L, sp, a) == 0) {
			L->lg_x = a[0];
			L->lg_y = a[1];
			return 1;
		}
	}
	return 0;
}

/* The layout of spec, measured with cr (scaled by SCALE): plot
 * rectangle, ticks, labels and the legend's place. The legend goes in the
 * first empty corner of the plot (top right first) or, when none is
 * empty, right of the plot. */
void
qr_chart_lay_out(cairo_t *cr, const struct qr_chart_spec *spec,
		 struct qr_chart_layout *L)
{
	size_t i;

	memset(L, 0, sizeof *L);
	L->w = spec->width;
	L->h = spec->height;
	L->horiz = spec->horizontal != 0;
	L->log = spec->log_y != 0;
	for (i = 0; i < spec->n_series; i++) {
		L->n = spec->series[i].n > L->n ? spec->series[i].n : L->n;
		L->n_bars += spec->series[i].style == QR_STYLE_BARS;
	}
	L->slots = spec->xticks != NULL || L->n_bars > 0 || L->horiz;
	if (L->slots) {
		L->c0 = -0.5;
		L->c1 = (double)L->n - 0.5;
	} else if (L->n == 1) {
		L->c0 = -1;
		L->c1 = 1;
	} else {
		L->c0 = -0.02 * (double)(L->n - 1);
		L->c1 = (double)(L->n - 1) * 1.02;
	}
	value_range(spec, L);
	fit_labels(cr, spec, L);
	measure_legend(cr, spec, L);
	layout(cr, spec, L, 0);
	if (L->n_legend > 0 && !place_legend(cr, spec, L)) {
		layout(cr, spec, L, 1);
		L->lg_x = L->x1 + 10;
		L->lg_y = L->y0;
	}
}
