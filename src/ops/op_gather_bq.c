/*
 * op_gather_bq: com.microsoft GatherBlockQuantized, the embedding lookup
 * of an int4 LLM: Gather of a constant table held block-quantized,
 * dequantized as it is gathered, as ONNX Runtime's CPU kernel does:
 *
 *   out = (float)(code - zero_point) * scale     (bit for bit)
 *
 * data: uint8 with bits 2, 4 or 8 (8 / bits codes a byte along the last
 * axis, low bits first; gather_axis 0, quantize_axis the last), or int4 /
 * uint4. Codes are quantized along quantize_axis (default 1) in blocks of
 * block_size (default 128; a power of two from 16); scales (float) have
 * data's shape with that axis in blocks; zero_points have data's type,
 * shaped as the scales (uint8 with bits below 8: packed along the last
 * axis as the codes are, each row starting on a fresh byte). Without
 * zero points: 2^(bits - 1) for uint8, 0 for int4 and uint4. Indices
 * (int32 or int64, any rank) pick along gather_axis (default 0);
 * negative ones count from the end, and one out of range gives zeros.
 * The output is data's shape with gather_axis replaced by the indices'
 * (uint8: the last axis unpacked to codes).
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"

/* One node's geometry, over codes (uint8 data unpacked). */
struct gbq {
	int u8;                  /* data uint8, codes packed in bytes */
	unsigned bits;
	size_t per;              /* codes a byte (uint8), else 1 */
	int gather, quant;       /* the two axes, normalised */
	size_t block;
	size_t g_m, g_dim, g_block; /* before, along and after gather_axis */
	size_t q_dim, q_n, nb;   /* along and after quantize_axis, blocks */
	size_t n_idx;            /* indices */
};

static enum qr_status
gbq_check(const struct qr_op_call *c, struct qr_diag *d)
{
	int64_t bits = qr_op_attr_int(c, "bits", 4);
	int64_t bs = qr_op_attr_int(c, "block_size", 128);
	enum qr_status st;
	int dt = qr_op_dtype(c, 0);

	if ((st = qr_op_arity(c, d, 3, 4, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM(QR_DT_UINT8) |
				   QR_DTM(QR_DT_INT4) |
				   QR_DTM(QR_DT_UINT4))) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_INDEX)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 2, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 3)) != QR_OK)
		return st;
	if (bs < 16 || bs > (1 << 30) || (bs & (bs - 1)) != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "block_size %lld must be "
				    "a power of two from 16", (long long)bs);
	if ((dt == QR_DT_UINT8 && bits != 2 && bits != 4 && bits != 8) ||
	    (dt != QR_DT_UINT8 && dt != QR_DT_UNDEFINED && bits != 4))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "bits %lld with "
				    "%s data is not supported", (long long)bits,
				    qr_dtype_name(dt));
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

static enum qr_status
gbq_dims(const struct qr_op_call *c, struct qr_diag *d, struct gbq *g)
{
	const struct qr_tensor *x = c->in[0], *sc = c->in[2];
	const struct qr_tensor *zp = qr_op_has_in(c, 3) ? c->in[3] : NULL;
	enum qr_status st;
	int i;
	char b1[128], b2[128];

	memset(g, 0, sizeof *g);
	g->u8 = x->dtype == QR_DT_UINT8;
	g->bits = (unsigned)qr_op_attr_int(c, "bits", 4);
	g->per = g->u8 ? 8 / g->bits : 1;
	g->block = (size_t)qr_op_attr_int(c, "block_size", 128);
	if (x->ndim < 1 ||
	    (st = qr_op_axis(c, d, qr_op_attr_int(c, "gather_axis", 0),
			     x->ndim, 0, &g->gather)) != QR_OK ||
	    (st = qr_op_axis(c, d, qr_op_attr_int(c, "quantize_axis", 1),
			     x->ndim, 0, &g->quant)) != QR_OK)
		return x->ndim < 1 ? qr_op_errorf(c, d, QR_ESHAPE, "data is a "
						  "scalar") : st;
	if (g->u8 && (g->gather != 0 || g->quant != x->ndim - 1 ||
		      x->ndim < 2))
		return qr_op_errorf(c, d, QR_EGRAPH, "uint8 data must be "
				    "gathered on axis 0 and quantized on its "
				    "last");
	g->g_m = qr_op_dims_prod(x->dims, 0, g->gather);
	g->g_dim = (size_t)x->dims[g->gather];
	g->g_block = qr_op_dims_prod(x->dims, g->gather + 1, x->ndim) * g->per;
	g->q_dim = (size_t)x->dims[g->quant] * g->per;
	g->q_n = qr_op_dims_prod(x->dims, g->quant + 1, x->ndim);
	g->nb = (g->q_dim + g->block - 1) / g->block;
	g->n_idx = c->in[1]->n_elem;
	for (i = 0; i < x->ndim && sc->ndim == x->ndim; i++)
		if ((size_t)sc->dims[i] !=
		    (i == g->quant ? g->nb : (size_t)x->dims[i]))
			break;
	if (i < x->ndim || sc->ndim != x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "scales '%s' %s do not "
				    "fit data %s in blocks of %zu",
				    qr_op_in_name(c, 2),
				    qr_shape_str(sc, b1, sizeof b1),
				    qr_shape_str(x, b2, sizeof b2), g->block);
	for (i = 0; zp != NULL && i < x->ndim && zp->ndim == x->ndim; i++)
		if ((size_t)zp->dims[i] !=
		    (i == g->quant ? (g->nb + g->per - 1) / g->per :
				     (size_t)sc->dims[i]))
			break;
	if (zp != NULL && (i < x->ndim || zp->ndim != x->ndim))
		return qr_op_errorf(c, d, QR_ESHAPE, "zero_points '%s' %s do "
				    "not fit scales %s", qr_op_in_name(c, 3),
				    qr_shape_str(zp, b1, sizeof b1),
				    qr_shape_str(sc, b2, sizeof b2));
	return QR_OK;
}

