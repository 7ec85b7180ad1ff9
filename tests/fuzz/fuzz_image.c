/*
 * fuzz_image: the image decoder behind --data folders (qr_image_decode:
 * PNG via libpng, JPEG and BMP via stb_image). A decoded image is read
 * through and resized to a small size chosen from the input's last bytes,
 * converting to the other channel count half of the time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "run/dataset.h"
#include "util/util.h"

#define FUZZ_CHECK(cond)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "fuzz_image: %s broken at %s:%d\n", \
				#cond, __FILE__, __LINE__);                 \
			abort();                                            \
		}                                                           \
	} while (0)

static volatile unsigned fuzz_sink;

int
qr_fuzz_image(const uint8_t *data, size_t size)
{
	struct qr_diag d = {0};
	struct qr_image im;
	enum qr_status st;
	size_t i, n;
	float *dst;
	int w = 1, h = 1, ch;

	st = qr_image_decode(data, size, "fuzz.img", &im, &d);
	qr_fuzz_check_diag(st, &d);
	if (st != QR_OK) {
		FUZZ_CHECK(im.px == NULL);
		goto out;
	}
	FUZZ_CHECK(im.w > 0 && im.h > 0 && im.px != NULL);
	FUZZ_CHECK(im.channels == 1 || im.channels == 3);
	n = (size_t)im.w * (size_t)im.h * (size_t)im.channels;
	for (i = 0; i < n; i++)
		fuzz_sink += im.px[i];
	if (size >= 2) {
		w = 1 + data[size - 1] % 40;
		h = 1 + data[size - 2] % 40;
	}
	ch = size > 0 && (data[0] & 1) ? 4 - im.channels : im.channels;
	dst = xmalloc((size_t)w * (size_t)h * (size_t)ch * sizeof *dst);
	qr_image_resize(&im, w, h, ch, dst);
	for (i = 0; i < (size_t)w * (size_t)h * (size_t)ch; i++)
		FUZZ_CHECK(dst[i] >= -0.5f && dst[i] <= 255.5f);
	free(dst);
	qr_image_free(&im);
out:
	qr_diag_clear(&d);
	return (int)st;
}

#ifndef QR_FUZZ_NO_MAIN
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	qr_fuzz_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	qr_fuzz_image(data, size);
	return 0;
}
#endif
