/*
 * hazards_graph: the hazards a candidate's graph shows, found while
 * qr_analysis_new has it (qr_an_hazards_graph): scales that are zero,
 * negative, denormal or not finite, zero points outside their integer
 * type (bad_scale, bad_zero_point); Concat and Add inputs whose scales
 * are more than 16x apart (input_scales), or that share one scale (kept
 * for the data pass, which compares their float ranges); elementwise
 * chains requantized at every step (requant_chain); Softmax,
 * LayerNormalization, Sigmoid and Exp written in 8 bits
 * (sensitive_8bit); the first and last compute layers quantized
 * (first_last_quantized); per-tensor weights that per-channel scales
 * would improve by more than 6 dB (per_tensor_weight). Each names the
 * candidate's nodes and tensors with the float layers they stand for.
 */
#include "analysis/analysis-int.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"

#define HZ_PER_CHANNEL_DB 6.0 /* predicted per-channel gain, dB */
#define HZ_MAX_REFS 8         /* refs listed per hazard (chains) */
#define HZ_CHAIN_MIN 3        /* elementwise ops in a hazardous chain */

/* One candidate's graph pass. */
struct gctx {
	struct qr_analysis *a;   /* the result (weights, pairings, plan) */
	size_t quant;            /* candidate index */
	const struct qr_graph *fg, *qg; /* float and candidate graphs */
	struct qr_strmap fnodes; /* float node name -> index */
	struct qr_an_hz_list *out; /* the plan's graph hazards */
};

static int
is_op(const struct qr_node *n, const char *op)
{
	return strcmp(n->op_type, op) == 0;
}

static int
is_default(const struct qr_node *n)
{
	return n->domain == NULL || n->domain[0] == '\0' ||
	       strcmp(n->domain, "ai.onnx") == 0;
}

static int
in_list(const char *op, const char *const *list)
{
	size_t i;

	for (i = 0; list[i] != NULL; i++)
		if (strcmp(op, list[i]) == 0)
			return 1;
	return 0;
}

static int
is_q(const struct qr_node *n)
{
	return is_op(n, "QuantizeLinear");
}

static int
is_dq(const struct qr_node *n)
{
	return is_op(n, "DequantizeLinear");
}

/* The constant input i of n, or NULL. */
static const struct qr_tensor_data *
in_const(const struct qr_graph *g, const struct qr_node *n, long i)
{
	if (i < 0 || (size_t)i >= n->n_in || n->in[i][0] == '\0')
		return NULL;
	return qr_graph_const(g, n->in[i]);
}

/* 1 when name is a tensor of the float graph (a node's output or a
 * graph input). */
static int
float_tensor(const struct gctx *c, const char *name)
{
	const struct qr_graph_data *gd = &qr_graph_model(c->fg)->graph;
	size_t i;

	if (qr_graph_producer(c->fg, name) >= 0)
		return 1;
	for (i = 0; i < gd->n_input; i++)
		if (strcmp(gd->inputs[i].name, name) == 0)
			return 1;
	return 0;
}

/* name less one of ONNX Runtime's suffixes for the forms of one value,
 * into buf; 0 when it has none. */
static int
strip_suffix(const char *name, char *buf, size_t n)
{
	static const char *const sfx[] = {
		"_DequantizeLinear_Output", "_QuantizeLinear_Output",
		"_QuantizeLinear_Input", "_quantized", "_quant", NULL,
	};
	size_t len = strlen(name), k, s;

	for (k = 0; sfx[k] != NULL; k++) {
		s = strlen(sfx[k]);
		if (len > s && len - s < n &&
		    strcmp(name + len - s, sfx[k]) == 0) {
			memcpy(buf, name, len - s);
			buf[len - s] = '\0';
			return 1;
		}
	}
	return 0;
}

/*
 * The float tensor holding the value of candidate tensor name: name
 * itself, or a tensor linked to it through QuantizeLinear and
 * DequantizeLinear (either way), or one of those less an ONNX Runtime
 * suffix (X_quantized, X_DequantizeLinear_Output), when the float graph
 * has it. Borrowed from either model; NULL when none is found.
 */
