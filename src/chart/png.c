/* chart: PNG output with libpng. See chart.h. */
#include "chart/chart.h"

#include <errno.h>
#include <png.h>
#include <zlib.h>
#include <stdio.h>
#include <string.h>

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

/* The libpng part of qr_png_write_rgba, kept apart so setjmp clobbers
 * nothing of the caller's; 0 on success, why[] says what went wrong. */
static int
encode(FILE *f, const uint8_t *rgba, int width, int height, int stride,
       int opaque, char why[128])
{
	png_structp png;
	png_infop info;
	volatile int rc = -1;
	int y;

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
	png_set_compression_level(png, 2);
	png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
	png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8,
		     opaque ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGB_ALPHA,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	if (opaque)
		png_set_filler(png, 0, PNG_FILLER_AFTER);
	for (y = 0; y < height; y++)
		png_write_row(png, rgba + (size_t)y * (size_t)stride);
	png_write_end(png, info);
	rc = 0;
out:
	png_destroy_write_struct(&png, &info);
	return rc;
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
	enum qr_status st = QR_OK;
	char why[128] = "out of memory";
	FILE *f;

	if (rgba == NULL || width <= 0 || height <= 0 || stride < 4 * width)
		return qr_errorf(d, QR_EUSAGE, "png '%s': bad image %dx%d "
				 "(stride %d)", path, width, height, stride);
	f = fopen(path, "wb");
	if (f == NULL)
		return qr_errorf(d, QR_EIO, "cannot write '%s': %s", path,
				 strerror(errno));
	if (encode(f, rgba, width, height, stride,
		   is_opaque(rgba, width, height, stride), why) != 0)
		st = qr_errorf(d, QR_EIO, "cannot write '%s': %s", path, why);
	if (fclose(f) != 0 && st == QR_OK)
		st = qr_errorf(d, QR_EIO, "cannot write '%s': %s", path,
			       strerror(errno));
	if (st != QR_OK)
		remove(path);
	return st;
}
