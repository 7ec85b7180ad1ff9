/*
 * weight_match: pair each float weighted layer with its quantized
 * counterpart in a candidate (by name, then by structure), dequantize the
 * quantized weight and measure it against the float one: SQNR, clipping,
 * bytes.
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"

static int
same_shape(const struct qr_tensor_data *a, const struct qr_tensor_data *b)
{
	int i;

	if (a->ndim != b->ndim)
		return 0;
	for (i = 0; i < a->ndim; i++)
		if (a->dims[i] != b->dims[i])
			return 0;
	return 1;
}

/*
 * BatchNormalization folding factors (Nagel et al. 2019, section 4.1;
 * the usual Conv+BN fold): f_c = gamma_c / sqrt(var_c + eps), so W'[c] =
 * W[c] * f_c. Only when the BN alone consumes node's output, all its
 * parameters are constants with `channels` elements, and the output is
 * not a graph output. Returns a heap array or NULL.
 */
float *
qr_an_bn_factors(const struct qr_graph *g, size_t node, size_t channels,
		 const struct qr_node **bnp)
{
	const struct qr_node *n = qr_graph_node(g, node), *bn;
	const struct qr_tensor_data *gamma, *var;
	const size_t *cs;
	size_t nc, c;
	float eps, *f;

	*bnp = NULL;
	if (n->n_out < 1 || qr_graph_is_output(g, n->out[0]))
		return NULL;
	cs = qr_graph_consumers(g, n->out[0], &nc);
	if (nc != 1)
		return NULL;
	bn = qr_graph_node(g, cs[0]);
	if (strcmp(bn->op_type, "BatchNormalization") != 0 || bn->n_in < 5 ||
	    strcmp(bn->in[0], n->out[0]) != 0)
		return NULL;
	gamma = qr_graph_const(g, bn->in[1]);
	var = qr_graph_const(g, bn->in[4]);
	if (gamma == NULL || var == NULL || gamma->n_elem != channels ||
	    var->n_elem != channels || qr_graph_const(g, bn->in[2]) == NULL ||
	    qr_graph_const(g, bn->in[3]) == NULL)
		return NULL;
	eps = qr_node_attr_float(bn, "epsilon", 1e-5f);
	f = xmalloc((channels ? channels : 1) * sizeof *f);
	for (c = 0; c < channels; c++)
		f[c] = (float)(qr_tensor_get(gamma, c) /
			       sqrt(qr_tensor_get(var, c) + eps));
	*bnp = bn;
	return f;
}

/*
 * The per-channel scale and shift ops after a weighted layer, which a
 * toolchain may keep or fold into the weight: BatchNormalization, and
 * Mul, Div, Add or Sub by a constant of 1 or `channels` elements (the
 * Div a QAT export writes between Conv and BatchNormalization). Each is
 * the only consumer of the value before it; QuantizeLinear,
 * DequantizeLinear and no-op links between them are looked through.
 * next is the op after the chain (NULL at a fork or a graph output).
 */
#define CHAIN_MAX 4

struct chain {
	size_t n;
	const struct qr_node *op[CHAIN_MAX];
	const struct qr_node *next;
};

/* 1 when constant t has 1 or channels elements. */
static int
per_channel_const(const struct qr_tensor_data *t, size_t channels)
{
	return t != NULL && t->data != NULL &&
	       (t->n_elem == 1 || t->n_elem == channels);
}

static int
chain_op(const struct qr_graph *g, const struct qr_node *c, const char *cur,
	 size_t channels)
{
	const char *op = c->op_type;
	size_t i;

	if (c->domain[0] != '\0')
		return 0;
	if (strcmp(op, "BatchNormalization") == 0) {
		if (c->n_in < 5 || strcmp(c->in[0], cur) != 0)
			return 0;
		for (i = 1; i < 5; i++)
			if (!per_channel_const(qr_graph_const(g, c->in[i]),
					       channels) ||
			    qr_graph_const(g, c->in[i])->n_elem != channels)
				return 0;
		return 1;
	}
	if (c->n_in != 2 || (strcmp(op, "Mul") != 0 && strcmp(op, "Div") != 0 &&
			     strcmp(op, "Add") != 0 && strcmp(op, "Sub") != 0))
		return 0;
	if (strcmp(c->in[0], cur) == 0)
		return per_channel_const(qr_graph_const(g, c->in[1]), channels);
	return (op[0] == 'M' || op[0] == 'A') && strcmp(c->in[1], cur) == 0 &&
	       per_channel_const(qr_graph_const(g, c->in[0]), channels);
}

