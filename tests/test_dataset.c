/*
 * test_dataset: image decoding (every PNG colour type, JPEG, BMP, broken
 * files), preprocessing numbers, resize, and each dataset source (image
 * folders with classes, .npy, ONNX test_data_set .pb, random, several
 * inputs). Fixtures: tests/data/images/ (tests/data/make_image_fixtures.py)
 * and samples/. Models are mostly built in memory: the dataset only reads
 * the graph inputs (and, for random integer inputs, who reads them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/dataset.h"
#include "run/run.h"
#include "tap.h"
#include "util/util.h"

#ifndef QR_SRCDIR
#define QR_SRCDIR "."
#endif
#define PB_CASE "/usr/share/libonnx-testdata/data/node/" \
	"test_conv_with_strides_padding"

static char tmpdir[] = "/tmp/qr-dataset-XXXXXX";

/* Storage for the options' sources and overrides (the caller's). */
static struct qr_data_source opt_sources[8];
static struct qr_dims_override opt_overrides[8];

/* Zero o and point it at the storage above, emptied. */
static void
opts_zero(struct qr_dataset_opts *o)
{
	memset(o, 0, sizeof *o);
	memset(opt_sources, 0, sizeof opt_sources);
	memset(opt_overrides, 0, sizeof opt_overrides);
	o->sources = opt_sources;
	o->overrides = opt_overrides;
}

static char *
fixture(const char *name)
{
	return xasprintf("%s/tests/data/images/%s", QR_SRCDIR, name);
}

/* ---- a model with only graph inputs ---- */

struct fake {
	struct qr_model m;
	struct qr_value_info vi[6];
	struct qr_dim dims[6][8];
};

/* Add input name; dims < 0 are dynamic (named "d<k>"). */
static void
fake_input(struct fake *f, const char *name, int dtype, int ndim,
	   const int64_t *dims)
{
	size_t i = f->m.graph.n_input++;
	int k;

	f->vi[i].name = name;
	f->vi[i].dtype = dtype;
	f->vi[i].ndim = ndim;
	for (k = 0; k < ndim; k++) {
		f->dims[i][k].value = dims[k];
		f->dims[i][k].param = dims[k] < 0 ? "dyn" : NULL;
	}
	f->vi[i].dims = f->dims[i];
	f->m.graph.inputs = f->vi;
}

static void
fake1(struct fake *f, int dtype, int64_t a, int64_t b, int64_t c, int64_t e)
{
	int64_t dims[4] = {a, b, c, e};

	memset(f, 0, sizeof *f);
	fake_input(f, "x", dtype, 4, dims);
}

/* ---- decoding ---- */

static enum qr_status
decode_file(const char *name, struct qr_image *im, struct qr_diag *d)
{
	char *path = fixture(name), *buf = NULL;
	size_t len = 0;
	enum qr_status st;

	memset(im, 0, sizeof *im);
	st = qr_read_file(path, &buf, &len, d);
	if (st == QR_OK)
		st = qr_image_decode(buf, len, path, im, d);
	free(buf);
	free(path);
	return st;
}

static void
check_decode(const char *name, int w, int h, int ch, const uint8_t *want)
{
	struct qr_diag d = {0};
	struct qr_image im;
	enum qr_status st = decode_file(name, &im, &d);
	int same = st == QR_OK && im.w == w && im.h == h && im.channels == ch &&
		   memcmp(im.px, want, (size_t)w * h * ch) == 0;

	ok(same, "%s decodes to %dx%dx%d with the expected pixels", name, w, h,
	   ch);
	if (!same && st == QR_OK) {
		int i;

		diag("got %dx%dx%d:", im.w, im.h, im.channels);
		for (i = 0; i < im.w * im.h * im.channels && i < 48; i++)
			diag("  [%d] %d want %d", i, im.px[i],
			     i < w * h * ch ? want[i] : -1);
	} else if (!same) {
		diag("%s", d.msg);
	}
	qr_image_free(&im);
	qr_diag_clear(&d);
}

static void
check_refused(const char *name, enum qr_status want)
{
	struct qr_diag d = {0};
	struct qr_image im;
	enum qr_status st = decode_file(name, &im, &d);

	ok(st == want && strstr(d.msg, name) != NULL && im.px == NULL,
	   "%s refused with %s, naming the file (%s)", name,
	   qr_status_name(want), d.msg);
	qr_image_free(&im);
	qr_diag_clear(&d);
}

/* Every prefix of a good file decodes or fails cleanly; prefixes shorter
 * than full - slack must fail. */
static void
check_prefixes(const char *name, size_t slack)
{
	char *path = fixture(name), *buf = NULL;
	struct qr_diag d = {0};
	struct qr_image im;
	size_t len = 0, n, bad = 0;
	enum qr_status st;

	if (qr_read_file(path, &buf, &len, NULL) != QR_OK) {
		ok(0, "read %s", name);
		free(path);
		return;
	}
	for (n = 0; n < len; n++) {
		/* exact size, so valgrind sees any overread */
		char *copy = xmalloc(n ? n : 1);

		memcpy(copy, buf, n);
		st = qr_image_decode(copy, n, name, &im, &d);
		if ((st != QR_OK && st != QR_EFORMAT) ||
		    (st == QR_OK && n + slack < len)) {
			if (bad++ < 3)
				diag("prefix %zu of %zu: %s %s", n, len,
				     qr_status_name(st), d.msg);
		}
		qr_image_free(&im);
		free(copy);
	}
	ok(bad == 0, "every truncation of %s (%zu) fails cleanly", name, len);
	qr_diag_clear(&d);
	free(buf);
	free(path);
}

/*
 * Write into out a bottom-up BMP (40-byte header) of w x h pixels at bpp
 * 1, 4 or 8 bits, whose pixel data starts at byte `offset` (54 + 4 x the
 * palette's colours for a well-formed file), with the n_pal colours of pal
 * (RGB) and pixel indices idx (row by row, top row first). Returns the
 * file's size.
 */
static size_t
make_bmp(uint8_t *out, int w, int h, int bpp, long offset,
	 const uint8_t (*pal)[3], int n_pal, const uint8_t *idx)
{
	size_t stride = ((size_t)w * bpp + 31) / 32 * 4;
	size_t n = (size_t)offset + stride * h, i;
	uint32_t hdr[13] = {(uint32_t)n, 0, (uint32_t)offset, 40,
			    (uint32_t)w, (uint32_t)h,
			    1u | (uint32_t)bpp << 16, 0, 0, 0, 0,
			    (uint32_t)n_pal, 0};
	int x, y, k;

	memset(out, 0, n);
	out[0] = 'B';
	out[1] = 'M';
	for (i = 0; i < 13; i++)
		for (k = 0; k < 4; k++)
			out[2 + 4 * i + k] = (uint8_t)(hdr[i] >> (8 * k));
	for (k = 0; k < n_pal && 54 + 4 * k + 3 <= offset; k++) {
		out[54 + 4 * k] = pal[k][2];
		out[54 + 4 * k + 1] = pal[k][1];
		out[54 + 4 * k + 2] = pal[k][0];
	}
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			uint8_t *b = out + offset + stride * (h - 1 - y) +
				     (size_t)x * bpp / 8;

			*b |= (uint8_t)(idx[y * w + x]
					<< (8 - bpp - x * bpp % 8));
		}
	return n;
}

