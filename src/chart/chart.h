/*
 * chart: PNG charts drawn with cairo and written with libpng, plus
 * pixel-exact images (heatmaps) written with stb_image_write.
 *
 * Charts know nothing of models or analyses: they take series of numbers
 * and labels. Every chart is rendered at 2x for HiDPI screens; the logical
 * size (what <img width=...> should say) is spec->width x spec->height.
 *
 * Each chart can return the rectangles of its points/bars in logical
 * pixels, so the report can build an HTML <map> naming the layer under the
 * pointer.
 *
 * Ownership: the caller owns specs and their arrays; *areas returned by the
 * draw functions is a new array the caller frees with free().
 */
#ifndef QR_CHART_H
#define QR_CHART_H

#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

enum qr_series_style {
	QR_STYLE_LINE = 0,   /* solid line through the points */
	QR_STYLE_DOTTED,     /* dotted line */
	QR_STYLE_MARKERS,    /* markers only */
	QR_STYLE_BARS,       /* vertical bars (bar charts) */
	QR_STYLE_BAND,       /* filled band between y and y2 */
};

struct qr_series {
	const char *label;        /* legend text */
	const double *y;          /* n values; NaN values are skipped */
	const double *y2;         /* upper edge for QR_STYLE_BAND, else NULL */
	size_t n;                 /* points */
	enum qr_series_style style;
	int color;                /* palette index, 0..7 */
};

/* A highlighted point (e.g. an outlier channel): drawn as a red ring. */
struct qr_mark {
	size_t series;            /* which series */
	size_t index;             /* which point */
};

/* A horizontal reference line (threshold, Tukey fence). */
struct qr_hline {
	double y;                 /* data value */
	const char *label;        /* text drawn at its right end */
};

/*
 * Axes: x is the point index (category axis), y the value axis. With
 * horizontal=1 they swap as a whole: index 0 is the top row, ylabel names
 * the value axis (now at the bottom), xlabel the rows, hlines are drawn
 * vertically. xticks, when given, has one entry per index of the longest
 * series; shared "/"-separated heads and tails of long names are elided.
 */
struct qr_chart_spec {
	const char *title;        /* drawn at the top */
	const char *xlabel;       /* x axis label, with units */
	const char *ylabel;       /* y axis label, with units */
	int width, height;        /* logical pixels; rendered at 2x */
	int log_y;                /* 1 for a log10 y axis (values <= 0 skipped) */
	size_t n_series;
	const struct qr_series *series;
	const char *const *xticks; /* category labels, one per x index, or NULL
				      for numeric ticks; thinned so they never
				      overlap */
	size_t n_marks;
	const struct qr_mark *marks;
	size_t n_hlines;
	const struct qr_hline *hlines;
	int horizontal;           /* bars: 1 draws horizontal bars with
				     xticks as row labels (ranked lists) */
};

/* One clickable region of a chart, in logical pixels. */
struct qr_area {
	int x0, y0, x1, y1;       /* rectangle */
	size_t index;             /* x index (point or bar) */
	size_t series;            /* series it belongs to */
};

/* Draw spec (line/markers/band series; bars when a series has
 * QR_STYLE_BARS) and write it as PNG to path. When areas is not NULL,
 * *areas gets one rectangle per x index of the first series and *n_areas
 * their count. Errors: QR_EIO naming path; QR_EUSAGE for an empty spec. */
enum qr_status qr_chart_draw(const struct qr_chart_spec *spec,
			     const char *path, struct qr_area **areas,
			     size_t *n_areas, struct qr_diag *d);

/* The areas qr_chart_draw gives for spec, without drawing: the layout
 * alone, a fraction of the cost (a report builds its pages while the
 * charts are drawn). name is for error messages. Errors: QR_EUSAGE for
 * an empty spec. */
enum qr_status qr_chart_areas(const struct qr_chart_spec *spec,
			      const char *name, struct qr_area **areas,
			      size_t *n_areas, struct qr_diag *d);

