/*
 * cle: cross-layer-equalization opportunities in a float graph (Nagel et
 * al. 2019, "Data-Free Quantization Through Weight Equalization and Bias
 * Correction"; the set rules follow AIMET's cross-layer scaling):
 *
 *   sets     Conv->Conv, Depthwise->Conv, Conv->Depthwise->Conv, joined
 *            directly or through one Relu or PRelu. Both are positively
 *            homogeneous, f(s x) = s f(x) for s > 0, whatever PRelu's
 *            slope, which is all equalization needs; AIMET accepts both.
 *            The tensor between two layers must have exactly one consumer
 *            and not be a graph output; each conv must have group 1 or be
 *            depthwise (group == in channels == out channels).
 *   BN       a BatchNormalization right after a conv is folded first,
 *            W' = W gamma / sqrt(var + eps) per output channel.
 *   blockers Clip(0,6) (ReLU6) between two convs is not positively
 *            homogeneous; we report it with the fix (make it ReLU), which
 *            cle_measured.c measures.
 *
 * Sets are equalized in topological order, each from the weights the
 * sets before it left (struct cle_state), as AIMET applies them.
 * cle_measured.c measures what the equalization buys.
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"

enum { K_OTHER = 0, K_CONV, K_DW };

static int
conv_kind(const struct qr_an_wlayer *l)
{
	if (l->family != QR_AN_FAM_CONV)
		return K_OTHER;
	if (l->group == 1)
		return K_CONV;
	if (l->w->dims[1] == 1 && l->w->dims[0] == l->group)
		return K_DW;
	return K_OTHER;
}

/* The single consumer of tensor t, or NULL. */
static const struct qr_node *
only_consumer(const struct qr_graph *g, const char *t, size_t *idx)
{
	const size_t *cs;
	size_t nc;

	if (qr_graph_is_output(g, t))
		return NULL;
	cs = qr_graph_consumers(g, t, &nc);
	if (nc != 1)
		return NULL;
	*idx = cs[0];
	return qr_graph_node(g, cs[0]);
}

/* 1 when Clip node c clamps to [0, 6]: attributes before opset 11,
 * constant inputs from 11 on. */
static int
is_relu6(const struct qr_graph *g, const struct qr_node *c)
{
	const struct qr_tensor_data *lo = NULL, *hi = NULL;
	const struct qr_attr *amin = qr_node_attr(c, "min");
	const struct qr_attr *amax = qr_node_attr(c, "max");

	if (amin || amax)
		return amin && amax && amin->f == 0.0f && amax->f == 6.0f;
	if (c->n_in > 1 && c->in[1][0])
		lo = qr_graph_const(g, c->in[1]);
	if (c->n_in > 2 && c->in[2][0])
		hi = qr_graph_const(g, c->in[2]);
	return lo && hi && lo->n_elem == 1 && hi->n_elem == 1 &&
	       qr_tensor_get(lo, 0) == 0.0 && qr_tensor_get(hi, 0) == 6.0;
}

/* Where the output of layer l leads. */
struct step {
	long next;               /* index into fl of the next conv, or -1 */
	const char *join;        /* "Relu", "PRelu", "direct" */
	const struct qr_node *clip; /* a Clip(0,6) on the way, or NULL */
	size_t clip_at;          /* its node index */
};

static struct step
follow(const struct qr_graph *g, const struct qr_an_wlayer *l,
       const long *by_node)
{
	struct step s = { -1, "direct", NULL, 0 };
	const struct qr_node *c;
	const char *t = l->n->out[0];
	size_t idx;

	if ((c = only_consumer(g, t, &idx)) == NULL)
		return s;
	if (strcmp(c->op_type, "BatchNormalization") == 0) {
		t = c->out[0];
		if ((c = only_consumer(g, t, &idx)) == NULL)
			return s;
	}
	if (strcmp(c->op_type, "Relu") == 0 ||
	    strcmp(c->op_type, "PRelu") == 0 ||
	    (strcmp(c->op_type, "Clip") == 0 && is_relu6(g, c))) {
		if (strcmp(c->op_type, "Clip") == 0) {
			s.clip = c;
			s.clip_at = idx;
		} else {
			s.join = c->op_type;
		}
		t = c->out[0];
		if ((c = only_consumer(g, t, &idx)) == NULL)
			return s;
	}
	if (strcmp(c->op_type, "Conv") == 0 && strcmp(c->in[0], t) == 0)
		s.next = by_node[idx];
	return s;
}