/* stb 2.27 keeps a BMP's palette in an uninitialized stack array sized
 * from the gap before the pixels: a pixel naming a colour the palette
 * lacks, or a gap too small for any colour, must be refused, not decoded
 * from stack garbage; a short palette that covers the pixels decodes. */
static void
check_bmp_palette(void)
{
	static const uint8_t pal[3][3] = {{10, 20, 30}, {40, 50, 60},
					  {70, 80, 90}};
	static const uint8_t want[9] = {70, 80, 90, 10, 20, 30, 40, 50, 60};
	uint8_t idx[256], *bmp = xcalloc(512, 1);
	struct qr_diag d = {0};
	struct qr_image im;
	enum qr_status st;
	size_t n;
	int i;

	idx[0] = 2;
	idx[1] = 0;
	idx[2] = 1;
	n = make_bmp(bmp, 3, 1, 4, 54 + 12, pal, 3, idx);
	st = qr_image_decode(bmp, n, "pal3.bmp", &im, &d);
	ok(st == QR_OK && im.w == 3 && im.h == 1 && im.channels == 3 &&
	   memcmp(im.px, want, sizeof want) == 0,
	   "4-bit BMP with a 3-colour palette decodes (%s)", d.msg);
	qr_image_free(&im);
	qr_diag_clear(&d);

	idx[2] = 3;
	n = make_bmp(bmp, 3, 1, 4, 54 + 12, pal, 3, idx);
	st = qr_image_decode(bmp, n, "pal3.bmp", &im, &d);
	ok(st == QR_EFORMAT && strstr(d.msg, "colour 3 of a 3-colour") &&
	   im.px == NULL,
	   "4-bit BMP naming colour 3 of a 3-colour palette refused (%s)",
	   d.msg);
	qr_image_free(&im);
	qr_diag_clear(&d);

	/* pixels inside the header: stb computes a palette of -6 colours,
	 * reads none, skips to the end of its 128-byte buffer and decodes
	 * the pixels it reads from there (the 128 trailing bytes keep that
	 * within the file) with the uninitialized stack array */
	for (i = 0; i < 256; i++)
		idx[i] = (uint8_t)i;
	n = make_bmp(bmp, 16, 16, 8, 30, pal, 0, idx);
	memset(bmp + n, 0, 128);
	st = qr_image_decode(bmp, n + 128, "nopal.bmp", &im, &d);
	ok(st == QR_EFORMAT && strstr(d.msg, "no room for a palette") &&
	   im.px == NULL,
	   "8-bit BMP whose pixels start inside its header refused (%s)",
	   d.msg);
	qr_image_free(&im);
	qr_diag_clear(&d);
	/* the same image stored top-down (negative height, rows reversed)
	 * decodes to the same pixels */
	{
		uint8_t *td = xcalloc(512, 1);
		struct qr_image a, b;
		size_t stride = 4, r;
		int32_t negh = -2;

		memset(idx, 0, sizeof idx);
		idx[0] = 1;
		idx[1] = 2;
		idx[3] = 2;
		idx[5] = 1;
		n = make_bmp(bmp, 3, 2, 8, 54 + 12, pal, 3, idx);
		memcpy(td, bmp, 54 + 12);
		for (r = 0; r < 4; r++)
			td[22 + r] = (uint8_t)((uint32_t)negh >> (8 * r));
		for (r = 0; r < 2; r++)
			memcpy(td + 54 + 12 + r * stride,
			       bmp + 54 + 12 + (1 - r) * stride, stride);
		st = qr_image_decode(bmp, n, "up.bmp", &a, &d);
		ok(st == QR_OK, "bottom-up 8-bit BMP decodes (%s)", d.msg);
		st = qr_image_decode(td, n, "down.bmp", &b, &d);
		ok(st == QR_OK && a.w == b.w && a.h == b.h &&
		   a.channels == b.channels &&
		   memcmp(a.px, b.px, (size_t)a.w * a.h * a.channels) == 0,
		   "top-down BMP (negative height) decodes to the same "
		   "pixels (%s)", d.msg);
		qr_image_free(&a);
		qr_image_free(&b);
		free(td);
	}
	free(bmp);
}

/* Decode buf, keeping the refusal's message in msg (n bytes). */
static enum qr_status
decode_msg(const uint8_t *buf, size_t len, char *msg, size_t n)
{
	struct qr_diag d = {0};
	struct qr_image im;
	enum qr_status st = qr_image_decode(buf, len, "x", &im, &d);

	snprintf(msg, n, "%s", d.msg);
	qr_image_free(&im);
	qr_diag_clear(&d);
	return st;
}

/* stb keeps its failure reason in a static that only failures set, and a
 * scan naming a component the frame lacks sets none: that refusal must
 * still give its own message, not "(null)" nor the previous image's. */
static void
check_own_reason(void)
{
	/* 8x8 gray baseline JPEG whose scan names component 2 */
	static const uint8_t sos_bad_comp[] = {
		0xff, 0xd8, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x08, 0x00,
		0x08, 0x01, 0x01, 0x11, 0x00, 0xff, 0xda, 0x00, 0x08, 0x01,
		0x02, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x00, 0xff, 0xd9};
	static const uint8_t bad_bmp[] = {'B', 'M', 'x', 'x'};
	char first[256], other[256], again[256];
	enum qr_status s1, s2, s3;

	s1 = decode_msg(sos_bad_comp, sizeof sos_bad_comp, first,
			sizeof first);
	s2 = decode_msg(bad_bmp, sizeof bad_bmp, other, sizeof other);
	s3 = decode_msg(sos_bad_comp, sizeof sos_bad_comp, again,
			sizeof again);
	ok(s1 == QR_EFORMAT && s2 == QR_EFORMAT && s3 == QR_EFORMAT &&
	   strcmp(first, again) == 0 && strstr(first, "(null)") == NULL,
	   "a JPEG scan naming a missing component is refused with the same "
	   "message before and after another refusal ('%s', then '%s')",
	   first, again);
}