static void
chain_after(const struct qr_graph *g, size_t node, size_t channels,
	    struct chain *ch)
{
	const struct qr_node *n = qr_graph_node(g, node);
	const char *cur = n->n_out ? n->out[0] : NULL;
	int hop;

	memset(ch, 0, sizeof *ch);
	for (hop = 0; cur != NULL && cur[0] != '\0' && hop < 16; hop++) {
		size_t nc;
		const size_t *cs;
		const struct qr_node *c;

		if (qr_graph_is_output(g, cur))
			return;
		cs = qr_graph_consumers(g, cur, &nc);
		if (nc != 1)
			return;
		c = qr_graph_node(g, cs[0]);
		if (c->n_out < 1)
			return;
		if (strcmp(c->op_type, "QuantizeLinear") != 0 &&
		    strcmp(c->op_type, "DequantizeLinear") != 0 &&
		    !qr_an_is_noop_link(g, c)) {
			if (ch->n == CHAIN_MAX ||
			    !chain_op(g, c, cur, channels)) {
				ch->next = c;
				return;
			}
			ch->op[ch->n++] = c;
		}
		cur = c->out[0];
	}
}

/* The op type a node computes as a float graph names it (QLinearMul is
 * a Mul). */
static const char *
plain_op(const struct qr_node *n)
{
	return strncmp(n->op_type, "QLinear", 7) == 0 ? n->op_type + 7
						     : n->op_type;
}

/* Keep of a's chain only what b does not do itself after its own chain:
 * an op of a's that b applies as its next op (QOperator's QLinearMul
 * after the layer) is in both functions, not folded by b. */
static void
chain_trim(struct chain *a, const struct chain *b)
{
	size_t j;

	if (b->next == NULL)
		return;
	for (j = b->n; j < a->n; j++)
		if (strcmp(a->op[j]->op_type, plain_op(b->next)) == 0) {
			a->n = j;
			return;
		}
}

/* The chain's per-channel factor (channels entries, heap), or NULL when
 * it is empty. Shifts (Add, Sub, BatchNormalization's mean and bias) do
 * not change the weight. */
static float *
chain_factors(const struct qr_graph *g, const struct chain *ch,
	      size_t channels)
{
	double *f;
	float *out;
	size_t k, c;

	if (ch->n == 0)
		return NULL;
	f = xmalloc((channels ? channels : 1) * sizeof *f);
	for (c = 0; c < channels; c++)
		f[c] = 1.0;
	for (k = 0; k < ch->n; k++) {
		const struct qr_node *n = ch->op[k];
		const struct qr_tensor_data *t;

		if (strcmp(n->op_type, "BatchNormalization") == 0) {
			const struct qr_tensor_data *gm = qr_graph_const(g, n->in[1]);
			const struct qr_tensor_data *var = qr_graph_const(g, n->in[4]);
			double eps = qr_node_attr_float(n, "epsilon", 1e-5f);

			for (c = 0; c < channels; c++)
				f[c] *= qr_tensor_get(gm, c) /
					sqrt(qr_tensor_get(var, c) + eps);
		} else if (strcmp(n->op_type, "Mul") == 0 ||
			   strcmp(n->op_type, "Div") == 0) {
			t = qr_graph_const(g, n->in[1]);
			if (t == NULL)
				t = qr_graph_const(g, n->in[0]);
			for (c = 0; c < channels; c++) {
				double v = qr_tensor_get(t, t->n_elem == 1 ? 0 : c);

				f[c] = n->op_type[0] == 'D' ? f[c] / v : f[c] * v;
			}
		}
	}
	out = xmalloc((channels ? channels : 1) * sizeof *out);
	for (c = 0; c < channels; c++)
		out[c] = (float)f[c];
	free(f);
	return out;
}

/* "BatchNormalization 'bn', Div 'd'" for a chain, into buf. */
static void
chain_names(const struct chain *ch, char *buf, size_t n)
{
	size_t k, len = 0;

	buf[0] = '\0';
	for (k = 0; k < ch->n && len < n; k++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s '%s'",
					k ? ", " : "", ch->op[k]->op_type,
					ch->op[k]->name);
}