/* Write 8-bit RGBA pixels as a PNG with libpng. */
enum qr_status qr_png_write_rgba(const char *path, const uint8_t *rgba,
				 int width, int height, int stride,
				 struct qr_diag *d);

/* Write cairo's ARGB32 image data (premultiplied native-endian words) as
 * a PNG with libpng: an opaque image becomes an 8-bit palette PNG, exact
 * up to 256 colours, else its 256 most telling colours (the inks stay
 * exact, edge shades go to their nearest entry). */
enum qr_status qr_png_write_argb32(const char *path, const uint8_t *data,
				   int width, int height, int stride,
				   struct qr_diag *d);

/* A heatmap of rows x cols values (row-major), one cell per pixel block of
 * cell x cell, colour-mapped from vmin..vmax (viridis-like), written with
 * stb_image_write. Pixel exact: no smoothing. */
enum qr_status qr_heatmap_write(const char *path, const float *v, size_t rows,
				size_t cols, int cell, float vmin, float vmax,
				struct qr_diag *d);

/* The heatmap colour of t in 0..1 (clamped; NaN gives the NaN-cell grey)
 * as 0xRRGGBB, for HTML colour bars beside a heatmap. */
unsigned qr_heatmap_color(double t);

/* Palette colour i (0..7) as 0xRRGGBB, for HTML legends. */
unsigned qr_chart_color(int i);

/* A deep copy of spec (every string and array); free with
 * qr_chart_spec_free. */
struct qr_chart_spec *qr_chart_spec_copy(const struct qr_chart_spec *spec);
void qr_chart_spec_free(struct qr_chart_spec *spec);

/* A heatmap job: qr_heatmap_write's arguments. */
struct qr_heatmap_spec {
	const float *v;           /* rows x cols values, row-major (borrowed) */
	size_t rows, cols;        /* cells */
	int cell;                 /* pixels a side per cell */
	float vmin, vmax;         /* value range of the colour map */
};

/* One image of a batch: a chart (spec) or a heatmap (heat). */
struct qr_chart_job {
	const struct qr_chart_spec *spec; /* chart to draw, or NULL; borrowed
					     until the batch is finished */
	const struct qr_heatmap_spec *heat; /* else this heatmap (borrowed) */
	const char *path;        /* PNG to write (borrowed) */
	int want_areas;          /* 1: fill areas/n_areas (charts only) */
	struct qr_area *areas;   /* out: owned by the caller (free()) */
	size_t n_areas;          /* out */
	enum qr_status status;   /* out: this image's outcome */
	char msg[QR_DIAG_MSG_MAX]; /* out: its error message */
};

/*
 * A pool of threads drawing jobs while more are being added: the caller
 * keeps building (say, the report's pages) while the other cores draw.
 * qr_chart_pool_new(n) starts n - 1 threads at once; the caller's own
 * thread draws too once it calls qr_chart_pool_finish. Jobs are taken in
 * the order added. Not for use from several threads at once.
 */
struct qr_chart_pool;
struct qr_chart_pool *qr_chart_pool_new(int n_threads);
/* Add job (borrowed, with everything it points to, until finish). */
void qr_chart_pool_add(struct qr_chart_pool *p, struct qr_chart_job *job);
/* Draw what is left on this thread too, wait for every job and free p.
 * Returns QR_OK, or the status of the first failed job (in the order
 * added) with its message in d. A NULL p is QR_OK. */
enum qr_status qr_chart_pool_finish(struct qr_chart_pool *p,
				    struct qr_diag *d);

/* Draw n jobs on up to n_threads threads (cairo surfaces are per
 * thread): a pool fed all at once. Returns what qr_chart_pool_finish
 * does. */
enum qr_status qr_chart_draw_jobs(struct qr_chart_job *jobs, size_t n,
				  int n_threads, struct qr_diag *d);

#endif
