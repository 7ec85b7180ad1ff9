/*
 * op_llm_attention: the attentions of LLM decoders as ONNX Runtime's CPU
 * kernels compute them: com.microsoft GroupQueryAttention (what
 * onnxruntime-genai's model builder writes) and MultiHeadAttention in
 * the form ORT runs through MLAS's flash attention. Both tile as ORT
 * does for this CPU's level-2 cache (flash_tiles).
 *
 * GroupQueryAttention's inputs: query [B,S,N*H] (or Q, K and V packed, [B,S,(N+2M)*H], with key
 * and value absent), key and value [B,S,M*H], past_key and past_value
 * [B,M,P,H] (BNSH; P may be 0), seqlens_k int32 [B] (each row's total
 * length - 1), total_sequence_length int32 scalar T, cos_cache and
 * sin_cache [max, R/2] (with do_rotary), position_ids int64. N query
 * heads share M = kv_num_heads key/value heads in groups of N/M.
 * Outputs: output [B,S,N*H], present_key and present_value
 * [B,M,max(T,P),H]: row b's past (seqlens_k[b] + 1 - S rows, none for
 * the first prompt, S == T) then its S new rows, zeros after.
 *
 * do_rotary rotates Q's and K's first R = 2 * cos_cache.dims[1] values
 * per head (kernels' qr_rope_row_f32; rotary_interleaved picks the
 * pairs) at positions s for the first prompt (position_ids[0] + s when
 * given), past + s after it (position_ids[b][s] when given).
 *
 * Query row s of batch row b sees keys up to its position (past + s) and,
 * with local_window_size W >= 0, only the W last of them. As ONNX Runtime
 * 1.30:
 *   - with present outputs, T > 1 and no softcap: MLAS's flash attention
 *     (kernels' qr_attn_flash_f32), tiles of kv = L2 / (32 H) keys (L2:
 *     this CPU's level-2 cache, as ORT reads it) and min(kv, 2H) query
 *     rows; one pass for a batch whose rows have the same length, row by
 *     row otherwise. Bit for bit.
 *   - otherwise (softcap): scores scale * Q K^T, softcap * tanh(x /
 *     softcap) over the window, ORT's softmax of the window, then times V.
 *     tanh is libm's, ORT's is MLAS's: within rounding.
 * The scale defaults to 1/sqrt(H).
 *
 * Refused, naming the node: attention_bias, head_sink, smooth_softmax,
 * qk_output, a quantized KV cache, sliding_window_cache, Q/K norms, and
 * a past without present outputs.
 *
 * MultiHeadAttention with separate Q, K and V, in the form ONNX
 * Runtime's CPU kernel runs through MLAS's flash attention (kernels'
 * qr_attn_flash_f32 with mha set): per head h,
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
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

enum { G_Q, G_K, G_V, G_PK, G_PV, G_SEQLENS, G_TOTAL, G_COS, G_SIN,
       G_POS, G_BIAS, G_SINK };

/* One node's sizes, from its inputs and attributes. */
struct gqa {
	size_t b, s;          /* batch, new tokens */
	size_t n, m, h;       /* query heads, key/value heads, head size */
	size_t p;             /* past buffer rows */
	size_t t;             /* total_sequence_length */
	size_t present;       /* present rows: max(t, p) */
	size_t rot;           /* rotary dims (0: no rotary) */
	int packed, first;    /* packed QKV; first prompt (s == t) */
	long window;          /* local_window_size */
	float scale, softcap;
	int interleaved;
};

/* What a node keeps between runs. */
struct attn_state {
	void *ws;             /* GEMM workspace (own) */
	size_t ws_cap;
};

/* ORT's flash tiles for head size h (its int arithmetic): kv = L2 /
 * (4 * 4 * (h + h)) keys, at least 1, and min(kv, 2h) query rows. */
static void
flash_tiles(size_t h, size_t *kvb, size_t *qb)
{
	long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);

	*kvb = l2 > 0 ? (size_t)l2 / (32 * h) : 0;
	*kvb = *kvb > 0 ? *kvb : 1;
	*qb = *kvb < 2 * h ? *kvb : 2 * h;
}

