/*
 * chart: line, marker, band and bar charts drawn with cairo at 2x and
 * written with libpng (as palette PNGs, see png.c). See chart.h.
 *
 * The look follows matplotlib's clean defaults: white background, light
 * value grid, left and bottom spines only, 5% data margins (bars stick to
 * zero), ticks on 1/2/5 x 10^k, one colour-blind-safe palette (Okabe & Ito,
 * 2008, "Color Universal Design").
 *
 * Geometry: a "category" axis carries the x index (columns, or rows when
 * spec->horizontal) and a "value" axis carries y. All lengths are logical
 * pixels; the cairo context is scaled by SCALE.
 *
 * When spec->horizontal is set the axes swap as a whole: ylabel names the
 * value axis (drawn at the bottom), xlabel the category axis (at the left),
 * index 0 is the top row and hlines become vertical lines.
 */
#include "chart/chart.h"

#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCALE 2           /* device pixels per logical pixel */
#define FONT "DejaVu Sans"
#define FS_TITLE 13.0     /* font sizes, logical px */
#define FS_LABEL 11.0
#define FS_TICK 9.5
#define PAD 8.0           /* outer padding */
#define TICK_LEN 3.5      /* tick mark length */
#define TICK_GAP 3.0      /* tick mark to its label */
#define MAX_TICKS 24      /* labelled ticks on one axis */
#define MAX_MINOR 64      /* unlabelled log ticks */
#define TICK_STR 40       /* bytes of one tick label */
#define LABEL_BYTES 200   /* bytes of a name kept before fitting */
#define SIN45 0.70710678118654752

#define C_TEXT 0x262626   /* titles and labels */
#define C_AXIS 0x404040   /* spines and tick marks */
#define C_GRID 0xe6e6e6   /* value grid */
#define C_MINOR 0xf2f2f2  /* log minor grid */
#define C_REF 0x595959    /* reference lines */
#define C_RING 0xe41a1c   /* highlight rings */
#define C_FRAME 0xcccccc  /* legend frame */

/* Okabe-Ito, reordered so the first colours are the most distinct on white
 * and the weak yellow comes last. */
static const unsigned palette[8] = {
	0x0072b2, 0xe69f00, 0x009e73, 0xd55e00,
	0xcc79a7, 0x56b4e9, 0x000000, 0xf0e442,
};

struct ticks {
	double v[MAX_TICKS];          /* positions, axis units */
	char s[MAX_TICKS][TICK_STR];  /* labels, UTF-8 */
	size_t n;                     /* labelled ticks */
	double minor[MAX_MINOR];      /* unlabelled ticks (log 2..9) */
	size_t n_minor;               /* entries in minor */
	char offset[TICK_STR];        /* shared factor "×10⁻⁴", or "" */
	double w;                     /* widest label, logical px */
};

struct layout {
	double w, h;           /* image size, logical px */
	double x0, y0, x1, y1; /* plot rectangle, logical px */
	int horiz;             /* categories are rows (spec->horizontal) */
	int log;               /* value axis is log10 */
	int slots;             /* category i owns the bin i-0.5..i+0.5 */
	size_t n;              /* categories: points of the longest series */
	size_t n_bars;         /* series drawn as bars */
	double c0, c1;         /* category-axis range, index units */
	double v0, v1;         /* value-axis range, log10 units when log */
	double slot;           /* logical px per category index */
	double mark_r;         /* marker radius */
	double line_w;         /* line width */
	struct ticks vt;       /* value-axis ticks */
	struct ticks ct;       /* numeric category ticks, when no labels */
	char **lab;            /* n fitted category labels, or NULL */
	double lab_w;          /* widest fitted label */
	size_t lab_k;          /* every lab_k-th label is drawn */
	int lab_rot;           /* labels drawn at 45 degrees */
	size_t n_legend;       /* labelled series */
	double lg_x, lg_y;     /* legend box top-left */
	double lg_w, lg_h;     /* legend box size */
	double lg_row;         /* legend row height */
	int lg_out;            /* legend right of the plot */
	int empty;             /* no value can be drawn */
};

/* Palette colour i as 0xRRGGBB; any int maps onto the 8 colours. */
unsigned
qr_chart_color(int i)
{
	return palette[((i % 8) + 8) % 8];
}

static void
set_color(cairo_t *cr, unsigned rgb, double alpha)
{
	cairo_set_source_rgba(cr, ((rgb >> 16) & 0xff) / 255.0,
			      ((rgb >> 8) & 0xff) / 255.0, (rgb & 0xff) / 255.0,
			      alpha);
}

/* Nearest device-pixel boundary: 1 px lines there are crisp at 2x. */
static double
snap(double v)
{
	return floor(v * SCALE + 0.5) / SCALE;
}

static int
has_text(const char *s)
{
	return s != NULL && s[0] != '\0';
}

static void
set_font(cairo_t *cr, double size, int bold)
{
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL,
			       bold ? CAIRO_FONT_WEIGHT_BOLD :
				      CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
}

static double
font_h(cairo_t *cr)
{
	cairo_font_extents_t fe;

	cairo_font_extents(cr, &fe);
	return fe.ascent + fe.descent;
}

