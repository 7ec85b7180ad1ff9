/*
 * op_matmul: MatMul (numpy matmul: 1-D operands promoted, batch dims
 * broadcast) and Gemm (Y = alpha * op(A) * op(B) + beta * C, C broadcast
 * to [M, N]).
 *
 * float goes through qr_sgemm (kernels/sgemm.c), which sums as ONNX
 * Runtime does, so a MatMul or Gemm has ORT's bits; double (and a Gemm
 * with transA or alpha != 1, rare) through OpenBLAS; one call per matrix
 * of the batch. int32/int64 MatMul is a plain triple loop (wrapping).
 */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"

/*
 * ONNX Runtime pre-packs a float MatMul's or Gemm's B when it is a 2-D
 * initializer, and its packed GEMM sums K in slices of 256 whatever the
 * sizes (see kernels/sgemm.c). prepare records which case a node is in.
 */
struct mm_state {
	int b_packed;   /* B is a 2-D float initializer */
	float *bt;      /* a Gemm's transB initializer, transposed to [K][N]
			 * once (the GEMM then reads it in place), or NULL */
};

static enum qr_status
mm_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct mm_state *st = xcalloc(1, sizeof *st);
	const struct qr_tensor *b = c->in[1];

	st->b_packed = b != NULL && c->in_init != NULL && c->in_init[1] &&
		       b->dtype == QR_DT_FLOAT && b->ndim == 2;
	if (st->b_packed && qr_op_attr_int(c, "transB", 0) && b->n_elem > 0) {
		size_t n = (size_t)b->dims[0], k = (size_t)b->dims[1], i, j;
		const float *src = b->data;

		st->bt = xmalloc(b->nbytes);
		for (i = 0; i < n; i++)
			for (j = 0; j < k; j++)
				st->bt[j * n + i] = src[i * k + j];
	}
	c->state = st;
	return QR_OK;
}

static void
mm_release(void *state)
{
	struct mm_state *st = state;

	if (st != NULL)
		free(st->bt);
	free(st);
}

/* B's floats: its data, or B given as a view (ops.h) dequantized whole
 * into *own (heap, for this run). */
static const float *
b_whole(const struct qr_op_call *c, float **own)
{
	const struct qr_qview *v = c->in_q != NULL ? c->in_q[1] : NULL;
	size_t n = c->in[1]->n_elem;

	*own = NULL;
	if (v == NULL)
		return c->in[1]->data;
	*own = xmalloc((n ? n : 1) * sizeof **own);
	qr_dequantize_f32(v->q, (enum qr_qtype)v->qtype, v->outer,
			  v->axis_len, v->inner, v->scale, v->zp, *own);
	return *own;
}

/*
 * B given as a view that qr_sgemm_q can read as it packs (2-D, scales
 * per column of op(B) or one for all; tb: B is transposed): fill *qb,
 * 1. Else 0.
 */
static int
b_view(const struct qr_op_call *c, int tb, struct qr_sgemm_qb *qb)
{
	const struct qr_qview *v = c->in_q != NULL ? c->in_q[1] : NULL;
	const struct qr_tensor *b = c->in[1];

	if (v == NULL || b->ndim != 2)
		return 0;
	if (v->axis_len == 1)
		qb->per_col = 0;
	else if (!tb && v->outer == (size_t)b->dims[0] &&
		 v->axis_len == (size_t)b->dims[1] && v->inner == 1)
		qb->per_col = 1; /* [K][N], axis 1 */
	else if (tb && v->outer == 1 && v->axis_len == (size_t)b->dims[0] &&
		 v->inner == (size_t)b->dims[1])
		qb->per_col = 1; /* [N][K], axis 0 */
	else
		return 0;
	qb->q = v->q;
	qb->t = (enum qr_qtype)v->qtype;
	qb->scale = v->scale;
	qb->zp = v->zp;
	return 1;
}

/* The order ORT sums this node's float GEMM in. */
static void
mm_plan(const struct qr_op_call *c, size_t m, size_t n, size_t k, int tb,
	size_t ldb, struct qr_sgemm_plan *pl)
{
	const struct mm_state *st = c->state;

	if (st != NULL && st->b_packed)
		qr_sgemm_plan_packed(pl);
	else
		qr_sgemm_plan(m, n, k, tb, ldb, n, pl);
}

