/*
 * image: decode PNG (libpng), JPEG and BMP (stb_image) from memory into
 * 8-bit gray or RGB, and resize with channel conversion. See dataset.h.
 *
 * Colour handling, the same for every format:
 *   - palette and 1/2/4-bit gray are expanded to 8 bits, 16-bit channels
 *     are scaled to 8 with rounding (png_set_scale_16: round(v / 257));
 *   - a tRNS chunk becomes an alpha channel, and alpha is composited on
 *     black: c' = round(c * a / 255), so a fully transparent pixel is 0;
 *   - the result is gray (1 channel) for gray sources, RGB otherwise.
 * Memory bound: an image over QR_IMAGE_MAX_SIDE on a side, or whose decoded
 * pixels (alpha included) exceed QR_IMAGE_MAX_BYTES, is refused from its
 * header, before any pixel buffer is allocated.
 * Hostile files: a JPEG Huffman table listing over 256 codes (which
 * overflows stb 2.27), a BMP claiming more pixel rows than the file holds
 * (which stb would decode as zeros, slowly) and a BMP whose pixels name
 * colours its palette lacks (which stb would take from uninitialized
 * stack memory) are refused up front.
 * Every block stb allocates starts zeroed, so that a decode never depends
 * on what earlier work left in the heap (see STBI_MALLOC below).
 */
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "run/dataset.h"

/* Static, so no other copy of stb (libstb, another module) can clash. JPEG
 * and BMP only: PNG goes through libpng. Decoding is from memory. */
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_MAX_DIMENSIONS QR_IMAGE_MAX_SIDE
/* Zeroed allocations. stb 2.27 mallocs its JPEG decoder state
 * (stbi__jpeg, 18.5 KiB) without clearing it, and a scan may name a
 * Huffman or quantization table the file never defined: stb then decodes
 * with whatever the heap held there, which for some contents indexes far
 * outside the table (stbi__jpeg_huff_decode: h->size[c], h->values[c],
 * stbi__bmask[h->size[c]]) and for others gives different pixels or
 * errors. An undefined table is all zeros with calloc: every code decodes
 * to symbol 0 (DC difference 0, end of block) with quantizer 0, the same
 * flat result every time, as later stb releases give (stbi__jpeg_load
 * clears the state since nothings/stb#1297). Files that define their
 * tables decode as before. Only JPEG and BMP are compiled in, and neither
 * reallocs. */
#define STBI_MALLOC(sz) calloc(1, (sz))
#define STBI_REALLOC(p, sz) realloc((p), (sz))
#define STBI_FREE(p) free(p)
/* File-wide: GCC reports the prototypes STBI_ONLY_* leaves undefined at
 * the end of the file, outside any push/pop. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

/*
 * Refuse sizes outside the memory bound: QR_EFORMAT for an empty image,
 * QR_EUNSUPPORTED for one too large. ch counts the channels as decoded.
 */
static enum qr_status
check_size(long w, long h, int ch, const char *what, struct qr_diag *d)
{
	if (w <= 0 || h <= 0)
		return qr_errorf(d, QR_EFORMAT, "image '%s': empty image "
				 "(%ldx%ld)", what, w, h);
	if (w > QR_IMAGE_MAX_SIDE || h > QR_IMAGE_MAX_SIDE)
		return qr_errorf(d, QR_EUNSUPPORTED, "image '%s': %ldx%ld is "
				 "over the %dx%d limit", what, w, h,
				 QR_IMAGE_MAX_SIDE, QR_IMAGE_MAX_SIDE);
	if ((size_t)w * (size_t)h * (size_t)ch > QR_IMAGE_MAX_BYTES)
		return qr_errorf(d, QR_EUNSUPPORTED, "image '%s': %ldx%ld with "
				 "%d channels is over the %d MiB decoding "
				 "limit",
				 what, w, h, ch, QR_IMAGE_MAX_BYTES >> 20);
	return QR_OK;
}

/*
 * Turn w*h pixels of ch_in 8-bit channels (1 gray, 2 gray+alpha, 3 RGB,
 * 4 RGBA) into out: gray or RGB, alpha composited on black. Takes px
 * (malloc'd): it becomes out->px or is freed.
 */
