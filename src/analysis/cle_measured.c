/*
 * cle_measured: what cross-layer equalization buys, measured. The CLE
 * page (cle.c) predicts, per set, the layers' per-tensor weight SQNR
 * before and after equalization. Here the float model runs with every
 * layer of every CLE set reading its weight quantized per tensor as that
 * prediction assumes (symmetric, --bits: scale max|w| / (2^(bits-1) - 1),
 * round half to even, dequantized), every other weight and every
 * activation float:
 *
 *   base         nothing equalized
 *   set i        set i alone equalized, from the float weights
 *   all          every set equalized in topological order, each from the
 *                weights the sets before it left (cle.c's order: what the
 *                page predicts and what a user applies)
 *   float check  "all" not quantized: the float model's function to
 *                rounding, the equalization's own test (on the first
 *                sample)
 *
 * The gain of a variant is its output SQNR less the base's. A layer with
 * a BatchNormalization after it that cle.c folds reads the folded weight
 * W f and bias (b - mean) f + beta (f = gamma / sqrt(var + eps)) in every
 * variant, the BatchNormalization passing its input on, so the variants
 * differ only in initializers. A set whose inner layer is followed by a
 * BatchNormalization that cannot be folded (parameters not constants) is
 * left out of the equalized variants: scaling the conv alone would change
 * the function. quick measures base, all and the check; full every set
 * alone too.
 *
 * ReLU6 (Clip(0,6)) is not positively homogeneous, so cle.c lists the
 * pairs it separates as blocked, with the fix AIMET applies: replace it
 * with ReLU. That fix is measured too, on the float model with every
 * blocking Clip(0,6) a Relu (the sets of that model are found as cle.c
 * finds them, the blocked ones and the others):
 *
 *   swap only    nothing quantized: what the swap alone does to the
 *                output (nothing, where no activation passed 6)
 *   swap base    the sets' layers quantized per tensor, not equalized
 *   swap all     every set equalized, then quantized
 *
 * each against the float model as it is; the gain is swap all's output
 * SQNR less swap base's.
 *
 * The runs are sens_runs.c's, on the what-to-change samples, each cut to
 * the nodes from the first node it changes on and fed from one float
 * run, one at a time with every thread (each holds its own copy of most
 * weights).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis-int.h"
#include "graph/graph.h"
#include "onnx/onnx.h"

#define NONE ((size_t)-1)

/* A layer of some CLE set, as every variant changes it. */
struct clm_layer {
	const struct qr_an_wlayer *wl; /* borrowed from the context's fl */
	size_t bn;               /* the BatchNormalization folded into it
				  * (node index), or NONE */
	float *f;                /* its factors gamma / sqrt(var + eps)
				  * (heap), or NULL */
	const struct qr_tensor_data *beta, *mean; /* its shift (borrowed) */
	const struct qr_tensor_data *bias; /* the layer's constant bias, or
				  * NULL */
	int has_bias;            /* the variants give it a bias input (a
				  * bias or a BN) */
	float *qw;               /* base: the folded weight quantized */
	float *b0;               /* the folded bias (has_bias), float */
	float *ew, *eb;          /* every set equalized, float */
};

/* What the variants are made from. */
struct clm {
	const struct qr_analysis *a;
	struct qr_graph *g;      /* the float model's index */
	struct qr_an_wlayer *fl; /* its weighted layers (heap) */
	size_t n_fl;
	struct clm_layer *l;     /* the sets' layers, each once (heap) */
	size_t n_l;
	size_t (*at)[3];         /* per set: its layers' indices into l */
	char *ok;                /* per set: equalizing it keeps the float
				  * function */
	int bits;
};

/* w (n floats) quantized per tensor, symmetric with bits, and
 * dequantized into dst: what qr_an_sqnr_sym_tensor predicts for. */