static enum qr_status
gqa_check(const struct qr_op_call *c, struct qr_diag *d)
{
	static const size_t floats[] = { G_Q, G_K, G_V, G_PK, G_PV, G_COS,
					 G_SIN };
	int64_t n = qr_op_attr_int(c, "num_heads", 0);
	int64_t m = qr_op_attr_int(c, "kv_num_heads", 0);
	enum qr_status st;
	size_t i;

	/* key, value and the past may be "" */
	if ((st = qr_op_arity(c, d, 1, 16, 1, 4)) != QR_OK)
		return st;
	if (!qr_op_has_in(c, G_SEQLENS) || !qr_op_has_in(c, G_TOTAL))
		return qr_op_errorf(c, d, QR_EGRAPH, "seqlens_k and "
				    "total_sequence_length are required");
	if (n <= 0 || m <= 0 || n % m != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "num_heads %lld must be "
				    "a positive multiple of kv_num_heads %lld",
				    (long long)n, (long long)m);
	for (i = G_BIAS; i < c->n_in; i++)
		if (qr_op_has_in(c, i))
			return qr_op_errorf(c, d, QR_EUNSUPPORTED, "input %zu "
					    "'%s' (attention_bias, head_sink, "
					    "a quantized cache's scales or Q/K "
					    "norms) is not supported", i,
					    qr_op_in_name(c, i));
	if (c->n_out > 3 && qr_op_out_name(c, 3)[0] != '\0')
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "output_qk is not "
				    "supported");
	if (qr_op_attr_int(c, "smooth_softmax", 0) != 0 ||
	    qr_op_attr_int(c, "qk_output", 0) != 0 ||
	    qr_op_attr_int(c, "sliding_window_cache", 0) != 0 ||
	    strcmp(qr_op_attr_str(c, "k_quant_type", "NONE"), "NONE") != 0 ||
	    strcmp(qr_op_attr_str(c, "v_quant_type", "NONE"), "NONE") != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "smooth_softmax, "
				    "qk_output, sliding_window_cache and a "
				    "quantized KV cache are not supported");
	if (qr_op_attr_int(c, "causal", 1) != 1)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "causal 0 is not "
				    "supported");
	if (qr_op_has_in(c, G_K) != qr_op_has_in(c, G_V) ||
	    qr_op_has_in(c, G_PK) != qr_op_has_in(c, G_PV))
		return qr_op_errorf(c, d, QR_EGRAPH, "key and value, "
				    "past_key and past_value go together");
	if (qr_op_has_in(c, G_PK) &&
	    (c->n_out < 3 || qr_op_out_name(c, 1)[0] == '\0' ||
	     qr_op_out_name(c, 2)[0] == '\0'))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "a past without "
				    "present_key and present_value is not "
				    "supported");
	if (qr_op_attr_int(c, "do_rotary", 0) != 0 &&
	    (!qr_op_has_in(c, G_COS) || !qr_op_has_in(c, G_SIN)))
		return qr_op_errorf(c, d, QR_EGRAPH, "do_rotary needs "
				    "cos_cache and sin_cache");
	for (i = 0; i < sizeof floats / sizeof *floats; i++)
		if ((st = qr_op_want_dtype(c, d, floats[i], QR_DTM_FLOAT)) !=
		    QR_OK)
			return st;
	if ((st = qr_op_want_dtype(c, d, G_SEQLENS, QR_DTM(QR_DT_INT32))) !=
		    QR_OK ||
	    (st = qr_op_want_dtype(c, d, G_TOTAL, QR_DTM(QR_DT_INT32))) !=
		    QR_OK ||
	    (st = qr_op_want_dtype(c, d, G_POS, QR_DTM(QR_DT_INT64))) != QR_OK)
		return st;
	for (i = 0; i < c->n_out && i < 3; i++)
		c->out_dtype[i] = QR_DT_FLOAT;
	return QR_OK;
}

/* Input i has shape (ndim, dims); QR_ESHAPE naming it otherwise. */
static enum qr_status
want_shape(const struct qr_op_call *c, struct qr_diag *d, size_t i, int ndim,
	   const int64_t *dims)
{
	char b[128];

	if (qr_op_same_shape(c->in[i], ndim, dims))
		return QR_OK;
	return qr_op_errorf(c, d, QR_ESHAPE, "input %zu '%s' is %s, not as "
			    "query %s implies", i, qr_op_in_name(c, i),
			    qr_shape_str(c->in[i], b, sizeof b),
			    qr_shape_str(c->in[G_Q], b + 64, 64));
}