static const char *
float_of(const struct gctx *c, const char *name, char *buf, size_t bufn)
{
	const char *chain[16];
	size_t n = 0, i, k, nc;

	chain[n++] = name;
	for (i = 0; i < n; i++) {
		const struct qr_node *p = qr_graph_producer_node(c->qg, chain[i]);
		const size_t *cs = qr_graph_consumers(c->qg, chain[i], &nc);

		if (p != NULL && (is_q(p) || is_dq(p)) && p->n_in > 0 &&
		    n < 16)
			chain[n++] = p->in[0];
		for (k = 0; k < nc && n < 16; k++) {
			const struct qr_node *q = qr_graph_node(c->qg, cs[k]);

			if ((is_q(q) || is_dq(q)) && q->n_out > 0 &&
			    strcmp(q->in[0], chain[i]) == 0)
				chain[n++] = q->out[0];
		}
		/* drop repeats so the walk ends */
		for (k = 0; k + 1 < n; k++)
			if (strcmp(chain[k], chain[n - 1]) == 0) {
				n--;
				break;
			}
	}
	for (i = 0; i < n; i++)
		if (float_tensor(c, chain[i]))
			return chain[i];
	for (i = 0; i < n; i++)
		if (strip_suffix(chain[i], buf, bufn) && float_tensor(c, buf))
			return buf;
	return NULL;
}

/* The float layer (node name) behind candidate tensor name, or NULL. */
static const char *
layer_of_tensor(const struct gctx *c, const char *name)
{
	char buf[512];
	const char *f = float_of(c, name, buf, sizeof buf);
	const struct qr_node *p = f != NULL ? qr_graph_producer_node(c->fg, f) : NULL;

	return p != NULL ? p->name : NULL;
}

/* The float layer behind candidate node n: the float node of the same
 * name (less "_quant"), else the producer of its output's value, else,
 * for a QuantizeLinear or DequantizeLinear (a weight's), the layer of
 * the first node that reads its output. */
static const char *
layer_of_node(const struct gctx *c, const struct qr_node *n)
{
	const char *l = NULL;
	const size_t *cs;
	char buf[512];
	size_t i, nc;

	i = qr_strmap_get(&c->fnodes, n->name);
	if (i == QR_STRMAP_NONE && strip_suffix(n->name, buf, sizeof buf))
		i = qr_strmap_get(&c->fnodes, buf);
	if (i != QR_STRMAP_NONE)
		return qr_graph_node(c->fg, i)->name;
	if (n->n_out == 0)
		return NULL;
	l = layer_of_tensor(c, n->out[0]);
	if (l != NULL || !(is_q(n) || is_dq(n)))
		return l;
	cs = qr_graph_consumers(c->qg, n->out[0], &nc);
	for (i = 0; i < nc && l == NULL; i++) {
		const struct qr_node *r = qr_graph_node(c->qg, cs[i]);

		if (!is_q(r) && !is_dq(r))
			l = layer_of_node(c, r);
	}
	return l;
}

/* ---- scales and zero points ---- */

/* Where an op keeps its scales and zero points: scale input s, zero
 * point z, and the input x holding the integers the zero point belongs
 * to (-1: an output, whose type is the zero point's). */
struct qslot {
	const char *op;
	signed char s, z, x;
};

static const struct qslot qslots[] = {
	{ "QuantizeLinear", 1, 2, -1 },
	{ "DequantizeLinear", 1, 2, 0 },
	{ "QLinearConv", 1, 2, 0 }, { "QLinearConv", 4, 5, 3 },
	{ "QLinearConv", 6, 7, -1 },
	{ "QLinearMatMul", 1, 2, 0 }, { "QLinearMatMul", 4, 5, 3 },
	{ "QLinearMatMul", 6, 7, -1 },
	{ "QLinearAdd", 1, 2, 0 }, { "QLinearAdd", 4, 5, 3 },
	{ "QLinearAdd", 6, 7, -1 },
	{ "QLinearMul", 1, 2, 0 }, { "QLinearMul", 4, 5, 3 },
	{ "QLinearMul", 6, 7, -1 },
	{ "QGemm", 1, 2, 0 }, { "QGemm", 4, 5, 3 }, { "QGemm", 7, 8, -1 },
	{ "QLinearGlobalAveragePool", 1, 2, 0 },
	{ "QLinearGlobalAveragePool", 3, 4, -1 },
	{ "QLinearAveragePool", 1, 2, 0 }, { "QLinearAveragePool", 3, 4, -1 },
	{ "QLinearSigmoid", 1, 2, 0 }, { "QLinearSigmoid", 3, 4, -1 },
	{ "QLinearLeakyRelu", 1, 2, 0 }, { "QLinearLeakyRelu", 3, 4, -1 },
	{ "QLinearSoftmax", 1, 2, 0 }, { "QLinearSoftmax", 3, 4, -1 },
	{ "ConvInteger", -1, 2, 0 }, { "ConvInteger", -1, 3, 1 },
	{ "MatMulInteger", -1, 2, 0 }, { "MatMulInteger", -1, 3, 1 },
	{ "MatMulNBits", 2, -1, -1 },
};