static void
test_decode(void)
{
	static const uint8_t gray8[16] = {
		10, 26, 42, 58, 74, 90, 106, 122,
		138, 154, 170, 186, 202, 218, 234, 250};
	static const uint8_t gray1[16] = {255, 0, 255, 255, 0, 0, 255, 0,
					  0, 255, 0, 0, 255, 255, 0, 255};
	static const uint8_t graya[4] = {200, 100, 0, 13};
	static const uint8_t pal[12] = {10, 20, 30, 0, 0, 255, 0, 255, 0,
					255, 0, 0};
	static const uint8_t pal_trns[12] = {10, 20, 30, 0, 0, 0, 0, 128, 0,
					     255, 0, 0};
	static const uint8_t rgb[12] = {10, 20, 30, 40, 50, 60, 70, 80, 90,
					100, 110, 120};
	static const uint8_t rgba[12] = {255, 128, 0, 128, 64, 0, 0, 0, 0,
					 40, 20, 10};
	static const uint8_t rgb16[12] = {255, 0, 4, 100, 125, 195, 48, 1, 1,
					  0, 156, 254};
	static const uint8_t bmp[18] = {1, 2, 3, 4, 5, 6, 7, 8, 9,
					250, 240, 230, 128, 64, 32, 0, 0, 0};
	struct qr_diag d = {0};
	struct qr_image im;
	enum qr_status st;

	check_decode("gray8.png", 4, 4, 1, gray8);
	check_decode("gray1.png", 8, 2, 1, gray1);
	check_decode("graya.png", 2, 2, 1, graya);
	check_decode("pal.png", 4, 1, 3, pal);
	check_decode("pal_trns.png", 4, 1, 3, pal_trns);
	check_decode("rgb.png", 2, 2, 3, rgb);
	check_decode("rgba.png", 2, 2, 3, rgba);
	check_decode("rgb16.png", 2, 2, 3, rgb16);
	check_decode("img.bmp", 3, 2, 3, bmp);

	/* JPEG: lossy, so near the two colours it was made of */
	st = decode_file("img.jpg", &im, &d);
	if (ok(st == QR_OK && im.w == 16 && im.h == 16 && im.channels == 3,
	       "img.jpg decodes to 16x16 RGB")) {
		const uint8_t *top = im.px + (2 * 16 + 5) * 3;
		const uint8_t *bot = im.px + (13 * 16 + 5) * 3;
		int c, near = 1;
		static const int want_top[3] = {200, 100, 50};
		static const int want_bot[3] = {30, 60, 220};

		for (c = 0; c < 3; c++) {
			near &= abs(top[c] - want_top[c]) <= 8;
			near &= abs(bot[c] - want_bot[c]) <= 8;
		}
		ok(near, "img.jpg pixels within 8 of (200,100,50) and "
		   "(30,60,220): got (%d,%d,%d) (%d,%d,%d)", top[0], top[1],
		   top[2], bot[0], bot[1], bot[2]);
	}
	qr_image_free(&im);
	qr_diag_clear(&d);

	check_refused("trunc.jpg", QR_EFORMAT);
	check_refused("corrupt.png", QR_EFORMAT);
	check_refused("zero.bmp", QR_EFORMAT);
	check_refused("huge_side.png", QR_EUNSUPPORTED);
	check_refused("huge_bytes.png", QR_EUNSUPPORTED);
	check_refused("README.txt", QR_EFORMAT);
	check_prefixes("img.jpg", 0);
	check_prefixes("img.bmp", 3); /* the last row's padding may go */
	check_prefixes("rgb.png", 12); /* IEND is not required */
	check_own_reason();
	check_bmp_palette();
}

/* ---- preprocessing ---- */

/* Open path for model m with o (path set), read one sample into *out
 * (a copy of the first input's floats, heap). */
static enum qr_status
one_sample(const struct qr_model *m, struct qr_dataset_opts *o,
	   const char *path, float **out, struct qr_tensor *shape,
	   struct qr_diag *d)
{
	struct qr_dataset *ds = NULL;
	struct qr_tensor *const *in;
	const char *name;
	size_t n;
	int label;
	enum qr_status st;

	*out = NULL;
	o->n_sources = 1;
	o->sources[0].input = NULL;
	o->sources[0].path = path;
	st = qr_dataset_open(m, o, &ds, d);
	if (st == QR_OK)
		st = qr_dataset_next(ds, &in, &n, &label, &name, d);
	if (st == QR_OK && n == 1 && in[0]->dtype == QR_DT_FLOAT) {
		*out = xmalloc(in[0]->nbytes);
		memcpy(*out, in[0]->data, in[0]->nbytes);
		if (shape != NULL)
			*shape = *in[0];
	} else if (st == QR_OK) {
		st = QR_EPARTIAL;
	}
	qr_dataset_free(ds);
	return st;
}

static int
floats_near(const float *got, const float *want, size_t n, float tol,
	    const char *what)
{
	size_t i;

	if (got == NULL)
		return 0;
	for (i = 0; i < n; i++)
		if (!(got[i] >= want[i] - tol && got[i] <= want[i] + tol)) {
			diag("%s: [%zu] got %.9g want %.9g", what, i, got[i],
			     want[i]);
			return 0;
		}
	return 1;
}