static void
finish(uint8_t *px, int w, int h, int ch_in, struct qr_image *out)
{
	size_t i, n = (size_t)w * (size_t)h;
	int c, ch = ch_in >= 3 ? 3 : 1;

	out->w = w;
	out->h = h;
	out->channels = ch;
	if (ch_in == ch) {
		out->px = px;
		return;
	}
	out->px = xmalloc(n * (size_t)ch);
	for (i = 0; i < n; i++) {
		unsigned a = px[i * ch_in + ch];

		for (c = 0; c < ch; c++)
			out->px[i * ch + c] = (uint8_t)(
				(px[i * ch_in + c] * a + 127) / 255);
	}
	free(px);
}

/* ---- PNG (libpng) ---- */

/* libpng's view of the buffer; lives in memory so setjmp cannot clobber
 * what it holds. */
struct png_src {
	const uint8_t *buf;  /* PNG bytes */
	size_t len;          /* bytes in buf */
	size_t pos;          /* bytes consumed */
	char err[160];       /* libpng's error message */
	uint8_t *px;         /* decoded pixels (malloc) */
	png_bytep *rows;     /* row pointers into px */
};

static void
png_read_mem(png_structp png, png_bytep dst, size_t n)
{
	struct png_src *s = png_get_io_ptr(png);

	if (n > s->len - s->pos)
		png_error(png, "file is truncated");
	memcpy(dst, s->buf + s->pos, n);
	s->pos += n;
}

static void
png_on_error(png_structp png, png_const_charp msg)
{
	struct png_src *s = png_get_error_ptr(png);

	snprintf(s->err, sizeof s->err, "%s", msg);
	png_longjmp(png, 1);
}

static void
png_on_warning(png_structp png, png_const_charp msg)
{
	/* only cli/ prints; libpng's warnings are about ancillary chunks */
}

static enum qr_status
decode_png(const uint8_t *buf, size_t len, const char *what,
	   struct qr_image *out, struct qr_diag *d)
{
	struct png_src s = {.buf = buf, .len = len};
	png_structp png;
	png_infop info;
	png_uint_32 w, h, y;
	int depth, ctype, ch;
	size_t rowbytes;
	enum qr_status st = QR_OK;

	png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, png_on_error,
				     png_on_warning);
	if (png == NULL)
		qr_fatal("out of memory creating a PNG reader");
	info = png_create_info_struct(png);
	if (info == NULL)
		qr_fatal("out of memory creating a PNG reader");
	if (setjmp(png_jmpbuf(png))) {
		st = qr_errorf(d, QR_EFORMAT, "image '%s': bad PNG: %s", what,
			       s.err);
		goto out;
	}
	png_set_read_fn(png, &s, png_read_mem);
	png_set_benign_errors(png, 1);
	png_read_info(png, info);
	png_get_IHDR(png, info, &w, &h, &depth, &ctype, NULL, NULL, NULL);
	if (ctype == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(png);
	if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8)
		png_set_expand_gray_1_2_4_to_8(png);
	if (png_get_valid(png, info, PNG_INFO_tRNS))
		png_set_tRNS_to_alpha(png);
	if (depth == 16)
		png_set_scale_16(png);
	png_set_interlace_handling(png);
	png_read_update_info(png, info);
	ch = png_get_channels(png, info);
	if ((st = check_size((long)w, (long)h, ch, what, d)) != QR_OK)
		goto out;
	rowbytes = png_get_rowbytes(png, info);
	QR_ASSERT(rowbytes == (size_t)w * (size_t)ch);
	s.px = xmalloc(rowbytes * h);
	s.rows = xmalloc(h * sizeof *s.rows);
	for (y = 0; y < h; y++)
		s.rows[y] = s.px + y * rowbytes;
	png_read_image(png, s.rows);
	finish(s.px, (int)w, (int)h, ch, out);
	s.px = NULL;
out:
	png_destroy_read_struct(&png, &info, NULL);
	free(s.rows);
	free(s.px);
	return st;
}