/* Smallest positive normal value of a float dtype. */
static double
normal_min(int dtype)
{
	switch (dtype) {
	case QR_DT_FLOAT16:
		return 6.103515625e-05;
	case QR_DT_DOUBLE:
		return DBL_MIN;
	default:
		return FLT_MIN;
	}
}

/* A bad_scale or bad_zero_point hazard: bad of t's values, t a
 * constant input of node n; t is marked seen (one hazard per tensor). */
static struct qr_hazard *
param_hazard(struct gctx *c, int kind, const struct qr_node *n,
	     const struct qr_tensor_data *t, size_t bad,
	     struct qr_strmap *seen)
{
	const char *layer = layer_of_node(c, n);
	struct qr_hazard *h = qr_an_hz_add(c->out, kind, c->quant);

	qr_strmap_put(seen, t->name, 0);
	qr_an_hz_ref(h, n->name, layer);
	qr_an_hz_ref(h, t->name, layer);
	qr_an_hz_num(h, "bad", (double)bad);
	qr_an_hz_num(h, "elements", (double)t->n_elem);
	return h;
}

/* Scale tensor sc of node n: zero, negative, denormal, non-finite. */
static void
check_scale(struct gctx *c, const struct qr_node *n,
	    const struct qr_tensor_data *sc, struct qr_strmap *seen)
{
	size_t i, zero = 0, neg = 0, den = 0, inf = 0, bad;
	double first = NAN, nmin = normal_min(sc->dtype);
	struct qr_hazard *h;

	if (sc->data == NULL || qr_strmap_get(seen, sc->name) !=
	    QR_STRMAP_NONE)
		return;
	for (i = 0; i < sc->n_elem; i++) {
		double v = qr_tensor_get(sc, i);

		if (!isfinite(v))
			inf++;
		else if (v == 0)
			zero++;
		else if (v < 0)
			neg++;
		else if (v < nmin)
			den++;
		else
			continue;
		if (zero + neg + den + inf == 1)
			first = v;
	}
	bad = zero + neg + den + inf;
	if (bad == 0)
		return;
	h = param_hazard(c, QR_HZ_BAD_SCALE, n, sc, bad, seen);
	qr_an_hz_num(h, "zero", (double)zero);
	qr_an_hz_num(h, "negative", (double)neg);
	qr_an_hz_num(h, "denormal", (double)den);
	qr_an_hz_num(h, "nonfinite", (double)inf);
	qr_an_hz_text(&h->what, "Scale '%s' of %s '%s': %zu of %zu values "
		      "are zero (%zu), negative (%zu), denormal (%zu) or not "
		      "finite (%zu); the first is %.6g.", sc->name,
		      n->op_type, n->name, bad, sc->n_elem, zero, neg, den,
		      inf, first);
	qr_an_hz_text(&h->fix, "Recompute this scale from the tensor's "
		      "range: a scale must be a positive, normal, finite "
		      "number (zero or denormal makes x / scale overflow, "
		      "negative flips the sign).");
}

/* Zero point zp of node n against the integer range of dtype. */
static void
check_zp(struct gctx *c, const struct qr_node *n,
	 const struct qr_tensor_data *zp, int dtype, struct qr_strmap *seen)
{
	double lo, hi, first = NAN;
	size_t i, bad = 0;
	struct qr_hazard *h;

	qr_as_qrange(dtype, &lo, &hi);
	if (zp->data == NULL || !isfinite(lo) ||
	    qr_strmap_get(seen, zp->name) != QR_STRMAP_NONE)
		return;
	for (i = 0; i < zp->n_elem; i++) {
		double v = qr_tensor_get(zp, i);

		if (!(v >= lo && v <= hi) && bad++ == 0)
			first = v;
	}
	if (bad == 0)
		return;
	h = param_hazard(c, QR_HZ_BAD_ZERO_POINT, n, zp, bad, seen);
	qr_an_hz_num(h, "value", first);
	qr_an_hz_num(h, "qmin", lo);
	qr_an_hz_num(h, "qmax", hi);
	qr_an_hz_text(&h->what, "Zero point '%s' (%s) of %s '%s': %zu of %zu "
		"values lie outside %s's range [%.0f, %.0f]; the first is "
		"%.6g.", zp->name, qr_dtype_name(zp->dtype), n->op_type,
		n->name, bad, zp->n_elem, qr_dtype_name(dtype), lo, hi, first);
	qr_an_hz_text(&h->fix, "Store the zero point in the quantized "
		      "tensor's own type (%s) with a value inside [%.0f, "
		      "%.0f]; ONNX Runtime refuses the model otherwise.",
		      qr_dtype_name(dtype), lo, hi);
}

