/*
 * chart-int.h: what the chart module's files share.
 *
 *   chart.c    qr_chart_draw and qr_chart_areas: spec checks, strings
 *              made valid UTF-8, the cairo context, the drawing order,
 *              the clickable areas
 *   layout.c   the layout of a chart: value range, category labels, plot
 *              rectangle and ticks, bar rectangles, the legend's place
 *   ticks.c    tick positions and labels, linear and log10
 *   text.c     the palette, colours, fonts, text drawn and fitted to a
 *              width
 *   series.c   the data: bands, bars, lines, markers, reference lines and
 *              highlight rings
 *   frame.c    around the data: grid, axes, titles, legend
 *   png.c      PNG output with libpng (palette PNGs)
 *   heatmap.c  pixel-exact heatmaps written with stb_image_write
 *   batch.c    deep copies of specs; the pool of drawing threads
 *
 * Line, marker, band and bar charts are drawn with cairo at 2x and
 * written with libpng (as palette PNGs, see png.c).
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
 *
 * cairo stays out of this header: a context travels as struct _cairo *,
 * which is cairo_t.
 */
#ifndef QR_CHART_INT_H
#define QR_CHART_INT_H

#include <math.h>
#include <stddef.h>

#include "chart/chart.h"

struct _cairo;

#define SCALE 2           /* device pixels per logical pixel */
#define FS_TITLE 13.0     /* font sizes, logical px */
#define FS_LABEL 11.0
#define FS_TICK 9.5
#define PAD 8.0           /* outer padding */
#define TICK_LEN 3.5      /* tick mark length */
#define TICK_GAP 3.0      /* tick mark to its label */
#define MAX_TICKS 24      /* labelled ticks on one axis */
#define MAX_MINOR 64      /* unlabelled log ticks */
#define TICK_STR 40       /* bytes of one tick label */

#define C_TEXT 0x262626   /* titles and labels */
#define C_AXIS 0x404040   /* spines and tick marks */
#define C_GRID 0xe6e6e6   /* value grid */
#define C_MINOR 0xf2f2f2  /* log minor grid */
#define C_REF 0x595959    /* reference lines */
#define C_RING 0xe41a1c   /* highlight rings */
#define C_FRAME 0xcccccc  /* legend frame */

struct qr_chart_ticks {
	double v[MAX_TICKS];          /* positions, axis units */
	char s[MAX_TICKS][TICK_STR];  /* labels, UTF-8 */
	size_t n;                     /* labelled ticks */
	double minor[MAX_MINOR];      /* unlabelled ticks (log 2..9) */
	size_t n_minor;               /* entries in minor */
	char offset[TICK_STR];        /* shared factor "×10⁻⁴", or "" */
	double w;                     /* widest label, logical px */
};

