/*
 * op_mha: com.microsoft MultiHeadAttention with separate Q, K and V, in
 * the form ONNX Runtime's CPU kernel runs through MLAS's flash attention
 * (kernels' qr_attn_flash_f32 with mha set): per head h,
 *
 *   softmax(scale * (Q_h + bq) (K_h + bk)^T) (V_h + bv)
 *
 * query [B,S,D], key [B,L,D] and value [B,L,D] (D = num_heads * head
 * size), the optional bias [3D] added to each first (bq, bk, bv), scale
 * defaulting to 1/sqrt(head size); output [B,S,D]. Tiles of kv = L2 /
 * (32 H) keys (L2: this CPU's level-2 cache, as ORT reads it) and
 * min(kv, 2H) query rows, as ORT. Bit for bit.
 *
 * Refused, naming the node: key_padding_mask, attention_bias, past and
 * present key and value, unidirectional, qk output, packed QKV or KV,
 * key and value in BNSH, and a value head size other than the key's
 * (ONNX Runtime takes another kernel for all of these).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

enum { M_Q, M_K, M_V, M_BIAS };

/* What a node keeps between runs. */
struct mha_state {
	void *ws;             /* GEMM workspace (own) */
	size_t ws_cap;
};

static enum qr_status
mha_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;
	size_t i;

	if ((st = qr_op_arity(c, d, 3, 10, 1, 4)) != QR_OK)
		return st;
	if (qr_op_attr_int(c, "num_heads", 0) <= 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "attribute num_heads "
				    "must be given and positive");
	for (i = M_BIAS + 1; i < c->n_in; i++)
		if (qr_op_has_in(c, i))
			return qr_op_errorf(c, d, QR_EUNSUPPORTED, "input %zu "
					    "'%s' (key_padding_mask, "
					    "attention_bias, past or beams) is "
					    "not supported", i,
					    qr_op_in_name(c, i));
	for (i = 1; i < c->n_out; i++)
		if (qr_op_out_name(c, i)[0] != '\0')
			return qr_op_errorf(c, d, QR_EUNSUPPORTED, "output %zu "
					    "'%s' (present or qk) is not "
					    "supported", i, qr_op_out_name(c, i));
	if (qr_op_attr_int(c, "unidirectional", 0) != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "unidirectional "
				    "is not supported");
	for (i = M_Q; i <= M_BIAS; i++)
		if ((st = qr_op_want_dtype(c, d, i, QR_DTM_FLOAT)) != QR_OK)
			return st;
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

/* Batch, query and key lengths, width D and head size H; shapes checked. */
static enum qr_status
mha_dims(const struct qr_op_call *c, struct qr_diag *d, size_t *b,
	 size_t *s, size_t *l, size_t *w, size_t *h)
{
	const struct qr_tensor *q = c->in[M_Q], *k = c->in[M_K];
	const struct qr_tensor *v = c->in[M_V];
	size_t n = (size_t)qr_op_attr_int(c, "num_heads", 1);
	char b1[128], b2[128], b3[128];

	if (q->ndim != 3 || k->ndim != 3 || !qr_op_same_shape(v, 3, k->dims) ||
	    k->dims[0] != q->dims[0] || k->dims[2] != q->dims[2] ||
	    q->dims[2] % (int64_t)n != 0 || q->dims[2] == 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "query %s, key %s "
				    "and value %s: supported are [B,S,D], "
				    "[B,L,D] and [B,L,D] with D a multiple of "
				    "num_heads %zu", qr_shape_str(q, b1, sizeof b1),
				    qr_shape_str(k, b2, sizeof b2),
				    qr_shape_str(v, b3, sizeof b3), n);
	*b = (size_t)q->dims[0];
	*s = (size_t)q->dims[1];
	*l = (size_t)k->dims[1];
	*w = (size_t)q->dims[2];
	*h = *w / n;
	if (qr_op_has_in(c, M_BIAS) && c->in[M_BIAS]->n_elem != 3 * *w)
		return qr_op_errorf(c, d, QR_ESHAPE, "bias '%s' %s must hold "
				    "%zu values", qr_op_in_name(c, M_BIAS),
				    qr_shape_str(c->in[M_BIAS], b1, sizeof b1),
				    3 * *w);
	return QR_OK;
}