static void
check_params(struct gctx *c)
{
	struct qr_strmap seen_s = {0}, seen_z = {0};
	const size_t *topo = qr_graph_topo_order(c->qg);
	size_t nn = qr_graph_n_nodes(c->qg), k, j;

	for (k = 0; k < nn; k++) {
		const struct qr_node *n = qr_graph_node(c->qg, topo[k]);
		struct qslot sl[64];
		size_t ns = 0;

		for (j = 0; j < sizeof qslots / sizeof qslots[0]; j++)
			if (is_op(n, qslots[j].op))
				sl[ns++] = qslots[j];
		if (is_op(n, "QLinearConcat")) {
			sl[ns++] = (struct qslot){ "", 0, 1, -1 };
			for (j = 2; j + 2 < n->n_in && ns < 64; j += 3)
				sl[ns++] = (struct qslot){
					"", (signed char)(j + 1),
					(signed char)(j + 2), (signed char)j };
		}
		for (j = 0; j < ns; j++) {
			const struct qr_tensor_data *sc = in_const(c->qg, n,
								   sl[j].s);
			const struct qr_tensor_data *zp = in_const(c->qg, n,
								   sl[j].z);
			const struct qr_tensor_data *x = in_const(c->qg, n,
								  sl[j].x);

			if (sc != NULL)
				check_scale(c, n, sc, &seen_s);
			if (zp != NULL)
				check_zp(c, n, zp, x != NULL ? x->dtype
							     : zp->dtype,
					 &seen_z);
		}
	}
	qr_strmap_free(&seen_s);
	qr_strmap_free(&seen_z);
}

/* ---- Concat and Add inputs ---- */

/* One quantized, non-constant input of a Concat or Add. */
struct hz_in {
	const char *name;        /* the tensor the op reads */
	double scale;            /* its scale (the first element) */
};

/* The quantized inputs of n with their scales (QDQ: the
 * DequantizeLinear feeding each; QLinearAdd, QLinearConcat: their scale
 * inputs); constants are left out. Returns the count. */
static size_t
op_inputs(const struct gctx *c, const struct qr_node *n, struct hz_in *v,
	  size_t max)
{
	const struct qr_tensor_data *sc;
	size_t m = 0, j;

	if (is_op(n, "QLinearAdd") || is_op(n, "QLinearConcat")) {
		/* (x, scale, zero point) triplets: A and B of QLinearAdd
		 * (inputs 0-5), the inputs of QLinearConcat from 2 on */
		size_t end = is_op(n, "QLinearAdd") ? 6 : n->n_in;

		for (j = is_op(n, "QLinearAdd") ? 0 : 2; j + 2 < end &&
		     j + 2 < n->n_in && m < max; j += 3)
			if (in_const(c->qg, n, (long)j) == NULL &&
			    (sc = in_const(c->qg, n, (long)j + 1)) != NULL &&
			    sc->n_elem > 0 && sc->data != NULL)
				v[m++] = (struct hz_in){ n->in[j],
						 qr_tensor_get(sc, 0) };
		return m;
	}
	for (j = 0; j < n->n_in && m < max; j++) {
		const struct qr_node *p;

		if (n->in[j][0] == '\0' || qr_graph_const(c->qg, n->in[j]))
			continue;
		p = qr_graph_producer_node(c->qg, n->in[j]);
		if (p == NULL || !is_dq(p))
			return 0; /* a float input: not a quantized op */
		if (in_const(c->qg, p, 0) != NULL)
			continue; /* a constant, dequantized */
		sc = in_const(c->qg, p, 1);
		if (sc == NULL || sc->n_elem == 0 || sc->data == NULL)
			return 0;
		v[m++] = (struct hz_in){ n->in[j], qr_tensor_get(sc, 0) };
	}
	return m;
}

static void
add_group(struct gctx *c, const struct qr_node *n, const struct hz_in *v,
	  size_t m)
{
	struct qr_an_hazard_plan *pl = c->a->hz_plan;
	struct qr_an_hz_group *g;
	char buf[512];
	size_t j;

	pl->groups = xreallocarray(pl->groups, pl->n_groups + 1,
				   sizeof *pl->groups);
	g = &pl->groups[pl->n_groups++];
	memset(g, 0, sizeof *g);
	g->quant = c->quant;
	g->op = xstrdup(n->op_type);
	g->node = xstrdup(n->name);
	g->layer = layer_of_node(c, n) ? xstrdup(layer_of_node(c, n)) : NULL;
	g->scale = v[0].scale;
	g->n = m;
	g->qname = xcalloc(m, sizeof *g->qname);
	g->fname = xcalloc(m, sizeof *g->fname);
	g->flayer = xcalloc(m, sizeof *g->flayer);
	for (j = 0; j < m; j++) {
		const char *f = float_of(c, v[j].name, buf, sizeof buf);
		const struct qr_node *p = f ? qr_graph_producer_node(c->fg, f) : NULL;

		g->qname[j] = xstrdup(v[j].name);
		g->fname[j] = f ? xstrdup(f) : NULL;
		g->flayer[j] = p ? xstrdup(p->name) : NULL;
	}
}

