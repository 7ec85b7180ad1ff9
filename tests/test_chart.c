/*
 * test_chart: draw every kind of chart into a temporary folder, decode the
 * PNGs back with libpng and check what is in the pixels: size (2x logical),
 * palette colours where the data should be, highlight rings, log scaling,
 * image-map areas, exact heatmap colours, and the errors of bad input.
 *
 * QR_TEST_KEEP=1 keeps the folder (its path is printed) to look at.
 */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chart/chart.h"
#include "tap.h"
#include "util/util.h"

#define RING 0xe41a1c /* chart.c's highlight ring colour */

static char dir[] = "/tmp/qr-chart-XXXXXX";

struct img {
	int w, h;    /* pixels */
	uint8_t *px; /* RGBA rows, 4*w bytes apart */
};

static char *
out(const char *name)
{
	return qr_path_join(dir, name);
}

static int
has_png_sig(const char *path)
{
	static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n',
					0x1a, '\n' };
	uint8_t b[8];
	FILE *f = fopen(path, "rb");
	int ok_ = 0;

	if (f != NULL) {
		ok_ = fread(b, 1, 8, f) == 8 && memcmp(b, sig, 8) == 0;
		fclose(f);
	}
	return ok_;
}

/* Decode path as RGBA; 0 on success. */
static int
load(const char *path, struct img *im)
{
	png_image pi;

	memset(im, 0, sizeof *im);
	memset(&pi, 0, sizeof pi);
	pi.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(&pi, path))
		return -1;
	pi.format = PNG_FORMAT_RGBA;
	im->px = xmalloc(PNG_IMAGE_SIZE(pi));
	if (!png_image_finish_read(&pi, NULL, im->px, 0, NULL)) {
		free(im->px);
		im->px = NULL;
		return -1;
	}
	im->w = (int)pi.width;
	im->h = (int)pi.height;
	return 0;
}

static unsigned
rgb_at(const struct img *im, int x, int y)
{
	const uint8_t *p;

	if (x < 0 || y < 0 || x >= im->w || y >= im->h)
		return 0xffffffffu;
	p = im->px + 4 * ((size_t)y * (size_t)im->w + (size_t)x);
	return (unsigned)p[0] << 16 | (unsigned)p[1] << 8 | p[2];
}

static int
near_rgb(unsigned a, unsigned b, int tol)
{
	int sh;

	if (a > 0xffffff || b > 0xffffff)
		return 0;
	for (sh = 0; sh <= 16; sh += 8)
		if (abs((int)((a >> sh) & 0xff) - (int)((b >> sh) & 0xff)) >
		    tol)
			return 0;
	return 1;
}

/* Pixels of colour rgb (within tol) in device rectangle x0..x1, y0..y1. */
static size_t
count_rgb(const struct img *im, int x0, int y0, int x1, int y1, unsigned rgb,
	  int tol)
{
	size_t n = 0;
	int x, y;

	for (y = y0; y < y1; y++)
		for (x = x0; x < x1; x++)
			n += near_rgb(rgb_at(im, x, y), rgb, tol);
	return n;
}

static int
one_colour(const struct img *im)
{
	return count_rgb(im, 0, 0, im->w, im->h, rgb_at(im, 0, 0), 0) ==
	       (size_t)im->w * (size_t)im->h;
}

/* Colour c drawn at opacity a over white. */
static unsigned
over_white(unsigned c, double a)
{
	unsigned r = 0;
	int sh;

	for (sh = 0; sh <= 16; sh += 8)
		r |= (unsigned)lround(((c >> sh) & 0xff) * a + 255 * (1 - a))
		     << sh;
	return r;
}

/* Areas count, inside w x h, left to right (or top to bottom). */
static void
check_areas(const char *what, const struct qr_area *a, size_t n, size_t want,
	    int w, int h, int rows)
{
	int inside = 1, ordered = 1, indexed = 1;
	size_t i;

	ok(a != NULL && n == want, "%s: %zu areas (want %zu)", what, n, want);
	for (i = 0; a != NULL && i < n; i++) {
		inside &= a[i].x0 >= 0 && a[i].y0 >= 0 && a[i].x1 <= w &&
			  a[i].y1 <= h && a[i].x0 < a[i].x1 &&
			  a[i].y0 < a[i].y1;
		indexed &= a[i].index == i && a[i].series == 0;
		if (i > 0)
			ordered &= rows ? a[i].y0 >= a[i - 1].y0 &&
						  a[i].y0 >= a[i - 1].y1 - 1 :
					  a[i].x0 >= a[i - 1].x0 &&
						  a[i].x0 >= a[i - 1].x1 - 1;
	}
	ok(inside, "%s: areas lie inside the %dx%d image", what, w, h);
	ok(ordered, "%s: areas run %s", what,
	   rows ? "top to bottom" : "left to right");
	ok(indexed, "%s: areas carry their index", what);
}