/* ---- JPEG, BMP (stb_image) ---- */

/* stb reads through callbacks so that a decoder asking for bytes past the
 * end, which stb would silently answer with zeros, marks the file as
 * truncated. */
struct stb_src {
	const uint8_t *buf;  /* image bytes */
	size_t len;          /* bytes in buf */
	size_t pos;          /* bytes handed to stb */
	int past_end;        /* 1 once stb asked for more than there is */
};

static int
stb_read(void *user, char *dst, int size)
{
	struct stb_src *s = user;
	size_t n = s->len - s->pos;

	if (size <= 0)
		return 0;
	if (n == 0) {
		s->past_end = 1;
		return 0;
	}
	if (n > (size_t)size)
		n = (size_t)size;
	memcpy(dst, s->buf + s->pos, n);
	s->pos += n;
	return (int)n;
}

/* Skipping past the end is not an error: BMP writers may drop the last
 * row's padding. */
static void
stb_skip(void *user, int n)
{
	struct stb_src *s = user;

	if (n < 0)
		s->pos = (size_t)-n > s->pos ? 0 : s->pos - (size_t)-n;
	else
		s->pos = (size_t)n > s->len - s->pos ? s->len : s->pos + n;
}

static int
stb_eof(void *user)
{
	struct stb_src *s = user;

	return s->pos >= s->len;
}

/*
 * Refuse a JPEG with a DHT table whose 16 code counts sum over 256:
 * Debian's stb 2.27 builds such a table past its 257-entry array
 * (stbi__build_huffman). stb reaches markers in ways that are hard to
 * mirror (after a scan it takes whatever follows the next 0xff as a
 * marker), so every 0xff 0xc4 in the file is treated as a possible DHT
 * segment and its tables are walked as stb walks them (bytes past the end
 * read as 0, as stb's reader gives). A valid file can only be refused when
 * an APPn payload happens to hold such bytes, which then costs one skipped
 * image, not memory safety.
 */
static enum qr_status
jpeg_check_dht(const uint8_t *b, size_t len, const char *what,
	       struct qr_diag *d)
{
	size_t pos, k;
	long L;
	int n, i;

	for (pos = 0; pos + 1 < len; pos++) {
		if (b[pos] != 0xff || b[pos + 1] != 0xc4)
			continue;
		k = pos + 2;
		L = (long)((k < len ? b[k] : 0) << 8 |
			   (k + 1 < len ? b[k + 1] : 0)) - 2;
		k += 2;
		/* as stb: tables while the declared length lasts */
		while (L > 0 && k < len) {
			for (n = 0, i = 1; i <= 16; i++)
				n += k + i < len ? b[k + i] : 0;
			if (n > 256)
				return qr_errorf(d, QR_EFORMAT, "image '%s': bad "
						 "JPEG: a Huffman table (DHT) "
						 "lists %d codes, over 256",
						 what, n);
			L -= 17 + n;
			k += 17 + (size_t)n;
		}
	}
	return QR_OK;
}

/*
 * Refuse an uncompressed BMP (the only kind stb 2.27 decodes: it refuses
 * RLE) whose header claims more rows than the file holds. stb would
 * otherwise decode the missing rows as zeros, so a few hundred bytes can
 * claim the full QR_IMAGE_MAX_BYTES and take seconds (minutes under
 * sanitizers) to decode and resize. The last row's padding may be missing.
 */
static enum qr_status
bmp_check_size(const uint8_t *b, size_t len, int w, int h, const char *what,
	       struct qr_diag *d)
{
	size_t bpp, stride, need;
	uint32_t hdr;

	if (len < 30 || w <= 0 || h <= 0)
		return QR_OK;	/* stb has refused it already */
	hdr = (uint32_t)b[14] | (uint32_t)b[15] << 8 |
	      (uint32_t)b[16] << 16 | (uint32_t)b[17] << 24;
	bpp = hdr == 12 ? (size_t)(b[24] | b[25] << 8) :
			  (size_t)(b[28] | b[29] << 8);
	if (bpp == 0 || bpp > 32)
		return QR_OK;	/* stb decides */
	stride = ((size_t)w * bpp + 31) / 32 * 4;
	need = stride * ((size_t)h - 1) + ((size_t)w * bpp + 7) / 8;
	if (need > len)
		return qr_errorf(d, QR_EFORMAT, "image '%s': bad BMP: %dx%d at "
				 "%zu bits per pixel needs %zu bytes of pixels, "
				 "the file has %zu", what, w, h, bpp, need, len);
	return QR_OK;
}