static void
quantize(float *dst, const float *w, size_t n, int bits)
{
	float qmax = (float)((1 << (bits - 1)) - 1), amax = 0, s, inv;
	size_t i;

	/* fmaxf and nearbyintf are calls, the second saving and restoring
	 * the FP environment: a comparison and rintf give the same values
	 * (rounding to nearest) in a fraction of the time */
	for (i = 0; i < n; i++) {
		float a = fabsf(w[i]);

		amax = a > amax ? a : amax;
	}
	s = amax > 0 ? amax / qmax : 1;
	inv = 1.0f / s;
	for (i = 0; i < n; i++) {
		float q = rintf(w[i] * inv);

		dst[i] = (q > qmax ? qmax : q < -qmax ? -qmax : q) * s;
	}
}

/* Layer l's weight as floats with its BN folded in (heap, *w) and its
 * bias likewise (heap, *b; NULL when it gets none). */
static void
load(const struct clm_layer *l, float **w, float **b)
{
	const struct qr_tensor_data *t = l->wl->w;
	size_t C = (size_t)t->dims[0], c;

	*w = qr_an_to_f32(t);
	*b = NULL;
	if (l->f)
		qr_an_scale_axis(*w, t->dims, t->ndim, 0, l->f);
	if (!l->has_bias)
		return;
	*b = xcalloc(C + 1, sizeof **b);
	for (c = 0; c < C; c++) {
		double v = l->bias ? qr_tensor_get(l->bias, c) : 0.0;

		if (l->f)
			v = (v - qr_tensor_get(l->mean, c)) * l->f[c] +
			    qr_tensor_get(l->beta, c);
		(*b)[c] = (float)v;
	}
}

/* Fill l for float layer wl; NULL, or why it cannot be used (heap). */
static char *
layer_setup(struct clm *x, struct clm_layer *l, const struct qr_an_wlayer *wl)
{
	const struct qr_node *n = wl->n, *bn;
	const struct qr_tensor_data *t = wl->w;
	size_t C = (size_t)t->dims[0], nc;

	l->wl = wl;
	l->bn = NONE;
	if (t->dtype != QR_DT_FLOAT || (t->data == NULL && t->n_elem > 0))
		return xasprintf("'%s': its weight is not a float32 constant "
				 "in memory", n->name);
	if (n->n_in > 2 && n->in[2][0]) {
		l->bias = qr_graph_const(x->g, n->in[2]);
		if (l->bias == NULL || l->bias->n_elem != C)
			return xasprintf("'%s': its bias is not a constant of "
					 "%zu values", n->name, C);
	}
	l->f = qr_an_bn_factors(x->g, wl->node, C, &bn);
	if (l->f) {
		l->bn = qr_graph_consumers(x->g, n->out[0], &nc)[0];
		l->beta = qr_graph_const(x->g, bn->in[2]);
		l->mean = qr_graph_const(x->g, bn->in[3]);
		if (l->beta->n_elem != C || l->mean->n_elem != C)
			return xasprintf("'%s': its BatchNormalization's "
					 "shift is not %zu values", bn->name,
					 C);
	}
	l->has_bias = l->bias != NULL || l->f != NULL;
	load(l, &l->ew, &l->eb);
	l->qw = xmalloc((t->n_elem ? t->n_elem : 1) * sizeof *l->qw);
	quantize(l->qw, l->ew, t->n_elem, x->bits);
	if (l->eb) {
		l->b0 = xmalloc(C * sizeof *l->b0);
		memcpy(l->b0, l->eb, C * sizeof *l->b0);
	}
	return NULL;
}

/* Why set si cannot be equalized without changing the function (heap),
 * or NULL: an inner layer followed by a BatchNormalization cle.c looks
 * through but that cannot be folded. */
static char *
set_check(const struct clm *x, size_t si)
{
	const struct qr_cle_set *s = &x->a->cle[si];
	size_t k, nc;

	for (k = 0; k + 1 < s->n_layers; k++) {
		const struct clm_layer *l = &x->l[x->at[si][k]];
		const size_t *cs = qr_graph_consumers(x->g, l->wl->n->out[0],
						      &nc);
		const struct qr_node *c = nc == 1 ?
			qr_graph_node(x->g, cs[0]) : NULL;

		if (c && l->f == NULL &&
		    strcmp(c->op_type, "BatchNormalization") == 0)
			return xasprintf("the BatchNormalization '%s' after "
					 "'%s' cannot be folded (its "
					 "parameters are not constants of "
					 "one value per channel): equalizing "
					 "the conv alone would change the "
					 "function", c->name, l->wl->n->name);
	}
	return NULL;
}