/* Draw spec to name; check the file and return the decoded image. */
static int
draw_ok(const char *name, const struct qr_chart_spec *sp, struct img *im,
	struct qr_area **areas, size_t *n_areas)
{
	struct qr_diag d = { 0 };
	char *path = out(name);
	enum qr_status st;
	int good;

	st = qr_chart_draw(sp, path, areas, n_areas, &d);
	good = ok(st == QR_OK, "%s: drawn", name);
	if (!good)
		diag("%s", d.msg);
	if (good && areas != NULL) {
		struct qr_area *a2 = NULL;
		size_t n2 = 0;

		ok(qr_chart_areas(sp, name, &a2, &n2, &d) == QR_OK &&
			   n2 == *n_areas && *areas != NULL && a2 != NULL &&
			   memcmp(a2, *areas, n2 * sizeof *a2) == 0,
		   "%s: the layout alone gives the same %zu areas", name,
		   *n_areas);
		free(a2);
	}
	ok(has_png_sig(path), "%s: starts with the PNG signature", name);
	good &= ok(load(path, im) == 0, "%s: decodes", name);
	if (good) {
		ok(im->w == 2 * sp->width && im->h == 2 * sp->height,
		   "%s: %dx%d is twice %dx%d", name, im->w, im->h, sp->width,
		   sp->height);
		ok(!one_colour(im), "%s: not all one colour", name);
	}
	free(path);
	return good;
}

static void
test_line(void)
{
	double a[50], b[50];
	struct qr_series s[2] = {
		{ "after CLE", a, NULL, 50, QR_STYLE_LINE, 0 },
		{ "before CLE", b, NULL, 50, QR_STYLE_DOTTED, 1 },
	};
	struct qr_hline hl[1] = { { 0.8, "threshold 0.8" } };
	struct qr_chart_spec sp = {
		.title = "Per-channel weight range", .xlabel = "output channel",
		.ylabel = "max |w|", .width = 640, .height = 300,
		.n_series = 2, .series = s, .n_hlines = 1, .hlines = hl,
	};
	struct qr_area *ar = NULL;
	size_t n = 0, i;
	struct img im;

	for (i = 0; i < 50; i++) {
		a[i] = 0.5 + 0.3 * sin((double)i / 5);
		b[i] = 1.2 + 0.5 * cos((double)i / 7);
	}
	if (draw_ok("line.png", &sp, &im, &ar, &n)) {
		ok(count_rgb(&im, 0, 0, im.w, im.h, qr_chart_color(0), 0) > 50,
		   "line: the solid series' colour is drawn");
		ok(count_rgb(&im, 0, 0, im.w, im.h, qr_chart_color(1), 0) > 50,
		   "line: the dotted series' colour is drawn");
		check_areas("line", ar, n, 50, sp.width, sp.height, 0);
	}
	free(im.px);
	free(ar);
}

static void
test_band(void)
{
	double lo[40], hi[40], mid[40];
	struct qr_series s[2] = {
		{ "min-max", lo, hi, 40, QR_STYLE_BAND, 0 },
		{ "mean", mid, NULL, 40, QR_STYLE_LINE, 0 },
	};
	struct qr_chart_spec sp = {
		.title = "Activation range over samples", .xlabel = "channel",
		.ylabel = "value", .width = 500, .height = 280, .n_series = 2,
		.series = s,
	};
	struct qr_area *ar = NULL;
	size_t n = 0, i, px = 0;
	struct img im;

	for (i = 0; i < 40; i++) {
		mid[i] = sin((double)i / 6);
		lo[i] = mid[i] - 1.0;
		hi[i] = mid[i] + 1.0;
	}
	if (draw_ok("band.png", &sp, &im, &ar, &n) && n == 40) {
		/* column of channel 10, away from the mean line */
		int x = ar[10].x0 + ar[10].x1, w = ar[10].x1 - ar[10].x0;

		px = count_rgb(&im, x - w / 2, 2 * ar[10].y0, x + w / 2,
			       2 * ar[10].y1, over_white(qr_chart_color(0),
							0.25), 3);
		ok(px > 20, "band: translucent fill at a channel (%zu px)",
		   px);
		check_areas("band", ar, n, 40, sp.width, sp.height, 0);
	}
	free(im.px);
	free(ar);
}