static double
text_w(cairo_t *cr, const char *s)
{
	cairo_text_extents_t te;

	cairo_text_extents(cr, s, &te);
	return te.x_advance;
}

/*
 * Draw s with its box anchored at (x, y): ha and va are fractions of the
 * box (0 left/top, 1 right/bottom), the box turned by deg about the anchor.
 */
static void
draw_text(cairo_t *cr, const char *s, double x, double y, double ha,
	  double va, double deg)
{
	cairo_font_extents_t fe;

	cairo_font_extents(cr, &fe);
	cairo_save(cr);
	cairo_translate(cr, x, y);
	if (deg != 0)
		cairo_rotate(cr, deg * M_PI / 180);
	cairo_move_to(cr, -ha * text_w(cr, s),
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
static char *
fit_text(cairo_t *cr, const char *s, double maxw)
{
	size_t len, lo, hi, mid, head, tail;
	char *out = NULL, *t;

	s = s != NULL ? s : "";
	len = strlen(s);
	if (len <= LABEL_BYTES && text_w(cr, s) <= maxw)
		return xstrdup(s);
	lo = 0;
	hi = len < LABEL_BYTES ? len : LABEL_BYTES;
	while (lo < hi) {
		mid = (lo + hi + 1) / 2;
		head = utf8_back(s, mid / 3);
		tail = utf8_fwd(s, len - (mid - mid / 3));
		t = xasprintf("%.*s\u2026%s", (int)head, s, s + tail);
		if (text_w(cr, t) <= maxw) {
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

/* Append n as Unicode superscript digits. */
static void
superscript(char *dst, size_t cap, int n)
{
	static const char *const sup[10] = {
		"\u2070", "\u00b9", "\u00b2", "\u00b3", "\u2074",
		"\u2075", "\u2076", "\u2077", "\u2078", "\u2079",
	};
	char digits[16];
	size_t i;

	snprintf(digits, sizeof digits, "%d", n);
	for (i = 0; digits[i] != '\0'; i++) {
		const char *p = digits[i] == '-' ? "\u207b" :
						   sup[digits[i] - '0'];

		strncat(dst, p, cap - strlen(dst) - 1);
	}
}

/* printf("%.*f") with a typographic minus and no "-0". */
static void
fmt_num(char *dst, size_t cap, double v, int decimals)
{
	char tmp[TICK_STR];

	snprintf(tmp, sizeof tmp, "%.*f", decimals, v);
	if (tmp[0] == '-' && strspn(tmp + 1, "0.") == strlen(tmp + 1))
		memmove(tmp, tmp + 1, strlen(tmp));
	if (tmp[0] == '-')
		snprintf(dst, cap, "\u2212%s", tmp + 1);
	else
		snprintf(dst, cap, "%s", tmp);
}

/* 1, 2 or 5 x 10^k near span / target. */
static double
nice_step(double span, double target)
{
	double raw, e, f;

	if (!(span > 0) || !isfinite(span))
		return 1;
	raw = span / (target < 1 ? 1 : target);
	e = pow(10, floor(log10(raw)));
	f = raw / e;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * e;
}

/* Linear ticks on lo..hi, about target of them; integers only when asked. */
static void
lin_ticks(struct ticks *t, double lo, double hi, double target, int integer)
{
	double step = nice_step(hi - lo, target), first, last, big, scale = 1;
	int e, E = 0, decimals, i;

	memset(t, 0, sizeof *t);
	if (integer && step < 1)
		step = 1;
	first = ceil(lo / step - 1e-9);
	last = floor(hi / step + 1e-9);
	for (i = 0; i < MAX_TICKS && first + i <= last; i++) {
		t->v[t->n] = (first + i) * step;
		if (fabs(t->v[t->n]) < step * 1e-9)
			t->v[t->n] = 0;
		t->n++;
	}
	e = (int)floor(log10(step) + 1e-9);
	big = fmax(fabs(lo), fabs(hi));
	if (big > 0 && isfinite(big))
		E = (int)floor(log10(big));
	if (E >= 6 || E <= -4) {
		/* matplotlib's offset text: labels in units of 10^E */
		scale = pow(10, E);
		snprintf(t->offset, sizeof t->offset, "\u00d710");
		superscript(t->offset, sizeof t->offset, E);
		decimals = E - e > 0 ? E - e : 0;
	} else {
		decimals = e < 0 ? -e : 0;
	}
	for (i = 0; i < (int)t->n; i++)
		fmt_num(t->s[i], TICK_STR, t->v[i] / scale, decimals);
}

/* Decade ticks on lo..hi (log10 units), 10^k labels, 2..9 minor ticks. */
static void
log_ticks(struct ticks *t, double lo, double hi, double target)
{
	double k, step = ceil((hi - lo) / (target < 1 ? 1 : target));
	int m, i;

	memset(t, 0, sizeof *t);
	if (hi - lo <= 2.5 && lo > -6 && hi < 6) {
		/* few decades: 1, 2, 5 x 10^k in plain numbers */
		for (k = floor(lo); k <= hi + 1e-9 && t->n + 3 <= MAX_TICKS; k++)
			for (m = 1; m <= 5; m += m == 1 ? 1 : 3) {
				double p = k + log10(m);

				if (p < lo - 1e-9 || p > hi + 1e-9)
					continue;
				t->v[t->n] = p;
				fmt_num(t->s[t->n++], TICK_STR, pow(10, p),
					k < 0 ? (int)-k : 0);
			}
		for (k = floor(lo); k < hi; k++)
			for (m = 3; m <= 9 && t->n_minor < MAX_MINOR; m++)
				if (m != 5 && k + log10(m) > lo &&
				    k + log10(m) < hi)
					t->minor[t->n_minor++] = k + log10(m);
		return;
	}
	if (step < 1)
		step = 1;
	for (i = 0; i < MAX_TICKS && ceil(lo) + i * step <= hi + 1e-9; i++) {
		k = ceil(lo) + i * step;
		t->v[t->n] = k;
		snprintf(t->s[t->n], TICK_STR, "10");
		superscript(t->s[t->n], TICK_STR, (int)k);
		t->n++;
	}
	if (step > 1 || hi - lo > 8)
		return;
	for (k = floor(lo); k < hi; k++)
		for (m = 2; m <= 9 && t->n_minor < MAX_MINOR; m++)
			if (k + log10(m) > lo && k + log10(m) < hi)
				t->minor[t->n_minor++] = k + log10(m);
}

static double
ticks_width(cairo_t *cr, struct ticks *t)
{
	size_t i;

	t->w = 0;
	for (i = 0; i < t->n; i++)
		t->w = fmax(t->w, text_w(cr, t->s[i]));
	return t->w;
}

/* Value in axis units (log10 when log); 0 when it cannot be drawn. */
static int
tv(const struct layout *L, double v, double *out)
{
	if (!isfinite(v) || (L->log && v <= 0))
		return 0;
	*out = L->log ? log10(v) : v;
	return 1;
}

static double
cpos(const struct layout *L, double c)
{
	double f = (c - L->c0) / (L->c1 - L->c0);

	return L->horiz ? L->y0 + f * (L->y1 - L->y0) :
			  L->x0 + f * (L->x1 - L->x0);
}

static double
vpos(const struct layout *L, double t)
{
	double f = (t - L->v0) / (L->v1 - L->v0);

	return L->horiz ? L->x0 + f * (L->x1 - L->x0) :
			  L->y1 - f * (L->y1 - L->y0);
}

/* Point (category c, axis value t) in logical px. */
static void
xy(const struct layout *L, double c, double t, double *x, double *y)
{
	if (L->horiz) {
		*x = vpos(L, t);
		*y = cpos(L, c);
	} else {
		*x = cpos(L, c);
		*y = vpos(L, t);
	}
}

/* Where bars start: zero, or the axis end when zero is off it (log). */
static double
bar_base(const struct layout *L)
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
static int
bar_rect(const struct layout *L, const struct qr_series *s, size_t b,
	 size_t i, double r[4])
{
	double t, group, bw, c_lo, a0, a1, v0, v1;

	if (!tv(L, s->y[i], &t))
		return 0;
	group = L->slot >= 4 ? 0.8 * L->slot : L->slot;
	bw = group / (double)L->n_bars;
	c_lo = cpos(L, (double)i) - group / 2 + (double)b * bw;
	a0 = snap(c_lo);
	a1 = snap(c_lo + bw);
	if (a1 - a0 < 1)
		a1 = a0 + 1;
	v0 = snap(vpos(L, bar_base(L)));
	v1 = snap(vpos(L, fmin(fmax(t, L->v0), L->v1)));
	if (L->horiz) {
		r[0] = fmin(v0, v1), r[2] = fmax(v0, v1);
		r[1] = a0, r[3] = a1;
	} else {
		r[0] = a0, r[2] = a1;
		r[1] = fmin(v0, v1), r[3] = fmax(v0, v1);
	}
	return 1;
}

/* The place of point i of series s: the top of its bar for bars. */
static int
point_xy(const struct layout *L, const struct qr_chart_spec *sp, size_t si,
	 size_t i, double *x, double *y)
{
	const struct qr_series *s = &sp->series[si];
	double t, r[4];
	size_t b = 0, k;

	if (i >= s->n || !tv(L, s->y[i], &t))
		return 0;
	if (s->style != QR_STYLE_BARS) {
		xy(L, (double)i, t, x, y);
		return 1;
	}
	for (k = 0; k < si; k++)
		b += sp->series[k].style == QR_STYLE_BARS;
	bar_rect(L, s, b, i, r);
	xy(L, (double)i, t, x, y);
	if (L->horiz)
		*y = (r[1] + r[3]) / 2;
	else
		*x = (r[0] + r[2]) / 2;
	return 1;
}

static int
box_hits(const double a[4], double x0, double y0, double x1, double y1)
{
	return fmin(x0, x1) <= a[2] && fmax(x0, x1) >= a[0] &&
	       fmin(y0, y1) <= a[3] && fmax(y0, y1) >= a[1];
}

static void
hline_label_box(cairo_t *cr, const struct layout *L, double t,
		const char *label, double r[4])
{
	double w = text_w(cr, label), h = font_h(cr), p = vpos(L, t);

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
grow(const struct layout *L, const struct qr_series *s, size_t i, int upper,
     double b[4])
{
	double t, x, y;

	if (!tv(L, upper ? s->y2[i] : s->y[i], &t))
		return;
	xy(L, (double)i, t, &x, &y);
	b[0] = fmin(b[0], x), b[1] = fmin(b[1], y);
	b[2] = fmax(b[2], x), b[3] = fmax(b[3], y);
}

/* How many drawn things (segments, bars, bands, labels) meet box a. */
static size_t
count_hits(cairo_t *cr, const struct layout *L,
	   const struct qr_chart_spec *sp, const double a[4])
{
	size_t si, i, b = 0, hits = 0;
	double t, r[4];

	for (si = 0; si < sp->n_series; si++) {
		const struct qr_series *s = &sp->series[si];

		for (i = 0; i < s->n; i++) {
			if (s->style == QR_STYLE_BARS) {
				hits += bar_rect(L, s, b, i, r) &&
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
	set_font(cr, FS_TICK, 0);
	for (i = 0; i < sp->n_hlines; i++) {
		if (!tv(L, sp->hlines[i].y, &t))
			continue;
		if (L->horiz)
			hits += box_hits(a, vpos(L, t), L->y0, vpos(L, t),
					 L->y1);
		else
			hits += box_hits(a, L->x0, vpos(L, t), L->x1,
					 vpos(L, t));
		if (!has_text(sp->hlines[i].label))
			continue;
		hline_label_box(cr, L, t, sp->hlines[i].label, r);
		hits += box_hits(a, r[0], r[1], r[2], r[3]);
	}
	return hits;
}

/* Data range on the value axis, padded the way matplotlib pads it. */
static void
value_range(const struct qr_chart_spec *sp, struct layout *L)
{
	double lo = INFINITY, hi = -INFINITY, t, span;
	size_t si, i;

	for (si = 0; si < sp->n_series; si++) {
		const struct qr_series *s = &sp->series[si];

		for (i = 0; i < s->n; i++) {
			if (tv(L, s->y[i], &t))
				lo = fmin(lo, t), hi = fmax(hi, t);
			if (s->style == QR_STYLE_BAND && tv(L, s->y2[i], &t))
				lo = fmin(lo, t), hi = fmax(hi, t);
		}
	}
	for (i = 0; i < sp->n_hlines; i++)
		if (tv(L, sp->hlines[i].y, &t))
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
fit_labels(cairo_t *cr, const struct qr_chart_spec *sp, struct layout *L)
{
	double maxw, th, widest = 0;
	size_t i, head = 0, tail = 0;
	char num[32], *t;

	if (sp->xticks == NULL && !L->horiz)
		return;
	set_font(cr, FS_TICK, 0);
	th = font_h(cr);
	if (L->horiz)
		maxw = fmax(60, 0.3 * L->w);
	else
		maxw = fmax(60, fmin((0.33 * L->h - th) / SIN45, 0.4 * L->w));
	for (i = 0; sp->xticks != NULL && i < L->n; i++)
		if (sp->xticks[i] != NULL)
			widest = fmax(widest, text_w(cr, sp->xticks[i]));
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
			L->lab[i] = fit_text(cr, t, maxw);
			free(t);
		}
		L->lab_w = fmax(L->lab_w, text_w(cr, L->lab[i]));
	}
}

static void
free_labels(struct layout *L)
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
measure_legend(cairo_t *cr, const struct qr_chart_spec *sp, struct layout *L)
{
	double w = 0;
	size_t i;

	set_font(cr, FS_TICK, 0);
	L->n_legend = 0;
	for (i = 0; i < sp->n_series; i++) {
		if (!has_text(sp->series[i].label))
			continue;
		w = fmax(w, text_w(cr, sp->series[i].label));
		L->n_legend++;
	}
	w = fmin(w, 0.3 * L->w);
	L->lg_row = font_h(cr) + 3;
	L->lg_w = 8 + 22 + 6 + w + 8;
	L->lg_h = 5 + (double)L->n_legend * L->lg_row + 5;
}

/* Plot rectangle, ticks and label spacing; lg_out puts the legend right. */
static void
layout(cairo_t *cr, const struct qr_chart_spec *sp, struct layout *L,
       int lg_out)
{
	double th, lh, top, left, right, bottom, len, labh, need, w0;
	int vaxis_bottom = L->horiz;

	set_font(cr, FS_LABEL, 0);
	lh = font_h(cr);
	set_font(cr, FS_TICK, 0);
	th = font_h(cr);
	L->lg_out = lg_out;
	top = PAD;
	if (has_text(sp->title)) {
		set_font(cr, FS_TITLE, 1);
		top += font_h(cr) + 6;
		set_font(cr, FS_TICK, 0);
	} else {
		top += 4;
	}
	right = PAD + (lg_out ? L->lg_w + 10 : 0);

	/* value ticks from a first guess at the axis length */
	len = vaxis_bottom ? L->w - right - PAD - L->lab_w - 30 :
			     L->h - top - 60;
	if (L->log)
		log_ticks(&L->vt, L->v0, L->v1,
			  fmax(3, len / (vaxis_bottom ? 70 : 30)));
	else
		lin_ticks(&L->vt, L->v0, L->v1,
			  fmax(3, len / (vaxis_bottom ? 90 : 45)), 0);
	ticks_width(cr, &L->vt);
	if (L->vt.offset[0] != '\0' && !vaxis_bottom)
		top += th;

	if (L->horiz) {
		left = PAD + (has_text(sp->xlabel) ? lh + 6 : 0) + L->lab_w +
		       TICK_GAP + TICK_LEN;
		right = fmax(right, PAD + L->vt.w / 2);
		bottom = PAD + (has_text(sp->ylabel) ? lh + 6 : 0) + th +
			 TICK_GAP + TICK_LEN;
		L->x0 = left, L->x1 = L->w - right;
		L->y0 = top, L->y1 = L->h - bottom;
		if (L->y1 < L->y0 + 10)
			L->y1 = L->y0 + 10;
		L->slot = (L->y1 - L->y0) / (L->c1 - L->c0);
		L->lab_rot = 0;
		L->lab_k = (size_t)ceil((th + 1) / L->slot);
		goto done;
	}

	left = PAD + (has_text(sp->ylabel) ? lh + 6 : 0) + L->vt.w +
	       TICK_GAP + TICK_LEN;
	L->x0 = left, L->x1 = L->w - right;
	L->slot = (L->x1 - L->x0) / (L->c1 - L->c0);
	if (L->lab != NULL) {
		L->lab_rot = L->lab_w + 6 > L->slot;
		if (L->lab_rot) {
			/* the first label reaches left of the plot */
			w0 = text_w(cr, L->lab[0]);
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
		lin_ticks(&L->ct, 0, (double)(L->n - 1),
			  (L->x1 - L->x0) / 70, 1);
		ticks_width(cr, &L->ct);
		if (PAD + L->ct.w / 2 > right) {
			right = PAD + L->ct.w / 2;
			L->x1 = L->w - right;
			L->slot = (L->x1 - L->x0) / (L->c1 - L->c0);
		}
		labh = th;
	}
	bottom = PAD + (has_text(sp->xlabel) ? lh + 6 : 0) + labh + TICK_GAP +
		 TICK_LEN;
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
place_legend(cairo_t *cr, const struct qr_chart_spec *sp, struct layout *L)
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

static void
draw_grid(cairo_t *cr, const struct layout *L)
{
	double p;
	size_t i;

	cairo_set_line_width(cr, 1);
	set_color(cr, C_MINOR, 1);
	for (i = 0; i < L->vt.n_minor; i++) {
		p = snap(vpos(L, L->vt.minor[i]));
		if (L->horiz) {
			cairo_move_to(cr, p, L->y0);
			cairo_line_to(cr, p, L->y1);
		} else {
			cairo_move_to(cr, L->x0, p);
			cairo_line_to(cr, L->x1, p);
		}
	}
	cairo_stroke(cr);
	set_color(cr, C_GRID, 1);
	for (i = 0; i < L->vt.n; i++) {
		p = snap(vpos(L, L->vt.v[i]));
		if (L->horiz) {
			cairo_move_to(cr, p, L->y0);
			cairo_line_to(cr, p, L->y1);
		} else {
			cairo_move_to(cr, L->x0, p);
			cairo_line_to(cr, L->x1, p);
		}
	}
	for (i = 0; i < L->ct.n; i++) {
		p = snap(cpos(L, L->ct.v[i]));
		cairo_move_to(cr, p, L->y0);
		cairo_line_to(cr, p, L->y1);
	}
	cairo_stroke(cr);
}

static void
draw_band(cairo_t *cr, const struct layout *L, const struct qr_series *s)
{
	double t, t2, x, y;
	size_t i, start, j;

	for (i = 0; i < s->n;) {
		if (!tv(L, s->y[i], &t) || !tv(L, s->y2[i], &t2)) {
			i++;
			continue;
		}
		start = i;
		while (i < s->n && tv(L, s->y[i], &t) && tv(L, s->y2[i], &t2))
			i++;
		for (j = start; j < i; j++) {
			tv(L, s->y[j], &t);
			xy(L, (double)j, t, &x, &y);
			if (j == start)
				cairo_move_to(cr, x, y);
			else
				cairo_line_to(cr, x, y);
		}
		for (j = i; j-- > start;) {
			tv(L, s->y2[j], &t2);
			xy(L, (double)j, t2, &x, &y);
			cairo_line_to(cr, x, y);
		}
		if (i - start > 1) {
			cairo_close_path(cr);
			set_color(cr, qr_chart_color(s->color), 0.25);
			cairo_fill(cr);
			continue;
		}
		/* a lone sample: its min..max as a short stroke */
		set_color(cr, qr_chart_color(s->color), 0.4);
		cairo_set_line_width(cr, 2 * L->mark_r);
		cairo_stroke(cr);
	}
}

static void
draw_line(cairo_t *cr, const struct layout *L, const struct qr_series *s)
{
	static const double dash[2] = { 4, 2.5 };
	double t, x, y;
	size_t i, run = 0;

	set_color(cr, qr_chart_color(s->color), 1);
	cairo_set_line_width(cr, L->line_w);
	cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
	cairo_set_line_cap(cr, s->style == QR_STYLE_DOTTED ?
				       CAIRO_LINE_CAP_BUTT :
				       CAIRO_LINE_CAP_ROUND);
	cairo_set_dash(cr, dash, s->style == QR_STYLE_DOTTED ? 2 : 0, 0);
	for (i = 0; i < s->n; i++) {
		if (!tv(L, s->y[i], &t)) {
			run = 0;
			continue;
		}
		xy(L, (double)i, t, &x, &y);
		if (run++ == 0)
			cairo_move_to(cr, x, y);
		else
			cairo_line_to(cr, x, y);
	}
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
	/* a point between gaps would not show as a line: a dot instead */
	for (i = 0; i < s->n; i++) {
		if (!tv(L, s->y[i], &t) ||
		    (i > 0 && tv(L, s->y[i - 1], &x)) ||
		    (i + 1 < s->n && tv(L, s->y[i + 1], &x)))
			continue;
		xy(L, (double)i, t, &x, &y);
		cairo_new_sub_path(cr);
		cairo_arc(cr, x, y, L->line_w * 1.3, 0, 2 * M_PI);
	}
	cairo_fill(cr);
}

static void
draw_markers(cairo_t *cr, const struct layout *L, const struct qr_series *s)
{
	double t, x, y;
	size_t i;

	set_color(cr, qr_chart_color(s->color), 1);
	for (i = 0; i < s->n; i++) {
		if (!tv(L, s->y[i], &t))
			continue;
		xy(L, (double)i, t, &x, &y);
		cairo_new_sub_path(cr);
		cairo_arc(cr, x, y, L->mark_r, 0, 2 * M_PI);
	}
	cairo_fill(cr);
}

static void
draw_bars(cairo_t *cr, const struct layout *L, const struct qr_series *s,
	  size_t b)
{
	double r[4];
	size_t i;

	set_color(cr, qr_chart_color(s->color), 1);
	for (i = 0; i < s->n; i++)
		if (bar_rect(L, s, b, i, r))
			cairo_rectangle(cr, r[0], r[1], r[2] - r[0],
					r[3] - r[1]);
	cairo_fill(cr);
}

static void
draw_data(cairo_t *cr, const struct layout *L, const struct qr_chart_spec *sp)
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

static void
draw_hlines(cairo_t *cr, const struct layout *L,
	    const struct qr_chart_spec *sp)
{
	static const double dash[2] = { 5, 3 };
	double t, p, r[4];
	size_t i;

	set_font(cr, FS_TICK, 0);
	for (i = 0; i < sp->n_hlines; i++) {
		if (!tv(L, sp->hlines[i].y, &t))
			continue;
		p = snap(vpos(L, t));
		set_color(cr, C_REF, 1);
		cairo_set_line_width(cr, 1);
		cairo_set_dash(cr, dash, 2, 0);
		if (L->horiz) {
			cairo_move_to(cr, p, L->y0);
			cairo_line_to(cr, p, L->y1);
		} else {
			cairo_move_to(cr, L->x0, p);
			cairo_line_to(cr, L->x1, p);
		}
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		if (!has_text(sp->hlines[i].label))
			continue;
		hline_label_box(cr, L, t, sp->hlines[i].label, r);
		set_color(cr, 0xffffff, 0.8);
		cairo_rectangle(cr, r[0] - 2, r[1], r[2] - r[0] + 4,
				r[3] - r[1]);
		cairo_fill(cr);
		set_color(cr, C_REF, 1);
		draw_text(cr, sp->hlines[i].label, r[0], r[1], 0, 0, 0);
	}
}

static void
draw_marks(cairo_t *cr, const struct layout *L,
	   const struct qr_chart_spec *sp)
{
	double x, y, rad = fmax(L->mark_r + 2.5, 4.5);
	size_t i;

	set_color(cr, C_RING, 1);
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

/* Spines, tick marks and tick labels of both axes. */
static void
draw_axes(cairo_t *cr, const struct layout *L)
{
	double p, th, off = TICK_LEN + TICK_GAP;
	size_t i;

	set_color(cr, C_AXIS, 1);
	cairo_set_line_width(cr, 1);
	cairo_move_to(cr, snap(L->x0), L->y0);
	cairo_line_to(cr, snap(L->x0), snap(L->y1));
	cairo_line_to(cr, L->x1, snap(L->y1));
	for (i = 0; i < L->vt.n; i++) {
		p = snap(vpos(L, L->vt.v[i]));
		if (L->horiz) {
			cairo_move_to(cr, p, snap(L->y1));
			cairo_rel_line_to(cr, 0, TICK_LEN);
		} else {
			cairo_move_to(cr, snap(L->x0), p);
			cairo_rel_line_to(cr, -TICK_LEN, 0);
		}
	}
	for (i = 0; i < L->ct.n; i++) {
		cairo_move_to(cr, snap(cpos(L, L->ct.v[i])), snap(L->y1));
		cairo_rel_line_to(cr, 0, TICK_LEN);
	}
	for (i = 0; L->lab != NULL && i < L->n; i += L->lab_k) {
		p = snap(cpos(L, (double)i));
		if (L->horiz) {
			cairo_move_to(cr, snap(L->x0), p);
			cairo_rel_line_to(cr, -TICK_LEN, 0);
		} else {
			cairo_move_to(cr, p, snap(L->y1));
			cairo_rel_line_to(cr, 0, TICK_LEN);
		}
	}
	cairo_stroke(cr);

	set_font(cr, FS_TICK, 0);
	th = font_h(cr);
	set_color(cr, C_TEXT, 1);
	for (i = 0; i < L->vt.n; i++) {
		p = vpos(L, L->vt.v[i]);
		if (L->horiz)
			draw_text(cr, L->vt.s[i], p, L->y1 + off, 0.5, 0, 0);
		else
			draw_text(cr, L->vt.s[i], L->x0 - off, p, 1, 0.5, 0);
	}
	if (L->vt.offset[0] != '\0') {
		if (L->horiz)
			draw_text(cr, L->vt.offset, L->x1, L->y1 + off + th,
				  1, 0, 0);
		else
			draw_text(cr, L->vt.offset, L->x0, L->y0 - 3, 0, 1,
				  0);
	}
	for (i = 0; i < L->ct.n; i++)
		draw_text(cr, L->ct.s[i], cpos(L, L->ct.v[i]), L->y1 + off,
			  0.5, 0, 0);
	for (i = 0; L->lab != NULL && i < L->n; i += L->lab_k) {
		p = cpos(L, (double)i);
		if (L->horiz)
			draw_text(cr, L->lab[i], L->x0 - off, p, 1, 0.5, 0);
		else if (L->lab_rot)
			draw_text(cr, L->lab[i], p + th * 0.2,
				  L->y1 + off + th * 0.2, 1, 0.5, -45);
		else
			draw_text(cr, L->lab[i], p, L->y1 + off, 0.5, 0, 0);
	}
}

static void
draw_titles(cairo_t *cr, const struct layout *L,
	    const struct qr_chart_spec *sp)
{
	double mid, x;
	char *s;

	set_color(cr, C_TEXT, 1);
	if (has_text(sp->title)) {
		set_font(cr, FS_TITLE, 1);
		s = fit_text(cr, sp->title, L->w - 2 * PAD);
		mid = (L->x0 + L->x1) / 2;
		if (mid - text_w(cr, s) / 2 < PAD)
			mid = L->w / 2;
		draw_text(cr, s, mid, PAD, 0.5, 0, 0);
		free(s);
	}
	set_font(cr, FS_LABEL, 0);
	if (has_text(L->horiz ? sp->ylabel : sp->xlabel)) {
		s = fit_text(cr, L->horiz ? sp->ylabel : sp->xlabel,
			     L->w - 2 * PAD);
		draw_text(cr, s, (L->x0 + L->x1) / 2, L->h - PAD, 0.5, 1, 0);
		free(s);
	}
	if (has_text(L->horiz ? sp->xlabel : sp->ylabel)) {
		/* next to the tick labels, however far the plot was pushed */
		x = L->x0 - TICK_LEN - TICK_GAP -
		    (L->horiz ? L->lab_w : L->vt.w) - 6 - font_h(cr);
		s = fit_text(cr, L->horiz ? sp->xlabel : sp->ylabel,
			     L->y1 - L->y0 + 40);
		draw_text(cr, s, fmax(x, PAD), (L->y0 + L->y1) / 2, 0.5, 0,
			  -90);
		free(s);
	}
}

static void
draw_legend(cairo_t *cr, const struct layout *L,
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
	set_color(cr, 0xffffff, 0.85);
	cairo_fill_preserve(cr);
	set_color(cr, C_FRAME, 1);
	cairo_set_line_width(cr, 1);
	cairo_stroke(cr);
	set_font(cr, FS_TICK, 0);
	for (i = 0; i < sp->n_series; i++) {
		const struct qr_series *se = &sp->series[i];

		if (!has_text(se->label))
			continue;
		cy = y + L->lg_row / 2;
		set_color(cr, qr_chart_color(se->color), 1);
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
			set_color(cr, qr_chart_color(se->color), 0.25);
			/* fall through */
		case QR_STYLE_BARS:
			cairo_rectangle(cr, x + 12, cy - 4.5, 14, 9);
			cairo_fill(cr);
			break;
		}
		set_color(cr, C_TEXT, 1);
		s = fit_text(cr, se->label, L->lg_w - 44);
		draw_text(cr, s, x + 36, cy, 0, 0.5, 0);
		free(s);
		y += L->lg_row;
	}
}

/* One rectangle per category of the first series, in logical px. */
static struct qr_area *
make_areas(const struct layout *L, size_t n)
{
	struct qr_area *a = xcalloc(n, sizeof *a);
	double lo, hi, half = L->slot / 2;
	long c0, c1, v0, v1;
	size_t i;

	for (i = 0; i < n; i++) {
		lo = fmax(cpos(L, (double)i) - half,
			  L->horiz ? L->y0 : L->x0);
		hi = fmin(cpos(L, (double)i) + half,
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

/* The layout of spec, measured with cr (scaled by SCALE): plot
 * rectangle, ticks, labels and the legend's place. The legend goes in the
 * first empty corner of the plot (top right first) or, when none is
 * empty, right of the plot. */
static void
lay_out(cairo_t *cr, const struct qr_chart_spec *spec, struct layout *L)
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

/* The areas of the first series' n points, when asked for. */
static void
give_areas(const struct layout *L, const struct qr_chart_spec *spec,
	   struct qr_area **areas, size_t *n_areas)
{
	if (areas == NULL)
		return;
	*areas = make_areas(L, spec->series[0].n);
	if (n_areas != NULL)
		*n_areas = spec->series[0].n;
}

/* Layout, then drawing back to front: grid, data, reference lines, rings,
 * axes, titles, legend. */
static enum qr_status
draw_chart(const struct qr_chart_spec *spec, const char *path,
	   struct qr_area **areas, size_t *n_areas, struct qr_diag *d)
{
	enum qr_status st;
	cairo_surface_t *surf;
	cairo_t *cr;
	struct layout L;

	st = check_spec(spec, path, d);
	if (st != QR_OK)
		return st;
	cr = new_context(spec->width, spec->height);
	surf = cairo_get_target(cr);
	lay_out(cr, spec, &L);

	set_color(cr, 0xffffff, 1);
	cairo_paint(cr);
	draw_grid(cr, &L);
	draw_data(cr, &L, spec);
	draw_hlines(cr, &L, spec);
	draw_marks(cr, &L, spec);
	draw_axes(cr, &L);
	if (L.empty) {
		set_font(cr, FS_LABEL, 0);
		set_color(cr, C_REF, 1);
		draw_text(cr, L.log ? "no positive values" : "no finite values",
			  (L.x0 + L.x1) / 2, (L.y0 + L.y1) / 2, 0.5, 0.5, 0);
	}
	draw_titles(cr, &L, spec);
	draw_legend(cr, &L, spec);
	if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
		qr_fatal("cairo: %s", cairo_status_to_string(cairo_status(cr)));

	cairo_surface_flush(surf);
	st = qr_png_write_argb32(path, cairo_image_surface_get_data(surf),
				 cairo_image_surface_get_width(surf),
				 cairo_image_surface_get_height(surf),
				 cairo_image_surface_get_stride(surf), d);
	if (st == QR_OK)
		give_areas(&L, spec, areas, n_areas);
	free_labels(&L);
	cairo_destroy(cr);
	return st;
}

/* The layout alone, measured on a 1x1 image: text metrics depend on the
 * font and the scale, not on the image size, so the areas are those
 * draw_chart gives. */
static enum qr_status
chart_areas(const struct qr_chart_spec *spec, const char *name,
	    struct qr_area **areas, size_t *n_areas, struct qr_diag *d)
{
	enum qr_status st;
	cairo_t *cr;
	struct layout L;

	st = check_spec(spec, name, d);
	if (st != QR_OK)
		return st;
	cr = new_context(1, 1);
	lay_out(cr, spec, &L);
	give_areas(&L, spec, areas, n_areas);
	free_labels(&L);
	cairo_destroy(cr);
	return QR_OK;
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

/* Draw a copy of spec whose every string is valid UTF-8. */
enum qr_status
qr_chart_draw(const struct qr_chart_spec *spec, const char *path,
	      struct qr_area **areas, size_t *n_areas, struct qr_diag *d)
{
	struct qr_chart_spec *safe;
	enum qr_status st;

	if (areas != NULL)
		*areas = NULL;
	if (n_areas != NULL)
		*n_areas = 0;
	if (spec == NULL || spec->n_series == 0 || spec->series == NULL)
		return check_spec(spec, path, d);
	safe = utf8_copy(spec);
	st = draw_chart(safe, path, areas, n_areas, d);
	qr_chart_spec_free(safe);
	return st;
}

/* Lay out a copy of spec whose every string is valid UTF-8, as
 * qr_chart_draw does, and draw nothing. */
enum qr_status
qr_chart_areas(const struct qr_chart_spec *spec, const char *name,
	       struct qr_area **areas, size_t *n_areas, struct qr_diag *d)
{
	struct qr_chart_spec *safe;
	enum qr_status st;

	*areas = NULL;
	*n_areas = 0;
	if (spec == NULL || spec->n_series == 0 || spec->series == NULL)
		return check_spec(spec, name, d);
	safe = utf8_copy(spec);
	st = chart_areas(safe, name, areas, n_areas, d);
	qr_chart_spec_free(safe);
	return st;
}