/* Integer range of a quantized dtype, or of bits-bit codes of its
 * signedness when bits > 0. */
static void
qrange(int dtype, int bits, double *lo, double *hi)
{
	int uns = dtype == QR_DT_UINT8 || dtype == QR_DT_UINT16 ||
		  dtype == QR_DT_UINT4 || dtype == QR_DT_UINT32 ||
		  dtype == QR_DT_UINT64;

	if (bits <= 0)
		bits = qr_dtype_bits(dtype);
	if (bits >= 53)
		bits = 52;
	if (uns) {
		*lo = 0;
		*hi = ldexp(1, bits) - 1;
	} else {
		*lo = -ldexp(1, bits - 1);
		*hi = ldexp(1, bits - 1) - 1;
	}
}

/* Elements [i0, i0+n) of q as floats into buf; int8/uint8 without the
 * per-element dtype switch of qr_tensor_get. */
static void
q_chunk(const struct qr_tensor_data *q, size_t i0, size_t n, float *buf)
{
	size_t i;

	if (q->dtype == QR_DT_INT8) {
		const int8_t *p = (const int8_t *)q->data + i0;

		for (i = 0; i < n; i++)
			buf[i] = p[i];
	} else if (q->dtype == QR_DT_UINT8) {
		const uint8_t *p = (const uint8_t *)q->data + i0;

		for (i = 0; i < n; i++)
			buf[i] = p[i];
	} else {
		for (i = 0; i < n; i++)
			buf[i] = (float)qr_tensor_get(q, i0 + i);
	}
}

/* What one pass of compare() adds up. */
struct deq_acc {
	double sig, err;         /* sum w^2, sum (w - w')^2 */
	size_t clipped, oor;     /* see struct qr_quant_weight */
};

#define DEQ_CHUNK 1024

/* The float values (q - z) s can stand for without losing range: half a
 * step past either end. */
static void
deq_bounds(float s, float z, float qlo, float qhi, float *lo, float *hi)
{
	*lo = (qlo - z) * s - 0.5f * fabsf(s);
	*hi = (qhi - z) * s + 0.5f * fabsf(s);
	if (*lo > *hi) {
		float t = *lo;

		*lo = *hi;
		*hi = t;
	}
}

/*
 * One pass over a run of n weights: w' = (q - z) s, and the counts. With
 * ss 0 the run shares s[0] and z[0] (the whole tensor when per tensor);
 * with ss 1 element i takes s[i] and z[i] (a row across blocks). q is
 * converted DEQ_CHUNK elements at a time; the float partial sums of a
 * chunk go into doubles.
 */
static void
deq_run(const float *x, const struct qr_tensor_data *q, size_t i0, size_t n,
	const float *s, const float *z, size_t ss, float qlo, float qhi,
	struct deq_acc *acc)
{
	float lo, hi;
	float buf[DEQ_CHUNK];
	size_t i, k, m;

	deq_bounds(s[0], z[0], qlo, qhi, &lo, &hi);
	for (k = 0; k < n; k += m) {
		float sg = 0, er = 0;
		size_t nc = 0, nr = 0;

		m = n - k < DEQ_CHUNK ? n - k : DEQ_CHUNK;
		q_chunk(q, i0 + k, m, buf);
		for (i = 0; i < m; i++) {
			size_t at = ss * (k + i);
			float v = x[k + i], d = v - (buf[i] - z[at]) * s[at];

			if (ss)
				deq_bounds(s[at], z[at], qlo, qhi, &lo, &hi);
			nc += (buf[i] <= qlo) | (buf[i] >= qhi);
			nr += (v < lo) | (v > hi);
			sg += v * v;
			er += d * d;
		}
		acc->sig += sg;
		acc->err += er;
		acc->clipped += nc;
		acc->oor += nr;
	}
}

/* Per-channel (or single) values of t as floats, nch entries; NULL gives
 * zeros. Returns heap memory. */
static float *
broadcast(const struct qr_tensor_data *t, size_t nch)
{
	float *v = xcalloc(nch ? nch : 1, sizeof *v);
	size_t c;

	if (t == NULL)
		return v;
	for (c = 0; c < nch; c++)
		v[c] = (float)qr_tensor_get(t, t->n_elem == 1 ? 0 : c);
	return v;
}