/* Concat and Add (QDQ, QLinearConcat, QLinearAdd): input scales more
 * than QR_AN_HZ_SPREAD apart are a graph hazard; inputs that share one
 * scale become a group for the data pass. */
static void
check_joins(struct gctx *c)
{
	const size_t *topo = qr_graph_topo_order(c->qg);
	size_t nn = qr_graph_n_nodes(c->qg), k, j, m, lo, hi;
	struct hz_in v[64];

	for (k = 0; k < nn; k++) {
		const struct qr_node *n = qr_graph_node(c->qg, topo[k]);
		struct qr_hazard *h;
		const char *layer;
		double ratio;
		int bad = 0;

		if (!(((is_op(n, "Concat") || is_op(n, "Add")) &&
		       is_default(n)) || is_op(n, "QLinearConcat") ||
		      is_op(n, "QLinearAdd")))
			continue;
		m = op_inputs(c, n, v, 64);
		if (m < 2)
			continue;
		lo = hi = 0;
		for (j = 0; j < m; j++) {
			if (!(v[j].scale > 0) || !isfinite(v[j].scale))
				bad = 1;
			else if (v[j].scale < v[lo].scale)
				lo = j;
			else if (v[j].scale > v[hi].scale)
				hi = j;
		}
		if (bad) /* bad_scale says it */
			continue;
		ratio = v[hi].scale / v[lo].scale;
		if (ratio <= 1 + 1e-6) {
			add_group(c, n, v, m);
			continue;
		}
		if (!(ratio > QR_AN_HZ_SPREAD))
			continue;
		layer = layer_of_node(c, n);
		h = qr_an_hz_add(c->out, QR_HZ_INPUT_SCALES, c->quant);
		qr_an_hz_ref(h, n->name, layer);
		qr_an_hz_ref(h, v[lo].name, layer_of_tensor(c, v[lo].name));
		qr_an_hz_ref(h, v[hi].name, layer_of_tensor(c, v[hi].name));
		qr_an_hz_num(h, "scale_min", v[lo].scale);
		qr_an_hz_num(h, "scale_max", v[hi].scale);
		qr_an_hz_num(h, "ratio", ratio);
		qr_an_hz_text(&h->what, "%s '%s' reads inputs whose scales are "
			"%.3gx apart (%.4g for '%s', %.4g for '%s'): the "
			"result can keep only one of the two steps, and the "
			"finer input loses about %.1f bits.", n->op_type,
			n->name, ratio, v[lo].scale, v[lo].name, v[hi].scale,
			v[hi].name, log2(ratio));
		qr_an_hz_text(&h->fix, "Bring the inputs' ranges closer before "
			"the %s (rescale the branch with the large range, e.g. "
			"in the weights that make it), or keep the %s and "
			"its inputs in 16 bits.", n->op_type, n->op_type);
	}
}

/* ---- elementwise chains ---- */

static const char *const eltwise_ops[] = {
	"Add", "Sub", "Mul", "Div", "Clip", "Relu", "LeakyRelu", "PRelu",
	"Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Log", "Pow",
	"Sqrt", "Reciprocal", "Neg", "Abs", "Min", "Max", "Erf", "Softplus",
	"Elu", "Selu", "Mish", NULL,
};
static const char *const qeltwise_ops[] = {
	"QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu",
	NULL,
};

/* 1 when n is an elementwise op whose output is requantized: a float
 * elementwise op whose output feeds a QuantizeLinear, or a QLinear one. */
static int
requantized(const struct gctx *c, const struct qr_node *n)
{
	const size_t *cs;
	size_t nc, k;

	if (n->n_out == 0)
		return 0;
	if (in_list(n->op_type, qeltwise_ops))
		return 1;
	if (!is_default(n) || !in_list(n->op_type, eltwise_ops))
		return 0;
	cs = qr_graph_consumers(c->qg, n->out[0], &nc);
	for (k = 0; k < nc; k++)
		if (is_q(qr_graph_node(c->qg, cs[k])))
			return 1;
	return 0;
}

