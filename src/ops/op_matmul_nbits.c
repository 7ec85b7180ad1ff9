/*
 * op_matmul_nbits: com.microsoft MatMulNBits, ONNX Runtime's weight-only
 * matmul (what its MatMul4BitsQuantizer and LLM exporters write):
 *
 *   Y = A * W (+ bias),  W[k][n] = (code - zero_point) * scale
 *
 * A is float [..., K]. W's N columns are quantized along K in blocks of
 * block_size, with bits-bit codes (2, 4 or 8) packed low bits first into
 * B, uint8 [N][k_blocks][block_size * bits / 8]. scales: float, one per
 * (column, block), [N * k_blocks]. zero_points, optional: codes packed
 * the same way, each column's starting on a fresh byte ([N][ceil(k_blocks
 * * bits / 8)]), or floats shaped as the scales; absent means
 * 2^(bits - 1). bias, optional [N]. Refused: g_idx (deprecated; ONNX
 * Runtime 1.30 gives results neither layout explains even for the
 * identity order) and weight_prepacked (B in one CPU kernel's layout).
 *
 * accuracy_level picks the arithmetic, as ONNX Runtime's x86-64 CPU
 * kernels do (checked against onnxruntime-node 1.30 for 2, 4 and 8 bits,
 * blocks of 16 to 256, a short last block):
 *   0 to 3  float: W is dequantized at each run, NT columns at a time,
 *           and each slice of the product goes through qr_sgemm with
 *           the plan of the whole call (its bits do not depend on the
 *           slicing). Not a dequantized copy kept per node: a decoder's
 *           would be its float model again (4 GB for 1.1 G parameters).
 *           ONNX Runtime sums in its own order: values agree to
 *           rounding, not bit for bit.
 *   4       int8 activations (kernels/nbits.c, qr_nbits_gemm): each row
 *           of A is quantized per block of block_size along K,
 *           symmetric, scale max|a| / 127, round half to even; each
 *           block's integer dot product with the codes is scaled by
 *           both scales, and the zero points come in as a separate sum
 *           of block sums, in ONNX Runtime's order: bit for bit for 4
 *           bits and blocks of 32 or 128 and more (its AVX-512 VNNI
 *           kernels), within a few 1e-7 otherwise. B is read where it
 *           lies, constant or not: nothing is copied or prepared. The
 *           error this adds to A is part of what ONNX Runtime computes,
 *           so it is part of the report's numbers. With float zero
 *           points ONNX Runtime stays in float, and so does qreport.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"
#include "ops/op-int.h"

/* The node's attributes and its inputs' sizes, once checked. */
struct nbits_geom {
	size_t k, n, bits, bs;  /* K, N, bits, block_size */
	size_t kb, blob;        /* blocks per column, bytes per block */
	size_t zp_row;          /* bytes of packed zero points per column */
	size_t nb, nb_bytes, nk; /* N * kb, N * kb * blob, N * K (checked) */
	int int8_a;             /* accuracy_level 4 with integer zero points:
				 * A quantized to int8 per block */
};

#define NT 64 /* columns of W dequantized at a time (float path) */

/* The int8 path's workspace when the executor has none. */
struct nbits_state {
	void *ws;               /* int8 path: qr_nbits_gemm's workspace */
	size_t ws_cap;          /* bytes in ws */
};

static enum qr_status
nbits_geom(const struct qr_op_call *c, struct qr_diag *d,
	   struct nbits_geom *g)
{
	int64_t k = qr_op_attr_int(c, "K", 0), n = qr_op_attr_int(c, "N", 0);
	int64_t bits = qr_op_attr_int(c, "bits", 4);
	int64_t bs = qr_op_attr_int(c, "block_size", 0);

