/*
 * fuzz_npy: the .npy reader (qr_npy_parse). A tensor it accepts is read
 * through, written back with qr_npy_write and read again, and must come
 * back with the same dtype, shape and bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "graph/tensor.h"
#include "run/run.h"
#include "util/util.h"

#define FUZZ_CHECK(cond)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "fuzz_npy: %s broken at %s:%d\n",   \
				#cond, __FILE__, __LINE__);                 \
			abort();                                            \
		}                                                           \
	} while (0)

int
qr_fuzz_npy(const uint8_t *data, size_t size)
{
	struct qr_diag d = {0};
	struct qr_tensor *t = (struct qr_tensor *)1, *back = NULL;
	enum qr_status st;
	const char *path;
	int i;

	st = qr_npy_parse(data, size, "fuzz.npy", "x", &t, &d);
	qr_fuzz_check_diag(st, &d);
	FUZZ_CHECK((st == QR_OK) == (t != NULL));
	if (st != QR_OK)
		goto out;
	FUZZ_CHECK(t->ndim >= 0 && t->ndim <= QR_TENSOR_MAX_DIMS);
	FUZZ_CHECK(t->nbytes == 0 || t->data != NULL);
	FUZZ_CHECK(t->nbytes <= size);
	FUZZ_CHECK(strcmp(t->name, "x") == 0);
	path = qr_fuzz_scratch("scratch.npy");
	if (qr_npy_write(path, t, &d) != QR_OK) {
		/* Only dtypes numpy lacks may be refused. */
		qr_fuzz_check_diag(d.status, &d);
		FUZZ_CHECK(d.status == QR_EUNSUPPORTED);
		goto out;
	}
	st = qr_npy_read(path, "y", &back, &d);
	if (st != QR_OK)
		fprintf(stderr, "fuzz_npy: cannot read back: %s\n", d.msg);
	FUZZ_CHECK(st == QR_OK);
	FUZZ_CHECK(back->dtype == t->dtype && back->ndim == t->ndim &&
		   back->nbytes == t->nbytes);
	for (i = 0; i < t->ndim; i++)
		FUZZ_CHECK(back->dims[i] == t->dims[i]);
	FUZZ_CHECK(t->nbytes == 0 ||
		   memcmp(back->data, t->data, t->nbytes) == 0);
out:
	qr_tensor_free(back);
	qr_tensor_free(t);
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
	qr_fuzz_npy(data, size);
	return 0;
}
#endif
