/* chart: pixel-exact heatmaps written with stb_image_write. See chart.h. */
#include "chart/chart.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <zlib.h>

static unsigned char *zlib_compress(unsigned char *data, int len,
				    int *out_len, int quality);

/* Static, so no other copy of stb (libstb, another module) can clash.
 * stb builds the PNG (rows, chunks, CRCs); zlib deflates it, four times
 * faster than stb's own deflate for files half the size. */
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STBIW_ZLIB_COMPRESS zlib_compress
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

#define HEATMAP_SIDE_MAX 16384 /* largest image side, pixels */
#define HEATMAP_ZLEVEL 1       /* deflate level: random-looking cells
				  gain almost nothing from more effort */
#define NAN_GREY 0x9a9a9a      /* colour of NaN cells */

/*
 * Viridis (van der Walt & Smith, matplotlib 1.5) sampled at t = k/8 plus
 * t = 15/16 where the curve bends; linear in between. The ends are exact:
 * #440154 at vmin, #fde725 at vmax.
 */
static const struct {
	double t;   /* position in 0..1 */
	unsigned c; /* 0xRRGGBB */
} viridis[] = {
	{ 0.0, 0x440154 },    { 0.125, 0x482878 }, { 0.25, 0x3e4a89 },
	{ 0.375, 0x31688e },  { 0.5, 0x26828e },   { 0.625, 0x1f9e89 },
	{ 0.75, 0x35b779 },   { 0.875, 0x6ece58 }, { 0.9375, 0xb5de2b },
	{ 1.0, 0xfde725 },
};

/* stb's STBIW_ZLIB_COMPRESS: a zlib stream of data in a malloc'd buffer
 * (stb frees it), NULL when out of memory. quality is ignored. */
static unsigned char *
zlib_compress(unsigned char *data, int len, int *out_len, int quality)
{
	uLongf n = compressBound((uLong)len);
	unsigned char *out = malloc(n);

	if (out == NULL ||
	    compress2(out, &n, data, (uLong)len, HEATMAP_ZLEVEL) != Z_OK) {
		free(out);
		return NULL;
	}
	*out_len = (int)n;
	return out;
}

/* stb's settings are globals: set once, before any thread writes. No row
 * filter: on these images every filter makes the file larger. */
static pthread_once_t stb_once = PTHREAD_ONCE_INIT;

static void
stb_setup(void)
{
	stbi_write_force_png_filter = 0;
}

/*
 * Colour of t in 0..1 (clamped; NaN gives the NaN grey) as 0xRRGGBB, for
 * HTML colour bars next to a heatmap. Called once per heatmap pixel, so
 * the knot is found by arithmetic: knots are k/8, plus 15/16.
 */
unsigned
qr_heatmap_color(double t)
{
	size_t n = sizeof viridis / sizeof viridis[0], i;
	unsigned a, b, c = 0;
	double f;
	int sh;

	if (isnan(t))
		return NAN_GREY;
	if (t <= 0)
		return viridis[0].c;
	if (t >= 1)
		return viridis[n - 1].c;
	/* i: the first knot at or after t */
	i = t <= 0.875 ? (size_t)ceil(t * 8) : t <= 0.9375 ? n - 2 : n - 1;
	a = viridis[i - 1].c;
	b = viridis[i].c;
	f = (t - viridis[i - 1].t) / (viridis[i].t - viridis[i - 1].t);
	for (sh = 16; sh >= 0; sh -= 8) {
		double ca = (a >> sh) & 0xff, cb = (b >> sh) & 0xff;

		/* lround of a value >= 0, without the libm call */
		c |= (unsigned)(ca + (cb - ca) * f + 0.5) << sh;
	}
	return c;
}

/*
 * One cell x cell block per value, v row-major and borrowed. vmin == vmax
 * paints every finite cell the middle colour; +-Inf clamp to the ends.
 * Errors: QR_EUSAGE for no cells or a bad range, QR_EIO naming path.
 */
enum qr_status
qr_heatmap_write(const char *path, const float *v, size_t rows, size_t cols,
		 int cell, float vmin, float vmax, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	size_t w, h, stride, r, c, k;
	uint8_t *px = NULL;

	if (v == NULL || rows == 0 || cols == 0 || cell < 1)
		return qr_errorf(d, QR_EUSAGE, "heatmap '%s': empty (%zu x %zu"
				 ", cell %d)", path, rows, cols, cell);
	if (!isfinite(vmin) || !isfinite(vmax) || vmin > vmax)
		return qr_errorf(d, QR_EUSAGE, "heatmap '%s': bad value range "
				 "%g..%g", path, (double)vmin, (double)vmax);
	if (qr_mul_overflow(cols, (size_t)cell, &w) ||
	    qr_mul_overflow(rows, (size_t)cell, &h) ||
	    w > HEATMAP_SIDE_MAX || h > HEATMAP_SIDE_MAX)
		return qr_errorf(d, QR_EUSAGE, "heatmap '%s': %zu x %zu cells "
				 "of %d px exceed %d px a side", path, rows,
				 cols, cell, HEATMAP_SIDE_MAX);
	stride = w * 3;
	px = xmalloc(stride * h);
	for (r = 0; r < rows; r++) {
		uint8_t *line = px + r * (size_t)cell * stride;

		for (c = 0; c < cols; c++) {
			double x = v[r * cols + c];
			double t = vmax > vmin ? (x - vmin) / (vmax - vmin) : 0.5;
			unsigned rgb = qr_heatmap_color(isnan(x) ? NAN : t);

			for (k = 0; k < (size_t)cell; k++) {
				uint8_t *p = line + (c * (size_t)cell + k) * 3;

				p[0] = (uint8_t)(rgb >> 16);
				p[1] = (uint8_t)(rgb >> 8);
				p[2] = (uint8_t)rgb;
			}
		}
		for (k = 1; k < (size_t)cell; k++)
			memcpy(line + k * stride, line, stride);
	}
	errno = 0;
	pthread_once(&stb_once, stb_setup);
	if (!stbi_write_png(path, (int)w, (int)h, 3, px, (int)stride))
		st = qr_errorf(d, QR_EIO, "cannot write '%s': %s", path,
			       errno ? strerror(errno) : "write failed");
	free(px);
	return st;
}