static void
test_preprocess(void)
{
	/* rgb.png (10,20,30) (40,50,60) (70,80,90) (100,110,120) with scale
	 * 1, mean 10,20,30, std 2,4,5 */
	static const float nchw[12] = {0, 15, 30, 45, 0, 7.5f, 15, 22.5f,
				       0, 6, 12, 18};
	static const float nhwc[12] = {0, 0, 0, 15, 7.5f, 6, 30, 15, 12,
				       45, 22.5f, 18};
	/* BGR: model channel 0 is B, mean/std in the model's order */
	static const float bgr[12] = {10, 25, 40, 55, 0, 7.5f, 15, 22.5f,
				      -4, 2, 8, 14};
	static const float gray2rgb[12] = {0, 100, 200, 50, 0, 100, 200, 50,
					   0, 100, 200, 50};
	static const float luma[4] = {18.15f, 48.15f, 78.15f, 108.15f};
	static const float up[16] = {0, 25, 75, 100, 50, 59.375f, 78.125f,
				     87.5f, 150, 128.125f, 84.375f, 62.5f,
				     200, 162.5f, 87.5f, 50};
	/* 4x4 -> 2x2, triangle filter of support 2: weights (3,3,1)/7 and
	 * (1,3,3)/7; v = 10 + 16x + 64y */
	static const float down[4] = {10 + 400 / 7.0f, 10 + 576 / 7.0f,
				      10 + 1104 / 7.0f, 10 + 1280 / 7.0f};
	struct qr_dataset_opts o;
	struct qr_diag d = {0};
	struct qr_tensor shape;
	struct fake f;
	char *rgb = fixture("rgb.png"), *g2 = fixture("gray2.png");
	char *g8 = fixture("gray8.png");
	float *x = NULL;
	enum qr_status st;

	opts_zero(&o);
	o.scale = 1;
	o.mean[0] = 10, o.mean[1] = 20, o.mean[2] = 30;
	o.std[0] = 2, o.std[1] = 4, o.std[2] = 5;

	fake1(&f, QR_DT_FLOAT, 1, 3, 2, 2);
	st = one_sample(&f.m, &o, rgb, &x, NULL, &d);
	ok(st == QR_OK && floats_near(x, nchw, 12, 0, "nchw"),
	   "mean/std/scale, NCHW: exact values");
	free(x);

	fake1(&f, QR_DT_FLOAT, 1, 2, 2, 3);
	st = one_sample(&f.m, &o, rgb, &x, NULL, &d);
	ok(st == QR_OK && floats_near(x, nhwc, 12, 0, "nhwc"),
	   "layout AUTO picks NHWC for [1,2,2,3]");
	free(x);

	fake1(&f, QR_DT_FLOAT, 1, 3, 2, 2);
	o.order = QR_ORDER_BGR;
	st = one_sample(&f.m, &o, rgb, &x, NULL, &d);
	ok(st == QR_OK && floats_near(x, bgr, 12, 0, "bgr"), "BGR order");
	free(x);

	opts_zero(&o);
	o.scale = 1;
	st = one_sample(&f.m, &o, g2, &x, NULL, &d);
	ok(st == QR_OK && floats_near(x, gray2rgb, 12, 0, "gray2rgb"),
	   "gray image into a 3-channel input is replicated");
	free(x);

	fake1(&f, QR_DT_FLOAT, 1, 1, 2, 2);
	st = one_sample(&f.m, &o, rgb, &x, NULL, &d);
	ok(st == QR_OK && floats_near(x, luma, 4, 1e-4f, "luma"),
	   "RGB image into a 1-channel input is luma 0.299/0.587/0.114");
	free(x);

	fake1(&f, QR_DT_FLOAT, 1, 1, 4, 4);
	st = one_sample(&f.m, &o, g2, &x, NULL, &d);
	ok(st == QR_OK && floats_near(x, up, 16, 1e-4f, "up"),
	   "resize 2x2 -> 4x4: bilinear, half-pixel centres");
	free(x);

	fake1(&f, QR_DT_FLOAT, 1, 1, 2, 2);
	st = one_sample(&f.m, &o, g8, &x, NULL, &d);
	ok(st == QR_OK && floats_near(x, down, 4, 1e-4f, "down"),
	   "resize 4x4 -> 2x2: antialiased triangle filter");
	free(x);

	/* dynamic H, W: --input-size, else the image's own size */
	fake1(&f, QR_DT_FLOAT, -1, 1, -1, -1);
	o.input_h = o.input_w = 4;
	st = one_sample(&f.m, &o, g2, &x, &shape, &d);
	ok(st == QR_OK && shape.ndim == 4 && shape.dims[0] == 1 &&
	   shape.dims[2] == 4 && shape.dims[3] == 4 &&
	   floats_near(x, up, 16, 1e-4f, "input-size"),
	   "--input-size 4x4 for a dynamic input");
	free(x);
	o.input_h = o.input_w = 0;
	st = one_sample(&f.m, &o, g8, &x, &shape, &d);
	ok(st == QR_OK && shape.dims[2] == 4 && shape.dims[3] == 4,
	   "dynamic input without --input-size keeps the image size");
	free(x);

	fake1(&f, QR_DT_FLOAT, 1, 1, 8, 8);
	o.input_h = o.input_w = 4;
	st = one_sample(&f.m, &o, g2, &x, NULL, &d);
	ok(st == QR_ESHAPE, "--input-size that disagrees with fixed dims: "
	   "QR_ESHAPE (%s)", d.msg);
	o.input_h = o.input_w = 0;

	fake1(&f, QR_DT_FLOAT, 1, 5, 2, 2);
	st = one_sample(&f.m, &o, g2, &x, NULL, &d);
	ok(st == QR_ESHAPE && strstr(d.msg, "'x'") != NULL,
	   "5-channel input refuses images naming the input (%s)", d.msg);

	qr_diag_clear(&d);
	free(rgb);
	free(g2);
	free(g8);
}

/* The sample named want in an opened dataset (copy of input 0), or NULL. */
static float *
find_sample(struct qr_dataset *ds, const char *want, int *label,
	    size_t *index)
{
	struct qr_tensor *const *in;
	struct qr_diag d = {0};
	const char *name;
	float *x = NULL;
	size_t n;

	for (*index = 0;; (*index)++) {
		if (qr_dataset_next(ds, &in, &n, label, &name, &d) != QR_OK ||
		    n == 0)
			break;
		if (strcmp(name, want) == 0) {
			x = xmalloc(in[0]->nbytes);
			memcpy(x, in[0]->data, in[0]->nbytes);
			break;
		}
	}
	qr_diag_clear(&d);
	return x;
}

static void
test_digits(void)
{
	char *model = xasprintf("%s/samples/digits_float.onnx", QR_SRCDIR);
	char *dir = xasprintf("%s/samples/digits", QR_SRCDIR);
	char *npy = xasprintf("%s/samples/digits_test.npy", QR_SRCDIR);
	struct qr_dataset_opts o;
	struct qr_dataset *ds = NULL;
	struct qr_tensor *ref = NULL;
	struct qr_model *m = NULL;
	struct qr_diag d = {0};
	const char *const *cls;
	size_t n_cls = 0, idx;
	float *x;
	int label = -1, k;

	if (qr_onnx_load(model, &m, &d) != QR_OK ||
	    qr_npy_read(npy, NULL, &ref, &d) != QR_OK) {
		ok(0, "load samples/digits_float.onnx and digits_test.npy: %s",
		   d.msg);
		goto out;
	}
	opts_zero(&o);
	o.samples = 100;
	o.scale = 0.00392156862745098f;
	for (k = 0; k < 3; k++)
		o.mean[k] = o.std[k] = 0.5f;
	o.n_sources = 1;
	o.sources[0].path = dir;
	if (!ok(qr_dataset_open(m, &o, &ds, &d) == QR_OK, "open samples/digits"
		" (%s)", d.msg))
		goto out;
	ok(strcmp(qr_dataset_source(ds), "images") == 0 &&
	   qr_dataset_count(ds) == 30, "30 images (count %zu)",
	   qr_dataset_count(ds));
	cls = qr_dataset_classes(ds, &n_cls);
	ok(n_cls == 10 && strcmp(cls[0], "0") == 0 && strcmp(cls[9], "9") == 0,
	   "class subfolders give 10 classes, sorted");
	ok(strstr(qr_dataset_describe(ds), "resize 8x8") != NULL &&
	   strstr(qr_dataset_describe(ds), "scale 1/255, mean 0.5, std 0.5, "
		  "NCHW") != NULL, "describe: %s", qr_dataset_describe(ds));
	x = find_sample(ds, "3/0.png", &label, &idx);
	ok(x != NULL && idx == 9 && label == 3,
	   "3/0.png is sample 9 (sorted) with label 3");
	ok(x != NULL && memcmp(x, (float *)ref->data + 2 * 64,
			       64 * sizeof *x) == 0,
	   "digits/3/0.png with scale 1/255, mean 0.5, std 0.5 equals "
	   "digits_test.npy sample 2 bit for bit");
	free(x);
	qr_dataset_free(ds);
	ds = NULL;

	/* the same sample from the npy batch file */
	o.sources[0].path = npy;
	if (ok(qr_dataset_open(m, &o, &ds, &d) == QR_OK &&
	       qr_dataset_count(ds) == 20 &&
	       strcmp(qr_dataset_source(ds), "npy") == 0,
	       "digits_test.npy [20,1,8,8] is 20 samples of batch 1")) {
		x = find_sample(ds, "digits_test.npy[2]", &label, &idx);
		ok(x != NULL && idx == 2 && label == -1 &&
		   memcmp(x, (float *)ref->data + 2 * 64, 256) == 0,
		   "npy sample 2 is row 2, unlabelled");
		free(x);
	}
out:
	qr_dataset_free(ds);
	qr_tensor_free(ref);
	qr_onnx_free(m);
	qr_diag_clear(&d);
	free(model);
	free(dir);
	free(npy);
}