/*
 * stb's reason for the failure just seen, after stb_reason_clear. stb
 * 2.27 keeps the reason in a static (stbi__g_failure_reason, visible here
 * because the implementation is compiled into this file) that only
 * failures set, and some of its failures set none (a scan naming a
 * component the frame lacks): the message would be the previous image's,
 * or NULL.
 */
static void
stb_reason_clear(void)
{
	stbi__g_failure_reason = NULL;
}

static const char *
stb_reason(void)
{
	const char *r = stbi_failure_reason();

	return r != NULL ? r : "corrupt file";
}

/*
 * Refuse a paletted BMP (1, 4 or 8 bits per pixel) whose pixels name a
 * colour its palette lacks. stb 2.27 keeps the palette in an uninitialized
 * 256-entry stack array and sizes it from the gap between the header and
 * the pixels (psize below, as stb computes it), not from the header's
 * colour count; a gap too small for even one entry gives a negative size,
 * which stb does not refuse. A missing entry would be decoded as whatever
 * the stack held, different from one image to the next. Called once the
 * file is known to hold w x h pixels (bmp_check_size); they start at the
 * header's offset whenever psize >= 1.
 */
static enum qr_status
bmp_check_palette(const uint8_t *b, size_t len, int w, int h,
		  const char *what, struct qr_diag *d)
{
	long offset, hsz, psize;
	size_t bpp, stride, x, y, at;
	unsigned v;

	if (len < 30)
		return QR_OK;	/* stb has refused it already */
	offset = (long)(int32_t)((uint32_t)b[10] | (uint32_t)b[11] << 8 |
				 (uint32_t)b[12] << 16 | (uint32_t)b[13] << 24);
	hsz = (long)((uint32_t)b[14] | (uint32_t)b[15] << 8 |
		     (uint32_t)b[16] << 16 | (uint32_t)b[17] << 24);
	bpp = hsz == 12 ? (size_t)(b[24] | b[25] << 8) :
			  (size_t)(b[28] | b[29] << 8);
	if ((bpp != 1 && bpp != 4 && bpp != 8) || offset < 0)
		return QR_OK;	/* no palette, or stb refuses */
	/* stb: (offset - 14 - 24) / 3 for OS/2 headers, else
	 * (offset - 14 - hsz) >> 2 (rounding down) */
	if (hsz == 12)
		psize = (offset - 38) / 3;
	else
		psize = offset - 14 - hsz < 0 ? -1 : (offset - 14 - hsz) >> 2;
	if (psize < 1)
		return qr_errorf(d, QR_EFORMAT, "image '%s': bad BMP: no room "
				 "for a palette between the header and the "
				 "pixels (at byte %ld)", what, offset);
	if (psize >= 1L << bpp || psize > 256)
		return QR_OK;	/* every index is covered, or stb refuses */
	stride = ((size_t)w * bpp + 31) / 32 * 4;
	for (y = 0; y < (size_t)h; y++) {
		for (x = 0; x < (size_t)w; x++) {
			at = (size_t)offset + y * stride + x * bpp / 8;
			/* bytes past the end read as 0, as stb's reader
			 * gives (the file is then refused as truncated) */
			v = at < len ? (unsigned)(b[at] >> (8 - bpp -
							    x * bpp % 8)) &
					       ((1u << bpp) - 1) :
				       0;
			if (v >= (unsigned)psize)
				return qr_errorf(d, QR_EFORMAT, "image '%s': "
						 "bad BMP: pixel (%zu, %zu) is "
						 "colour %u of a %ld-colour "
						 "palette", what, x, y, v,
						 psize);
		}
	}
	return QR_OK;
}