/* Sizes and attributes; every input's shape against them. */
static enum qr_status
gqa_dims(const struct qr_op_call *c, struct qr_diag *d, struct gqa *g)
{
	const struct qr_tensor *q = c->in[G_Q];
	int64_t dims[4], tot;
	size_t width;
	enum qr_status st;
	char b[128];

	memset(g, 0, sizeof *g);
	g->n = (size_t)qr_op_attr_int(c, "num_heads", 1);
	g->m = (size_t)qr_op_attr_int(c, "kv_num_heads", 1);
	g->packed = !qr_op_has_in(c, G_K);
	if (q->ndim != 3)
		return qr_op_errorf(c, d, QR_ESHAPE, "query '%s' %s must be "
				    "[B,S,D]", qr_op_in_name(c, G_Q),
				    qr_shape_str(q, b, sizeof b));
	g->b = (size_t)q->dims[0];
	g->s = (size_t)q->dims[1];
	width = (size_t)q->dims[2];
	g->h = width / (g->packed ? g->n + 2 * g->m : g->n);
	if (g->h == 0 || g->h * (g->packed ? g->n + 2 * g->m : g->n) !=
			 width || g->h % 8 != 0)
		return qr_op_errorf(c, d, QR_ESHAPE, "query '%s' %s does not "
				    "split into %zu heads%s of a multiple of 8",
				    qr_op_in_name(c, G_Q),
				    qr_shape_str(q, b, sizeof b),
				    g->packed ? g->n + 2 * g->m : g->n,
				    g->packed ? " (packed Q, K and V)" : "");
	dims[0] = (int64_t)g->b;
	dims[1] = (int64_t)g->s;
	dims[2] = (int64_t)(g->m * g->h);
	if (!g->packed && ((st = want_shape(c, d, G_K, 3, dims)) != QR_OK ||
			   (st = want_shape(c, d, G_V, 3, dims)) != QR_OK))
		return st;
	if (qr_op_has_in(c, G_PK)) {
		const struct qr_tensor *pk = c->in[G_PK];

		if (pk->ndim != 4)
			return qr_op_errorf(c, d, QR_ESHAPE, "past_key '%s' %s "
					    "must be [B,M,P,H]",
					    qr_op_in_name(c, G_PK),
					    qr_shape_str(pk, b, sizeof b));
		g->p = (size_t)pk->dims[2];
		dims[1] = (int64_t)g->m;
		dims[2] = (int64_t)g->p;
		dims[3] = (int64_t)g->h;
		if ((st = want_shape(c, d, G_PK, 4, dims)) != QR_OK ||
		    (st = want_shape(c, d, G_PV, 4, dims)) != QR_OK)
			return st;
	}
	if (c->in[G_TOTAL]->n_elem != 1 || c->in[G_SEQLENS]->n_elem != g->b)
		return qr_op_errorf(c, d, QR_ESHAPE, "total_sequence_length "
				    "'%s' must be one value and seqlens_k '%s' "
				    "B = %zu", qr_op_in_name(c, G_TOTAL),
				    qr_op_in_name(c, G_SEQLENS), g->b);
	tot = *(const int32_t *)c->in[G_TOTAL]->data;
	if (tot < (int64_t)g->s || tot > INT32_MAX / 2)
		return qr_op_errorf(c, d, QR_ESHAPE, "total_sequence_length "
				    "%lld is below the %zu new tokens",
				    (long long)tot, g->s);
	g->t = (size_t)tot;
	g->present = g->t > g->p ? g->t : g->p;
	g->first = g->s == g->t;
	g->window = (long)qr_op_attr_int(c, "local_window_size", -1);
	g->scale = qr_op_attr_float(c, "scale", 0.0f);
	if (g->scale == 0.0f)
		g->scale = 1.0f / sqrtf((float)g->h);
	g->softcap = qr_op_attr_float(c, "softcap", 0.0f);
	g->interleaved = qr_op_attr_int(c, "rotary_interleaved", 0) != 0;
	if (qr_op_attr_int(c, "do_rotary", 0) != 0) {
		const struct qr_tensor *cs = c->in[G_COS], *sn = c->in[G_SIN];

		if (g->h % 16 != 0)
			return qr_op_errorf(c, d, QR_ESHAPE, "do_rotary needs "
					    "a head size multiple of 16, not "
					    "%zu", g->h);
		if (cs->ndim != 2 || !qr_op_same_shape(sn, 2, cs->dims) ||
		    cs->dims[0] < (int64_t)g->t ||
		    2 * (size_t)cs->dims[1] > g->h || cs->dims[1] == 0)
			return qr_op_errorf(c, d, QR_ESHAPE, "cos_cache '%s' "
					    "%s must be [>= %zu, <= %zu] as "
					    "sin_cache", qr_op_in_name(c, G_COS),
					    qr_shape_str(cs, b, sizeof b), g->t,
					    g->h / 2);
		g->rot = 2 * (size_t)cs->dims[1];
	}
	return QR_OK;
}