/* Bytes of a layer's float copy (xpages: the copies come and go one
 * set at a time, and fresh pages fault one by one). */
static size_t
copy_bytes(const struct qr_an_wlayer *l)
{
	return (l->w->n_elem ? l->w->n_elem : 1) * sizeof(float);
}

/* A layer's weight as floats with its BN folded in (free with
 * xpages_free and copy_bytes); *folded set. NULL if it has no data. */
static float *
load_folded(const struct qr_graph *g, const struct qr_an_wlayer *l,
	    int *folded)
{
	const struct qr_node *bn;
	float *w, *f;

	*folded = 0;
	if (l->w->data == NULL && l->w->n_elem > 0)
		return NULL;
	w = xpages(copy_bytes(l));
	if (l->w->n_elem > 0 && qr_tensor_to_f32(l->w, w, NULL) != QR_OK) {
		xpages_free(w, copy_bytes(l));
		return NULL;
	}

	f = qr_an_bn_factors(g, l->node, (size_t)l->w->dims[0], &bn);
	*folded = f != NULL;
	if (f) {
		qr_an_scale_axis(w, l->w->dims, l->w->ndim, 0, f);
		free(f);
	}
	return w;
}

static float *
absmax(const float *w, const struct qr_tensor_data *t, int axis)
{
	float *r = xmalloc((size_t)t->dims[axis] * sizeof *r);

	qr_an_channel_absmax(w, t->dims, t->ndim, axis, r);
	return r;
}

static float *
inverse(const float *s, size_t n)
{
	float *v = xmalloc(n * sizeof *v);
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = 1.0f / s[i];
	return v;
}

/* max(|mn|, |mx|) per channel (heap), and its overall maximum. */
static float *
range_of(const float *mn, const float *mx, size_t C, float *amax)
{
	float *r = xmalloc((C ? C : 1) * sizeof *r);
	size_t c;

	*amax = 0;
	for (c = 0; c < C; c++) {
		r[c] = fmaxf(fabsf(mn[c]), fabsf(mx[c]));
		*amax = fmaxf(*amax, r[c]);
	}
	return r;
}

/* Max relative range and predicted per-tensor SQNR of one layer from its
 * per-channel min/max (one pass over w for the SQNR). */
static void
layer_metrics(const float *w, const struct qr_tensor_data *t,
	      const float *mn, const float *mx, int bits, double *rel,
	      double *sqnr)
{
	size_t C = (size_t)t->dims[0];
	float *r = xmalloc(C * sizeof *r), amax;
	double m = qr_rel_range(mn, mx, C, r);

	free(r);
	if (m > *rel)
		*rel = m;
	free(range_of(mn, mx, C, &amax));
	*sqnr += qr_an_sqnr_sym_tensor(w, t->n_elem, amax, bits);
}

/* Weights as equalization leaves them. Sets are applied in topological
 * order, each to the weights the previous sets left (as AIMET's
 * CrossLayerScaling.scale_cls_sets does), so a layer shared by two sets
 * (conv3 in conv1->dw2->conv3 then conv3->conv4) is seen as equalized. */
struct cle_state {
	float **cur;     /* per float layer: current weights, BN folded */
	int *folded;     /* per float layer: 1 when a BN was folded in */
	char *touched;   /* per float layer: 1 once a set has scaled it */
};

/* b[c] *= s[c] over C channels (b may be NULL: no bias). */
static void
scale_bias(float *b, const float *s, size_t C)
{
	size_t c;

	for (c = 0; b != NULL && c < C; c++)
		b[c] *= s[c];
}