/* ---- folders ---- */

static int
has_warning(const struct qr_diag *d, const char *a, const char *b)
{
	size_t i;

	for (i = 0; i < d->n_warnings; i++)
		if (strstr(d->warnings[i].msg, a) &&
		    (b == NULL || strstr(d->warnings[i].msg, b)))
			return 1;
	return 0;
}

static void
copy_fixture(const char *name, const char *dir)
{
	char *from = fixture(name), *to = qr_path_join(dir, name), *buf;
	size_t len;

	if (qr_read_file(from, &buf, &len, NULL) == QR_OK) {
		qr_write_file(to, buf, len, NULL);
		free(buf);
	}
	free(from);
	free(to);
}

static void
test_folders(void)
{
	char *dir = xasprintf("%s/tests/data/images", QR_SRCDIR);
	char *empty = qr_path_join(tmpdir, "empty");
	char *bad = qr_path_join(tmpdir, "bad");
	struct qr_dataset_opts o;
	struct qr_dataset *ds = NULL;
	struct qr_tensor *const *in;
	struct qr_diag d = {0};
	struct fake f;
	const char *name;
	size_t n, got = 0;
	int label, ends = 0;
	enum qr_status st;

	fake1(&f, QR_DT_FLOAT, 1, 3, 4, 4);
	opts_zero(&o);
	o.samples = 100;
	o.n_sources = 1;
	o.sources[0].path = dir;
	st = qr_dataset_open(&f.m, &o, &ds, &d);
	ok(st == QR_OK && qr_dataset_count(ds) == 11,
	   "mixed fixture folder: 11 readable images (count %zu, %s)",
	   ds ? qr_dataset_count(ds) : 0, d.msg);
	ok(has_warning(&d, "README.txt", "not an image"),
	   "README.txt skipped with a warning");
	ok(has_warning(&d, "trunc.jpg", "skipped") &&
	   has_warning(&d, "corrupt.png", "skipped") &&
	   has_warning(&d, "zero.bmp", "skipped") &&
	   has_warning(&d, "huge_side.png", "skipped") &&
	   d.n_warnings == 6, "each unreadable image is a warning naming it "
	   "(%zu warnings)", d.n_warnings);
	while (ds != NULL && qr_dataset_next(ds, &in, &n, &label, &name,
					     &d) == QR_OK && n == 1)
		got++;
	if (ds != NULL && qr_dataset_next(ds, &in, &n, &label, &name, &d) ==
	    QR_OK && n == 0)
		ends = 1;
	ok(got == 11 && ends, "next gives the 11 images, then the end");
	qr_dataset_free(ds);
	ds = NULL;
	qr_diag_clear(&d);
	memset(&d, 0, sizeof d);

	/* stop at `samples`: probing reads no more than needed */
	o.samples = 2;
	st = qr_dataset_open(&f.m, &o, &ds, &d);
	ok(st == QR_OK && qr_dataset_count(ds) == 2 && d.n_warnings == 2 &&
	   !has_warning(&d, "trunc.jpg", NULL),
	   "samples 2: probing stops after corrupt.png, gray1.png, gray2.png");
	qr_dataset_free(ds);
	ds = NULL;
	qr_diag_clear(&d);
	memset(&d, 0, sizeof d);

	mkdir(empty, 0700);
	o.sources[0].path = empty;
	st = qr_dataset_open(&f.m, &o, &ds, &d);
	ok(st == QR_EFORMAT && ds == NULL && strstr(d.msg, "holds no images"),
	   "empty folder: QR_EFORMAT (%s)", d.msg);
	qr_diag_clear(&d);
	memset(&d, 0, sizeof d);

	mkdir(bad, 0700);
	copy_fixture("corrupt.png", bad);
	copy_fixture("trunc.jpg", bad);
	o.sources[0].path = bad;
	st = qr_dataset_open(&f.m, &o, &ds, &d);
	ok(st == QR_EFORMAT && strstr(d.msg, bad) && d.n_warnings == 2,
	   "every image unreadable: QR_EFORMAT naming the folder (%s)",
	   d.msg);
	qr_diag_clear(&d);
	memset(&d, 0, sizeof d);

	o.sources[0].path = "/nonexistent/qreport-data";
	st = qr_dataset_open(&f.m, &o, &ds, &d);
	ok(st == QR_EIO && strstr(d.msg, "/nonexistent/qreport-data"),
	   "missing path: QR_EIO (%s)", d.msg);
	qr_diag_clear(&d);
	free(dir);
	free(empty);
	free(bad);
}

/* ---- npy, pb ---- */

/* Writes a tensor of dims filled from vals[0..n_vals-1], repeated as
 * often as needed: the tensor may hold more elements than vals. */
static char *
write_npy(const char *name, int dtype, int ndim, const int64_t *dims,
	  const double *vals, size_t n_vals)
{
	char *path = qr_path_join(tmpdir, name);
	struct qr_tensor *t = NULL;
	size_t i;

	qr_tensor_new(dtype, ndim, dims, &t, NULL);
	for (i = 0; i < t->n_elem; i++) {
		double x = vals[i % n_vals];

		if (dtype == QR_DT_FLOAT)
			((float *)t->data)[i] = (float)x;
		else if (dtype == QR_DT_UINT8)
			((uint8_t *)t->data)[i] = (uint8_t)x;
		else
			((int64_t *)t->data)[i] = (int64_t)x;
	}
	qr_npy_write(path, t, NULL);
	qr_tensor_free(t);
	return path;
}