static enum qr_status
gqa_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct gqa g;
	int64_t dims[4];
	enum qr_status st;
	size_t i;

	if ((st = gqa_dims(c, d, &g)) != QR_OK)
		return st;
	dims[0] = (int64_t)g.b;
	dims[1] = (int64_t)g.s;
	dims[2] = (int64_t)(g.n * g.h);
	if ((st = qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, 3, dims,
				      qr_op_out_name(c, 0), d)) != QR_OK)
		return st;
	dims[1] = (int64_t)g.m;
	dims[2] = (int64_t)g.present;
	dims[3] = (int64_t)g.h;
	for (i = 1; i < c->n_out && i < 3; i++)
		if (c->out[i] != NULL &&
		    (st = qr_tensor_set_shape(c->out[i], QR_DT_FLOAT, 4, dims,
					      qr_op_out_name(c, i), d)) != QR_OK)
			return st;
	return QR_OK;
}

/* Per batch row: keys seen (seqlens_k + 1) and past rows kept. */
static enum qr_status
gqa_lengths(const struct qr_op_call *c, struct qr_diag *d,
	    const struct gqa *g, size_t *total, size_t *past)
{
	const int32_t *sl = c->in[G_SEQLENS]->data;
	size_t b;

	for (b = 0; b < g->b; b++) {
		int64_t t = (int64_t)sl[b] + 1;

		if (t < 1 || t > (int64_t)g->present ||
		    (!g->first && (t < (int64_t)g->s ||
				   t - (int64_t)g->s > (int64_t)g->p)))
			return qr_op_errorf(c, d, QR_ESHAPE, "seqlens_k[%zu] "
					    "= %d does not fit %zu new and %zu "
					    "past rows", b, (int)sl[b], g->s,
					    g->p);
		total[b] = (size_t)t;
		past[b] = g->first || !qr_op_has_in(c, G_PK) ? 0 :
			  (size_t)t - g->s;
	}
	return QR_OK;
}

/* Head hd of batch row b of the new Q, K or V input i (its first head
 * index in a packed query at base) into dst [S][H]. */
static void
gather_head(const struct qr_op_call *c, const struct gqa *g, size_t i,
	    size_t base, size_t b, size_t hd, float *dst)
{
	const float *x = c->in[i]->data;
	size_t heads = g->packed ? g->n + 2 * g->m : i == G_Q ? g->n : g->m;
	size_t s;

	for (s = 0; s < g->s; s++)
		memcpy(dst + s * g->h,
		       x + ((b * g->s + s) * heads + base + hd) * g->h,
		       g->h * sizeof *dst);
}

/* Rotate the S rows [S][H] of one head at the positions of batch row b. */
static enum qr_status
rotate(const struct qr_op_call *c, struct qr_diag *d, const struct gqa *g,
       size_t b, size_t past, float *x)
{
	const struct qr_tensor *cs = c->in[G_COS];
	const int64_t *pos = qr_op_has_in(c, G_POS) ? c->in[G_POS]->data :
						      NULL;
	size_t half = g->rot / 2, s;

	for (s = 0; s < g->s; s++) {
		int64_t at = g->first ? (pos ? pos[0] : 0) + (int64_t)s :
				pos ? pos[b * g->s + s] : (int64_t)(past + s);

		if (at < 0 || at >= cs->dims[0])
			return qr_op_errorf(c, d, QR_ESHAPE, "position %lld "
					    "is outside cos_cache's %lld rows",
					    (long long)at,
					    (long long)cs->dims[0]);
		qr_rope_row_f32(x + s * g->h,
				(const float *)c->in[G_SIN]->data + at * half,
				(const float *)cs->data + at * half, g->rot,
				g->interleaved, x + s * g->h);
	}
	return QR_OK;
}

