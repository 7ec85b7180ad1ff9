/*
 * fuzz_exec: shape inference and one executor run on a fuzzed model.
 *
 * The model is loaded from memory (external data refused), the executor
 * prepared (qr_exec_unsupported, then qr_exec_new: dtype propagation,
 * check and prepare of every op, the memory plan), and run on small
 * deterministic inputs: unknown and symbolic dims become 1..3, and a model
 * whose inputs would exceed QR_FUZZ_MAX_ELEM elements in all is not run.
 * A run that succeeds is repeated once, to exercise buffer reuse, and must
 * give outputs of the same shapes. Half the inputs (by a bit of the seed)
 * run with opts.any_order (Winograd convs), and a quarter also through a
 * second executor that borrows the first one's folded constants
 * (opts.share) and must give the same shapes. Another bit turns on
 * opts.views (weights read quantized by their Conv, MatMul or Gemm), half
 * of those with nothing folded so that every weight can be a view; in
 * ONNX Runtime's order their outputs must have the bits of an executor
 * without views.
 */
#include <math.h>
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
			fprintf(stderr, "fuzz_exec: %s broken at %s:%d\n",  \
				#cond, __FILE__, __LINE__);                 \
			abort();                                            \
		}                                                           \
	} while (0)

#define MAX_INPUTS 32

static volatile unsigned fuzz_sink;

static uint64_t
next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Fill t with small values of its dtype: floats in [-4, 4] with the odd
 * zero, signed integers in [-3, 3], unsigned in [0, 4], bools 0/1. */
static void
fill(struct qr_tensor *t, uint64_t *seed)
{
	size_t i, esize = qr_dtype_size(t->dtype);
	uint8_t *p = t->data;

	for (i = 0; i < t->n_elem; i++, p += esize) {
		uint64_t r = next_rand(seed);
		float f = (float)((int)(r % 33) - 16) / 4.0f;
		int64_t s = (int64_t)(r % 7) - 3;
		uint64_t u = r % 5;
		uint32_t bits;

		switch (t->dtype) {
		case QR_DT_FLOAT:
			memcpy(p, &f, 4);
			break;
		case QR_DT_DOUBLE: {
			double v = f;

			memcpy(p, &v, 8);
			break;
		}
		case QR_DT_FLOAT16: {
			static const uint16_t h[] = {0x0000, 0x3c00, 0xbc00,
						     0x4000, 0x3800, 0xc200};
			memcpy(p, &h[r % 6], 2);
			break;
		}
		case QR_DT_BFLOAT16: {
			uint16_t b;

			memcpy(&bits, &f, 4);
			b = (uint16_t)(bits >> 16);
			memcpy(p, &b, 2);
			break;
		}
		case QR_DT_BOOL:
			*p = (uint8_t)(r & 1);
			break;
		case QR_DT_INT8:
		case QR_DT_INT16:
		case QR_DT_INT32:
		case QR_DT_INT64:
		case QR_DT_INT4:
			memcpy(p, &s, esize); /* little-endian low bytes */
			break;
		default:
			memcpy(p, &u, esize < 8 ? esize : 8);
			break;
		}
	}
}

static const struct qr_value_info *
find_input(const struct qr_model *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->graph.n_input; i++)
		if (strcmp(m->graph.inputs[i].name, name) == 0)
			return &m->graph.inputs[i];
	return NULL;
}

/* Make the graph inputs, or return 0 when the model is not worth a run
 * (an input without a shape or dtype, or too many elements). */
static int
make_inputs(struct qr_exec *e, const struct qr_model *m, uint64_t seed,
	    struct qr_tensor **ins, size_t *n_ins)
{
	const char *const *names;
	size_t n, i, total = 0;
	struct qr_diag d = {0};
	int ok = 1;

	*n_ins = 0;
	names = qr_exec_inputs(e, &n);
	if (n > MAX_INPUTS)
		return 0;
	for (i = 0; i < n && ok; i++) {
		const struct qr_value_info *vi = find_input(m, names[i]);
		int64_t dims[QR_TENSOR_MAX_DIMS];
		size_t elems = 1;
		int k;

		FUZZ_CHECK(vi != NULL);
		if (vi->ndim < 0 || vi->ndim > QR_TENSOR_MAX_DIMS ||
		    qr_dtype_size(vi->dtype) == 0) {
			ok = 0;
			break;
		}
		for (k = 0; k < vi->ndim; k++) {
			int64_t v = vi->dims[k].value;

			dims[k] = v >= 0 ? v : 1 + (int64_t)(next_rand(&seed) % 3);
			if (dims[k] > (int64_t)QR_FUZZ_MAX_ELEM ||
			    qr_mul_overflow(elems, (size_t)dims[k], &elems))
				ok = 0;
		}
		if (!ok || qr_add_overflow(total, elems, &total) ||
		    total > QR_FUZZ_MAX_ELEM) {
			ok = 0;
			break;
		}
		if (qr_tensor_new(vi->dtype, vi->ndim, dims, &ins[i], &d) !=
		    QR_OK) {
			qr_fuzz_check_diag(d.status, &d);
			ok = 0;
			break;
		}
		ins[i]->name = names[i];
		fill(ins[i], &seed);
		*n_ins = i + 1;
	}
	qr_diag_clear(&d);
	return ok;
}

/* e ran with opts.views in ONNX Runtime's order: an executor without
 * views gives its outputs' bits. */