static void
test_bars(void)
{
	double v[10] = { 1, 1, 1, 10, 1, 1, 1, 1, 1, 1 }, u[10];
	const char *names[10] = { "conv1", "conv2", "conv3", "conv4", "fc1",
				  "fc2", "fc3", "fc4", "fc5", "fc6" };
	struct qr_series s[2] = {
		{ "int8", v, NULL, 10, QR_STYLE_BARS, 0 },
		{ "int4", u, NULL, 10, QR_STYLE_BARS, 1 },
	};
	struct qr_chart_spec sp = {
		.title = "SQNR per layer", .ylabel = "SQNR (dB)", .width = 480,
		.height = 260, .n_series = 1, .series = s, .xticks = names,
	};
	struct qr_area *ar = NULL;
	size_t n = 0, i;
	struct img im;

	for (i = 0; i < 10; i++)
		u[i] = 2;
	if (draw_ok("bars.png", &sp, &im, &ar, &n) && n == 10) {
		int cx = ar[3].x0 + ar[3].x1, cy = ar[3].y0 + ar[3].y1;

		ok(rgb_at(&im, cx, cy) == qr_chart_color(0),
		   "bars: the tall bar's centre has palette colour 0 (%06x)",
		   rgb_at(&im, cx, cy));
		cx = ar[5].x0 + ar[5].x1;
		ok(rgb_at(&im, cx, cy) != qr_chart_color(0),
		   "bars: a short bar leaves the column's centre empty");
		check_areas("bars", ar, n, 10, sp.width, sp.height, 0);
	}
	free(im.px);
	free(ar);
	ar = NULL;

	sp.n_series = 2;
	sp.title = "SQNR per layer, two candidates";
	if (draw_ok("bars2.png", &sp, &im, &ar, &n) && n == 10) {
		int x0 = 2 * ar[3].x0, x1 = 2 * ar[3].x1;

		ok(count_rgb(&im, x0, 2 * ar[3].y0, x1, 2 * ar[3].y1,
			     qr_chart_color(0), 0) > 0 &&
			   count_rgb(&im, x0, 2 * ar[3].y0, x1, 2 * ar[3].y1,
				     qr_chart_color(1), 0) > 0,
		   "bars2: both bars of a group lie in its area");
	}
	free(im.px);
	free(ar);
}

static void
test_markers(void)
{
	double v[20];
	struct qr_series s = { "relative range", v, NULL, 20,
			       QR_STYLE_MARKERS, 2 };
	struct qr_mark mk = { 0, 7 };
	struct qr_hline hl = { 4.0, "Tukey fence" };
	struct qr_chart_spec sp = {
		.title = "Relative weight range", .xlabel = "channel",
		.ylabel = "range / min range", .width = 400, .height = 260,
		.n_series = 1, .series = &s, .n_marks = 1, .marks = &mk,
		.n_hlines = 1, .hlines = &hl,
	};
	struct qr_area *ar = NULL;
	size_t n = 0, i;
	struct img im;

	for (i = 0; i < 20; i++)
		v[i] = 1 + (double)(i % 3);
	v[7] = 9;
	if (draw_ok("markers.png", &sp, &im, &ar, &n) && n == 20) {
		size_t at7 = count_rgb(&im, 2 * ar[7].x0 - 8, 0,
				       2 * ar[7].x1 + 8, im.h, RING, 12);
		size_t at13 = count_rgb(&im, 2 * ar[13].x0, 0, 2 * ar[13].x1,
					im.h, RING, 12);

		ok(at7 > 10, "markers: red ring around point 7 (%zu px)", at7);
		ok(at13 == 0, "markers: no ring around point 13 (%zu px)",
		   at13);
		ok(count_rgb(&im, 0, 0, im.w, im.h, qr_chart_color(2), 0) > 20,
		   "markers: series colour 2 is drawn");
	}
	free(im.px);
	free(ar);
}

static void
test_horizontal(void)
{
	double v[8] = { 9, 7, 5.5, 4, 3, 2.5, 2, 1.5 };
	const char *names[8] = {
		"/backbone/stage3/block2/conv1/Conv", "/head/fc/Gemm",
		"conv_a", "conv_b", "conv_c", "conv_d", "conv_e", "conv_f",
	};
	struct qr_series s = { "max relative range", v, NULL, 8,
			       QR_STYLE_BARS, 0 };
	struct qr_chart_spec sp = {
		.title = "Problem layers", .ylabel = "max relative range",
		.width = 520, .height = 260, .n_series = 1, .series = &s,
		.xticks = names, .horizontal = 1,
	};
	struct qr_area *ar = NULL;
	size_t n = 0;
	struct img im;

	if (draw_ok("horizontal.png", &sp, &im, &ar, &n) && n == 8) {
		int cy = ar[0].y0 + ar[0].y1;

		ok(rgb_at(&im, 2 * ar[0].x0 + 6, cy) == qr_chart_color(0),
		   "horizontal: row 0's bar starts at the plot's left");
		ok(rgb_at(&im, 2 * ar[0].x1 - 80, cy) == qr_chart_color(0) &&
			   rgb_at(&im, 2 * ar[7].x1 - 80,
				  ar[7].y0 + ar[7].y1) != qr_chart_color(0),
		   "horizontal: the longest bar is on top");
		check_areas("horizontal", ar, n, 8, sp.width, sp.height, 1);
	}
	free(im.px);
	free(ar);
}

