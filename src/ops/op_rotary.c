/*
 * op_rotary: com.microsoft RotaryEmbedding (rotary position embedding,
 * RoPE), as ONNX Runtime's CPU kernel computes it: each head's first R
 * values rotated pairwise by the cos/sin of its token's position
 * (kernels' qr_rope_row_f32, MLAS's AVX2 arithmetic), the rest copied.
 *
 * Inputs: input [B,S,N*H] or [B,N,S,H]; position_ids int64 [B,S], or [1]
 * (the first token's position, the next ones following); cos_cache and
 * sin_cache [max, R/2]. interleaved picks the pairs: (x[2i], x[2i+1])
 * or (x[i], x[i + R/2]). For 3-D input the head size is
 * hidden / num_heads when rotary_embedding_dim is given (num_heads is
 * then required), else R, with num_heads = hidden / R; R is
 * rotary_embedding_dim, else 2 * cos_cache.dims[1]. Bit for bit.
 * Refused, naming the node: is_packed_batching.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"

/* One node's sizes. */
struct rope {
	size_t b, s, n, h, rot;  /* batch, tokens, heads, head size, R */
	int bnsh;                /* input is [B,N,S,H] */
};

static enum qr_status
rope_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 4, 4, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM(QR_DT_INT64))) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 2, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 3, QR_DTM_FLOAT)) != QR_OK)
		return st;
	if (qr_op_attr_int(c, "is_packed_batching", 0) != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "is_packed_batching "
				    "is not supported");
	if (qr_op_attr_int(c, "rotary_embedding_dim", 0) > 0 &&
	    qr_op_attr_int(c, "num_heads", 0) <= 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "rotary_embedding_dim "
				    "needs num_heads");
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

static enum qr_status
rope_dims(const struct qr_op_call *c, struct qr_diag *d, struct rope *r)
{
	const struct qr_tensor *x = c->in[0], *pos = c->in[1];
	const struct qr_tensor *cs = c->in[2], *sn = c->in[3];
	int64_t rd = qr_op_attr_int(c, "rotary_embedding_dim", 0);
	int64_t nh = qr_op_attr_int(c, "num_heads", 0);
	char b1[128], b2[128];

	memset(r, 0, sizeof *r);
	if ((x->ndim != 3 && x->ndim != 4) || cs->ndim != 2 ||
	    !qr_op_same_shape(sn, 2, cs->dims) || cs->dims[1] == 0)
		return qr_op_errorf(c, d, QR_ESHAPE, "input '%s' %s must be "
				    "[B,S,D] or [B,N,S,H], cos_cache %s 2-D "
				    "as sin_cache", qr_op_in_name(c, 0),
				    qr_shape_str(x, b1, sizeof b1),
				    qr_shape_str(cs, b2, sizeof b2));
	r->b = (size_t)x->dims[0];
	r->bnsh = x->ndim == 4;
	r->rot = rd > 0 ? (size_t)rd : 2 * (size_t)cs->dims[1];
	if (r->bnsh) {
		r->n = (size_t)x->dims[1];
		r->s = (size_t)x->dims[2];
		r->h = (size_t)x->dims[3];
	} else {
		r->s = (size_t)x->dims[1];
		r->h = rd > 0 ? (size_t)x->dims[2] / (size_t)nh : r->rot;
		r->n = r->h ? (size_t)x->dims[2] / r->h : 0;
		if (r->n * r->h != (size_t)x->dims[2])
			return qr_op_errorf(c, d, QR_ESHAPE, "input '%s' %s "
					    "does not split into heads of %zu",
					    qr_op_in_name(c, 0),
					    qr_shape_str(x, b1, sizeof b1),
					    r->h);
	}
	if (r->rot > r->h || r->rot % 2 != 0 ||
	    (size_t)cs->dims[1] != r->rot / 2)
		return qr_op_errorf(c, d, QR_ESHAPE, "cos_cache '%s' %s does "
				    "not fit rotary dim %zu of head size %zu",
				    qr_op_in_name(c, 2),
				    qr_shape_str(cs, b1, sizeof b1), r->rot,
				    r->h);
	if (!(pos->n_elem == 1 && pos->ndim <= 1) &&
	    !(pos->ndim == 2 && (size_t)pos->dims[0] == r->b &&
	      (size_t)pos->dims[1] == r->s))
		return qr_op_errorf(c, d, QR_ESHAPE, "position_ids '%s' %s "
				    "must be [1] or [%zu,%zu]",
				    qr_op_in_name(c, 1),
				    qr_shape_str(pos, b1, sizeof b1), r->b,
				    r->s);
	return QR_OK;
}

static enum qr_status
rope_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct rope r;
	enum qr_status st;

	if ((st = rope_dims(c, d, &r)) != QR_OK)
		return st;
	return qr_op_same_infer(c, d);
}

static enum qr_status
rope_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *pt = c->in[1], *cs = c->in[2];
	const float *x = c->in[0]->data, *cosd = cs->data;
	const float *sind = c->in[3]->data;
	const int64_t *pos = pt->data;
	float *y = c->out[0]->data;
	struct rope r;
	size_t b, s, n, half;
	enum qr_status st;

	if ((st = rope_dims(c, d, &r)) != QR_OK)
		return st;
	half = r.rot / 2;
	for (b = 0; b < r.b; b++)
		for (s = 0; s < r.s; s++) {
			int64_t at = pt->n_elem == 1 && pt->ndim <= 1 ?
				     pos[0] + (int64_t)s : pos[b * r.s + s];

			if (at < 0 || at >= cs->dims[0])
				return qr_op_errorf(c, d, QR_ESHAPE, "position "
						    "%lld is outside cos_cache's "
						    "%lld rows", (long long)at,
						    (long long)cs->dims[0]);
			for (n = 0; n < r.n; n++) {
				size_t off = r.bnsh ?
					((b * r.n + n) * r.s + s) * r.h :
					((b * r.s + s) * r.n + n) * r.h;

				qr_rope_row_f32(x + off, sind + at * half,
						cosd + at * half, r.rot,
						qr_op_attr_int(c, "interleaved",
							       0) != 0,
						y + off);
				memcpy(y + off + r.rot, x + off + r.rot,
				       (r.h - r.rot) * sizeof *y);
			}
		}
	return QR_OK;
}

const struct qr_op_desc qr_op_rotary_embedding = {
	.domain = "com.microsoft", .name = "RotaryEmbedding", .since = 1,
	.check = rope_check, .infer = rope_infer, .run = rope_run,
};
