/*
 * chart: PNG output with libpng. See chart.h.
 *
 * Charts are a few inks on white, antialiased: hundreds to a few thousand
 * distinct colours, most of them edge shades. They are written as 8-bit palette
 * PNGs: exact when the image has at most 256 colours, else with the 256
 * colours chosen greedily to remove the most error (count x squared
 * distance; the inks themselves are the first ones chosen, so they stay
 * exact) and every other colour mapped to its nearest entry. A third of
 * the bytes of RGB to deflate, and files half the size.
 */
#include "chart/chart.h"

#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define PAL_MAX 256          /* palette entries */
#define HIST_MAX (1u << 16)  /* distinct colours worth quantizing; more
				(a photo, not a chart) is written as RGB */
#define ZLEVEL 2             /* deflate level; see qr_png_write_rgba */

/* libpng reports through these instead of printing: only cli/ prints. */
static void
png_fail(png_structp png, png_const_charp msg)
{
	char *dst = png_get_error_ptr(png);

	snprintf(dst, 128, "%s", msg);
	png_longjmp(png, 1);
}

static void
png_quiet(png_structp png, png_const_charp msg)
{
}

static int
is_opaque(const uint8_t *rgba, int width, int height, int stride)
{
	int x, y;

	for (y = 0; y < height; y++)
		for (x = 0; x < width; x++)
			if (rgba[(size_t)y * (size_t)stride + 4 * (size_t)x +
				 3] != 255)
				return 0;
	return 1;
}

/* What encode() writes: RGB(A) rows, or palette indices and the palette. */
struct png_img {
	const uint8_t *rows;      /* first row */
	size_t stride;            /* bytes from row to row */
	int width, height;        /* pixels */
	int opaque;               /* RGBA rows stored as RGB */
	const png_color *pal;     /* palette, or NULL: rows are RGBA */
	int n_pal;                /* entries in pal */
};

/* The libpng part, kept apart so setjmp clobbers nothing of the caller's;
 * 0 on success, why[] says what went wrong. */
static int
encode(FILE *f, const struct png_img *im, char why[128])
{
	png_structp png;
	png_infop info;
	volatile int rc = -1;
	int y, type;

	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, why, png_fail,
				      png_quiet);
	if (png == NULL)
		qr_fatal("out of memory creating a PNG writer");
	info = png_create_info_struct(png);
	if (info == NULL)
		qr_fatal("out of memory creating a PNG writer");
	if (setjmp(png_jmpbuf(png)))
		goto out;
	png_init_io(png, f);
	png_set_compression_level(png, ZLEVEL);
	png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
	type = im->pal != NULL ? PNG_COLOR_TYPE_PALETTE :
	       im->opaque ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGB_ALPHA;
	png_set_IHDR(png, info, (png_uint_32)im->width,
		     (png_uint_32)im->height, 8, type, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (im->pal != NULL)
		png_set_PLTE(png, info, im->pal, im->n_pal);
	png_write_info(png, info);
	if (im->pal == NULL && im->opaque)
		png_set_filler(png, 0, PNG_FILLER_AFTER);
	for (y = 0; y < im->height; y++)
		png_write_row(png, im->rows + (size_t)y * im->stride);
	png_write_end(png, info);
	rc = 0;
out:
	png_destroy_write_struct(&png, &info);
	return rc;
}

/* Open path, encode, close; on failure no file is left behind. */
static enum qr_status
write_file(const char *path, const struct png_img *im, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	char why[128] = "out of memory";
	FILE *f;

	f = fopen(path, "wb");
	if (f == NULL)
		return qr_errorf(d, QR_EIO, "cannot write '%s': %s", path,
				 strerror(errno));
	if (encode(f, im, why) != 0)
		st = qr_errorf(d, QR_EIO, "cannot write '%s': %s", path, why);
	if (fclose(f) != 0 && st == QR_OK)
		st = qr_errorf(d, QR_EIO, "cannot write '%s': %s", path,
			       strerror(errno));
	if (st != QR_OK)
		remove(path);
	return st;
}