/* Set si's layers' weights and biases equalized in place (w[k], b[k]
 * per layer of the set). */
static void
equalize(const struct clm *x, size_t si, float *const *w, float *const *b)
{
	const struct qr_cle_set *s = &x->a->cle[si];
	const struct qr_an_wlayer *L[3];
	size_t C = (size_t)x->l[x->at[si][0]].wl->w->dims[0], k;
	float *s0 = xcalloc(C + 1, sizeof *s0), *s1 = xcalloc(C + 1,
							      sizeof *s1);

	for (k = 0; k < s->n_layers; k++)
		L[k] = x->l[x->at[si][k]].wl;
	qr_an_cle_apply(L, s->n_layers, w, b, s0, s1);
	free(s0);
	free(s1);
}

/* The context from a's sets; NULL, or why not (heap). */
static char *
setup(struct clm *x)
{
	const struct qr_analysis *a = x->a;
	size_t *by_node, nn = qr_graph_n_nodes(x->g), i, k, j;
	char *why = NULL;

	by_node = xmalloc((nn + 1) * sizeof *by_node);
	for (i = 0; i < nn; i++)
		by_node[i] = NONE;
	for (i = 0; i < x->n_fl; i++)
		by_node[x->fl[i].node] = i;
	x->l = xcalloc(3 * a->n_cle + 1, sizeof *x->l);
	x->at = xcalloc(a->n_cle + 1, sizeof *x->at);
	x->ok = xcalloc(a->n_cle + 1, 1);
	for (i = 0; i < a->n_cle && why == NULL; i++) {
		for (k = 0; k < a->cle[i].n_layers && why == NULL; k++) {
			size_t node = a->cle[i].layers[k].node;
			size_t f = node < nn ? by_node[node] : NONE;

			if (f == NONE) {
				why = xasprintf("layer '%s' is not a weighted "
						"layer", a->cle[i].layers[k].name);
				break;
			}
			for (j = 0; j < x->n_l && x->l[j].wl->node != node; j++)
				;
			if (j == x->n_l)
				why = layer_setup(x, &x->l[x->n_l++],
						  &x->fl[f]);
			x->at[i][k] = j;
		}
	}
	free(by_node);
	return why;
}

/* The float model with each layer l[i] reading weight W[i] and bias
 * B[i] (the caller's, or b's arena) and its BN passing its input on. */
static void
edit(struct qr_hy_build *b, const struct clm *x, float *const *W,
     float *const *B)
{
	size_t i;

	for (i = 0; i < x->n_l; i++) {
		const struct clm_layer *l = &x->l[i];
		struct qr_node *n = qr_hy_own_node(b, l->wl->node);
		char *nm = xasprintf("qr.hybrid/cle%zu/W", l->wl->node);

		n->in[1] = qr_hy_add_init(b, nm, l->wl->w, 0, NULL, W[i]);
		free(nm);
		if (l->has_bias) {
			const char **in = qr_arena_array(&b->h->ar, 3,
							 sizeof *in);
			int64_t ch = l->wl->w->dims[0];

			nm = xasprintf("qr.hybrid/cle%zu/B", l->wl->node);
			in[0] = n->in[0];
			in[1] = n->in[1];
			in[2] = qr_hy_add_init(b, nm, NULL, 1, &ch, B[i]);
			free(nm);
			n->in = in;
			n->n_in = 3;
		}
		if (l->bn != NONE)
			qr_hy_to_identity(b, l->bn, n->out[0]);
	}
}

/* A copy of w (n floats), quantized or not, in b's arena. */
static float *
arena_copy(struct qr_hy_build *b, const float *w, size_t n, int bits)
{
	float *r = qr_arena_array(&b->h->ar, n + 1, sizeof *r);

	if (bits > 0)
		quantize(r, w, n, bits);
	else
		memcpy(r, w, n * sizeof *r);
	return r;
}