/*
 * Compare float layer fl with quant layer ql and fill qw's numbers:
 * dequantize w' = (q - zp) * scale per tensor or per channel along the
 * quant axis (ONNX DequantizeLinear), SQNR = 10 log10(sum w^2 / sum (w -
 * w')^2) (as qr_sqnr_db), clipped = quantized values at qmin or qmax of
 * the dtype, out_of_range = float values beyond the representable range
 * by more than half a step. The per-channel scale ops after each side's
 * layer (BatchNormalization, a QAT export's Div; struct chain) are folded
 * into that side's weight first, so both describe the function up to the
 * same point: a side that keeps a BatchNormalization the other folded
 * has it folded here, and when both keep it, both are folded. fold gets
 * a description of what was folded (empty when nothing). One pass over
 * both weights. Returns 0 with a reason in why when the scales do not
 * fit.
 */
static int
compare(const struct qr_graph *fg, const struct qr_an_wlayer *fl,
	const struct qr_graph *qg, const struct qr_an_qlayer *ql,
	struct qr_quant_weight *qw, char *why, size_t why_n, char *fold,
	size_t fold_n)
{
	const struct qr_tensor_data *q = ql->q;
	size_t outer, C, inner, o, c, nch, nb, cout;
	const float *w = NULL;
	float *sc = NULL, *zp = NULL, *ff = NULL, *fq = NULL, *own = NULL;
	struct chain chf, chq;
	struct deq_acc acc = { 0, 0, 0, 0 };
	double dlo, dhi;
	int ok = 0, owned = 0, per_channel = ql->per_channel, axis = ql->axis;

	fold[0] = '\0';
	qr_an_split(q->dims, q->ndim, ql->axis, &outer, &C, &inner);
	nb = ql->block ? (C + ql->block - 1) / ql->block : C;
	nch = ql->block ? outer * nb * inner : ql->per_channel ? C : 1;
	if (ql->scale == NULL) {
		snprintf(why, why_n, "no scale found for '%s'", q->name);
		goto out;
	}
	if (ql->block && (ql->scale->n_elem != nch ||
			  (ql->zp && ql->zp->n_elem != nch))) {
		snprintf(why, why_n, "scale of '%s' has %zu elements, not %zu "
			 "blocks of %zu along axis %d", q->name,
			 ql->scale->n_elem, nch, ql->block, ql->axis);
		goto out;
	}
	if (!ql->block &&
	    ((ql->scale->n_elem != 1 && ql->scale->n_elem != nch) ||
	     (ql->zp && ql->zp->n_elem != 1 && ql->zp->n_elem != nch))) {
		snprintf(why, why_n, "scale of '%s' has %zu elements but axis "
			 "%d has %zu channels", q->name, ql->scale->n_elem,
			 ql->axis, C);
		goto out;
	}
	if (q->data == NULL) {
		snprintf(why, why_n, "'%s' has no data", q->name);
		goto out;
	}
	sc = broadcast(ql->scale, nch);
	zp = broadcast(ql->zp, nch);
	cout = (size_t)fl->w->dims[fl->axis];
	if (fl->family == QR_AN_FAM_CONV || fl->family == QR_AN_FAM_CONVT) {
		chain_after(fg, fl->node, cout, &chf);
		chain_after(qg, ql->node, cout, &chq);
		chain_trim(&chf, &chq);
		chain_trim(&chq, &chf);
		/* the candidate's codes are folded through their scales, one
		 * per output channel: not for blocks, nor for channels along
		 * another axis */
		if (chq.n && (ql->block || !same_shape(fl->w, q) ||
			      (per_channel && axis != fl->axis)))
			chf.n = chq.n = 0;
		ff = chain_factors(fg, &chf, cout);
		fq = chain_factors(qg, &chq, cout);
	}
	if (ff) {
		own = qr_an_to_f32(fl->w);
		qr_an_scale_axis(own, fl->w->dims, fl->w->ndim, fl->axis, ff);
		w = own;
	} else {
		w = qr_an_f32_view(fl->w, &owned);
	}
	if (fq) {
		float *s2 = xmalloc(cout * sizeof *s2);
		float *z2 = xmalloc(cout * sizeof *z2);

		for (c = 0; c < cout; c++) {
			s2[c] = sc[per_channel ? c : 0] * fq[c];
			z2[c] = zp[per_channel ? c : 0];
		}
		free(sc);
		free(zp);
		sc = s2;
		zp = z2;
		per_channel = 1;
		axis = fl->axis;
		qr_an_split(q->dims, q->ndim, axis, &outer, &C, &inner);
	}
	if (ff || fq) {
		char a[160], b[160];

		chain_names(&chf, a, sizeof a);
		chain_names(&chq, b, sizeof b);
		snprintf(fold, fold_n, "%s%s%s%s%s", ff ? "float weight folded "
			 "with " : "", a, ff && fq ? "; " : "",
			 fq ? "candidate weight folded with " : "", b);
	}
	qrange(q->dtype, ql->bits, &dlo, &dhi);
	if (ql->block) {
		for (o = 0; o < outer; o++)
			for (c = 0; c < C; c++) {
				size_t i0 = (o * C + c) * inner;
				size_t at = (o * nb + c / ql->block) * inner;

				deq_run(w + i0, q, i0, inner, sc + at, zp + at,
					inner > 1, (float)dlo, (float)dhi,
					&acc);
			}
	} else if (!per_channel) {
		deq_run(w, q, 0, q->n_elem, sc, zp, 0, (float)dlo, (float)dhi,
			&acc);
	} else {
		for (o = 0; o < outer; o++)
			for (c = 0; c < C; c++) {
				size_t i0 = (o * C + c) * inner;

				deq_run(w + i0, q, i0, inner, sc + c, zp + c,
					0, (float)dlo, (float)dhi, &acc);
			}
	}
	qw->clipped = acc.clipped;
	qw->out_of_range = acc.oor;
	qw->sqnr_db = acc.err == 0 ? INFINITY :
		10.0 * log10(acc.sig / acc.err);
	qw->n_elem = q->n_elem;
	qw->bits = ql->bits ? ql->bits : qr_dtype_bits(q->dtype);
	qw->granularity = xstrdup(ql->block ? "per-block" :
				  ql->per_channel ? "per-channel" :
				  "per-tensor");
	qw->block_size = ql->block;
	qw->float_bytes = fl->w->nbytes;
	/* as stored: sub-byte codes (and integer zero points) packed */
	qw->quant_bytes = (q->n_elem * (size_t)qw->bits + 7) / 8 +
			  ql->scale->nbytes;
	if (ql->zp_implied)
		; /* MatMulNBits' default 2^(bits-1): not stored */
	else if (ql->zp && qr_an_is_float(ql->zp->dtype))
		qw->quant_bytes += ql->zp->nbytes;
	else if (ql->zp)
		qw->quant_bytes += (ql->zp->n_elem * (size_t)qw->bits + 7) / 8;
	qw->compression = qw->quant_bytes ?
		(double)qw->float_bytes / (double)qw->quant_bytes : 0;
	ok = 1;
out:
	if (owned)
		free((float *)w);
	free(own);
	free(ff);
	free(fq);
	free(sc);
	free(zp);
	return ok;
}