/* The one node other than QuantizeLinear/DequantizeLinear that reads
 * the value of tensor name (through its Q/DQ nodes), or -1 when there
 * are none or several. */
static long
sole_reader(const struct gctx *c, const char *name, int depth)
{
	size_t nc, k;
	const size_t *cs = qr_graph_consumers(c->qg, name, &nc);
	long one = -1, r;

	if (qr_graph_is_output(c->qg, name))
		return -2;
	for (k = 0; k < nc; k++) {
		const struct qr_node *q = qr_graph_node(c->qg, cs[k]);

		if ((is_q(q) || is_dq(q)) && q->n_out > 0) {
			if (depth >= 2)
				return -2;
			r = sole_reader(c, q->out[0], depth + 1);
		} else {
			r = (long)cs[k];
		}
		if (r == -1)
			continue;
		if (r == -2 || (one >= 0 && one != r))
			return -2;
		one = r;
	}
	return one;
}

static size_t
uf_find(size_t *up, size_t i)
{
	while (up[i] != i)
		i = up[i] = up[up[i]];
	return i;
}

/* Chains of HZ_CHAIN_MIN or more requantized elementwise ops, each the
 * only reader of the one before. */
static void
check_chains(struct gctx *c)
{
	const size_t *topo = qr_graph_topo_order(c->qg);
	size_t nn = qr_graph_n_nodes(c->qg), k, j, *up, *size;
	char *req, *done;

	up = xmalloc((nn ? nn : 1) * sizeof *up);
	size = xcalloc(nn ? nn : 1, sizeof *size);
	req = xcalloc(nn ? nn : 1, 1);
	done = xcalloc(nn ? nn : 1, 1);
	for (k = 0; k < nn; k++) {
		up[k] = k;
		req[k] = (char)requantized(c, qr_graph_node(c->qg, k));
	}
	for (k = 0; k < nn; k++) {
		const struct qr_node *n = qr_graph_node(c->qg, k);
		long r;

		if (!req[k])
			continue;
		r = sole_reader(c, n->out[0], 0);
		if (r >= 0 && req[r])
			up[uf_find(up, k)] = uf_find(up, (size_t)r);
	}
	for (k = 0; k < nn; k++)
		if (req[k])
			size[uf_find(up, k)]++;
	for (k = 0; k < nn; k++) {
		size_t root = req[topo[k]] ? uf_find(up, topo[k]) : 0;
		struct qr_buf b = {0};
		struct qr_hazard *h;
		size_t listed = 0;

		if (!req[topo[k]] || done[root] || size[root] < HZ_CHAIN_MIN)
			continue;
		done[root] = 1;
		h = qr_an_hz_add(c->out, QR_HZ_REQUANT_CHAIN, c->quant);
		for (j = k; j < nn; j++) {
			const struct qr_node *n = qr_graph_node(c->qg, topo[j]);

			if (!req[topo[j]] || uf_find(up, topo[j]) != root)
				continue;
			if (listed < HZ_MAX_REFS)
				qr_an_hz_ref(h, n->name, layer_of_node(c, n));
			qr_buf_printf(&b, "%s%s", listed ?
				      " \xe2\x86\x92 " : "", n->op_type);
			listed++;
		}
		qr_an_hz_num(h, "ops", (double)size[root]);
		qr_an_hz_text(&h->what, "%zu elementwise ops (%s) are "
			"requantized after every step: each adds up to half a "
			"step of rounding error to what is one function "
			"written out op by op (a HardSwish, a SiLU, a "
			"normalization's scale and shift).", size[root],
			b.data ? b.data : "");
		qr_an_hz_text(&h->fix, "Fuse the chain into one op (HardSwish, "
			"HardSigmoid, a custom QLinear op), or quantize only "
			"its input and output and keep the steps between in "
			"float.");
		qr_buf_free(&b);
	}
	free(done);
	free(req);
	free(size);
	free(up);
}

/* ---- ops that want more than 8 bits ---- */

static const char *const sensitive_ops[] = {
	"Softmax", "LayerNormalization", "Sigmoid", "Exp",
	"SkipLayerNormalization", "SimplifiedLayerNormalization",
	"SkipSimplifiedLayerNormalization", "QLinearSoftmax",
	"QLinearSigmoid", NULL,
};

/* Softmax, LayerNormalization, Sigmoid and Exp whose output is written
 * in 8 bits or fewer: QDQ, a QuantizeLinear of the output; QOperator,
 * the QLinear op's output zero point. */