/*
 * Rows of straight (not premultiplied) 8-bit RGBA, stride bytes apart.
 * An opaque image is stored as RGB. Compression favours speed: a report
 * writes hundreds of charts, and on flat chart images zlib level 2 without
 * row filters takes a third of the time of libpng's defaults for files
 * about 20% larger.
 * Errors: QR_EUSAGE for a bad image, QR_EIO naming path; no file is left
 * behind on failure.
 */
enum qr_status
qr_png_write_rgba(const char *path, const uint8_t *rgba, int width,
		  int height, int stride, struct qr_diag *d)
{
	struct png_img im;

	if (rgba == NULL || width <= 0 || height <= 0 || stride < 4 * width)
		return qr_errorf(d, QR_EUSAGE, "png '%s': bad image %dx%d "
				 "(stride %d)", path, width, height, stride);
	memset(&im, 0, sizeof im);
	im.rows = rgba;
	im.stride = (size_t)stride;
	im.width = width;
	im.height = height;
	im.opaque = is_opaque(rgba, width, height, stride);
	return write_file(path, &im, d);
}

/* ---- palette ---- */

/* Distinct colours of an image: open addressing on the 0x00RRGGBB key. */
struct hist {
	uint32_t *key;            /* colour + 1 (0: empty slot) */
	uint32_t *count;          /* pixels of that colour */
	uint8_t *idx;             /* its palette entry, once chosen */
	size_t cap;               /* slots, a power of two */
	size_t n;                 /* used slots */
};

static size_t
hash_rgb(uint32_t rgb, size_t cap)
{
	return (size_t)((rgb * 2654435761u) >> 8) & (cap - 1);
}

static size_t
hist_slot(const struct hist *h, uint32_t rgb)
{
	size_t i = hash_rgb(rgb, h->cap);

	while (h->key[i] != 0 && h->key[i] != rgb + 1)
		i = (i + 1) & (h->cap - 1);
	return i;
}

static void
hist_init(struct hist *h, size_t cap)
{
	h->cap = cap;
	h->n = 0;
	h->key = xcalloc(cap, sizeof *h->key);
	h->count = xcalloc(cap, sizeof *h->count);
	h->idx = NULL;
}

static void
hist_free(struct hist *h)
{
	free(h->key);
	free(h->count);
	free(h->idx);
	memset(h, 0, sizeof *h);
}

/* Add n pixels of rgb; 0 once there are more than HIST_MAX colours. */
static int
hist_add(struct hist *h, uint32_t rgb, uint32_t n)
{
	size_t i = hist_slot(h, rgb), k;

	if (h->key[i] == 0) {
		if (h->n >= HIST_MAX)
			return 0;
		if (2 * (h->n + 1) > h->cap) {
			struct hist g;

			hist_init(&g, 2 * h->cap);
			for (k = 0; k < h->cap; k++)
				if (h->key[k] != 0) {
					size_t j = hist_slot(&g,
							     h->key[k] - 1);

					g.key[j] = h->key[k];
					g.count[j] = h->count[k];
				}
			g.n = h->n;
			hist_free(h);
			*h = g;
			i = hist_slot(h, rgb);
		}
		h->key[i] = rgb + 1;
		h->n++;
	}
	h->count[i] += n;
	return 1;
}

/* The image as runs of one colour, row after row (a run may go on into
 * the next row): the pixels are read once. */
struct runs {
	uint32_t *rgb;            /* colour, 0x00RRGGBB */
	uint32_t *len;            /* pixels */
	size_t n, cap;            /* runs, allocated */
};

/* Add a run of n pixels of rgb to r and to h; 0 once there are more
 * than HIST_MAX colours. */
static int
run_add(struct hist *h, struct runs *r, uint32_t rgb, uint32_t n)
{
	if (!hist_add(h, rgb, n))
		return 0;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 4096;
		r->rgb = xreallocarray(r->rgb, r->cap, sizeof *r->rgb);
		r->len = xreallocarray(r->len, r->cap, sizeof *r->len);
	}
	r->rgb[r->n] = rgb;
	r->len[r->n++] = n;
	return 1;
}