/* 1 when s is "_Q" or "_DQ_Q" and a bit count: the suffix ONNX
 * Runtime's weight-only quantizer gives a MatMul weight W (W_Q4 for
 * MatMulNBits, W_DQ_Q4 for its QDQ flavour). */
static int
nbits_suffix(const char *s)
{
	if (strncmp(s, "_DQ", 3) == 0)
		s += 3;
	if (strncmp(s, "_Q", 2) != 0 || s[2] < '1' || s[2] > '8')
		return 0;
	return s[3] == '\0';
}

/* The name rule that pairs float weight/node with quant layer ql:
 * ORT's "W -> W_quantized" (or W_Q4, W_DQ_Q4 for weight-only 4 bits), the
 * same weight name, or the same node name. Returns a static description
 * or NULL. */
static const char *
name_rule(const struct qr_an_wlayer *fl, const struct qr_graph *qg,
	  const struct qr_an_qlayer *ql)
{
	const char *fw = fl->w->name, *qn = ql->q->name;
	size_t lf = strlen(fw);

	if (strncmp(qn, fw, lf) == 0 && strcmp(qn + lf, "_quantized") == 0)
		return "ORT weight name";
	if (strncmp(qn, fw, lf) == 0 && nbits_suffix(qn + lf))
		return "ORT weight-only name";
	if (strcmp(qn, fw) == 0)
		return "same weight name";
	if (strcmp(qr_graph_node(qg, ql->node)->name, fl->n->name) == 0)
		return "same node name";
	return NULL;
}