static void
check_sensitive(struct gctx *c)
{
	const size_t *topo = qr_graph_topo_order(c->qg);
	size_t nn = qr_graph_n_nodes(c->qg), k, j, nc;

	for (k = 0; k < nn; k++) {
		const struct qr_node *n = qr_graph_node(c->qg, topo[k]);
		const struct qr_tensor_data *sc = NULL, *zp = NULL;
		const struct qr_node *q = NULL;
		const size_t *cs;
		struct qr_hazard *h;
		int bits, qop;
		double s;

		if (n->n_out == 0 || !in_list(n->op_type, sensitive_ops))
			continue;
		qop = strncmp(n->op_type, "QLinear", 7) == 0;
		if (qop) {
			sc = in_const(c->qg, n, 3);
			zp = in_const(c->qg, n, 4);
		} else {
			cs = qr_graph_consumers(c->qg, n->out[0], &nc);
			for (j = 0; j < nc && q == NULL; j++)
				if (is_q(qr_graph_node(c->qg, cs[j])))
					q = qr_graph_node(c->qg, cs[j]);
			if (q == NULL)
				continue;
			sc = in_const(c->qg, q, 1);
			zp = in_const(c->qg, q, 2);
		}
		bits = zp != NULL ? qr_dtype_bits(zp->dtype) : 8;
		if (bits <= 0 || bits > 8)
			continue;
		s = sc != NULL && sc->n_elem > 0 && sc->data != NULL ?
			qr_tensor_get(sc, 0) : NAN;
		h = qr_an_hz_add(c->out, QR_HZ_SENSITIVE_8BIT, c->quant);
		qr_an_hz_ref(h, n->name, layer_of_node(c, n));
		qr_an_hz_num(h, "bits", bits);
		qr_an_hz_num(h, "scale", s);
		qr_an_hz_text(&h->what, "%s '%s' writes its output in %d bits "
			"(scale %.4g): values that differ by less than a step "
			"become equal%s.", n->op_type, n->name, bits, s,
			strstr(n->op_type, "Softmax") != NULL ?
				", and probabilities below half a step become 0"
				: strstr(n->op_type, "Norm") != NULL ?
				", across a normalized range whose outliers "
				"stretch the scale" : "");
		qr_an_hz_text(&h->fix, "Keep this op's output in 16 bits (ONNX "
			"Runtime: a 16-bit activation type for it through "
			"TensorQuantOverrides) or in float "
			"(nodes_to_exclude).");
	}
}

/* ---- first and last compute layers ---- */

static const char *const compute_ops[] = {
	"Conv", "ConvTranspose", "Gemm", "MatMul", "Attention",
	"QLinearConv", "QLinearMatMul", "QGemm", "QAttention", "ConvInteger",
	"MatMulInteger", "MatMulNBits", "DynamicQuantizeMatMul",
	"MatMulIntegerToFloat", NULL,
};

/* The dequantized weight's SQNR of candidate c->quant's layer name, or
 * NaN. */
static double
weight_sqnr(const struct gctx *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->a->n_qweights; i++)
		if (c->a->qweights[i].quant == c->quant &&
		    c->a->qweights[i].quant_layer != NULL &&
		    strcmp(c->a->qweights[i].quant_layer, name) == 0)
			return c->a->qweights[i].sqnr_db;
	return NAN;
}