/* ---- MatMul ---- */

static enum qr_status
matmul_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 2, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOATS |
				   QR_DTM_INDEX)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 1)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

/* The matmul geometry: batch shape of the output, and m, k, n. */
struct mm {
	struct qr_tensor ab, bb;  /* batch shapes of A and B (dims only) */
	int64_t out[QR_TENSOR_MAX_DIMS]; /* output shape */
	int out_ndim;
	int bdim;                 /* output batch rank */
	size_t m, k, n;
};

static enum qr_status
matmul_shape(const struct qr_op_call *c, struct qr_diag *d, struct mm *g)
{
	const struct qr_tensor *a = c->in[0], *b = c->in[1];
	struct qr_tensor *both[2];
	int64_t bdims[QR_TENSOR_MAX_DIMS];
	int64_t ka, kb;
	enum qr_status st;
	char x[128], y[128];
	int i;

	memset(g, 0, sizeof *g);
	if (a->ndim == 0 || b->ndim == 0)
		return qr_op_errorf(c, d, QR_ESHAPE, "operands must have "
				    "rank >= 1");
	g->m = a->ndim == 1 ? 1 : (size_t)a->dims[a->ndim - 2];
	ka = a->dims[a->ndim - 1];
	kb = b->ndim == 1 ? b->dims[0] : b->dims[b->ndim - 2];
	g->n = b->ndim == 1 ? 1 : (size_t)b->dims[b->ndim - 1];
	if (ka != kb)
		return qr_op_errorf(c, d, QR_ESHAPE, "A %s and B %s do not "
				    "multiply", qr_shape_str(a, x, sizeof x),
				    qr_shape_str(b, y, sizeof y));
	g->k = (size_t)ka;
	g->ab.ndim = a->ndim > 2 ? a->ndim - 2 : 0;
	g->bb.ndim = b->ndim > 2 ? b->ndim - 2 : 0;
	memcpy(g->ab.dims, a->dims, (size_t)g->ab.ndim * sizeof *a->dims);
	memcpy(g->bb.dims, b->dims, (size_t)g->bb.ndim * sizeof *b->dims);
	both[0] = &g->ab;
	both[1] = &g->bb;
	st = qr_op_broadcast_shape(c, d, both, 2, &g->bdim, bdims);
	if (st != QR_OK)
		return st;
	for (i = 0; i < g->bdim; i++)
		g->out[i] = bdims[i];
	g->out_ndim = g->bdim;
	if (a->ndim > 1)
		g->out[g->out_ndim++] = (int64_t)g->m;
	if (b->ndim > 1)
		g->out[g->out_ndim++] = (int64_t)g->n;
	return QR_OK;
}

static enum qr_status
matmul_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct mm g;
	enum qr_status st = matmul_shape(c, d, &g);

	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, g.out_ndim,
				   g.out, qr_op_out_name(c, 0), d);
}

/* c[m][n] = a[m][k] * b[k][n] for integer T, wrapping. */
#define INT_MM(T, a, b, y, m, k, n)                                         \
	do {                                                                \
		size_t i_, j_, p_;                                          \
		for (i_ = 0; i_ < (m); i_++)                                \
			for (j_ = 0; j_ < (n); j_++) {                      \
				uint64_t s_ = 0;                            \
				for (p_ = 0; p_ < (k); p_++)                \
					s_ += (uint64_t)(a)[i_ * (k) + p_] * \
					      (uint64_t)(b)[p_ * (n) + j_]; \
				(y)[i_ * (n) + j_] = (T)s_;                 \
			}                                                   \
	} while (0)