static int
struct_eq(const struct qr_an_wlayer *f, const struct qr_an_qlayer *q)
{
	return f->family == q->family && same_shape(f->w, q->q);
}

/*
 * Structural alignment of the float layers and quant layers left after
 * name matching: the longest common subsequence of the two topological
 * sequences under "same op family and same weight shape" (so a layer
 * missing on one side does not shift every later pair, as zipping would).
 * O(nf*nq) time and bytes; past 64M cells it falls back to a greedy
 * in-order scan. pair[i] gets the quant index of fi[i] or -1.
 */
static void
align(const struct qr_an_wlayer *fl, const size_t *fi, size_t nf,
      const struct qr_an_qlayer *ql, const size_t *qi, size_t nq, long *pair)
{
	size_t i, j, w = nq + 1;
	uint32_t *dp;

	for (i = 0; i < nf; i++)
		pair[i] = -1;
	if (nf == 0 || nq == 0)
		return;
	if ((nf + 1) * (nq + 1) > ((size_t)1 << 26)) {
		for (i = 0, j = 0; i < nf && j < nq; i++) {
			size_t k;

			for (k = j; k < nq; k++)
				if (struct_eq(&fl[fi[i]], &ql[qi[k]]))
					break;
			if (k < nq) {
				pair[i] = (long)qi[k];
				j = k + 1;
			}
		}
		return;
	}
	dp = xcalloc((nf + 1) * w, sizeof *dp);
	for (i = nf; i-- > 0;) {
		for (j = nq; j-- > 0;) {
			uint32_t a = dp[(i + 1) * w + j], b = dp[i * w + j + 1];

			if (struct_eq(&fl[fi[i]], &ql[qi[j]]))
				dp[i * w + j] = dp[(i + 1) * w + j + 1] + 1;
			else
				dp[i * w + j] = a > b ? a : b;
		}
	}
	for (i = 0, j = 0; i < nf && j < nq;) {
		if (struct_eq(&fl[fi[i]], &ql[qi[j]]) &&
		    dp[i * w + j] == dp[(i + 1) * w + j + 1] + 1) {
			pair[i] = (long)qi[j];
			i++;
			j++;
		} else if (dp[(i + 1) * w + j] >= dp[i * w + j + 1]) {
			i++;
		} else {
			j++;
		}
	}
	free(dp);
}

static void
add_unmatched(struct qr_analysis *a, const char *layer, size_t ci,
	      const char *path, const char *reason)
{
	a->unmatched = xreallocarray(a->unmatched, a->n_unmatched + 1,
				     sizeof *a->unmatched);
	a->unmatched[a->n_unmatched++] =
		xasprintf("%s (candidate %zu, %s): %s", layer, ci + 1,
			  qr_path_basename(path), reason);
}

/* Fill a pair and append it to a->qweights, or record why it failed. */
static void
add_pair(struct qr_analysis *a, size_t ci, const struct qr_graph *fg,
	 const struct qr_an_wlayer *fl, const struct qr_graph *qg,
	 const struct qr_an_qlayer *ql, enum qr_match how, const char *rule,
	 struct qr_diag *d)
{
	struct qr_quant_weight qw;
	const char *path = qr_graph_model(qg)->path;
	char why[256], shp[128], fold[400];
	int ok;