static void
test_log(void)
{
	double v[5] = { 1, 1e3, 1e6, 0, NAN };
	struct qr_series s = { "MSE", v, NULL, 5, QR_STYLE_MARKERS, 0 };
	struct qr_chart_spec sp = {
		.title = "MSE per layer", .ylabel = "MSE", .width = 300,
		.height = 240, .log_y = 1, .n_series = 1, .series = &s,
	};
	struct qr_area *ar = NULL;
	size_t n = 0;
	struct img im;
	long sum = 0, cnt = 0;
	int x, y;

	if (draw_ok("log.png", &sp, &im, &ar, &n) && n == 5) {
		for (y = 2 * ar[1].y0; y < 2 * ar[1].y1; y++)
			for (x = 2 * ar[1].x0; x < 2 * ar[1].x1; x++)
				if (rgb_at(&im, x, y) == qr_chart_color(0))
					sum += y, cnt++;
		ok_near(cnt > 0 ? (double)sum / (double)cnt : -1,
			ar[1].y0 + ar[1].y1, 4,
			"log: 1e3 sits halfway between 1 and 1e6");
	}
	free(im.px);
	free(ar);
}

static void
test_many_labels(void)
{
	double v[300];
	char *names[300];
	struct qr_series s = { "cosine", v, NULL, 300, QR_STYLE_BARS, 0 };
	struct qr_chart_spec sp = {
		.title = "Cosine similarity per layer (300 layers)",
		.xlabel = "layer", .ylabel = "cosine", .width = 900,
		.height = 320, .n_series = 1, .series = &s,
		.xticks = (const char *const *)names,
	};
	struct qr_hline hl = { 0.99, "0.99" };
	struct qr_area *ar = NULL;
	size_t n = 0, i, thin = 0;
	struct img im;
	double t0, ms;

	for (i = 0; i < 300; i++) {
		v[i] = 1 - 0.02 * pow((double)i / 300, 2) -
		       (i % 37 == 5 ? 0.01 : 0);
		names[i] = xasprintf("/model/encoder/layer.%zu/attention/"
				     "output/dense/MatMul_quant", i);
	}
	sp.n_hlines = 1;
	sp.hlines = &hl;
	t0 = qr_now();
	if (draw_ok("many.png", &sp, &im, &ar, &n)) {
		ms = (qr_now() - t0) * 1e3;
		diag("300-layer bar chart drawn and written in %.1f ms", ms);
		check_areas("many", ar, n, 300, sp.width, sp.height, 0);
		for (i = 0; ar != NULL && i < n; i++)
			thin += ar[i].x1 - ar[i].x0 < 1;
		ok(thin == 0, "many: every area is at least 1 px wide");
	}
	free(im.px);
	free(ar);
	for (i = 0; i < 300; i++)
		free(names[i]);
}

static void
test_odd_values(void)
{
	double nan3[3] = { NAN, NAN, NAN }, mixed[6] = { 1, NAN, INFINITY, 3,
							 -INFINITY, 2 };
	double flat[4] = { 5, 5, 5, 5 }, one[1] = { 0.25 };
	struct qr_series s = { "x", nan3, NULL, 3, QR_STYLE_LINE, 0 };
	struct qr_chart_spec sp = { .title = "odd", .width = 200,
				    .height = 150, .n_series = 1,
				    .series = &s };
	struct qr_area *ar = NULL;
	size_t n = 0;
	struct img im;

	draw_ok("nan.png", &sp, &im, &ar, &n);
	ok(n == 3, "nan: all-NaN series still gives 3 areas");
	free(im.px);
	free(ar);

	s.y = mixed;
	s.n = 6;
	draw_ok("mixed.png", &sp, &im, NULL, NULL);
	ok(count_rgb(&im, 0, 0, im.w, im.h, qr_chart_color(0), 0) > 0,
	   "mixed: the finite points are drawn");
	free(im.px);

	s.y = flat;
	s.n = 4;
	s.style = QR_STYLE_BARS;
	draw_ok("flat.png", &sp, &im, NULL, NULL);
	free(im.px);

	s.y = one;
	s.n = 1;
	s.style = QR_STYLE_MARKERS;
	draw_ok("one.png", &sp, &im, &ar, &n);
	ok(n == 1, "one: a single point gives one area");
	free(im.px);
	free(ar);
}