	memset(g, 0, sizeof *g);
	if (k <= 0 || n <= 0 || k > ((int64_t)1 << 31) ||
	    n > ((int64_t)1 << 31))
		return qr_op_errorf(c, d, QR_EGRAPH, "attributes K %lld and "
				    "N %lld must be positive", (long long)k,
				    (long long)n);
	if (bits != 2 && bits != 4 && bits != 8)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "bits %lld is not "
				    "supported (2, 4 or 8)", (long long)bits);
	if (bs < 16 || bs > 65536 || (bs & (bs - 1)) != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "block_size %lld must be "
				    "a power of two from 16", (long long)bs);
	g->k = (size_t)k;
	g->n = (size_t)n;
	g->bits = (size_t)bits;
	g->bs = (size_t)bs;
	g->kb = (g->k + g->bs - 1) / g->bs;
	g->blob = g->bs * g->bits / 8;
	g->zp_row = (g->kb * g->bits + 7) / 8;
	if (qr_mul_overflow(g->n, g->kb, &g->nb) ||
	    qr_mul_overflow(g->nb, g->blob, &g->nb_bytes) ||
	    qr_mul_overflow(g->n, g->k, &g->nk))
		return qr_op_errorf(c, d, QR_EGRAPH, "K %zu and N %zu are too "
				    "large", g->k, g->n);
	g->int8_a = qr_op_attr_int(c, "accuracy_level", 0) >= 4 &&
		    qr_op_dtype(c, 3) != QR_DT_FLOAT;
	return QR_OK;
}

/* Input i, when present, must hold want elements. */
static enum qr_status
want_elems(const struct qr_op_call *c, struct qr_diag *d, size_t i,
	   size_t want)
{
	const struct qr_tensor *t = c->in[i];
	char b[128];

	if (t == NULL || t->n_elem == want)
		return QR_OK;
	return qr_op_errorf(c, d, QR_ESHAPE, "input %zu '%s' %s must hold "
			    "%zu values", i, qr_op_in_name(c, i),
			    qr_shape_str(t, b, sizeof b), want);
}

/* The sizes of every present input (at check, the constant ones). */
static enum qr_status
nbits_sizes(const struct qr_op_call *c, struct qr_diag *d,
	    const struct nbits_geom *g)
{
	enum qr_status st;
	size_t zn = g->nb;

	if (qr_op_has_in(c, 3) && c->in[3] != NULL &&
	    c->in[3]->dtype == QR_DT_UINT8)
		zn = g->n * g->zp_row; /* <= nb */
	if ((st = want_elems(c, d, 1, g->nb_bytes)) != QR_OK ||
	    (st = want_elems(c, d, 2, g->nb)) != QR_OK ||
	    (qr_op_has_in(c, 3) &&
	     (st = want_elems(c, d, 3, zn)) != QR_OK) ||
	    (qr_op_has_in(c, 5) &&
	     (st = want_elems(c, d, 5, g->n)) != QR_OK))
		return st;
	return QR_OK;
}

static enum qr_status
nbits_check(const struct qr_op_call *c, struct qr_diag *d)
{
	struct nbits_geom g;
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 3, 6, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM(QR_DT_UINT8))) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 2, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 3, QR_DTM(QR_DT_UINT8) |
				   QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 5, QR_DTM_FLOAT)) != QR_OK ||
	    (st = nbits_geom(c, d, &g)) != QR_OK)
		return st;
	if (qr_op_has_in(c, 4))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "g_idx '%s' "
				    "(reordered rows) is not supported",
				    qr_op_in_name(c, 4));
	if (qr_op_attr_int(c, "weight_prepacked", 0) != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "weights prepacked "
				    "for one CPU's kernel (weight_prepacked) "
				    "are not supported");
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

/* Zero point of column n, block blk. */
static float
zero_point(const struct qr_op_call *c, const struct nbits_geom *g, size_t n,
	   size_t blk)
{
	const struct qr_tensor *z = qr_op_has_in(c, 3) ? c->in[3] : NULL;

	if (z == NULL)
		return (float)(1u << (g->bits - 1));
	if (z->dtype == QR_DT_UINT8)
		return (float)qr_packed_code((const uint8_t *)z->data +
					     n * g->zp_row, blk,
					     (unsigned)g->bits);
	return ((const float *)z->data)[n * g->kb + blk];
}

/* Code of column n, row k. */
static unsigned
code(const struct qr_op_call *c, const struct nbits_geom *g, size_t n,
     size_t k)
{
	const uint8_t *col = (const uint8_t *)c->in[1]->data +
			     n * g->kb * g->blob;

	return qr_packed_code(col + k / g->bs * g->blob, k % g->bs,
			      (unsigned)g->bits);
}

/* Float path: columns [n0, n0 + nt) of W, (code - zero point) * scale,
 * into w [K][nt]. */