/* Q in BNSH (rotated) into q; K and V concatenated after the past into
 * the present buffers pk, pv ([B][M][present][H], zeros after). */
static enum qr_status
gqa_prepare_qkv(const struct qr_op_call *c, struct qr_diag *d,
		const struct gqa *g, const size_t *past, float *q, float *pk,
		float *pv)
{
	size_t rows = g->present * g->h, b, hd, kb = g->packed ? g->n : 0;
	size_t vb = g->packed ? g->n + g->m : 0;
	enum qr_status st = QR_OK;

	memset(pk, 0, g->b * g->m * rows * sizeof *pk);
	memset(pv, 0, g->b * g->m * rows * sizeof *pv);
	for (b = 0; b < g->b; b++) {
		for (hd = 0; hd < g->n; hd++) {
			float *qh = q + (b * g->n + hd) * g->s * g->h;

			gather_head(c, g, G_Q, 0, b, hd, qh);
			if (g->rot && (st = rotate(c, d, g, b, past[b], qh)) !=
					      QR_OK)
				return st;
		}
		for (hd = 0; hd < g->m; hd++) {
			size_t at = (b * g->m + hd) * rows;
			float *kh = pk + at + past[b] * g->h;

			if (past[b] > 0) {
				size_t from = (b * g->m + hd) * g->p * g->h;

				memcpy(pk + at, (const float *)c->in[G_PK]->data +
				       from, past[b] * g->h * sizeof *pk);
				memcpy(pv + at, (const float *)c->in[G_PV]->data +
				       from, past[b] * g->h * sizeof *pv);
			}
			gather_head(c, g, g->packed ? G_Q : G_K, kb, b, hd, kh);
			gather_head(c, g, g->packed ? G_Q : G_V, vb, b, hd,
				    pv + at + past[b] * g->h);
			if (g->rot && (st = rotate(c, d, g, b, past[b], kh)) !=
					      QR_OK)
				return st;
		}
	}
	return st;
}

/* The flash path: one pass over the batch when its rows have the same
 * length, else row by row with each row's own. */
static void
gqa_flash(const struct gqa *g, const size_t *total, const float *q,
	  const float *pk, const float *pv, float *y, void *ws)
{
	size_t kvb, qb, max = 0, min = (size_t)-1, b, hd, rows;
	struct qr_attn_flash f;

	flash_tiles(g->h, &kvb, &qb);
	for (b = 0; b < g->b; b++) {
		max = total[b] > max ? total[b] : max;
		min = total[b] < min ? total[b] : min;
	}
	kvb = kvb < max ? kvb : max;
	memset(&f, 0, sizeof f);
	f.s = g->s;
	f.hs = g->h;
	f.window = g->window;
	f.q_block = qb < g->s ? qb : g->s;
	f.scale = g->scale;
	rows = g->present * g->h;
	for (b = 0; b < g->b; b++) {
		if (max == min) {
			f.total = max;
			f.past = g->first ? 0 : max - g->s;
			f.kv_block = kvb;
		} else {
			f.total = total[b];
			f.past = g->first ? 0 : total[b] > g->s ?
						    total[b] - g->s : 0;
			f.kv_block = kvb < total[b] ? kvb : total[b];
		}
		for (hd = 0; hd < g->n; hd++) {
			size_t kv = (b * g->m + hd / (g->n / g->m)) * rows;

			qr_attn_flash_f32(&f, q + (b * g->n + hd) * g->s * g->h,
					  pk + kv, pv + kv,
					  y + (b * g->s * g->n + hd) * g->h,
					  g->n * g->h, ws);
		}
	}
}

/* The other path: scores, softcap, ORT's softmax over each row's
 * window, then the product with V. */