static void
test_errors(void)
{
	double v[2] = { 1, 2 };
	struct qr_series s = { "x", v, NULL, 2, QR_STYLE_LINE, 0 };
	struct qr_chart_spec sp = { .width = 200, .height = 150,
				    .n_series = 1, .series = &s };
	struct qr_diag d = { 0 };
	struct qr_area *ar = (void *)&d;
	size_t n = 7;
	const char *bad = "/nonexistent-qr-dir/chart.png";
	enum qr_status st;
	char *path = out("err.png");
	float hv[1] = { 0 };

	st = qr_chart_draw(&sp, bad, &ar, &n, &d);
	ok(st == QR_EIO && strstr(d.msg, bad) != NULL,
	   "unwritable path: QR_EIO naming it (%s)", d.msg);
	ok(ar == NULL && n == 0, "unwritable path: no areas returned");

	sp.n_series = 0;
	ok(qr_chart_draw(&sp, path, NULL, NULL, &d) == QR_EUSAGE,
	   "no series: QR_EUSAGE");
	sp.n_series = 1;
	s.n = 0;
	ok(qr_chart_draw(&sp, path, NULL, NULL, &d) == QR_EUSAGE,
	   "empty series: QR_EUSAGE (%s)", d.msg);
	s.n = 2;
	s.style = QR_STYLE_BAND;
	ok(qr_chart_draw(&sp, path, NULL, NULL, &d) == QR_EUSAGE,
	   "band without y2: QR_EUSAGE");
	ok(qr_chart_draw(NULL, path, NULL, NULL, &d) == QR_EUSAGE,
	   "NULL spec: QR_EUSAGE");
	ok(access(path, F_OK) != 0, "no file is left by a failed draw");
	st = qr_heatmap_write(bad, hv, 1, 1, 1, 0, 1, &d);
	ok(st == QR_EIO && strstr(d.msg, bad) != NULL,
	   "heatmap, unwritable path: QR_EIO naming it");
	ok(qr_heatmap_write(path, hv, 0, 1, 1, 0, 1, &d) == QR_EUSAGE,
	   "heatmap, no rows: QR_EUSAGE");
	free(path);
}

static void
test_heatmap(void)
{
	float v[4] = { 0, 1, NAN, 0.5f }, w[6] = { 2, 4, 6, 8, 10, 12 };
	struct qr_diag d = { 0 };
	char *path = out("heat.png");
	struct img im;
	int x, y, same = 1;

	ok(qr_heatmap_write(path, v, 2, 2, 1, 0, 1, &d) == QR_OK,
	   "heatmap 2x2: written");
	ok(has_png_sig(path), "heatmap: PNG signature");
	if (ok(load(path, &im) == 0 && im.w == 2 && im.h == 2,
	       "heatmap 2x2, cell 1: decodes as 2x2")) {
		ok(rgb_at(&im, 0, 0) == 0x440154,
		   "heatmap: vmin is viridis #440154 (%06x)", rgb_at(&im, 0, 0));
		ok(rgb_at(&im, 1, 0) == 0xfde725,
		   "heatmap: vmax is viridis #fde725 (%06x)", rgb_at(&im, 1, 0));
		ok(rgb_at(&im, 0, 1) == qr_heatmap_color(NAN) &&
			   (rgb_at(&im, 0, 1) >> 16) ==
				   (rgb_at(&im, 0, 1) & 0xff),
		   "heatmap: NaN is grey (%06x)", rgb_at(&im, 0, 1));
		ok(rgb_at(&im, 1, 1) == qr_heatmap_color(0.5),
		   "heatmap: 0.5 is the middle colour (%06x)",
		   rgb_at(&im, 1, 1));
		ok(im.px[3] == 255, "heatmap: opaque");
	}
	free(im.px);
	ok(qr_heatmap_write(path, w, 2, 3, 3, 2, 12, &d) == QR_OK &&
		   load(path, &im) == 0 && im.w == 9 && im.h == 6,
	   "heatmap 2x3, cell 3: 9x6 pixels");
	for (y = 0; im.px != NULL && y < 6; y++)
		for (x = 0; x < 9; x++)
			same &= rgb_at(&im, x, y) ==
				rgb_at(&im, x / 3 * 3, y / 3 * 3);
	ok(im.px != NULL && same && rgb_at(&im, 0, 0) != rgb_at(&im, 3, 0),
	   "heatmap: cells are solid blocks, no smoothing");
	free(im.px);
	free(path);
}

/* chart.c's viridis knots, and the plain interpolation between them that
 * qr_heatmap_color must match. */
static unsigned
ref_heat_color(double t)
{
	static const double kt[10] = { 0, 0.125, 0.25, 0.375, 0.5, 0.625,
				       0.75, 0.875, 0.9375, 1 };
	static const unsigned kc[10] = { 0x440154, 0x482878, 0x3e4a89,
					 0x31688e, 0x26828e, 0x1f9e89,
					 0x35b779, 0x6ece58, 0xb5de2b,
					 0xfde725 };
	unsigned c = 0;
	size_t i;
	int sh;

	if (t <= 0)
		return kc[0];
	if (t >= 1)
		return kc[9];
	for (i = 1; i < 9 && t > kt[i]; i++)
		;
	for (sh = 16; sh >= 0; sh -= 8) {
		double a = (kc[i - 1] >> sh) & 0xff, b = (kc[i] >> sh) & 0xff;
		double f = (t - kt[i - 1]) / (kt[i] - kt[i - 1]);

		c |= (unsigned)lround(a + (b - a) * f) << sh;
	}
	return c;
}