static void
dequant_cols(const struct qr_op_call *c, const struct nbits_geom *g,
	     size_t n0, size_t nt, float *w)
{
	const float *sc = c->in[2]->data;
	size_t n, k, b;

	for (n = n0; n < n0 + nt; n++)
		for (b = 0; b < g->kb; b++) {
			float s = sc[n * g->kb + b], z = zero_point(c, g, n, b);
			size_t end = (b + 1) * g->bs < g->k ? (b + 1) * g->bs
							   : g->k;

			for (k = b * g->bs; k < end; k++)
				w[k * nt + (n - n0)] =
					((float)code(c, g, n, k) - z) * s;
		}
}

static enum qr_status
nbits_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct nbits_state *st = xcalloc(1, sizeof *st);
	struct nbits_geom g;
	enum qr_status s;

	c->state = st;
	if ((s = nbits_geom(c, d, &g)) != QR_OK ||
	    (s = nbits_sizes(c, d, &g)) != QR_OK)
		return s;
	return QR_OK;
}

static void
nbits_release(void *state)
{
	struct nbits_state *st = state;

	if (st != NULL)
		free(st->ws);
	free(st);
}

static enum qr_status
nbits_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *a = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct nbits_geom g;
	enum qr_status st;
	char b[128];

	if ((st = nbits_geom(c, d, &g)) != QR_OK ||
	    (st = nbits_sizes(c, d, &g)) != QR_OK)
		return st;
	if (a->ndim < 1 || a->dims[a->ndim - 1] != (int64_t)g.k)
		return qr_op_errorf(c, d, QR_ESHAPE, "A '%s' %s must end in "
				    "K = %zu", qr_op_in_name(c, 0),
				    qr_shape_str(a, b, sizeof b), g.k);
	memcpy(dims, a->dims, (size_t)a->ndim * sizeof *dims);
	dims[a->ndim - 1] = (int64_t)g.n;
	return qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, a->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
nbits_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct nbits_state *st = c->state;
	struct qr_tensor *y = c->out[0];
	const float *a = c->in[0]->data;
	const float *bias = qr_op_has_in(c, 5) ? c->in[5]->data : NULL;
	struct nbits_geom g;
	struct qr_sgemm_plan plan;
	float *w, *yd = y->data;
	void *ws;
	size_t m, i, j, n0, nt;
	enum qr_status s;

	if ((s = nbits_geom(c, d, &g)) != QR_OK)
		return s;
	if (y->n_elem == 0)
		return QR_OK;
	m = y->n_elem / g.n;
	if (g.int8_a) {
		struct qr_nbits_params p = {
			.m = m, .n = g.n, .k = g.k, .bits = g.bits,
			.block = g.bs, .b = c->in[1]->data,
			.scales = c->in[2]->data,
			.zp = qr_op_has_in(c, 3) ? c->in[3]->data : NULL,
			.bias = bias,
		};

		ws = qr_op_ws(c, &st->ws, &st->ws_cap,
			      qr_nbits_workspace(&p, c->n_threads));
		qr_nbits_gemm(&p, a, yd, ws, c->n_threads);
		return QR_OK;
	}
	ws = xmalloc(qr_sgemm_workspace());
	nt = g.n < NT ? g.n : NT;
	w = xreallocarray(NULL, g.k * nt, sizeof *w);
	qr_sgemm_plan(m, g.n, g.k, 0, g.n, g.n, &plan);
	for (n0 = 0; n0 < g.n; n0 += nt) {
		size_t cols = g.n - n0 < nt ? g.n - n0 : nt;

		dequant_cols(c, &g, n0, cols, w);
		qr_sgemm(&plan, m, cols, g.k, a, g.k, w, cols, 0, yd + n0,
			 g.n, 0, ws);
	}
	free(ws);
	free(w);
	for (i = 0; bias != NULL && i < m; i++)
		for (j = 0; j < g.n; j++)
			yd[i * g.n + j] += bias[j];
	return QR_OK;
}

const struct qr_op_desc qr_op_matmul_nbits = {
	.domain = "com.microsoft", .name = "MatMulNBits", .since = 1,
	.check = nbits_check, .prepare = nbits_prepare, .infer = nbits_infer,
	.run = nbits_run, .release = nbits_release,
};