enum { V_BASE = -1, V_ALL = -2, V_CHECK = -3 };

/* Variant which (V_*, or a set alone by index) as a model. */
static struct qr_hy_model *
variant(const struct clm *x, long which)
{
	struct qr_hy_build b;
	float **W = xcalloc(x->n_l + 1, sizeof *W);
	float **B = xcalloc(x->n_l + 1, sizeof *B);
	size_t i, k;

	qr_hy_start(&b, qr_graph_model(x->g));
	for (i = 0; i < x->n_l; i++) {
		const struct clm_layer *l = &x->l[i];

		W[i] = which == V_ALL ? arena_copy(&b, l->ew,
						   l->wl->w->n_elem, x->bits) :
		       which == V_CHECK ? l->ew : l->qw;
		B[i] = which == V_ALL || which == V_CHECK ? l->eb : l->b0;
	}
	if (which >= 0) {
		const struct qr_cle_set *s = &x->a->cle[which];
		float *w[3] = { NULL, NULL, NULL }, *bb[3] = { NULL, NULL,
							      NULL };

		for (k = 0; k < s->n_layers; k++)
			load(&x->l[x->at[which][k]], &w[k], &bb[k]);
		equalize(x, (size_t)which, w, bb);
		for (k = 0; k < s->n_layers; k++) {
			const struct clm_layer *l = &x->l[x->at[which][k]];

			W[x->at[which][k]] = arena_copy(&b, w[k],
							l->wl->w->n_elem,
							x->bits);
			if (bb[k])
				B[x->at[which][k]] = arena_copy(&b, bb[k],
					(size_t)l->wl->w->dims[0], 0);
			free(w[k]);
			free(bb[k]);
		}
	}
	edit(&b, x, W, B);
	free(W);
	free(B);
	return qr_hy_finish(&b);
}

static void
clm_free(struct clm *x)
{
	size_t i;

	for (i = 0; i < x->n_l; i++) {
		free(x->l[i].f);
		free(x->l[i].qw);
		free(x->l[i].b0);
		free(x->l[i].ew);
		free(x->l[i].eb);
	}
	free(x->l);
	free(x->at);
	free(x->ok);
	free(x->fl);
	qr_graph_free(x->g);
}

static const struct qr_cle_set *sort_sets;

