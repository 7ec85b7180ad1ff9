/*
 * fuzz_pb: ONNX TensorProto files (.pb test data, `qreport run --input
 * NAME=FILE.pb`): qr_onnx_load_tensor_pb from memory, then qr_pb_read on
 * the same bytes as a file, which also makes the owned tensor. What is
 * accepted is read through and converted to float.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/run.h"
#include "util/util.h"

#define FUZZ_CHECK(cond)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "fuzz_pb: %s broken at %s:%d\n",    \
				#cond, __FILE__, __LINE__);                 \
			abort();                                            \
		}                                                           \
	} while (0)

static volatile unsigned fuzz_sink;

int
qr_fuzz_pb(const uint8_t *data, size_t size)
{
	struct qr_diag d = {0};
	struct qr_arena a = {0};
	struct qr_tensor_data td;
	struct qr_tensor *t = (struct qr_tensor *)1;
	enum qr_status st, st2;
	const char *path;
	float *f;
	size_t i;

	st = qr_onnx_load_tensor_pb(data, size, "fuzz.pb", &a, &td, &d);
	qr_fuzz_check_diag(st, &d);
	if (st == QR_OK) {
		FUZZ_CHECK(td.name != NULL);
		FUZZ_CHECK(td.ndim >= 0 && td.ndim <= QR_MAX_DIMS);
		FUZZ_CHECK(td.data == NULL ||
			   td.nbytes == td.n_elem * qr_dtype_size(td.dtype));
		if (td.data != NULL && td.n_elem <= QR_FUZZ_MAX_ELEM) {
			f = xcalloc(td.n_elem ? td.n_elem : 1, sizeof *f);
			qr_fuzz_check_diag(qr_tensor_to_f32(&td, f, &d), &d);
			for (i = 0; i < td.n_elem; i++)
				fuzz_sink += f[i] != 0.0f;
			free(f);
		}
	}
	qr_arena_free(&a);

	path = qr_fuzz_scratch("scratch.pb");
	d.status = QR_OK;
	if (qr_write_file(path, data, size, &d) != QR_OK)
		abort();
	st2 = qr_pb_read(path, "x", &t, &d);
	qr_fuzz_check_diag(st2, &d);
	FUZZ_CHECK((st2 == QR_OK) == (t != NULL));
	/* The file reader refuses what the buffer reader does (it may
	 * refuse more: tensors without dense data). */
	FUZZ_CHECK(st == QR_OK || st2 != QR_OK);
	if (st2 == QR_OK) {
		FUZZ_CHECK(t->nbytes == 0 || t->data != NULL);
		for (i = 0; i < t->nbytes; i++)
			fuzz_sink += ((const uint8_t *)t->data)[i];
	}
	qr_tensor_free(t);
	qr_diag_clear(&d);
	return (int)(st != QR_OK ? st : st2);
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
	qr_fuzz_pb(data, size);
	return 0;
}
#endif