/*
 * See analysis-int.h. The scales (Nagel et al. 2019 eq. 11; AIMET's
 * triplet rule), from the weights as they are:
 *   pair     s_i = sqrt(r1_i / r2_i), r1 = max|W1| of output channel i,
 *            r2 = max|W2| of input channel i; W1[i] /= s_i, b1[i] /= s_i,
 *            W2[:,i] *= s_i
 *   triplet  s12 = r0 / cbrt(r0 r1 r2), s23 = cbrt(r0 r1 r2) / r2;
 *            W0[i] /= s12, b0[i] /= s12, Wdw[i] *= s12 / s23,
 *            bdw[i] /= s23, W2[:,i] *= s23
 * A layer's output channel i ends divided by the scale at its boundary,
 * so f(x / s) = f(x) / s through ReLU or PRelu, and the next layer's
 * input channel i multiplied by it gives the same output.
 */
void
qr_an_cle_apply(const struct qr_an_wlayer *const *L, size_t n,
		float *const *w, float *const *b, float *s0, float *s1)
{
	size_t C = (size_t)L[0]->w->dims[0], k;
	float *r0 = absmax(w[0], L[0]->w, 0), *r1, *inv;

	if (n == 2) {
		r1 = absmax(w[1], L[1]->w, 1);
		qr_cle_pair_scales(r0, r1, C, s0);
		inv = inverse(s0, C);
		qr_an_scale_axis(w[0], L[0]->w->dims, L[0]->w->ndim, 0, inv);
		scale_bias(b ? b[0] : NULL, inv, C);
		qr_an_scale_axis(w[1], L[1]->w->dims, L[1]->w->ndim, 1, s0);
	} else {
		float *r2 = absmax(w[2], L[2]->w, 1);
		float *mid = xmalloc(C * sizeof *mid);

		r1 = absmax(w[1], L[1]->w, 0);
		qr_cle_triplet_scales(r0, r1, r2, C, s0, s1);
		inv = inverse(s0, C);
		for (k = 0; k < C; k++)
			mid[k] = s0[k] / s1[k];
		qr_an_scale_axis(w[0], L[0]->w->dims, L[0]->w->ndim, 0, inv);
		scale_bias(b ? b[0] : NULL, inv, C);
		qr_an_scale_axis(w[1], L[1]->w->dims, L[1]->w->ndim, 0, mid);
		free(inv);
		inv = inverse(s1, C);
		scale_bias(b ? b[1] : NULL, inv, C);
		qr_an_scale_axis(w[2], L[2]->w->dims, L[2]->w->ndim, 1, s1);
		free(mid);
		free(r2);
	}
	free(inv);
	free(r0);
	free(r1);
}

/*
 * Equalize one set of n (2 or 3) layers (qr_an_cle_apply) and record
 * before/after; its biases are not reported.
 */