/* Larger predicted gain first, then the earlier set. */
static int
cmp_gain(const void *p, const void *q)
{
	const struct qr_cle_set *a = &sort_sets[*(const size_t *)p];
	const struct qr_cle_set *b = &sort_sets[*(const size_t *)q];
	double ga = a->sqnr_per_tensor_after_db - a->sqnr_per_tensor_before_db;
	double gb = b->sqnr_per_tensor_after_db - b->sqnr_per_tensor_before_db;

	/* an exact weight's SQNR is infinite: no gain known, last */
	ga = isnan(ga) ? -INFINITY : ga;
	gb = isnan(gb) ? -INFINITY : gb;
	if (ga != gb)
		return ga > gb ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* The variants: base, all, the check, then, in full mode, every set
 * alone (in its order of predicted gain); in quick the sets get why. *n
 * entries. */
static struct qr_sens_variant *
variants(struct clm *x, struct qr_cle_measured *m, enum qr_sens_mode mode,
	 size_t *n)
{
	const struct qr_analysis *a = x->a;
	struct qr_sens_variant *v = xcalloc(a->n_cle + 4, sizeof *v);
	size_t *ord = xcalloc(a->n_cle + 1, sizeof *ord), n_ord = 0, i;
	size_t nv = 0;

	for (i = 0; i < a->n_cle; i++)
		if (x->ok[i])
			ord[n_ord++] = i;
	v[nv].out = &m->base;
	v[nv++].h = variant(x, V_BASE);
	if (n_ord > 0) {
		v[nv].out = &m->all.m;
		v[nv++].h = variant(x, V_ALL);
		/* a test of the equalization, not a measurement: a
		 * function it changed shows on any sample */
		v[nv].out = &m->float_check;
		v[nv].n_s = 1;
		v[nv++].h = variant(x, V_CHECK);
	} else {
		m->all.why = xstrdup("no set can be equalized without "
				     "changing the function");
	}
	sort_sets = a->cle;
	qsort(ord, n_ord, sizeof *ord, cmp_gain);
	for (i = 0; i < n_ord; i++) {
		if (mode != QR_SENS_FULL) {
			m->sets[ord[i]].why = xstrdup("measured alone with "
				"--sensitivity full (quick measures every set "
				"equalized at once)");
			continue;
		}
		v[nv].out = &m->sets[ord[i]].m;
		v[nv++].h = variant(x, (long)ord[i]);
	}
	for (i = 0; i < nv; i++) {
		v[i].kind = QR_SV_CLE;
		v[i].on_float = 1;
		v[i].cut = qr_sp_cut_new(&v[i].h->m, x->g);
	}
	free(ord);
	*n = nv;
	return v;
}

/* ---- the ReLU6 swap ---- */

/* The float model of graph g with every Clip(0,6) of a->cle_blockers a
 * Relu; *n of them. */
static struct qr_hy_model *
swapped(const struct qr_analysis *a, const struct qr_graph *g, size_t *n)
{
	struct qr_hy_build b;
	unsigned char *done = xcalloc(qr_graph_n_nodes(g) + 1, 1);
	size_t i;

	*n = 0;
	qr_hy_start(&b, qr_graph_model(g));
	for (i = 0; i < a->n_cle_blockers; i++) {
		size_t k = a->cle_blockers[i].clip;
		struct qr_node *c;

		if (done[k])
			continue;
		done[k] = 1;
		c = qr_hy_own_node(&b, k);
		c->op_type = "Relu";
		c->domain = "";
		c->n_in = 1;
		c->n_attr = 0;
		c->attrs = NULL;
		(*n)++;
	}
	free(done);
	return qr_hy_finish(&b);
}

/* The swapped model, its sets (t.cle) and their layers (x). */
struct swap {
	struct qr_hy_model *h;
	struct qr_analysis t;    /* its CLE sets; weights borrowed */
	struct clm x;
};

static void
swap_free(struct swap *sw)
{
	clm_free(&sw->x);
	qr_an_cle_free(&sw->t);
	qr_hy_model_free(sw->h);
}

/*
 * The swap's variants (swap only, swap base and, when a set can be
 * equalized, swap all) into v from v[*nv] on, each cut against fg (the
 * float model's graph, whose store feeds them); NULL, or why not
 * (heap). v has room for 3 more.
 */
static char *
swap_variants(struct swap *sw, const struct qr_analysis *a,
	      const struct qr_graph *fg, struct qr_cle_swap *r,
	      struct qr_sens_variant *v, size_t *nv)
{
	struct qr_analysis_opts o;
	struct qr_hy_build b;
	struct qr_diag d = {0};
	char *why = NULL;
	size_t i, k, n0 = *nv, n_ok = 0;

	sw->h = swapped(a, fg, &r->n_clips);
	memset(&o, 0, sizeof o);
	o.bits = a->cle_bits;
	sw->t.weights = a->weights;
	sw->t.n_weights = a->n_weights;
	sw->x.a = &sw->t;
	sw->x.bits = a->cle_bits;
	if (qr_graph_new(&sw->h->m, &sw->x.g, &d) != QR_OK ||
	    qr_an_wlayers(sw->x.g, &sw->x.fl, &sw->x.n_fl, &d) != QR_OK) {
		why = xstrdup(d.msg);
		goto out;
	}
	if (sw->x.n_fl != a->n_weights) {
		why = xstrdup("the swapped model's weighted layers are not "
			      "the float model's");
		goto out;
	}
	qr_an_cle(&sw->t, sw->x.g, sw->x.fl, sw->x.n_fl, &o);
	r->n_sets = sw->t.n_cle;
	if (sw->t.n_cle == 0) {
		why = xstrdup("no set can be equalized with the ReLU6 made "
			      "ReLU");
		goto out;
	}
	if ((why = setup(&sw->x)) != NULL)
		goto out;
	r->n_layers = sw->x.n_l;
	for (i = 0; i < sw->t.n_cle; i++) {
		float *w[3], *bb[3];
		char *no = set_check(&sw->x, i);

		sw->x.ok[i] = no == NULL;
		free(no);
		n_ok += sw->x.ok[i];
		for (k = 0; sw->x.ok[i] && k < sw->t.cle[i].n_layers; k++) {
			w[k] = sw->x.l[sw->x.at[i][k]].ew;
			bb[k] = sw->x.l[sw->x.at[i][k]].eb;
		}
		if (sw->x.ok[i])
			equalize(&sw->x, i, w, bb);
	}
	qr_hy_start(&b, &sw->h->m);
	v[*nv].out = &r->swap_only;
	v[(*nv)++].h = qr_hy_finish(&b);
	v[*nv].out = &r->base;
	v[(*nv)++].h = variant(&sw->x, V_BASE);
	if (n_ok > 0) {
		v[*nv].out = &r->all.m;
		v[(*nv)++].h = variant(&sw->x, V_ALL);
	} else {
		r->all.why = xstrdup("no set of the swapped model can be "
				     "equalized without changing its "
				     "function");
	}
	for (i = n0; i < *nv; i++) {
		v[i].kind = QR_SV_CLE;
		v[i].on_float = 1;
		v[i].cut = qr_sp_cut_new(&v[i].h->m, fg);
	}
out:
	qr_diag_clear(&d);
	return why;
}

/* The swap's outcome into r. */
static void
swap_results(struct qr_cle_swap *r, const struct qr_sens_variant *v,
	     size_t nv)
{
	size_t i;

	for (i = 0; i < nv; i++) {
		if (v[i].why == NULL)
			continue;
		if (v[i].out == &r->all.m && r->all.why == NULL)
			r->all.why = xstrdup(v[i].why);
		else if ((v[i].out == &r->base || v[i].out == &r->swap_only) &&
			 r->why == NULL)
			r->why = xasprintf("the swapped model did not run: %s",
					   v[i].why);
	}
	r->all.gain_db = r->base.ran && r->all.m.ran ?
			 r->all.m.sqnr_db - r->base.sqnr_db : NAN;
}

/* The runs' outcome into m: whys of the runs that failed, the gains. */
static void
results(struct qr_cle_measured *m, const struct qr_sens_variant *v,
	size_t nv)
{
	size_t i;

	for (i = 0; i < nv; i++) {
		struct qr_cle_run *r = v[i].out == &m->all.m ? &m->all : NULL;
		size_t k;

		if (v[i].why == NULL)
			continue;
		if (v[i].out == &m->base)
			m->why = xasprintf("the quantized model did not run: "
					   "%s", v[i].why);
		for (k = 0; r == NULL && k < m->n_sets; k++)
			if (v[i].out == &m->sets[k].m)
				r = &m->sets[k];
		if (r != NULL && r->why == NULL)
			r->why = xstrdup(v[i].why);
	}
	m->ran = m->base.ran;
	m->all.gain_db = m->base.ran && m->all.m.ran ?
			 m->all.m.sqnr_db - m->base.sqnr_db : NAN;
	for (i = 0; i < m->n_sets; i++)
		m->sets[i].gain_db = m->base.ran && m->sets[i].m.ran ?
			m->sets[i].m.sqnr_db - m->base.sqnr_db : NAN;
}

/* See analysis-int.h. */
void
qr_clm_measure(struct qr_sens_ctx *c, struct qr_analysis *a,
	       const struct qr_model *fm)
{
	struct qr_cle_measured *m;
	struct qr_sens_variant *v = NULL;
	struct clm x;
	struct swap sw;
	struct qr_diag d = {0};
	size_t nv = 0, n_sets = 0, i, runs0 = c->runs, cut0 = c->cut_runs;
	double t0 = qr_now();

	if (a->n_cle == 0 && a->n_cle_blockers == 0)
		return;
	m = a->cle_meas = xcalloc(1, sizeof *m);
	m->mode = c->o->mode;
	m->bits = a->cle_bits;
	m->n_sets = a->n_cle;
	m->sets = xcalloc(a->n_cle + 1, sizeof *m->sets);
	m->all.gain_db = NAN;
	m->relu6.all.gain_db = NAN;
	m->relu6.tried = a->n_cle_blockers > 0;
	for (i = 0; i < a->n_cle; i++)
		m->sets[i].gain_db = NAN;
	memset(&x, 0, sizeof x);
	memset(&sw, 0, sizeof sw);
	x.a = a;
	x.bits = m->bits;
	if (qr_graph_new(fm, &x.g, &d) != QR_OK ||
	    qr_an_wlayers(x.g, &x.fl, &x.n_fl, &d) != QR_OK) {
		m->why = xstrdup(d.msg);
		goto out;
	}
	if (a->n_cle == 0)
		m->why = xstrdup("no set can be equalized as the model is");
	else if ((m->why = setup(&x)) == NULL)
		n_sets = a->n_cle;
	m->n_layers = x.n_l;
	for (i = 0; i < n_sets; i++) {
		m->sets[i].why = set_check(&x, i);
		x.ok[i] = m->sets[i].why == NULL;
		m->n_equalizable += x.ok[i];
	}
	/* every set's equalization, in order, on the float weights */
	for (i = 0; i < n_sets; i++) {
		float *w[3], *b[3];
		size_t k;

		for (k = 0; x.ok[i] && k < a->cle[i].n_layers; k++) {
			w[k] = x.l[x.at[i][k]].ew;
			b[k] = x.l[x.at[i][k]].eb;
		}
		if (x.ok[i])
			equalize(&x, i, w, b);
	}
	if (n_sets > 0) {
		v = variants(&x, m, c->o->mode, &nv);
		v = xreallocarray(v, nv + 4, sizeof *v);
	} else {
		v = xcalloc(4, sizeof *v);
	}
	memset(v + nv, 0, 3 * sizeof *v);
	if (m->relu6.tried)
		m->relu6.why = swap_variants(&sw, a, x.g, &m->relu6, v, &nv);
	if (nv == 0)
		goto out;
	for (i = 0; i < nv; i++)
		qr_sp_store_want(&c->fst, v[i].cut);
	c->fm = fm;
	if (qr_sens_float_base(c, &d) != QR_OK) {
		free(m->why);
		m->why = xstrdup(d.msg);
		goto out;
	}
	m->samples = c->n_s;
	c->one_lane = 1;
	qr_sens_variants_run(c, v, nv, -1);
	c->one_lane = 0;
	if (n_sets > 0)
		results(m, v, nv);
	if (m->relu6.tried && m->relu6.why == NULL)
		swap_results(&m->relu6, v, nv);
out:
	if (m->relu6.tried && m->relu6.why == NULL && !m->relu6.swap_only.ran)
		m->relu6.why = xstrdup(m->why ? m->why : "the swapped model "
				       "did not run");
	qr_sens_variants_free(v, nv);
	/* the float outputs stay: the candidates' runs compare with them */
	qr_sp_store_release(&c->fst);
	qr_mem_trim();
	c->fm = NULL;
	swap_free(&sw);
	clm_free(&x);
	qr_diag_clear(&d);
	m->runs = c->runs - runs0;
	m->cut_runs = c->cut_runs - cut0;
	m->seconds = qr_now() - t0;
}

/* See analysis-int.h. */
void
qr_clm_free(struct qr_analysis *a)
{
	struct qr_cle_measured *m = a->cle_meas;
	size_t i;

	if (m == NULL)
		return;
	free(m->why);
	free(m->all.why);
	free(m->relu6.why);
	free(m->relu6.all.why);
	for (i = 0; i < m->n_sets; i++)
		free(m->sets[i].why);
	free(m->sets);
	free(m);
	a->cle_meas = NULL;
}