static enum qr_status
gbq_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct gbq g;
	enum qr_status st;
	int nd = 0, i;

	if ((st = gbq_dims(c, d, &g)) != QR_OK)
		return st;
	if (x->ndim - 1 + ix->ndim > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "the output would "
				    "have over %d dims", QR_TENSOR_MAX_DIMS);
	for (i = 0; i < g.gather; i++)
		dims[nd++] = x->dims[i];
	for (i = 0; i < ix->ndim; i++)
		dims[nd++] = ix->dims[i];
	for (i = g.gather + 1; i < x->ndim; i++)
		dims[nd++] = x->dims[i];
	dims[nd - 1] *= (int64_t)g.per;
	return qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, nd, dims,
				   qr_op_out_name(c, 0), d);
}

/* Code i (over codes) of a uint8 or 4-bit tensor. */
static int32_t
code_at(const struct qr_tensor *t, const struct gbq *g, size_t i)
{
	if (!g->u8)
		return t->dtype == QR_DT_INT4 ? ((const int8_t *)t->data)[i] :
						((const uint8_t *)t->data)[i];
	return (int32_t)qr_packed_code(t->data, i, g->bits);
}

/* Zero point of scale i. */
static int32_t
zp_at(const struct qr_op_call *c, const struct gbq *g, size_t i)
{
	const struct qr_tensor *zp = qr_op_has_in(c, 3) ? c->in[3] : NULL;
	size_t row_bytes = (g->nb + g->per - 1) / g->per;

	if (zp == NULL)
		return g->u8 ? (int32_t)1 << (g->bits - 1) : 0;
	if (!g->u8 || g->per == 1)
		return code_at(zp, g, i);
	/* each row of nb zero points starts on a fresh byte */
	return (int32_t)qr_packed_code((const uint8_t *)zp->data +
				       i / g->nb * row_bytes, i % g->nb,
				       g->bits);
}

static enum qr_status
gbq_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	const float *sc = c->in[2]->data;
	float *y = c->out[0]->data;
	size_t m, n, e;
	struct gbq g;
	enum qr_status st;

	if ((st = gbq_dims(c, d, &g)) != QR_OK)
		return st;
	for (m = 0; m < g.g_m; m++)
		for (n = 0; n < g.n_idx; n++) {
			int64_t at = (int64_t)qr_op_get(ix, n);
			float *o = y + (m * g.n_idx + n) * g.g_block;
			size_t base;

			if (at < -(int64_t)g.g_dim || at >= (int64_t)g.g_dim) {
				memset(o, 0, g.g_block * sizeof *o);
				continue;
			}
			at += at < 0 ? (int64_t)g.g_dim : 0;
			base = (m * g.g_dim + (size_t)at) * g.g_block;
			for (e = 0; e < g.g_block; e++) {
				size_t i = base + e, qq = g.q_dim * g.q_n;
				size_t s = i / qq * g.nb * g.q_n +
					   i % qq / g.q_n / g.block * g.q_n +
					   i % g.q_n;

				o[e] = (float)(code_at(x, &g, i) -
					       zp_at(c, &g, s)) * sc[s];
			}
		}
	return QR_OK;
}

const struct qr_op_desc qr_op_gather_block_quantized = {
	.domain = "com.microsoft", .name = "GatherBlockQuantized", .since = 1,
	.check = gbq_check, .infer = gbq_infer, .run = gbq_run,
};