static void
equalize(struct qr_cle_set *set, const struct qr_graph *g,
	 const struct qr_an_wlayer **L, const struct qr_weight_stats **ws,
	 const size_t *idx, struct cle_state *cs, size_t n,
	 const char **joins, int bits)
{
	float *w[3] = { NULL, NULL, NULL };
	size_t C = (size_t)L[0]->w->dims[0], k;
	double rel_b = 0, rel_a = 0, sq_b = 0, sq_a = 0;

	set->n_layers = n;
	set->bits = bits;
	for (k = 0; k < n; k++) {
		struct qr_cle_layer *cl = &set->layers[k];
		size_t M = (size_t)L[k]->w->dims[0];

		if (cs->cur[idx[k]] == NULL)
			cs->cur[idx[k]] = load_folded(g, L[k],
						      &cs->folded[idx[k]]);
		w[k] = cs->cur[idx[k]];
		cl->bn_folded = cs->folded[idx[k]];
		cl->name = xstrdup(L[k]->n->name);
		cl->node = L[k]->node;
		cl->op = xstrdup(L[k]->n->op_type);
		cl->depthwise = conv_kind(L[k]) == K_DW;
		cl->channels = M;
		cl->min_before = xmalloc(M * sizeof(float));
		cl->max_before = xmalloc(M * sizeof(float));
		cl->min_after = xmalloc(M * sizeof(float));
		cl->max_after = xmalloc(M * sizeof(float));
		if (!cl->bn_folded && !cs->touched[idx[k]] &&
		    ws[k]->channels == M) {
			/* the weight analysis already saw these weights */
			memcpy(cl->min_before, ws[k]->ch_min, M * sizeof(float));
			memcpy(cl->max_before, ws[k]->ch_max, M * sizeof(float));
			if (ws[k]->max_rel_range > rel_b)
				rel_b = ws[k]->max_rel_range;
			sq_b += ws[k]->sqnr_per_tensor_db;
			continue;
		}
		qr_an_channel_minmax(w[k], L[k]->w->dims, L[k]->w->ndim, 0,
				     cl->min_before, cl->max_before);
		layer_metrics(w[k], L[k]->w, cl->min_before, cl->max_before,
			      bits, &rel_b, &sq_b);
	}
	for (k = 0; k + 1 < n; k++) {
		set->joins[k] = xstrdup(joins[k]);
		set->n_scales[k] = C;
		set->scales[k] = xmalloc(C * sizeof(float));
	}
	qr_an_cle_apply(L, n, w, NULL, set->scales[0], set->scales[1]);
	for (k = 0; k < n; k++) {
		struct qr_cle_layer *cl = &set->layers[k];

		qr_an_channel_minmax(w[k], L[k]->w->dims, L[k]->w->ndim, 0,
				     cl->min_after, cl->max_after);
		layer_metrics(w[k], L[k]->w, cl->min_after, cl->max_after,
			      bits, &rel_a, &sq_a);
		cs->touched[idx[k]] = 1;
	}
	set->max_rel_range_before = rel_b;
	set->max_rel_range_after = rel_a;
	set->sqnr_per_tensor_before_db = sq_b / (double)n;
	set->sqnr_per_tensor_after_db = sq_a / (double)n;
}

static void
add_blocker(struct qr_analysis *a, const struct qr_an_wlayer *from,
	    const struct qr_an_wlayer *to, const struct step *st)
{
	const struct qr_node *clip = st->clip;
	struct qr_cle_blocker *b;

	a->cle_blockers = xreallocarray(a->cle_blockers,
					a->n_cle_blockers + 1,
					sizeof *a->cle_blockers);
	b = &a->cle_blockers[a->n_cle_blockers++];
	b->clip = st->clip_at;
	b->from = xstrdup(from->n->name);
	b->to = xstrdup(to->n->name);
	b->reason = xasprintf("Clip(0,6) '%s' between %s and %s (ReLU6 is "
			      "not positively homogeneous)", clip->name,
			      from->n->name, to->n->name);
	b->fix = xstrdup("replace ReLU6 (Clip 0..6) with ReLU to enable "
			 "equalization");
}

/* The CLE set that starts at float layer i, if any: append it (or the
 * blocker that stops it) to a->cle / a->cle_blockers. */