	memset(&qw, 0, sizeof qw);
	qr_an_qlayer_codes((struct qr_an_qlayer *)ql);
	ok = compare(fg, fl, qg, ql, &qw, why, sizeof why, fold, sizeof fold);
	qr_an_qlayer_drop_codes((struct qr_an_qlayer *)ql);
	if (!ok) {
		qr_warnf(d, "layer '%s': cannot compare with candidate %zu: "
			 "%s", fl->n->name, ci + 1, why);
		add_unmatched(a, fl->n->name, ci, path ? path : "", why);
		return;
	}
	qw.quant = ci;
	qw.layer = xstrdup(fl->n->name);
	qw.quant_layer = xstrdup(qr_graph_node(qg, ql->node)->name);
	qw.weight = xstrdup(fl->w->name);
	qw.quant_weight = xstrdup(ql->q->name);
	qw.match = how;
	qr_an_dims_buf(fl->w->dims, fl->w->ndim, shp, sizeof shp);
	if (fold[0] != '\0')
		qw.folded = xstrdup(fold);
	if (how == QR_MATCH_NAME)
		qw.match_reason = xasprintf("name (%s): %s -> %s%s%s", rule,
					    fl->w->name, ql->q->name,
					    fold[0] ? "; " : "", fold);
	else
		qw.match_reason = xasprintf("structure: %s layer with weight "
					    "%s aligned in topological order"
					    "%s%s", qr_an_family_name(fl->family),
					    shp, fold[0] ? "; " : "", fold);
	a->qweights = xreallocarray(a->qweights, a->n_qweights + 1,
				    sizeof *a->qweights);
	a->qweights[a->n_qweights++] = qw;
}

/*
 * Pair float layers with candidate ci's quantized layers: first by name
 * (ORT's W -> W_quantized, the same weight name, the same node name; the
 * op family and weight shape must agree), then the rest by structure
 * (align). Pairs go to a->qweights, float layers left alone to
 * a->unmatched with the reason.
 */
void
qr_an_match(struct qr_analysis *a, size_t ci, const struct qr_graph *fg,
	    const struct qr_an_wlayer *fl, size_t n_fl,
	    const struct qr_graph *qg, struct qr_an_qlayer *ql, size_t n_ql,
	    struct qr_diag *d)
{
	size_t *fi = xcalloc(n_fl + 1, sizeof *fi);
	size_t *qi = xcalloc(n_ql + 1, sizeof *qi);
	long *pair = xcalloc(n_fl + 1, sizeof *pair);
	char **near = xcalloc(n_fl + 1, sizeof *near);
	const char *path = qr_graph_model(qg)->path;
	size_t i, j, nf = 0, nq = 0;

	if (path == NULL)
		path = "";
	for (i = 0; i < n_fl; i++) {
		const char *rule = NULL;

		for (j = 0; j < n_ql; j++) {
			if (ql[j].matched || !(rule = name_rule(&fl[i], qg,
								 &ql[j])))
				continue;
			if (struct_eq(&fl[i], &ql[j]))
				break;
			if (near[i] == NULL) {
				char a1[128], a2[128];

				near[i] = xasprintf("'%s' matches by name but "
					"is a %s weight %s, float %s %s",
					ql[j].q->name,
					qr_an_family_name(ql[j].family),
					qr_an_dims_buf(ql[j].q->dims,
						       ql[j].q->ndim, a1,
						       sizeof a1),
					qr_an_family_name(fl[i].family),
					qr_an_dims_buf(fl[i].w->dims,
						       fl[i].w->ndim, a2,
						       sizeof a2));
			}
			rule = NULL;
		}
		if (rule && j < n_ql) {
			ql[j].matched = 1;
			add_pair(a, ci, fg, &fl[i], qg, &ql[j], QR_MATCH_NAME,
				 rule, d);
		} else {
			fi[nf++] = i;
		}
	}
	for (j = 0; j < n_ql; j++)
		if (!ql[j].matched)
			qi[nq++] = j;
	align(fl, fi, nf, ql, qi, nq, pair);
	for (i = 0; i < nf; i++) {
		const struct qr_an_wlayer *f = &fl[fi[i]];
		char shp[128], *r;

		if (pair[i] >= 0) {
			ql[pair[i]].matched = 1;
			add_pair(a, ci, fg, f, qg, &ql[pair[i]],
				 QR_MATCH_STRUCTURE, NULL, d);
			continue;
		}
		qr_an_dims_buf(f->w->dims, f->w->ndim, shp, sizeof shp);
		r = near[fi[i]] ? xstrdup(near[fi[i]]) :
			xasprintf("not quantized: no quantized %s layer with "
				  "weight %s by name or in topological order",
				  qr_an_family_name(f->family), shp);
		add_unmatched(a, f->n->name, ci, path, r);
		free(r);
	}
	for (i = 0; i < n_fl; i++)
		free(near[i]);
	free(near);
	free(fi);
	free(qi);
	free(pair);
}