static void
test_heatmap_colors(void)
{
	int k, bad = 0;

	for (k = -8; k <= 4096 + 8; k++) {
		double t = k / 4096.0;

		if (qr_heatmap_color(t) != ref_heat_color(t) && bad++ < 3)
			diag("t=%g: %06x, want %06x", t, qr_heatmap_color(t),
			     ref_heat_color(t));
	}
	for (k = 0; k <= 16; k++) {
		double t = k / 16.0;

		bad += qr_heatmap_color(nextafter(t, 2)) !=
		       ref_heat_color(nextafter(t, 2));
		bad += qr_heatmap_color(nextafter(t, -1)) !=
		       ref_heat_color(nextafter(t, -1));
	}
	ok(bad == 0, "heatmap colours: viridis interpolated between its knots "
	   "(%d differ)", bad);
	ok(qr_heatmap_color(0.0625) == 0x461566,
	   "heatmap colours: halfway between the first two knots (%06x)",
	   qr_heatmap_color(0.0625));
}

/* A pool fed while it draws: charts and heatmaps, failures reported by
 * the first failed job in the order added. */
static void
test_pool(void)
{
	double y[30];
	float hv[6] = { 0, 0.2f, 0.4f, 0.6f, 0.8f, 1 };
	struct qr_series s = { "y", y, NULL, 30, QR_STYLE_MARKERS, 2 };
	struct qr_chart_spec sp = { .title = "pool", .width = 300,
				    .height = 160, .n_series = 1,
				    .series = &s };
	struct qr_heatmap_spec hs = { hv, 2, 3, 1, 0, 1 };
	struct qr_chart_job jobs[8];
	struct qr_chart_pool *p;
	struct qr_diag d = { 0 };
	char *paths[8];
	const char *bad1 = "/nonexistent-qr-dir/a.png";
	const char *bad2 = "/nonexistent-qr-dir/b.png";
	struct img im;
	enum qr_status st;
	int i, good = 1;

	for (i = 0; i < 30; i++)
		y[i] = sin(i / 4.0);
	memset(jobs, 0, sizeof jobs);
	p = qr_chart_pool_new(3);
	for (i = 0; i < 8; i++) {
		char name[32];

		snprintf(name, sizeof name, "pool%d.png", i);
		paths[i] = out(name);
		jobs[i].path = paths[i];
		if (i % 2 == 0) {
			jobs[i].spec = &sp;
			jobs[i].want_areas = 1;
		} else {
			jobs[i].heat = &hs;
		}
	}
	jobs[5].path = bad1; /* a heatmap */
	jobs[6].path = bad2; /* a chart, failing after it */
	for (i = 0; i < 8; i++) {
		qr_chart_pool_add(p, &jobs[i]);
		if (i == 3)
			usleep(20000); /* the workers catch up and wait */
	}
	st = qr_chart_pool_finish(p, &d);
	ok(st == QR_EIO && strstr(d.msg, bad1) != NULL,
	   "pool: the first failed job in order is reported (%s)", d.msg);
	ok(jobs[6].status == QR_EIO && strstr(jobs[6].msg, bad2) != NULL,
	   "pool: every job has its own status and message");
	for (i = 0; i < 8; i++) {
		if (i == 5 || i == 6)
			continue;
		good &= jobs[i].status == QR_OK && load(paths[i], &im) == 0;
		if (i % 2 == 0)
			good &= im.w == 600 && im.h == 320 &&
				jobs[i].n_areas == 30 && jobs[i].areas != NULL;
		else
			good &= im.w == 3 && im.h == 2 &&
				rgb_at(&im, 2, 1) == 0xfde725;
		free(im.px);
	}
	ok(good, "pool: every other job drew its image (and areas)");
	for (i = 0; i < 8; i++) {
		free(jobs[i].areas);
		free(paths[i]);
	}
	ok(qr_chart_pool_finish(NULL, &d) == QR_OK, "pool: NULL is QR_OK");
	memset(jobs, 0, 2 * sizeof jobs[0]);
	paths[0] = out("batch0.png");
	paths[1] = out("batch1.png");
	jobs[0].spec = &sp;
	jobs[0].path = paths[0];
	jobs[1].heat = &hs;
	jobs[1].path = paths[1];
	ok(qr_chart_draw_jobs(jobs, 2, 4, &d) == QR_OK &&
		   has_png_sig(paths[0]) && has_png_sig(paths[1]),
	   "batch: a chart and a heatmap drawn");
	free(paths[0]);
	free(paths[1]);
}