static void
test_npy(void)
{
	static const double v[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255};
	int64_t one[3] = {1, 2, 3}, noba[2] = {2, 3}, four[3] = {4, 2, 3};
	struct qr_dataset_opts o;
	struct qr_dataset *ds = NULL;
	struct qr_tensor *const *in;
	struct qr_diag d = {0};
	struct fake f;
	const char *name;
	size_t n;
	int label, good;
	char *p1, *p2, *p3, *dir;
	int64_t idims[3] = {-1, 2, 3};

	memset(&f, 0, sizeof f);
	fake_input(&f, "x", QR_DT_FLOAT, 3, idims);
	dir = qr_path_join(tmpdir, "npy");
	mkdir(dir, 0700);
	p1 = write_npy("npy/one.npy", QR_DT_FLOAT, 3, one, v, 12);
	p2 = write_npy("npy/nobatch.npy", QR_DT_UINT8, 2, noba, v + 6, 6);
	p3 = write_npy("npy/four.npy", QR_DT_FLOAT, 3, four, v, 12);
	opts_zero(&o);
	o.samples = 20;
	o.n_sources = 1;
	o.sources[0].path = p2;
	good = qr_dataset_open(&f.m, &o, &ds, &d) == QR_OK &&
	       qr_dataset_count(ds) == 1 &&
	       qr_dataset_next(ds, &in, &n, &label, &name, &d) == QR_OK &&
	       n == 1 && in[0]->ndim == 3 && in[0]->dims[0] == 1 &&
	       in[0]->dtype == QR_DT_FLOAT &&
	       ((float *)in[0]->data)[0] == 6.0f &&
	       ((float *)in[0]->data)[5] == 255.0f;
	ok(good, "uint8 .npy [2,3] without batch dim: one sample [1,2,3], "
	   "cast to float as-is (%s)", d.msg);
	qr_dataset_free(ds);
	ds = NULL;

	/* a folder: one.npy (1 sample) + four.npy (4) + nobatch (1) */
	o.sources[0].path = dir;
	good = qr_dataset_open(&f.m, &o, &ds, &d) == QR_OK;
	ok(good && qr_dataset_count(ds) == 6 &&
	   strcmp(qr_dataset_source(ds), "npy") == 0,
	   "npy folder: 4 + 1 + 1 samples (count %zu, %s)",
	   ds ? qr_dataset_count(ds) : 0, d.msg);
	if (good) {
		qr_dataset_next(ds, &in, &n, &label, &name, &d);
		good = n == 1 && strcmp(name, "four.npy[0]") == 0;
		qr_dataset_next(ds, &in, &n, &label, &name, &d);
		good &= n == 1 && strcmp(name, "four.npy[1]") == 0 &&
			((float *)in[0]->data)[0] == 6.0f;
		ok(good, "batch file split into rows, in name order (%s)",
		   name);
	}
	qr_dataset_free(ds);
	ds = NULL;

	/* a fixed batch of 2: four.npy gives 2 samples */
	idims[0] = 2;
	f.dims[0][0].value = 2;
	o.sources[0].path = p3;
	good = qr_dataset_open(&f.m, &o, &ds, &d) == QR_OK &&
	       qr_dataset_count(ds) == 2 &&
	       qr_dataset_next(ds, &in, &n, &label, &name, &d) == QR_OK &&
	       in[0]->dims[0] == 2;
	ok(good, "input with fixed batch 2: [4,2,3] is 2 samples of [2,2,3]");
	qr_dataset_free(ds);
	ds = NULL;
	o.sources[0].path = p1;
	ok(qr_dataset_open(&f.m, &o, &ds, &d) == QR_ESHAPE && ds == NULL,
	   "[1,2,3] for a batch-2 input: QR_ESHAPE (%s)", d.msg);
	qr_diag_clear(&d);
	free(dir);
	free(p1);
	free(p2);
	free(p3);
}

static void
test_pb(void)
{
	struct qr_dataset_opts o;
	struct qr_dataset *ds = NULL;
	struct qr_tensor *const *in;
	struct qr_tensor *x = NULL, *w = NULL;
	struct qr_model *m = NULL;
	struct qr_diag d = {0};
	const char *name;
	size_t n;
	int label, good;

	if (access(PB_CASE "/model.onnx", R_OK) != 0) {
		ok(1, "# SKIP %s not installed (libonnx-testdata)", PB_CASE);
		return;
	}
	if (qr_onnx_load(PB_CASE "/model.onnx", &m, &d) != QR_OK ||
	    qr_pb_read(PB_CASE "/test_data_set_0/input_0.pb", NULL, &x,
		       &d) != QR_OK ||
	    qr_pb_read(PB_CASE "/test_data_set_0/input_1.pb", NULL, &w,
		       &d) != QR_OK) {
		ok(0, "load %s: %s", PB_CASE, d.msg);
		goto out;
	}
	opts_zero(&o);
	o.n_sources = 1;
	o.sources[0].path = PB_CASE "/test_data_set_0";
	good = qr_dataset_open(m, &o, &ds, &d) == QR_OK &&
	       qr_dataset_count(ds) == 1 &&
	       strcmp(qr_dataset_source(ds), "pb") == 0 &&
	       qr_dataset_next(ds, &in, &n, &label, &name, &d) == QR_OK &&
	       n == 2 && in[0]->nbytes == x->nbytes &&
	       memcmp(in[0]->data, x->data, x->nbytes) == 0 &&
	       in[1]->nbytes == w->nbytes &&
	       memcmp(in[1]->data, w->data, w->nbytes) == 0;
	ok(good, "test_data_set_0 feeds both inputs of a 2-input model (%s)",
	   d.msg);
	qr_dataset_free(ds);
	ds = NULL;

	o.sources[0].path = PB_CASE;
	good = qr_dataset_open(m, &o, &ds, &d) == QR_OK &&
	       qr_dataset_next(ds, &in, &n, &label, &name, &d) == QR_OK &&
	       n == 2 && strcmp(name, "test_data_set_0") == 0;
	ok(good, "a folder of test_data_set_* folders (%s)", d.msg);
	qr_dataset_free(ds);
	ds = NULL;

	/* named: the pb for W, random for the other */
	o.sources[0].input = "W";
	o.sources[0].path = PB_CASE "/test_data_set_0";
	good = qr_dataset_open(m, &o, &ds, &d) == QR_OK &&
	       qr_dataset_next(ds, &in, &n, &label, &name, &d) == QR_OK &&
	       n == 2 && memcmp(in[1]->data, w->data, w->nbytes) == 0 &&
	       memcmp(in[0]->data, x->data, x->nbytes) != 0 &&
	       strstr(qr_dataset_describe(ds), "x: random N(0,1)") != NULL &&
	       strstr(qr_dataset_describe(ds), "W: pb as stored") != NULL;
	ok(good, "W=test_data_set_0 feeds W, x is random: %s",
	   ds ? qr_dataset_describe(ds) : d.msg);
out:
	qr_dataset_free(ds);
	qr_tensor_free(x);
	qr_tensor_free(w);
	qr_onnx_free(m);
	qr_diag_clear(&d);
}

/* ---- random, several inputs ---- */