static void
cle_from(struct qr_analysis *a, const struct qr_graph *g,
	 const struct qr_an_wlayer *fl, size_t i, const long *by_node,
	 char *mid, struct cle_state *cs, int bits)
{
	const struct qr_an_wlayer *L[3];
	const struct qr_weight_stats *ws[3];
	const char *joins[2];
	size_t idx[3];
	struct step s1, s2;
	int k1 = conv_kind(&fl[i]), k2, k3;
	int64_t M;

	if (k1 == K_OTHER || mid[i])
		return;
	s1 = follow(g, &fl[i], by_node);
	if (s1.next < 0)
		return;
	QR_ASSERT((size_t)s1.next > i); /* a reader comes later */
	L[0] = &fl[i];
	L[1] = &fl[s1.next];
	ws[0] = &a->weights[i];
	ws[1] = &a->weights[s1.next];
	if (s1.clip) {
		add_blocker(a, L[0], L[1], &s1);
		return;
	}
	k2 = conv_kind(L[1]);
	M = L[0]->w->dims[0];
	joins[0] = s1.join;
	if (k2 == K_CONV && L[1]->w->dims[1] == M) {
		a->cle = xreallocarray(a->cle, a->n_cle + 1, sizeof *a->cle);
		memset(&a->cle[a->n_cle], 0, sizeof *a->cle);
		idx[0] = i;
		idx[1] = (size_t)s1.next;
		equalize(&a->cle[a->n_cle++], g, L, ws, idx, cs, 2, joins,
			 bits);
		return;
	}
	if (k1 != K_CONV || k2 != K_DW || L[1]->w->dims[0] != M)
		return;
	s2 = follow(g, L[1], by_node);
	if (s2.next < 0)
		return;
	L[2] = &fl[s2.next];
	ws[2] = &a->weights[s2.next];
	if (s2.clip) {
		add_blocker(a, L[1], L[2], &s2);
		return;
	}
	k3 = conv_kind(L[2]);
	if (k3 != K_CONV || L[2]->w->dims[1] != M)
		return;
	joins[1] = s2.join;
	mid[s1.next] = 1;
	a->cle = xreallocarray(a->cle, a->n_cle + 1, sizeof *a->cle);
	memset(&a->cle[a->n_cle], 0, sizeof *a->cle);
	idx[0] = i;
	idx[1] = (size_t)s1.next;
	idx[2] = (size_t)s2.next;
	equalize(&a->cle[a->n_cle++], g, L, ws, idx, cs, 3, joins, bits);
}

/* Find the CLE sets and blockers of g's float layers fl (topological
 * order) and append them to a->cle / a->cle_blockers. a->weights[i] must
 * be fl[i]'s stats. A set starting at layer i scales only layers from i
 * on, so layer i's equalized weights go once its own set is done: a few
 * layers' floats are held at a time, not the model's (wide_resnet50_2:
 * 256 MB, beside the data run). */
void
qr_an_cle(struct qr_analysis *a, const struct qr_graph *g,
	  const struct qr_an_wlayer *fl, size_t n_fl,
	  const struct qr_analysis_opts *o)
{
	size_t nn = qr_graph_n_nodes(g), i;
	long *by_node = xmalloc((nn ? nn : 1) * sizeof *by_node);
	char *mid = xcalloc(n_fl + 1, 1);
	struct cle_state cs;

	cs.cur = xcalloc(n_fl + 1, sizeof *cs.cur);
	cs.folded = xcalloc(n_fl + 1, sizeof *cs.folded);
	cs.touched = xcalloc(n_fl + 1, 1);
	a->cle_bits = o->bits;

	for (i = 0; i < nn; i++)
		by_node[i] = -1;
	for (i = 0; i < n_fl; i++)
		by_node[fl[i].node] = (long)i;
	for (i = 0; i < n_fl; i++) {
		cle_from(a, g, fl, i, by_node, mid, &cs, o->bits);
		xpages_free(cs.cur[i], copy_bytes(&fl[i]));
		cs.cur[i] = NULL;
	}
	free(cs.cur);
	free(cs.folded);
	free(cs.touched);
	free(by_node);
	free(mid);
}

void
qr_an_cle_free(struct qr_analysis *a)
{
	size_t i, k;

	for (i = 0; i < a->n_cle; i++) {
		struct qr_cle_set *s = &a->cle[i];

		for (k = 0; k < s->n_layers; k++) {
			free(s->layers[k].name);
			free(s->layers[k].op);
			free(s->layers[k].min_before);
			free(s->layers[k].max_before);
			free(s->layers[k].min_after);
			free(s->layers[k].max_after);
		}
		for (k = 0; k < 2; k++) {
			free(s->joins[k]);
			free(s->scales[k]);
		}
	}
	free(a->cle);
	for (i = 0; i < a->n_cle_blockers; i++) {
		free(a->cle_blockers[i].from);
		free(a->cle_blockers[i].to);
		free(a->cle_blockers[i].reason);
		free(a->cle_blockers[i].fix);
	}
	free(a->cle_blockers);
}