static enum qr_status
matmul_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor *y = c->out[0];
	struct qr_tensor *both[2];
	size_t es = qr_dtype_size(y->dtype), sa, sb, sy, i;
	const char *a = c->in[0]->data, *b;
	char *yd = y->data;
	struct qr_bcast it;
	int64_t bdims[QR_TENSOR_MAX_DIMS];
	struct mm g;
	struct qr_sgemm_plan plan;
	struct qr_sgemm_qb qb;
	float *own = NULL;
	void *ws = NULL;
	int use_q;

	matmul_shape(c, d, &g);
	if (y->n_elem == 0)
		return QR_OK;
	if (g.k == 0) {
		memset(yd, 0, y->nbytes);
		return QR_OK;
	}
	/* a weight held quantized (2-D: no batch of B) is read as it is */
	use_q = y->dtype == QR_DT_FLOAT && b_view(c, 0, &qb);
	b = use_q ? NULL : (const char *)b_whole(c, &own);
	sa = g.m * g.k * es;
	sb = g.k * g.n * es;
	sy = g.m * g.n * es;
	if (y->dtype == QR_DT_FLOAT) {
		mm_plan(c, g.m, g.n, g.k, 0, g.n, &plan);
		ws = xmalloc(use_q ? qr_sgemm_q_workspace() :
				     qr_sgemm_workspace());
	}
	memcpy(bdims, g.out, sizeof bdims);
	both[0] = &g.ab;
	both[1] = &g.bb;
	qr_bcast_init(&it, g.bdim, bdims, both, 2);
	do {
		for (i = 0; i < it.inner; i++) {
			const char *pa = a + (it.off[0] + i * it.step[0]) * sa;
			const char *pb = use_q ? NULL :
					 b + (it.off[1] + i * it.step[1]) * sb;
			char *py = yd + (it.out_off + i) * sy;

			if (use_q) {
				qr_sgemm_q(&plan, g.m, g.n, g.k,
					   (const float *)pa, g.k, &qb, g.n, 0,
					   (float *)py, g.n, 0, ws);
				continue;
			}
			switch (y->dtype) {
			case QR_DT_FLOAT:
				qr_sgemm(&plan, g.m, g.n, g.k,
					 (const float *)pa, g.k,
					 (const float *)pb, g.n, 0, (float *)py,
					 g.n, 0, ws);
				break;
			case QR_DT_DOUBLE:
				cblas_dgemm(CblasRowMajor, CblasNoTrans,
					    CblasNoTrans, (int)g.m, (int)g.n,
					    (int)g.k, 1.0,
					    (const double *)pa, (int)g.k,
					    (const double *)pb, (int)g.n, 0.0,
					    (double *)py, (int)g.n);
				break;
			case QR_DT_INT32:
				INT_MM(int32_t, (const int32_t *)pa,
				       (const int32_t *)pb, (int32_t *)py,
				       g.m, g.k, g.n);
				break;
			case QR_DT_INT64:
				INT_MM(int64_t, (const int64_t *)pa,
				       (const int64_t *)pb, (int64_t *)py,
				       g.m, g.k, g.n);
				break;
			default:
				QR_ASSERT(!"dtype refused by check");
			}
		}
	} while (qr_bcast_next(&it));
	free(ws);
	free(own);
	return QR_OK;
}

const struct qr_op_desc qr_op_matmul = {
	.domain = "", .name = "MatMul", .since = 1,
	.check = matmul_check, .prepare = mm_prepare, .infer = matmul_infer,
	.run = matmul_run, .release = mm_release,
	.view_in = 1u << 1, /* the weights */
};

/* ---- Gemm ---- */

static enum qr_status
gemm_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, c->opset >= 11 ? 2 : 3, 3, 1,
			      1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOATS)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 1)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 2)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
gemm_dims(const struct qr_op_call *c, struct qr_diag *d, size_t *m,
	  size_t *k, size_t *n)
{
	const struct qr_tensor *a = c->in[0], *b = c->in[1];
	int ta = (int)qr_op_attr_int(c, "transA", 0);
	int tb = (int)qr_op_attr_int(c, "transB", 0);
	char x[128], y[128];
	int64_t kb;

	if (a->ndim != 2 || b->ndim != 2)
		return qr_op_errorf(c, d, QR_ESHAPE, "A %s and B %s must be "
				    "2-D", qr_shape_str(a, x, sizeof x),
				    qr_shape_str(b, y, sizeof y));
	*m = (size_t)a->dims[ta ? 1 : 0];
	*k = (size_t)a->dims[ta ? 0 : 1];
	kb = b->dims[tb ? 1 : 0];
	*n = (size_t)b->dims[tb ? 0 : 1];
	if ((int64_t)*k != kb)
		return qr_op_errorf(c, d, QR_ESHAPE, "A %s and B %s do not "
				    "multiply (transA=%d, transB=%d)",
				    qr_shape_str(a, x, sizeof x),
				    qr_shape_str(b, y, sizeof y), ta, tb);
	return QR_OK;
}