static enum qr_status
decode_stb(const uint8_t *buf, size_t len, const char *kind,
	   const char *what, struct qr_image *out, struct qr_diag *d)
{
	static const stbi_io_callbacks io = {stb_read, stb_skip, stb_eof};
	struct stb_src s = {.buf = buf, .len = len};
	int w = 0, h = 0, ch = 0, comp;
	uint8_t *px;
	enum qr_status st;

	if (len > INT32_MAX)
		return qr_errorf(d, QR_EUNSUPPORTED, "image '%s': %s file over "
				 "2 GiB", what, kind);
	if (kind[0] == 'J' && (st = jpeg_check_dht(buf, len, what, d)) !=
	    QR_OK)
		return st;
	stb_reason_clear();
	if (!stbi_info_from_memory(buf, (int)len, &w, &h, &ch))
		return qr_errorf(d, QR_EFORMAT, "image '%s': bad %s: %s", what,
				 kind, stb_reason());
	/* a top-down BMP stores a negative height; stb's info passes it on
	 * (its loader flips by the sign itself) */
	if (kind[0] == 'B' && h < 0 && h > INT32_MIN)
		h = -h;
	if ((st = check_size(w, h, ch, what, d)) != QR_OK)
		return st;
	if (kind[0] == 'B' &&
	    ((st = bmp_check_size(buf, len, w, h, what, d)) != QR_OK ||
	     (st = bmp_check_palette(buf, len, w, h, what, d)) != QR_OK))
		return st;
	stb_reason_clear();
	px = stbi_load_from_callbacks(&io, &s, &w, &h, &comp, ch);
	if (px == NULL)
		return qr_errorf(d, QR_EFORMAT, "image '%s': bad %s: %s", what,
				 kind, stb_reason());
	if (s.past_end) {
		stbi_image_free(px);
		return qr_errorf(d, QR_EFORMAT, "image '%s': bad %s: file is "
				 "truncated", what, kind);
	}
	finish(px, w, h, ch, out);
	return QR_OK;
}

/*
 * Decode buf (PNG, JPEG or BMP, told by its signature) into out (8-bit
 * gray or RGB, owned; free with qr_image_free). Errors name `what`:
 * QR_EFORMAT for an unknown signature, a corrupt or truncated file or an
 * empty image; QR_EUNSUPPORTED for an image over the memory bound.
 */
enum qr_status
qr_image_decode(const void *buf, size_t len, const char *what,
		struct qr_image *out, struct qr_diag *d)
{
	static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n',
					   0x1a, '\n'};
	const uint8_t *b = buf;

	memset(out, 0, sizeof *out);
	if (len >= 8 && memcmp(b, png_sig, 8) == 0)
		return decode_png(b, len, what, out, d);
	if (len >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
		return decode_stb(b, len, "JPEG", what, out, d);
	if (len >= 2 && b[0] == 'B' && b[1] == 'M')
		return decode_stb(b, len, "BMP", what, out, d);
	return qr_errorf(d, QR_EFORMAT, "image '%s': not a PNG, JPEG or BMP "
			 "file", what);
}

/* Free im's pixels and zero it (im itself is caller storage). */
void
qr_image_free(struct qr_image *im)
{
	if (im == NULL)
		return;
	free(im->px);
	im->px = NULL;
	im->w = im->h = im->channels = 0;
}

/* ---- resize ---- */

/* Filter taps of one output coordinate per output pixel. */
struct taps {
	int *lo;        /* first input pixel of each output pixel */
	int *n;         /* input pixels it reads */
	float *w;       /* weights, n_max per output pixel, summing to 1 */
	int n_max;      /* stride of w */
};

static double
triangle(double x)
{
	x = fabs(x);
	return x < 1.0 ? 1.0 - x : 0.0;
}

/*
 * Taps from n_in to n_out pixels, PIL's BILINEAR (ImagingResample): output
 * pixel i is centred at (i + 0.5) * n_in / n_out in input coordinates; the
 * triangle's support is 1 input pixel when upscaling (plain bilinear with
 * half-pixel centres, edges clamped) and n_in / n_out pixels when
 * downscaling (antialiased: every input pixel contributes).
 */