static void
gqa_softmax(const struct gqa *g, const size_t *total, const size_t *past,
	    const float *q, const float *pk, const float *pv, float *y,
	    void *ws)
{
	size_t rows = g->present * g->h, b, hd, s, j;
	float *sc = xreallocarray(NULL, g->s * g->present, sizeof *sc);
	struct qr_sgemm_plan pl;

	for (b = 0; b < g->b; b++)
		for (hd = 0; hd < g->n; hd++) {
			size_t kv = (b * g->m + hd / (g->n / g->m)) * rows;
			size_t n = total[b];

			qr_sgemm_alpha(g->s, n, g->h, g->scale,
				       q + (b * g->n + hd) * g->s * g->h, g->h,
				       pk + kv, g->h, 1, sc, g->present, ws);
			for (s = 0; s < g->s; s++) {
				float *r = sc + s * g->present;
				size_t eff = past[b] + s + 1, start = 0, len;

				eff = eff < n ? eff : n;
				if (g->window >= 0 && eff > (size_t)g->window)
					start = eff - (size_t)g->window;
				len = eff - start;
				for (j = 0; j < start; j++)
					r[j] = 0.0f;
				for (j = start; g->softcap > 0.0f && j < eff;
				     j++)
					r[j] = tanhf(r[j] / g->softcap) *
					       g->softcap;
				for (j = eff; j < n; j++)
					r[j] = 0.0f;
				qr_softmax_row_ort_f32(r + start, len,
						       r + start);
			}
			qr_sgemm_plan(g->s, g->h, n, 0, g->h, g->n * g->h, &pl);
			qr_sgemm(&pl, g->s, g->h, n, sc, g->present, pv + kv,
				 g->h, 0, y + (b * g->s * g->n + hd) * g->h,
				 g->n * g->h, 0, ws);
		}
	free(sc);
}

static enum qr_status
gqa_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct attn_state *st = c->state;
	struct gqa g;
	size_t *total = NULL, *past = NULL, cache;
	float *q = NULL, *pk = NULL, *pv = NULL, *own = NULL;
	void *ws;
	enum qr_status s;

	if ((s = gqa_dims(c, d, &g)) != QR_OK)
		return s;
	total = xreallocarray(NULL, 2 * (g.b ? g.b : 1), sizeof *total);
	past = total + g.b;
	if ((s = gqa_lengths(c, d, &g, total, past)) != QR_OK)
		goto out;
	cache = g.b * g.m * g.present * g.h;
	q = xreallocarray(NULL, g.b * g.n * g.s * g.h + 1, sizeof *q);
	if (c->n_out >= 3 && c->out[1] != NULL && c->out[2] != NULL) {
		pk = c->out[1]->data;
		pv = c->out[2]->data;
	} else {
		pk = own = xreallocarray(NULL, 2 * cache + 1, sizeof *own);
		pv = own + cache;
	}
	if ((s = gqa_prepare_qkv(c, d, &g, past, q, pk, pv)) != QR_OK)
		goto out;
	ws = qr_op_ws(c, &st->ws, &st->ws_cap, qr_sgemm_workspace());
	if (own == NULL && g.t > 1 && g.softcap == 0.0f)
		gqa_flash(&g, total, q, pk, pv, c->out[0]->data, ws);
	else
		gqa_softmax(&g, total, past, q, pk, pv, c->out[0]->data, ws);
out:
	free(total);
	free(q);
	free(own);
	return s;
}

static enum qr_status
attn_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	(void)d;
	c->state = xcalloc(1, sizeof(struct attn_state));
	return QR_OK;
}

static void
attn_release(void *state)
{
	struct attn_state *st = state;

	if (st != NULL)
		free(st->ws);
	free(st);
}

const struct qr_op_desc qr_op_group_query_attention = {
	.domain = "com.microsoft", .name = "GroupQueryAttention", .since = 1,
	.check = gqa_check, .prepare = attn_prepare, .infer = gqa_infer,
	.run = gqa_run, .release = attn_release,
};

/* ---- MultiHeadAttention ---- */

enum { M_Q, M_K, M_V, M_BIAS };

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
	struct attn_state *st = c->state;
	size_t b, s, l, w, h, n, bi, hi, kvb, qb;
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
	flash_tiles(h, &kvb, &qb);
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

const struct qr_op_desc qr_op_multi_head_attention = {
	.domain = "com.microsoft", .name = "MultiHeadAttention", .since = 1,
	.check = mha_check, .prepare = attn_prepare, .infer = mha_infer,
	.run = mha_run, .release = attn_release,
};