/* The first x' in [x, w) with row[x'] != c, or w: a chart is mostly
 * long runs of white, scanned 4 pixels a compare where SSE2 is there. */
static int
run_end(const uint32_t *row, int x, int w, uint32_t c)
{
#ifdef __SSE2__
	const __m128i v = _mm_set1_epi32((int)c);

	for (; x + 4 <= w; x += 4) {
		__m128i p = _mm_loadu_si128((const __m128i *)(const void *)
					    (row + x));
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi32(p, v));

		if (m != 0xffff)
			return x + __builtin_ctz(~m & 0xffff) / 4;
	}
#endif
	while (x < w && row[x] == c)
		x++;
	return x;
}

/* Count every pixel of an opaque ARGB32 image into h and split it into
 * runs; 0 when a pixel is not opaque or there are too many colours. */
static int
histogram(struct hist *h, struct runs *r, const uint8_t *data, int w,
	  int height, size_t stride)
{
	uint32_t c = 0, n = 0;
	int x, y;

	for (y = 0; y < height; y++) {
		const uint32_t *row = (const uint32_t *)(const void *)
				      (data + (size_t)y * stride);

		for (x = 0; x < w;) {
			int x0 = x;

			if (n > 0) {
				x = run_end(row, x, w, c);
				n += (uint32_t)(x - x0);
				if (x == w)
					break;
				if (!run_add(h, r, c & 0xffffff, n))
					return 0;
			}
			c = row[x++];
			n = 1;
			if (c >> 24 != 0xff)
				return 0;
		}
	}
	return n == 0 || run_add(h, r, c & 0xffffff, n);
}

/*
 * Choose up to PAL_MAX entries among the colours of h and give every
 * colour its entry (h->idx). At most PAL_MAX colours: all of them, exact.
 * More: greedily, the colour whose pixels are the farthest from the
 * palette so far, weighted by their count (a deterministic k-means++
 * seeding), which picks the inks first and then spreads the edge shades
 * evenly. Distances are squared, weighted 2:4:3 (R:G:B) for the eye's
 * sensitivity. Returns the entry count.
 */
static int
choose_palette(struct hist *h, png_color *pal)
{
	int32_t *r = xreallocarray(NULL, 3 * h->n, sizeof *r), *g, *b;
	uint32_t *cnt = xreallocarray(NULL, 2 * h->n, sizeof *cnt), *best;
	uint8_t *near = xcalloc(h->n, 1);
	size_t i, k, n = 0, pick = 0;
	int np = 0;

	g = r + h->n;
	b = g + h->n;
	best = cnt + h->n;
	h->idx = xcalloc(h->cap, 1);
	for (i = 0; i < h->cap; i++) {
		uint32_t c = h->key[i] - 1;

		if (h->key[i] == 0)
			continue;
		if (h->n <= PAL_MAX) {
			pal[n].red = (png_byte)(c >> 16);
			pal[n].green = (png_byte)(c >> 8);
			pal[n].blue = (png_byte)c;
			h->idx[i] = (uint8_t)n;
		}
		r[n] = (int32_t)(c >> 16 & 0xff);
		g[n] = (int32_t)(c >> 8 & 0xff);
		b[n] = (int32_t)(c & 0xff);
		cnt[n] = h->count[i];
		best[n] = UINT32_MAX;
		if (cnt[n] > cnt[pick])
			pick = n;
		n++;
	}
	if (n <= PAL_MAX) {
		np = (int)n;
		goto out;
	}
	/* pick, then update every colour's distance and find the next */
	for (np = 0; np < PAL_MAX; np++) {
		int32_t pr = r[pick], pg = g[pick], pb = b[pick];
		uint64_t top = 0;
		size_t next = n;

		pal[np].red = (png_byte)pr;
		pal[np].green = (png_byte)pg;
		pal[np].blue = (png_byte)pb;
		for (k = 0; k < n; k++) {
			int32_t dr = r[k] - pr, dg = g[k] - pg, db = b[k] - pb;
			uint32_t e = (uint32_t)(2 * dr * dr + 4 * dg * dg +
						3 * db * db);
			uint64_t score;

			if (e < best[k]) {
				best[k] = e;
				near[k] = (uint8_t)np;
			}
			score = (uint64_t)cnt[k] * best[k];
			if (score > top) {
				top = score;
				next = k;
			}
		}
		if (next == n) {
			np++;
			break; /* every colour is in the palette */
		}
		pick = next;
	}
	for (i = 0, k = 0; i < h->cap; i++)
		if (h->key[i] != 0)
			h->idx[i] = near[k++];
out:
	free(near);
	free(cnt);
	free(r);
	return np;
}