static void
test_random(void)
{
	struct qr_dataset_opts o;
	struct qr_dataset *a = NULL, *b = NULL, *c = NULL;
	struct qr_tensor *const *ia, *const *ib, *const *ic;
	struct qr_diag d = {0};
	struct fake f;
	const char *name;
	size_t n, i, k, same = 1, differ = 0, count = 0;
	double sum = 0, sum2 = 0;
	int label;
	int64_t dims[2] = {-1, -1}, u8dims[2] = {1, 64};

	memset(&f, 0, sizeof f);
	fake_input(&f, "x", QR_DT_FLOAT, 2, dims);
	fake_input(&f, "q", QR_DT_UINT8, 2, u8dims);
	opts_zero(&o);
	o.samples = 5;
	o.seed = 42;
	o.n_overrides = 1;
	o.overrides[0].input = "x";
	o.overrides[0].ndim = 2;
	o.overrides[0].dims[0] = 2;
	o.overrides[0].dims[1] = 500;
	qr_dataset_open(&f.m, &o, &a, &d);
	qr_dataset_open(&f.m, &o, &b, &d);
	o.seed = 43;
	qr_dataset_open(&f.m, &o, &c, &d);
	if (!ok(a && b && c && qr_dataset_count(a) == 5 &&
		strcmp(qr_dataset_source(a), "random") == 0,
		"random: exactly `samples` samples (%s)", d.msg))
		goto out;
	for (i = 0; i < 5; i++) {
		qr_dataset_next(a, &ia, &n, &label, &name, &d);
		qr_dataset_next(b, &ib, &n, &label, &name, &d);
		qr_dataset_next(c, &ic, &n, &label, &name, &d);
		if (n != 2 || ia[0]->n_elem != 1000 || ia[0]->dims[0] != 2) {
			same = 0;
			break;
		}
		same &= memcmp(ia[0]->data, ib[0]->data, 4000) == 0 &&
			memcmp(ia[1]->data, ib[1]->data, 64) == 0;
		differ += memcmp(ia[0]->data, ic[0]->data, 4000) != 0;
		for (k = 0; k < 1000; k++) {
			double v = ((float *)ia[0]->data)[k];

			sum += v;
			sum2 += v * v;
			count++;
		}
	}
	ok(same && differ == 5, "same seed, same data; another seed differs");
	ok(count == 5000 && fabs(sum / count) < 0.05 &&
	   fabs(sum2 / count - 1) < 0.06, "float data is N(0,1): mean %.3f, "
	   "var %.3f", count ? sum / count : 0, count ? sum2 / count : 0);
	ok(qr_dataset_next(a, &ia, &n, &label, &name, &d) == QR_OK && n == 0,
	   "then the end");
	ok(strstr(qr_dataset_describe(a), "q: random uniform 0..255 uint8, "
		  "seed 42") != NULL, "describe: %s", qr_dataset_describe(a));
out:
	qr_dataset_free(a);
	qr_dataset_free(b);
	qr_dataset_free(c);
	qr_diag_clear(&d);

	/* a dynamic dim other than the batch: 1, with a warning */
	memset(&d, 0, sizeof d);
	opts_zero(&o);
	a = NULL;
	ok(qr_dataset_open(&f.m, &o, &a, &d) == QR_OK &&
	   qr_dataset_next(a, &ia, &n, &label, &name, &d) == QR_OK &&
	   ia[0]->dims[0] == 1 && ia[0]->dims[1] == 1 && d.n_warnings == 1 &&
	   strcmp(name, "random #0") == 0 && qr_dataset_count(a) == 20,
	   "dynamic dims default to 1 (a warning for dim 1), 20 samples");
	qr_dataset_free(a);
	qr_diag_clear(&d);
}

/* Range of input k's int64 (or int32) values over `samples` samples. */
static void
int_range(struct qr_dataset *ds, size_t k, int64_t *lo, int64_t *hi,
	  size_t *distinct)
{
	struct qr_tensor *const *in;
	struct qr_diag d = {0};
	const char *name;
	unsigned char seen[64] = {0};
	size_t n, i;
	int label;

	*lo = INT64_MAX;
	*hi = INT64_MIN;
	*distinct = 0;
	while (qr_dataset_next(ds, &in, &n, &label, &name, &d) == QR_OK &&
	       n > k) {
		for (i = 0; i < in[k]->n_elem; i++) {
			int64_t v = in[k]->dtype == QR_DT_INT32 ?
				    ((int32_t *)in[k]->data)[i] :
				    ((int64_t *)in[k]->data)[i];

			*lo = v < *lo ? v : *lo;
			*hi = v > *hi ? v : *hi;
			if (v >= 0 && v < 64 && !seen[v]++)
				++*distinct;
		}
	}
	qr_diag_clear(&d);
}

/*
 * Random integer inputs take their values from what reads them: token
 * ids index their table's rows (through Unsqueeze/Cast, also behind a
 * DequantizeLinear, along the Gather's axis), masks are ones.
 */