static void
test_png_rgba(void)
{
	const uint8_t px[2 * 12] = {
		255, 0, 0, 255, 0, 255, 0, 128, 0, 0, 255, 0,
		10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120,
	};
	struct qr_diag d = { 0 };
	char *path = out("rgba.png");
	struct img im;

	ok(qr_png_write_rgba(path, px, 3, 2, 12, &d) == QR_OK,
	   "png: 3x2 RGBA written");
	ok(load(path, &im) == 0 && im.w == 3 && im.h == 2 &&
		   memcmp(im.px, px, sizeof px) == 0,
	   "png: decodes to the same straight RGBA bytes");
	free(im.px);
	/* the same rows read as 2x2 with 4 bytes of padding per row */
	ok(qr_png_write_rgba(path, px, 2, 2, 12, &d) == QR_OK &&
		   load(path, &im) == 0 && im.w == 2 && im.h == 2 &&
		   memcmp(im.px, px, 8) == 0 &&
		   memcmp(im.px + 8, px + 12, 8) == 0,
	   "png: rows are read stride bytes apart");
	free(im.px);
	ok(qr_png_write_rgba(path, px, 3, 2, 8, &d) == QR_EUSAGE,
	   "png: a stride shorter than a row is QR_EUSAGE");
	free(path);
}

/* Premultiplied native-endian ARGB32, as cairo stores it. */
static uint32_t
argb(unsigned a, unsigned rgb)
{
	unsigned r = (rgb >> 16 & 0xff) * a / 255, g = (rgb >> 8 & 0xff) * a / 255,
		 b = (rgb & 0xff) * a / 255;

	return (uint32_t)a << 24 | r << 16 | g << 8 | b;
}

/* The PNG colour type byte of IHDR: 3 palette, 2 RGB, 6 RGBA. */
static int
png_color_type(const char *path)
{
	uint8_t b[26];
	FILE *f = fopen(path, "rb");
	int t = -1;

	if (f != NULL) {
		if (fread(b, 1, 26, f) == 26)
			t = b[25];
		fclose(f);
	}
	return t;
}

static void
test_png_argb32(void)
{
	enum { W = 96, H = 80 };
	static uint32_t px[W * H];
	struct qr_diag d = { 0 };
	char *path = out("argb.png");
	struct img im;
	int x, y, exact = 1, worst = 0, sh;
	double sum = 0;

	/* three colours: exact palette */
	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++)
			px[y * W + x] = argb(255, x < 10 ? 0x0072b2 :
						  y < 5 ? 0xe69f00 : 0xffffff);
	ok(qr_png_write_argb32(path, (const uint8_t *)px, W, H, 4 * W, &d) ==
		   QR_OK && png_color_type(path) == 3,
	   "argb32: an opaque 3-colour image is a palette PNG");
	if (ok(load(path, &im) == 0 && im.w == W && im.h == H,
	       "argb32: decodes %dx%d", W, H)) {
		for (y = 0; y < H; y++)
			for (x = 0; x < W; x++)
				exact &= rgb_at(&im, x, y) ==
					 (px[y * W + x] & 0xffffff) &&
					 im.px[4 * (y * W + x) + 3] == 255;
		ok(exact, "argb32: up to 256 colours are exact");
	}
	free(im.px);

	/* 4096 shades in a 64x64 block beside two solid inks on white */
	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++) {
			unsigned c = 0xffffff;

			if (x < 64 && y < 64)
				c = (unsigned)(x * 4) << 16 |
				    (unsigned)(y * 4) << 8 | 0x80;
			else if (y >= 70)
				c = x < 48 ? 0x0072b2 : 0xd55e00;
			px[y * W + x] = argb(255, c);
		}
	ok(qr_png_write_argb32(path, (const uint8_t *)px, W, H, 4 * W, &d) ==
		   QR_OK && png_color_type(path) == 3,
	   "argb32: 4096 colours: still a palette PNG");
	if (load(path, &im) == 0) {
		exact = rgb_at(&im, 0, 75) == 0x0072b2 &&
			rgb_at(&im, 90, 75) == 0xd55e00 &&
			rgb_at(&im, 90, 10) == 0xffffff;
		for (y = 0; y < 64; y++)
			for (x = 0; x < 64; x++)
				for (sh = 0; sh <= 16; sh += 8) {
					int e = abs((int)(rgb_at(&im, x, y) >>
							  sh & 0xff) -
						    (int)(px[y * W + x] >> sh &
							  0xff));

					worst = e > worst ? e : worst;
					sum += e;
				}
		ok(exact, "argb32: the frequent colours (inks, white) stay "
		   "exact");
		ok(worst <= 24 && sum / (64 * 64 * 3) < 6,
		   "argb32: shades land near their colour (worst %d, mean "
		   "%.2f levels)", worst, sum / (64 * 64 * 3));
	}
	free(im.px);

	/* 300 pale shades of 20 px each, and 3 px of ring red: the red
	 * keeps an entry of its own though rarer than every shade */
	for (y = 0; y < H; y++)
		for (x = 0; x < W; x++) {
			int i = (y * W + x) / 20;

			px[y * W + x] = argb(255, i < 300 ?
				(unsigned)(200 + i % 50) << 16 |
				(unsigned)(200 + i / 50 * 5) << 8 | 230 :
				0xffffff);
		}
	px[W * H - 1] = px[W * H - 2] = px[W * H - 3] = argb(255, RING);
	ok(qr_png_write_argb32(path, (const uint8_t *)px, W, H, 4 * W, &d) ==
		   QR_OK && load(path, &im) == 0 &&
		   rgb_at(&im, W - 1, H - 1) == RING,
	   "argb32: a rare colour far from the rest stays exact");
	free(im.px);

	/* a translucent pixel: straight RGBA */
	px[0] = argb(128, 0x804020);
	ok(qr_png_write_argb32(path, (const uint8_t *)px, W, H, 4 * W, &d) ==
		   QR_OK && png_color_type(path) == 6 && load(path, &im) == 0 &&
		   near_rgb(rgb_at(&im, 0, 0), 0x804020, 2) &&
		   im.px[3] == 128 && rgb_at(&im, W - 1, H - 1) == RING &&
		   im.px[4 * (W * H - 1) + 3] == 255,
	   "argb32: not opaque: RGBA, un-premultiplied");
	free(im.px);
	ok(qr_png_write_argb32(path, (const uint8_t *)px, W, H, 4 * W - 4,
			       &d) == QR_EUSAGE,
	   "argb32: a stride shorter than a row is QR_EUSAGE");
	free(path);
}