/* Premultiplied native-endian ARGB32 to straight RGBA, into out. */
static void
argb_to_rgba(const uint8_t *data, uint8_t *out, int w, int h, size_t stride)
{
	uint32_t px;
	unsigned a, r, g, b;
	int x, y;

	for (y = 0; y < h; y++) {
		const uint8_t *row = data + (size_t)y * stride;
		uint8_t *o = out + (size_t)y * 4 * (size_t)w;

		for (x = 0; x < w; x++) {
			memcpy(&px, row + 4 * x, 4);
			a = px >> 24;
			r = (px >> 16) & 0xff;
			g = (px >> 8) & 0xff;
			b = px & 0xff;
			if (a != 0 && a != 255) {
				r = (r * 255 + a / 2) / a;
				g = (g * 255 + a / 2) / a;
				b = (b * 255 + a / 2) / a;
			}
			o[4 * x] = (uint8_t)r;
			o[4 * x + 1] = (uint8_t)g;
			o[4 * x + 2] = (uint8_t)b;
			o[4 * x + 3] = (uint8_t)a;
		}
	}
}

/*
 * cairo's image data (CAIRO_FORMAT_ARGB32: premultiplied, one native-endian
 * 32-bit word a pixel, rows stride bytes apart) as a palette PNG when it
 * is opaque (see the top of this file), else as RGBA.
 * Errors: as qr_png_write_rgba.
 */
enum qr_status
qr_png_write_argb32(const char *path, const uint8_t *data, int width,
		    int height, int stride, struct qr_diag *d)
{
	enum qr_status st;
	struct png_img im;
	struct hist h;
	struct runs r = {0};
	png_color pal[PAL_MAX];
	uint8_t *buf = NULL, *o, idx = 0;
	size_t k;

	if (data == NULL || width <= 0 || height <= 0 || stride < 4 * width ||
	    stride % 4 != 0)
		return qr_errorf(d, QR_EUSAGE, "png '%s': bad image %dx%d "
				 "(stride %d)", path, width, height, stride);
	memset(&im, 0, sizeof im);
	im.width = width;
	im.height = height;
	hist_init(&h, 4096);
	if (!histogram(&h, &r, data, width, height, (size_t)stride)) {
		buf = xreallocarray(NULL, (size_t)height, 4 * (size_t)width);
		argb_to_rgba(data, buf, width, height, (size_t)stride);
		st = qr_png_write_rgba(path, buf, width, height, 4 * width,
				       d);
		goto out;
	}
	im.n_pal = choose_palette(&h, pal);
	im.pal = pal;
	buf = xreallocarray(NULL, (size_t)height, (size_t)width);
	for (k = 0, o = buf; k < r.n; o += r.len[k++]) {
		if (k == 0 || r.rgb[k] != r.rgb[k - 1])
			idx = h.idx[hist_slot(&h, r.rgb[k])];
		memset(o, idx, r.len[k]);
	}
	im.rows = buf;
	im.stride = (size_t)width;
	st = write_file(path, &im, d);
out:
	hist_free(&h);
	free(r.rgb);
	free(r.len);
	free(buf);
	return st;
}