static void
same_without_views(const struct qr_model *m, const struct qr_exec *e,
		   struct qr_tensor *const *ins, size_t n_ins)
{
	struct qr_exec_opts o = {0};
	struct qr_exec *p = NULL;
	struct qr_diag d = {0};
	struct qr_tensor *const *a, *const *b;
	size_t na, nb, i;

	o.n_threads = 1;
	if (qr_exec_new(m, &o, &p, &d) == QR_OK &&
	    qr_exec_run(p, ins, n_ins, NULL, NULL, &d) == QR_OK) {
		a = qr_exec_outputs(e, &na);
		b = qr_exec_outputs(p, &nb);
		FUZZ_CHECK(na == nb);
		for (i = 0; i < na; i++)
			FUZZ_CHECK(a[i]->nbytes == b[i]->nbytes &&
				   (a[i]->nbytes == 0 ||
				    memcmp(a[i]->data, b[i]->data,
					   a[i]->nbytes) == 0));
	}
	qr_exec_free(p);
	qr_diag_clear(&d);
}

int
qr_fuzz_exec(const uint8_t *data, size_t size)
{
	struct qr_diag d = {0};
	struct qr_model *m = NULL;
	struct qr_exec *e = NULL;
	struct qr_unsupported *u = NULL;
	struct qr_tensor *ins[MAX_INPUTS] = {0};
	struct qr_tensor *const *outs;
	struct qr_exec_opts opts = {0};
	int64_t shapes[8][QR_TENSOR_MAX_DIMS];
	int ranks[8];
	size_t n_u = 0, n_ins = 0, n_out, i, j;
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ size;
	enum qr_status st;

	for (i = 0; i < size && i < 64; i++)
		seed = seed * 31 + data[i];
	if (seed == 0)
		seed = 1;
	st = qr_onnx_load_buffer(data, size, "fuzz.onnx", NULL, &m, &d);
	qr_fuzz_check_diag(st, &d);
	if (st != QR_OK)
		goto out;
	st = qr_exec_unsupported(m, &u, &n_u, &d);
	qr_fuzz_check_diag(st, &d);
	for (i = 0; i < n_u; i++)
		FUZZ_CHECK(u[i].node != NULL || u[i].input != NULL);
	qr_unsupported_free(u, n_u);
	d.status = QR_OK;
	opts.n_threads = 1;
	opts.any_order = (int)(seed & 1);
	opts.views = (seed & 4) != 0;
	opts.fold_max = (seed & 12) == 12 ? 1 : 0;
	st = qr_exec_new(m, &opts, &e, &d);
	qr_fuzz_check_diag(st, &d);
	FUZZ_CHECK((st == QR_OK) == (e != NULL));
	if (st != QR_OK)
		goto out;
	if (!make_inputs(e, m, seed, ins, &n_ins))
		goto out;
	st = qr_exec_run(e, ins, n_ins, NULL, NULL, &d);
	qr_fuzz_check_diag(st, &d);
	if (st != QR_OK)
		goto out;
	outs = qr_exec_outputs(e, &n_out);
	for (i = 0; i < n_out; i++) {
		const uint8_t *p = outs[i]->data;

		FUZZ_CHECK(outs[i]->nbytes == 0 || p != NULL);
		for (j = 0; j < outs[i]->nbytes; j++)
			fuzz_sink += p[j];
		if (i < 8) {
			ranks[i] = outs[i]->ndim;
			memcpy(shapes[i], outs[i]->dims, sizeof shapes[i]);
		}
	}
	if (opts.views && !opts.any_order)
		same_without_views(m, e, ins, n_ins);
	st = qr_exec_run(e, ins, n_ins, NULL, NULL, &d);
	qr_fuzz_check_diag(st, &d);
	/* Same inputs: a second run that fails now is a bug too. */
	if (st != QR_OK)
		fprintf(stderr, "fuzz_exec: second run failed: %s\n", d.msg);
	FUZZ_CHECK(st == QR_OK);
	outs = qr_exec_outputs(e, &n_out);
	for (i = 0; i < n_out && i < 8; i++)
		FUZZ_CHECK(outs[i]->ndim == ranks[i] &&
			   memcmp(outs[i]->dims, shapes[i],
				  sizeof shapes[i]) == 0);
	if (seed & 2) {
		struct qr_exec *e2 = NULL;

		opts.share = e;
		opts.any_order = !opts.any_order;
		st = qr_exec_new(m, &opts, &e2, &d);
		qr_fuzz_check_diag(st, &d);
		/* it prepared once: the same model prepares again */
		FUZZ_CHECK(st == QR_OK);
		st = qr_exec_run(e2, ins, n_ins, NULL, NULL, &d);
		qr_fuzz_check_diag(st, &d);
		FUZZ_CHECK(st == QR_OK);
		outs = qr_exec_outputs(e2, &n_out);
		for (i = 0; i < n_out && i < 8; i++)
			FUZZ_CHECK(outs[i]->ndim == ranks[i] &&
				   memcmp(outs[i]->dims, shapes[i],
					  sizeof shapes[i]) == 0);
		qr_exec_free(e2);
	}
out:
	for (i = 0; i < MAX_INPUTS; i++)
		qr_tensor_free(ins[i]);
	qr_exec_free(e);
	qr_onnx_free(m);
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
	qr_fuzz_exec(data, size);
	return 0;
}
#endif