static enum qr_status
mha_infer(struct qr_op_call *c, struct qr_diag *d)
{
	size_t b, s, l, w, h;
	enum qr_status st;

	if ((st = mha_dims(c, d, &b, &s, &l, &w, &h)) != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, 3, c->in[M_Q]->dims,
				   qr_op_out_name(c, 0), d);
}

/* Input i (rows of w) plus bias part `part` into BNSH heads of h. */
static void
to_heads(const struct qr_op_call *c, size_t i, int part, size_t b, size_t s,
	 size_t w, size_t h, float *dst)
{
	const float *x = c->in[i]->data;
	const float *bias = qr_op_has_in(c, M_BIAS) ?
			    (const float *)c->in[M_BIAS]->data + part * w :
			    NULL;
	size_t n = w / h, bi, si, hi, j;

	for (bi = 0; bi < b; bi++)
		for (si = 0; si < s; si++)
			for (hi = 0; hi < n; hi++) {
				const float *r = x + (bi * s + si) * w + hi * h;
				float *o = dst + ((bi * n + hi) * s + si) * h;

				for (j = 0; j < h; j++)
					o[j] = bias ? r[j] + bias[hi * h + j] :
						      r[j];
			}
}

static enum qr_status
mha_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct mha_state *st = c->state;
	size_t b, s, l, w, h, n, bi, hi, kvb, qb;
	long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	struct qr_attn_flash f;
	float *q, *k, *v;
	void *ws;
	enum qr_status e;

	if ((e = mha_dims(c, d, &b, &s, &l, &w, &h)) != QR_OK)
		return e;
	if (b * s == 0)
		return QR_OK;
	if (l == 0)
		return qr_op_errorf(c, d, QR_ESHAPE, "key '%s' has no rows",
				    qr_op_in_name(c, M_K));
	n = w / h;
	q = xreallocarray(NULL, b * (s + 2 * l) * w + 1, sizeof *q);
	k = q + b * s * w;
	v = k + b * l * w;
	to_heads(c, M_Q, 0, b, s, w, h, q);
	to_heads(c, M_K, 1, b, l, w, h, k);
	to_heads(c, M_V, 2, b, l, w, h, v);
	/* ORT's int arithmetic: L2 / (4 * 4 * (H + H)), at least 1 */
	kvb = l2 > 0 ? (size_t)l2 / (32 * h) : 0;
	kvb = kvb > 0 ? kvb : 1;
	qb = kvb < 2 * h ? kvb : 2 * h;
	memset(&f, 0, sizeof f);
	f.s = s;
	f.total = l;
	f.hs = h;
	f.window = -1;
	f.kv_block = kvb < l ? kvb : l;
	f.q_block = qb < s ? qb : s;
	f.scale = qr_op_attr_float(c, "scale", 0.0f);
	if (f.scale == 0.0f)
		f.scale = 1.0f / sqrtf((float)h);
	f.mha = 1;
	ws = qr_op_ws(c, &st->ws, &st->ws_cap, qr_sgemm_workspace());
	for (bi = 0; bi < b; bi++)
		for (hi = 0; hi < n; hi++) {
			size_t kv = (bi * n + hi) * l * h;

			qr_attn_flash_f32(&f, q + (bi * n + hi) * s * h, k + kv,
					  v + kv, (float *)c->out[0]->data +
					  bi * s * w + hi * h, w, ws);
		}
	free(q);
	return QR_OK;
}

static enum qr_status
mha_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	(void)d;
	c->state = xcalloc(1, sizeof(struct mha_state));
	return QR_OK;
}

static void
mha_release(void *state)
{
	struct mha_state *st = state;

	if (st != NULL)
		free(st->ws);
	free(st);
}

const struct qr_op_desc qr_op_multi_head_attention = {
	.domain = "com.microsoft", .name = "MultiHeadAttention", .since = 1,
	.check = mha_check, .prepare = mha_prepare, .infer = mha_infer,
	.run = mha_run, .release = mha_release,
};