static void
taps_make(int n_in, int n_out, struct taps *t)
{
	double scale = (double)n_in / n_out;
	double fs = scale > 1.0 ? scale : 1.0;
	int i, k;

	t->n_max = (int)ceil(fs) * 2 + 1;
	t->lo = xreallocarray(NULL, (size_t)n_out, sizeof *t->lo);
	t->n = xreallocarray(NULL, (size_t)n_out, sizeof *t->n);
	t->w = xcalloc((size_t)n_out * (size_t)t->n_max, sizeof *t->w);
	for (i = 0; i < n_out; i++) {
		double centre = (i + 0.5) * scale, total = 0.0;
		int lo = (int)(centre - fs + 0.5);
		int hi = (int)(centre + fs + 0.5);
		float *w = t->w + (size_t)i * t->n_max;

		if (lo < 0)
			lo = 0;
		if (hi > n_in)
			hi = n_in;
		QR_ASSERT(hi - lo <= t->n_max && hi > lo);
		for (k = 0; k < hi - lo; k++)
			total += triangle((lo + k - centre + 0.5) / fs);
		for (k = 0; k < hi - lo; k++)
			w[k] = (float)(triangle((lo + k - centre + 0.5) / fs) /
				       total);
		while (hi - lo > 1 && w[hi - lo - 1] == 0.0f)
			hi--;
		t->lo[i] = lo;
		t->n[i] = hi - lo;
	}
}

static void
taps_free(struct taps *t)
{
	free(t->lo);
	free(t->n);
	free(t->w);
}

/* Row y of im as floats with `ch` channels (luma or replication). */
static void
convert_row(const struct qr_image *im, int y, int ch, float *dst)
{
	const uint8_t *p = im->px + (size_t)y * im->w * im->channels;
	int x, c;

	for (x = 0; x < im->w; x++, p += im->channels) {
		if (im->channels == ch)
			for (c = 0; c < ch; c++)
				dst[x * ch + c] = p[c];
		else if (ch == 1)
			dst[x] = 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2];
		else
			for (c = 0; c < ch; c++)
				dst[x * ch + c] = p[0];
	}
}

/*
 * Resize im to w x h with ch channels (see dataset.h): horizontal pass
 * into an im->h x w buffer, then the vertical pass into dst.
 */
void
qr_image_resize(const struct qr_image *im, int w, int h, int ch, float *dst)
{
	struct taps tx, ty;
	float *row, *tmp;
	int x, y, c, k;

	QR_ASSERT(w > 0 && h > 0 && (ch == 1 || ch == 3));
	QR_ASSERT(im->channels == 1 || im->channels == 3);
	taps_make(im->w, w, &tx);
	taps_make(im->h, h, &ty);
	row = xreallocarray(NULL, (size_t)im->w * ch, sizeof *row);
	tmp = xreallocarray(NULL, (size_t)im->h * w * ch, sizeof *tmp);
	for (y = 0; y < im->h; y++) {
		float *t = tmp + (size_t)y * w * ch;

		convert_row(im, y, ch, row);
		for (x = 0; x < w; x++) {
			const float *wt = tx.w + (size_t)x * tx.n_max;
			const float *r0 = row + (size_t)tx.lo[x] * ch;

			for (c = 0; c < ch; c++) {
				float acc = 0.0f;

				for (k = 0; k < tx.n[x]; k++)
					acc += wt[k] * r0[k * ch + c];
				t[x * ch + c] = acc;
			}
		}
	}
	for (y = 0; y < h; y++) {
		const float *wt = ty.w + (size_t)y * ty.n_max;
		float *o = dst + (size_t)y * w * ch;

		for (x = 0; x < w * ch; x++) {
			float acc = 0.0f;

			const float *col = tmp + (size_t)ty.lo[y] * w * ch + x;

			for (k = 0; k < ty.n[y]; k++)
				acc += wt[k] * col[(size_t)k * w * ch];
			o[x] = acc;
		}
	}
	free(row);
	free(tmp);
	taps_free(&tx);
	taps_free(&ty);
}