static void
test_random_ints(void)
{
	static const char *n0_in[] = {"ids", "axes"}, *n0_out[] = {"ids_u"};
	static const char *n1_in[] = {"table", "ids_c"}, *n1_out[] = {"e"};
	static const char *n2_in[] = {"qtab", "qs"}, *n2_out[] = {"tab2"};
	static const char *n3_in[] = {"tab2", "seg"}, *n3_out[] = {"e2"};
	static const char *n4_in[] = {"other", "other"}, *n4_out[] = {"o2"};
	static const char *n5_in[] = {"e", "w", "b", "m2"}, *n5_out[] = {"a"};
	static const char *n6_in[] = {"ids_u"}, *n6_out[] = {"ids_c"};
	struct qr_attr ax1 = {.name = "axis", .type = QR_ATTR_INT, .i = -1};
	struct qr_node nodes[] = {
		{"unsq", "Unsqueeze", "", 2, n0_in, 1, n0_out, 0, NULL},
		{"emb", "Gather", "", 2, n1_in, 1, n1_out, 0, NULL},
		{"dq", "DequantizeLinear", "", 2, n2_in, 1, n2_out, 0, NULL},
		{"seg_emb", "Gather", "", 2, n3_in, 1, n3_out, 1, &ax1},
		{"add", "Add", "", 2, n4_in, 1, n4_out, 0, NULL},
		{"att", "Attention", "com.microsoft", 4, n5_in, 1, n5_out, 0,
		 NULL},
		{"cast", "Cast", "", 1, n6_in, 1, n6_out, 0, NULL},
	};
	struct qr_tensor_data inits[] = {
		{.name = "table", .dtype = QR_DT_FLOAT, .ndim = 2,
		 .dims = {37, 8}},
		{.name = "qtab", .dtype = QR_DT_INT8, .ndim = 2,
		 .dims = {4, 6}},
	};
	int64_t seq[2] = {1, 48}, big[2] = {2, 300};
	struct qr_dataset_opts o;
	struct qr_dataset *ds = NULL;
	struct qr_diag d = {0};
	struct fake f;
	const char *desc;
	int64_t lo, hi;
	size_t distinct;

	memset(&f, 0, sizeof f);
	fake_input(&f, "ids", QR_DT_INT64, 2, seq);
	fake_input(&f, "seg", QR_DT_INT32, 2, seq);
	fake_input(&f, "attention_mask", QR_DT_INT64, 2, seq);
	fake_input(&f, "m2", QR_DT_INT32, 2, seq);
	fake_input(&f, "other", QR_DT_INT64, 2, big);
	f.m.graph.nodes = nodes;
	f.m.graph.n_node = sizeof nodes / sizeof nodes[0];
	f.m.graph.inits = inits;
	f.m.graph.n_init = 2;
	opts_zero(&o);
	o.samples = 10;
	if (!ok(qr_dataset_open(&f.m, &o, &ds, &d) == QR_OK &&
		d.n_warnings == 1 && strstr(d.warnings[0].msg, "'other'") &&
		strstr(d.warnings[0].msg, "zeros"), "random ints: one warning, "
		"for the input that looks up nothing (%s)",
		d.n_warnings ? d.warnings[0].msg : d.msg))
		goto out;
	desc = qr_dataset_describe(ds);
	ok(strstr(desc, "ids: random uniform 0..36 int64 (rows looked up by "
		  "'emb'), seed 0") && strstr(desc, "seg: random uniform 0..5 "
		  "int32 (rows looked up by 'seg_emb')") &&
	   strstr(desc, "attention_mask: ones int64 (an attention mask: ") &&
	   strstr(desc, "m2: ones int32 (an attention mask of 'att': ") &&
	   strstr(desc, "other: random zeros int64"), "describe: %s", desc);
	int_range(ds, 0, &lo, &hi, &distinct);
	ok(lo == 0 && hi == 36 && distinct == 37, "token ids cover the "
	   "table's 37 rows, none past them: %lld..%lld, %zu distinct",
	   (long long)lo, (long long)hi, distinct);
	qr_dataset_free(ds);
	ds = NULL;
	qr_dataset_open(&f.m, &o, &ds, &d);
	int_range(ds, 1, &lo, &hi, &distinct);
	ok(lo == 0 && hi == 5 && distinct == 6, "int32 segment ids: the "
	   "rows along the Gather's axis -1 of a dequantized table: "
	   "%lld..%lld", (long long)lo, (long long)hi);
	qr_dataset_free(ds);
	ds = NULL;
	qr_dataset_open(&f.m, &o, &ds, &d);
	int_range(ds, 2, &lo, &hi, &distinct);
	ok(lo == 1 && hi == 1, "a mask by name is ones");
	qr_dataset_free(ds);
	ds = NULL;
	qr_dataset_open(&f.m, &o, &ds, &d);
	int_range(ds, 3, &lo, &hi, &distinct);
	ok(lo == 1 && hi == 1, "Attention's mask_index is ones");
	qr_dataset_free(ds);
	ds = NULL;
	qr_dataset_open(&f.m, &o, &ds, &d);
	int_range(ds, 4, &lo, &hi, &distinct);
	ok(lo == 0 && hi == 0, "other int64: zeros");
out:
	qr_dataset_free(ds);
	qr_diag_clear(&d);
}

static void
test_inputs(void)
{
	static const double fv[15] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
				      13, 14, 15};
	static const double iv[12] = {100, 101, 102, 103, 200, 201, 202, 203,
				      300, 301, 302, 303};
	int64_t ad[2] = {-1, 3}, bd[2] = {-1, 4};
	int64_t fa[2] = {5, 3}, ib[2] = {3, 4};
	char *pa = write_npy("multi_a.npy", QR_DT_FLOAT, 2, fa, fv, 15);
	char *pb = write_npy("multi_b.npy", QR_DT_INT64, 2, ib, iv, 12);
	struct qr_dataset_opts o;
	struct qr_dataset *ds = NULL;
	struct qr_tensor *const *in;
	struct qr_diag d = {0};
	struct fake f;
	const char *name;
	size_t n;
	int label, good;

	memset(&f, 0, sizeof f);
	fake_input(&f, "a", QR_DT_FLOAT, 2, ad);
	fake_input(&f, "b", QR_DT_INT64, 2, bd);
	opts_zero(&o);
	o.n_sources = 2;
	o.sources[0].input = "b";
	o.sources[0].path = pb;
	o.sources[1].input = "a";
	o.sources[1].path = pa;
	good = qr_dataset_open(&f.m, &o, &ds, &d) == QR_OK &&
	       qr_dataset_count(ds) == 3;
	ok(good, "a=a.npy (5 samples), b=b.npy (3): 3 samples (%s)", d.msg);
	if (good) {
		qr_dataset_next(ds, &in, &n, &label, &name, &d);
		qr_dataset_next(ds, &in, &n, &label, &name, &d);
		ok(n == 2 && strcmp(in[0]->name, "a") == 0 &&
		   in[1]->dtype == QR_DT_INT64 &&
		   ((float *)in[0]->data)[0] == 4.0f &&
		   ((int64_t *)in[1]->data)[3] == 203,
		   "sample 1: a row 1, b row 1 (int64 kept), in graph order "
		   "(%s)", name);
	}
	qr_dataset_free(ds);
	ds = NULL;

	o.n_sources = 1;
	o.sources[0].input = NULL;
	ok(qr_dataset_open(&f.m, &o, &ds, &d) == QR_EUSAGE &&
	   strstr(d.msg, "'a', 'b'"), "unnamed npy for a 2-input model: "
	   "QR_EUSAGE listing the inputs (%s)", d.msg);
	o.sources[0].input = "nope";
	ok(qr_dataset_open(&f.m, &o, &ds, &d) == QR_EUSAGE &&
	   strstr(d.msg, "nope"), "unknown input name: QR_EUSAGE (%s)", d.msg);
	o.sources[0].input = "b";
	o.sources[0].path = pa;
	ok(qr_dataset_open(&f.m, &o, &ds, &d) == QR_EUNSUPPORTED &&
	   ds == NULL, "float npy for an int64 input: refused (%s)", d.msg);
	qr_diag_clear(&d);
	free(pa);
	free(pb);
}

int
main(void)
{
	plan_no_plan();
	if (mkdtemp(tmpdir) == NULL)
		skip_all("cannot create a temporary folder");
	RUN(test_decode);
	RUN(test_preprocess);
	RUN(test_digits);
	RUN(test_folders);
	RUN(test_npy);
	RUN(test_pb);
	RUN(test_random);
	RUN(test_random_ints);
	RUN(test_inputs);
	if (getenv("QR_TEST_KEEP") == NULL)
		qr_remove_tree(tmpdir);
	return done();
}