static void
test_areas_only(void)
{
	double v[3] = { 1, 2, 3 };
	const char *bad[3] = { "ok", "bad\xff\xfe", "\xc3(" };
	struct qr_series s = { "v\xff", v, NULL, 3, QR_STYLE_BARS, 0 };
	struct qr_chart_spec sp = { .title = "t\xe0\x80", .width = 200,
				    .height = 150, .n_series = 1,
				    .series = &s, .xticks = bad };
	struct qr_area *a = (void *)&sp;
	size_t n = 9;
	struct qr_diag d = { 0 };

	ok(qr_chart_areas(&sp, "bad.png", &a, &n, &d) == QR_OK && n == 3 &&
		   a != NULL,
	   "areas: invalid UTF-8 labels are measured, not refused");
	free(a);
	sp.n_series = 0;
	ok(qr_chart_areas(&sp, "empty.png", &a, &n, &d) == QR_EUSAGE &&
		   a == NULL && n == 0 && strstr(d.msg, "empty.png") != NULL,
	   "areas: an empty spec is QR_EUSAGE naming it");
}

static void
test_speed(void)
{
	double v[120], lo[120], hi[120];
	struct qr_series s[2] = {
		{ "min-max", lo, hi, 120, QR_STYLE_BAND, 0 },
		{ "mean", v, NULL, 120, QR_STYLE_LINE, 0 },
	};
	struct qr_chart_spec sp = { .title = "speed", .xlabel = "channel",
				    .ylabel = "value", .width = 640,
				    .height = 280, .n_series = 2,
				    .series = s };
	char *path = out("speed.png");
	double t0 = qr_now();
	int i, good = 1;

	for (i = 0; i < 120; i++) {
		v[i] = cos(i / 9.0);
		lo[i] = v[i] - 0.5;
		hi[i] = v[i] + 0.7;
	}
	for (i = 0; i < 20; i++)
		good &= qr_chart_draw(&sp, path, NULL, NULL, NULL) == QR_OK;
	ok(good, "speed: 20 charts drawn");
	diag("%.1f ms per 640x280 chart", (qr_now() - t0) * 1e3 / 20);
	free(path);
}

int
main(void)
{
	plan_no_plan();
	if (mkdtemp(dir) == NULL)
		skip_all("cannot make a temporary folder");
	RUN(test_line);
	RUN(test_band);
	RUN(test_bars);
	RUN(test_markers);
	RUN(test_horizontal);
	RUN(test_log);
	RUN(test_many_labels);
	RUN(test_odd_values);
	RUN(test_errors);
	RUN(test_heatmap);
	RUN(test_heatmap_colors);
	RUN(test_pool);
	RUN(test_png_rgba);
	RUN(test_png_argb32);
	RUN(test_areas_only);
	RUN(test_speed);
	if (getenv("QR_TEST_KEEP") != NULL)
		diag("charts kept in %s", dir);
	else
		qr_remove_tree(dir);
	return done();
}
