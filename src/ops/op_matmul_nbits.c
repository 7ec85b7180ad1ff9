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
 * 2^(bits - 1). g_idx, optional int32 [K]: the block whose scale and zero
 * point row k takes (GPTQ with reordered rows); bias, optional [N].
 *
 * W is dequantized to float [K][N] once when B, the scales, zero points
 * and g_idx are constants (at prepare, else at each run), and the product
 * goes through qr_sgemm. ONNX Runtime's CPU kernels sum in their own
 * blocked order, so values agree with its to rounding, not bit for bit.
 * With accuracy_level 4 ONNX Runtime also quantizes A to int8 inside the
 * kernel; qreport multiplies in float at every level, so what it reports
 * for such a model is the error of the weights alone.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"

/* The node's attributes and its inputs' sizes, once checked. */
struct nbits_geom {
	size_t k, n, bits, bs;  /* K, N, bits, block_size */
	size_t kb, blob;        /* blocks per column, bytes per block */
	size_t zp_row;          /* bytes of packed zero points per column */
};

struct nbits_state {
	float *w;               /* dequantized [K][N] when constant, or NULL */
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
	size_t zn = g->n * g->kb;

	if (qr_op_has_in(c, 3) && c->in[3] != NULL &&
	    c->in[3]->dtype == QR_DT_UINT8)
		zn = g->n * g->zp_row;
	if ((st = want_elems(c, d, 1, g->n * g->kb * g->blob)) != QR_OK ||
	    (st = want_elems(c, d, 2, g->n * g->kb)) != QR_OK ||
	    (qr_op_has_in(c, 3) &&
	     (st = want_elems(c, d, 3, zn)) != QR_OK) ||
	    (qr_op_has_in(c, 4) &&
	     (st = want_elems(c, d, 4, g->k)) != QR_OK) ||
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
	    (st = qr_op_want_dtype(c, d, 4, QR_DTM(QR_DT_INT32))) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 5, QR_DTM_FLOAT)) != QR_OK ||
	    (st = nbits_geom(c, d, &g)) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

/* W [K][N] from B, the scales, zero points and g_idx; QR_EGRAPH when a
 * g_idx entry names no block. */
static enum qr_status
nbits_dequant(const struct qr_op_call *c, struct qr_diag *d,
	      const struct nbits_geom *g, float *w)
{
	const uint8_t *b = c->in[1]->data;
	const float *sc = c->in[2]->data;
	const struct qr_tensor *z = qr_op_has_in(c, 3) ? c->in[3] : NULL;
	const int32_t *gi = qr_op_has_in(c, 4) ? c->in[4]->data : NULL;
	float zdef = (float)(1u << (g->bits - 1));
	size_t n, k;

	for (k = 0; gi != NULL && k < g->k; k++)
		if (gi[k] < 0 || (size_t)gi[k] >= g->kb)
			return qr_op_errorf(c, d, QR_EGRAPH, "g_idx '%s' "
					    "entry %zu is %d, not a block "
					    "below %zu", qr_op_in_name(c, 4),
					    k, (int)gi[k], g->kb);
	for (n = 0; n < g->n; n++) {
		const uint8_t *col = b + n * g->kb * g->blob;

		for (k = 0; k < g->k; k++) {
			size_t blk = gi ? (size_t)gi[k] : k / g->bs;
			size_t at = n * g->kb + blk;
			float q = (float)qr_packed_code(
				col + k / g->bs * g->blob, k % g->bs,
				(unsigned)g->bits);
			float zp = zdef;

			if (z != NULL && z->dtype == QR_DT_UINT8)
				zp = (float)qr_packed_code(
					(const uint8_t *)z->data +
						n * g->zp_row,
					blk, (unsigned)g->bits);
			else if (z != NULL)
				zp = ((const float *)z->data)[at];
			w[k * g->n + n] = (q - zp) * sc[at];
		}
	}
	return QR_OK;
}

/* Whether input i is known at prepare (or absent). */
static int
known(const struct qr_op_call *c, size_t i)
{
	return !qr_op_has_in(c, i) || c->in[i] != NULL;
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
	if (!known(c, 1) || !known(c, 2) || !known(c, 3) || !known(c, 4))
		return QR_OK;
	st->w = xreallocarray(NULL, g.k * g.n, sizeof *st->w);
	return nbits_dequant(c, d, &g, st->w);
}

static void
nbits_release(void *state)
{
	struct nbits_state *st = state;

	if (st != NULL)
		free(st->w);
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
	const struct nbits_state *st = c->state;
	struct qr_tensor *y = c->out[0];
	const float *bias = qr_op_has_in(c, 5) ? c->in[5]->data : NULL;
	struct qr_sgemm_plan plan;
	struct nbits_geom g;
	size_t m, i, j;
	float *w = st ? st->w : NULL, *own = NULL, *yd = y->data;
	void *ws;
	enum qr_status s;

	if ((s = nbits_geom(c, d, &g)) != QR_OK)
		return s;
	if (y->n_elem == 0)
		return QR_OK;
	if (w == NULL) {
		w = own = xreallocarray(NULL, g.k * g.n, sizeof *w);
		if ((s = nbits_dequant(c, d, &g, w)) != QR_OK) {
			free(own);
			return s;
		}
	}
	m = y->n_elem / g.n;
	qr_sgemm_plan(m, g.n, g.k, 0, g.n, g.n, &plan);
	ws = xmalloc(qr_sgemm_workspace());
	qr_sgemm(&plan, m, g.n, g.k, c->in[0]->data, g.k, w, g.n, 0, yd, g.n,
		 0, ws);
	for (i = 0; bias != NULL && i < m; i++)
		for (j = 0; j < g.n; j++)
			yd[i * g.n + j] += bias[j];
	free(ws);
	free(own);
	return QR_OK;
}

const struct qr_op_desc qr_op_matmul_nbits = {
	.domain = "com.microsoft", .name = "MatMulNBits", .since = 1,
	.check = nbits_check, .prepare = nbits_prepare, .infer = nbits_infer,
	.run = nbits_run, .release = nbits_release,
};