static enum qr_status
gemm_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[2];
	size_t m, k, n;
	enum qr_status st = gemm_dims(c, d, &m, &k, &n);
	char x[128];

	if (st != QR_OK)
		return st;
	dims[0] = (int64_t)m;
	dims[1] = (int64_t)n;
	if (qr_op_has_in(c, 2)) {
		const struct qr_tensor *cc = c->in[2];
		int i, bad = cc->ndim > 2;

		for (i = 0; !bad && i < cc->ndim; i++) {
			int64_t want = dims[2 - cc->ndim + i];

			if (cc->dims[i] != 1 && cc->dims[i] != want)
				bad = 1;
		}
		if (bad)
			return qr_op_errorf(c, d, QR_ESHAPE, "C %s does not "
					    "broadcast to [%zu,%zu]",
					    qr_shape_str(cc, x, sizeof x), m,
					    n);
	}
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, 2, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
gemm_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor *y = c->out[0];
	int ta = (int)qr_op_attr_int(c, "transA", 0);
	int tb = (int)qr_op_attr_int(c, "transB", 0);
	double alpha = qr_op_attr_float(c, "alpha", 1.0f);
	double beta = qr_op_attr_float(c, "beta", 1.0f);
	int has_c = qr_op_has_in(c, 2) && beta != 0;
	size_t m, k, n, i;
	int lda, ldb;
	struct qr_sgemm_qb qb;
	const float *b;
	float *own = NULL;

	gemm_dims(c, d, &m, &k, &n);
	if (y->n_elem == 0)
		return QR_OK;
	/* Y = beta * C broadcast, then Y += alpha * A * B. */
	if (has_c) {
		struct qr_bcast it;
		struct qr_tensor *cc = c->in[2];

		qr_bcast_init(&it, 2, y->dims, &cc, 1);
		do {
			for (i = 0; i < it.inner; i++)
				qr_op_set(y, it.out_off + i, beta *
					  qr_op_get(cc, it.off[0] + i *
						    it.step[0]));
		} while (qr_bcast_next(&it));
	} else {
		memset(y->data, 0, y->nbytes);
	}
	if (k == 0 || alpha == 0)
		return QR_OK;
	lda = (int)(ta ? m : k);
	ldb = (int)(tb ? k : n);
	if (y->dtype == QR_DT_FLOAT && !ta && alpha == 1.0) {
		/* ORT: Y = C, then MlasGemm with beta 1 (0 without C). */
		struct qr_sgemm_plan plan;
		void *ws = xmalloc(qr_sgemm_workspace());

		const struct mm_state *mst = c->state;

		mm_plan(c, m, n, k, tb, (size_t)ldb, &plan);
		if (b_view(c, tb, &qb)) {
			free(ws);
			ws = xmalloc(qr_sgemm_q_workspace());
			qr_sgemm_q(&plan, m, n, k, c->in[0]->data, k, &qb,
				   (size_t)ldb, tb, y->data, n, has_c, ws);
		} else if (tb && mst != NULL && mst->bt != NULL) {
			/* same bits */
			qr_sgemm(&plan, m, n, k, c->in[0]->data, k, mst->bt,
				 n, 0, y->data, n, has_c, ws);
		} else {
			b = b_whole(c, &own);
			qr_sgemm(&plan, m, n, k, c->in[0]->data, k, b,
				 (size_t)ldb, tb, y->data, n, has_c, ws);
		}
		free(ws);
	} else if (y->dtype == QR_DT_FLOAT) {
		b = b_whole(c, &own);
		cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
			    tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
			    (int)k, (float)alpha, c->in[0]->data, lda, b, ldb,
			    1.0f, y->data, (int)n);
	} else {
		cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
			    tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
			    (int)k, alpha, c->in[0]->data, lda,
			    c->in[1]->data, ldb, 1.0, y->data, (int)n);
	}
	free(own);
	return QR_OK;
}

const struct qr_op_desc qr_op_gemm = {
	.domain = "", .name = "Gemm", .since = 6,
	.check = gemm_check, .prepare = mm_prepare, .infer = gemm_infer,
	.run = gemm_run, .release = mm_release,
	.view_in = 1u << 1, /* the weights */
};