struct qr_chart_layout {
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
	struct qr_chart_ticks vt; /* value-axis ticks */
	struct qr_chart_ticks ct; /* numeric category ticks, when no labels */
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

/* Nearest device-pixel boundary: 1 px lines there are crisp at 2x. */
static inline double
qr_chart_snap(double v)
{
	return floor(v * SCALE + 0.5) / SCALE;
}

static inline int
qr_chart_has_text(const char *s)
{
	return s != NULL && s[0] != '\0';
}

/* Value in axis units (log10 when log); 0 when it cannot be drawn. */
static inline int
qr_chart_tv(const struct qr_chart_layout *L, double v, double *out)
{
	if (!isfinite(v) || (L->log && v <= 0))
		return 0;
	*out = L->log ? log10(v) : v;
	return 1;
}

static inline double
qr_chart_cpos(const struct qr_chart_layout *L, double c)
{
	double f = (c - L->c0) / (L->c1 - L->c0);

	return L->horiz ? L->y0 + f * (L->y1 - L->y0) :
			  L->x0 + f * (L->x1 - L->x0);
}

static inline double
qr_chart_vpos(const struct qr_chart_layout *L, double t)
{
	double f = (t - L->v0) / (L->v1 - L->v0);

	return L->horiz ? L->x0 + f * (L->x1 - L->x0) :
			  L->y1 - f * (L->y1 - L->y0);
}

/* Point (category c, axis value t) in logical px. */
static inline void
qr_chart_xy(const struct qr_chart_layout *L, double c, double t, double *x,
	    double *y)
{
	if (L->horiz) {
		*x = qr_chart_vpos(L, t);
		*y = qr_chart_cpos(L, c);
	} else {
		*x = qr_chart_cpos(L, c);
		*y = qr_chart_vpos(L, t);
	}
}

/* text.c */

/* Source colour 0xRRGGBB at alpha. */
void qr_chart_set_color(struct _cairo *cr, unsigned rgb, double alpha);
/* The chart font at size logical px, bold or not. */
void qr_chart_set_font(struct _cairo *cr, double size, int bold);
/* Line height (ascent + descent) of the current font. */
double qr_chart_font_h(struct _cairo *cr);
/* Advance width of s in the current font. */
double qr_chart_text_w(struct _cairo *cr, const char *s);
/* Draw s with its box anchored at (x, y): ha and va are fractions of the
 * box (0 left/top, 1 right/bottom), the box turned by deg about the
 * anchor. */
void qr_chart_draw_text(struct _cairo *cr, const char *s, double x,
			double y, double ha, double va, double deg);
/* s as a new string (caller frees) no wider than maxw in the current
 * font; long names lose their middle. */
char *qr_chart_fit_text(struct _cairo *cr, const char *s, double maxw);

/* ticks.c */

/* Linear ticks on lo..hi, about target of them; integers only when
 * asked. */
void qr_chart_lin_ticks(struct qr_chart_ticks *t, double lo, double hi,
			double target, int integer);
/* Decade ticks on lo..hi (log10 units), 10^k labels, 2..9 minor ticks. */
void qr_chart_log_ticks(struct qr_chart_ticks *t, double lo, double hi,
			double target);
/* Widest label of t in the current font, kept in t->w. */
double qr_chart_ticks_width(struct _cairo *cr, struct qr_chart_ticks *t);

/* layout.c */

/* The layout of spec measured with cr: see layout.c. Free its labels
 * with qr_chart_free_labels. */
void qr_chart_lay_out(struct _cairo *cr, const struct qr_chart_spec *spec,
		      struct qr_chart_layout *L);
void qr_chart_free_labels(struct qr_chart_layout *L);
/* Rectangle r (x0, y0, x1, y1) of bar i of series s, the b-th bar of its
 * group; 0 when the value cannot be drawn. */
int qr_chart_bar_rect(const struct qr_chart_layout *L,
		      const struct qr_series *s, size_t b, size_t i,
		      double r[4]);
/* Box r (x0, y0, x1, y1) of the label of a reference line at axis value
 * t, in the current font. */
void qr_chart_hline_label_box(struct _cairo *cr,
			      const struct qr_chart_layout *L, double t,
			      const char *label, double r[4]);

/* series.c */

/* Every series, clipped near the plot: bands under bars under lines
 * under markers. */
void qr_chart_draw_data(struct _cairo *cr, const struct qr_chart_layout *L,
			const struct qr_chart_spec *sp);
/* Dashed reference lines with their labels. */
void qr_chart_draw_hlines(struct _cairo *cr,
			  const struct qr_chart_layout *L,
			  const struct qr_chart_spec *sp);
/* Red rings round the marked points. */
void qr_chart_draw_marks(struct _cairo *cr, const struct qr_chart_layout *L,
			 const struct qr_chart_spec *sp);

/* frame.c */

/* A line across the plot at p, a place on the value axis (logical px):
 * added to the path, not stroked. */
void qr_chart_value_line(struct _cairo *cr, const struct qr_chart_layout *L,
			 double p);
/* Value grid (and log minor grid). */
void qr_chart_draw_grid(struct _cairo *cr, const struct qr_chart_layout *L);
/* Spines, tick marks and tick labels of both axes. */
void qr_chart_draw_axes(struct _cairo *cr, const struct qr_chart_layout *L);
/* Title and axis labels. */
void qr_chart_draw_titles(struct _cairo *cr,
			  const struct qr_chart_layout *L,
			  const struct qr_chart_spec *sp);
/* Legend box at L->lg_x, L->lg_y, one row per labelled series. */
void qr_chart_draw_legend(struct _cairo *cr,
			  const struct qr_chart_layout *L,
			  const struct qr_chart_spec *sp);

#endif