static void
check_first_last(struct gctx *c)
{
	const struct qr_quant_summary *qs = &c->a->quants[c->quant];
	const struct qr_coverage_entry *e[2] = { NULL, NULL };
	const struct qr_node *node[2] = { NULL, NULL };
	struct qr_hazard *h;
	size_t i, nn = qr_graph_n_nodes(c->qg);
	int k;

	for (i = 0; i < qs->n_coverage; i++) {
		const char *op = strrchr(qs->coverage[i].op, ':');

		op = op != NULL ? op + 1 : qs->coverage[i].op;
		if (!in_list(op, compute_ops))
			continue;
		if (e[0] == NULL)
			e[0] = &qs->coverage[i];
		e[1] = &qs->coverage[i];
	}
	if (e[0] == NULL || (!e[0]->quantized && !e[1]->quantized))
		return;
	for (i = 0; i < nn; i++)
		for (k = 0; k < 2; k++)
			if (node[k] == NULL &&
			    strcmp(qr_graph_node(c->qg, i)->name, e[k]->layer)
			    == 0)
				node[k] = qr_graph_node(c->qg, i);
	h = qr_an_hz_add(c->out, QR_HZ_FIRST_LAST, c->quant);
	for (k = 0; k < 2; k++) {
		if (!e[k]->quantized || (k == 1 && e[1] == e[0]))
			continue;
		qr_an_hz_ref(h, e[k]->layer, node[k] ? layer_of_node(c, node[k])
					       : NULL);
		qr_an_hz_num(h, k == 0 ? "first_weight_sqnr_db"
				 : "last_weight_sqnr_db",
		       weight_sqnr(c, e[k]->layer));
	}
	if (e[0]->quantized && e[1]->quantized && e[1] != e[0])
		qr_an_hz_text(&h->what, "The first compute layer ('%s') and "
			"the last ('%s') run quantized: the first reads the "
			"raw input, whose rounding every later layer inherits, "
			"and the last writes the outputs with no layer after "
			"it to absorb its error.", e[0]->layer, e[1]->layer);
	else
		qr_an_hz_text(&h->what, "The %s compute layer ('%s') runs "
			"quantized: %s", e[0]->quantized ? "first" : "last",
			e[0]->quantized ? e[0]->layer : e[1]->layer,
			e[0]->quantized ? "it reads the raw input, whose "
			"rounding every later layer inherits." :
			"it writes the outputs with no layer after it to "
			"absorb its error.");
	qr_an_hz_text(&h->fix, "Keep the first and last compute layers in "
		"float or 16 bits (ONNX Runtime: nodes_to_exclude) unless the "
		"report shows their error is small.");
}

/* ---- per-tensor weights ---- */

static void
check_per_tensor(struct gctx *c)
{
	size_t i, k;

	for (i = 0; i < c->a->n_qweights; i++) {
		const struct qr_quant_weight *q = &c->a->qweights[i];
		const struct qr_weight_stats *w = NULL;
		struct qr_hazard *h;
		double gain;

		if (q->quant != c->quant || q->granularity == NULL ||
		    strcmp(q->granularity, "per-tensor") != 0 ||
		    q->layer == NULL)
			continue;
		for (k = 0; k < c->a->n_weights && w == NULL; k++)
			if (c->a->weights[k].layer != NULL &&
			    strcmp(c->a->weights[k].layer, q->layer) == 0)
				w = &c->a->weights[k];
		if (w == NULL)
			continue;
		gain = w->sqnr_per_channel_db - w->sqnr_per_tensor_db;
		if (!isfinite(gain) || !(gain > HZ_PER_CHANNEL_DB))
			continue;
		h = qr_an_hz_add(c->out, QR_HZ_PER_TENSOR, c->quant);
		qr_an_hz_ref(h, q->quant_layer, q->layer);
		qr_an_hz_ref(h, q->quant_weight, q->layer);
		qr_an_hz_num(h, "gain_db", gain);
		qr_an_hz_num(h, "sqnr_per_tensor_db", w->sqnr_per_tensor_db);
		qr_an_hz_num(h, "sqnr_per_channel_db", w->sqnr_per_channel_db);
		qr_an_hz_num(h, "sqnr_db", q->sqnr_db);
		qr_an_hz_text(&h->what, "Weight '%s' of '%s' has one scale for "
			"the whole tensor, but its channels' ranges differ so "
			"much that one scale per channel is predicted to gain "
			"%.1f dB (%.1f dB per tensor, %.1f dB per channel).",
			q->weight != NULL ? q->weight : "", q->layer, gain,
			w->sqnr_per_tensor_db, w->sqnr_per_channel_db);
		qr_an_hz_text(&h->fix, "Quantize this weight per channel (ONNX "
			"Runtime: per_channel=True), or equalize its channels "
			"with cross-layer equalization first.");
	}
}

/* The graph pass for one candidate: every check in turn, appending to
 * a->hz_plan. Borrows the graphs for the call only. */
void
qr_an_hazards_graph(struct qr_analysis *a, size_t quant,
		    const struct qr_graph *fg, const struct qr_graph *qg)
{
	struct gctx c;
	size_t i, nf = qr_graph_n_nodes(fg);

	if (a->hz_plan == NULL)
		a->hz_plan = xcalloc(1, sizeof *a->hz_plan);
	memset(&c, 0, sizeof c);
	c.a = a;
	c.quant = quant;
	c.fg = fg;
	c.qg = qg;
	c.out = &a->hz_plan->graph;
	qr_strmap_reserve(&c.fnodes, nf);
	for (i = 0; i < nf; i++)
		qr_strmap_put(&c.fnodes, qr_graph_node(fg, i)->name, i);
	check_params(&c);
	check_joins(&c);
	check_chains(&c);
	check_sensitive(&c);
	check_first_last(&c);
	check_per_tensor(&c);
	qr_strmap_free(&c.fnodes);
}
