/*
 * hazards: what in a candidate is known to cost accuracy, each with the
 * numbers that show it and its fix in one sentence.
 *
 * Graph hazards are found while qr_analysis_new has the candidate's graph
 * (qr_an_hazards_graph): scales that are zero, negative, denormal or not
 * finite and zero points outside their integer type; Concat and Add
 * inputs whose scales are more than 16x apart; elementwise chains
 * requantized at every step; Softmax, LayerNormalization, Sigmoid and Exp
 * written in 8 bits; the first and last compute layers quantized; and
 * per-tensor weights whose channels would gain more than 6 dB per
 * channel. Data hazards come from the data run's statistics
 * (qr_analysis_hazards, once the data is in): Concat and Add inputs
 * forced to share one scale although their float ranges are more than
 * 16x apart, saturation over 1%, scales more than 4x off what the data
 * needs, and one-signed values in a range that keeps half its codes for
 * the other sign.
 *
 * The graph pass keeps what the data pass needs (the shared-scale groups,
 * by float tensor name) in a->hz_plan, so the result borrows nothing.
 */
#include "analysis/analysis-int.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"

#define HZ_SCALE_SPREAD 16.0  /* input scales or ranges this far apart */
#define HZ_SCALE_OFF 4.0      /* a scale this far off the data's */
#define HZ_SATURATION 0.01    /* share of values clipped (as the
			       * saturation flag) */
#define HZ_HALF_WASTED 0.4    /* share of codes kept for the absent sign */
#define HZ_PER_CHANNEL_DB 6.0 /* predicted per-channel gain, dB */
#define HZ_MAX_REFS 8         /* refs listed per hazard (chains) */
#define HZ_CHAIN_MIN 3        /* elementwise ops in a hazardous chain */

/* A Concat or Add whose quantized inputs share one scale: the data pass
 * compares their float ranges. */
struct hz_group {
	size_t quant;            /* candidate index */
	char *op;                /* "Concat", "QLinearAdd", ... */
	char *node;              /* candidate node name */
	char *layer;             /* its float layer, or NULL */
	double scale;            /* the shared scale */
	size_t n;                /* inputs */
	char **qname;            /* per input: candidate tensor */
	char **fname;            /* per input: float tensor, or NULL */
	char **flayer;           /* per input: float producer, or NULL */
};

struct qr_an_hazard_plan {
	size_t n_graph;
	struct qr_hazard *graph; /* graph hazards of every candidate */
	size_t n_groups;
	struct hz_group *groups;
};

const char *
qr_hazard_kind_name(int kind)
{
	static const char *const names[QR_HZ_N] = {
		[QR_HZ_BAD_SCALE] = "bad_scale",
		[QR_HZ_BAD_ZERO_POINT] = "bad_zero_point",
		[QR_HZ_SATURATION] = "saturation",
		[QR_HZ_SCALE_MISMATCH] = "scale_mismatch",
		[QR_HZ_INPUT_SCALES] = "input_scales",
		[QR_HZ_SHARED_SCALE] = "shared_scale",
		[QR_HZ_SENSITIVE_8BIT] = "sensitive_8bit",
		[QR_HZ_REQUANT_CHAIN] = "requant_chain",
		[QR_HZ_HALF_RANGE] = "half_range",
		[QR_HZ_PER_TENSOR] = "per_tensor_weight",
		[QR_HZ_FIRST_LAST] = "first_last_quantized",
	};

	return kind >= 0 && kind < QR_HZ_N ? names[kind] : "unknown";
}

/* ---- building hazards ---- */

struct hz_list {
	size_t n;
	struct qr_hazard *v;
};

static struct qr_hazard *
hz_add(struct hz_list *l, int kind, size_t quant)
{
	struct qr_hazard *h;

	l->v = xreallocarray(l->v, l->n + 1, sizeof *l->v);
	h = &l->v[l->n++];
	memset(h, 0, sizeof *h);
	h->kind = kind;
	h->quant = quant;
	return h;
}

static void
hz_ref(struct qr_hazard *h, const char *name, const char *layer)
{
	struct qr_hazard_ref *r;

	h->refs = xreallocarray(h->refs, h->n_refs + 1, sizeof *h->refs);
	r = &h->refs[h->n_refs++];
	r->name = xstrdup(name != NULL ? name : "");
	r->layer = layer != NULL && layer[0] != '\0' ? xstrdup(layer) : NULL;
}

static void
hz_num(struct qr_hazard *h, const char *key, double v)
{
	QR_ASSERT(h->n_nums < QR_HAZARD_MAX_NUMS);
	h->nums[h->n_nums].key = key;
	h->nums[h->n_nums++].v = v;
}

static void hz_text(char **dst, const char *fmt, ...) QR_PRINTF(2, 3);

static void
hz_text(char **dst, const char *fmt, ...)
{
	struct qr_buf b = {0};
	va_list ap;

	va_start(ap, fmt);
	qr_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	free(*dst);
	*dst = qr_buf_take(&b);
}

static void
hz_free_one(struct qr_hazard *h)
{
	size_t i;

	for (i = 0; i < h->n_refs; i++) {
		free(h->refs[i].name);
		free(h->refs[i].layer);
	}
	free(h->refs);
	free(h->what);
	free(h->fix);
}

static void
hz_copy(struct qr_hazard *dst, const struct qr_hazard *src)
{
	size_t i;

	*dst = *src;
	dst->refs = xcalloc(src->n_refs + 1, sizeof *dst->refs);
	for (i = 0; i < src->n_refs; i++) {
		dst->refs[i].name = xstrdup(src->refs[i].name);
		dst->refs[i].layer = src->refs[i].layer != NULL ?
			xstrdup(src->refs[i].layer) : NULL;
	}
	dst->what = xstrdup(src->what);
	dst->fix = xstrdup(src->fix);
}

/* "uint8", "int8", ... for an integer range, else "integer". */
static const char *
range_type(double qmin, double qmax)
{
	if (qmin == 0 && qmax == 255)
		return "uint8";
	if (qmin == -128 && qmax == 127)
		return "int8";
	if (qmin == 0 && qmax == 65535)
		return "uint16";
	if (qmin == -32768 && qmax == 32767)
		return "int16";
	return "integer";
}

/* ---- the graph pass ---- */

struct gctx {
	struct qr_analysis *a;
	size_t quant;            /* candidate index */
	const struct qr_graph *fg, *qg;
	struct qr_strmap fnodes; /* float node name -> index */
	struct hz_list *out;     /* graph hazards */
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

static const struct qr_node *
producer(const struct qr_graph *g, const char *name)
{
	long p = qr_graph_producer(g, name);

	return p >= 0 ? qr_graph_node(g, (size_t)p) : NULL;
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
		const struct qr_node *p = producer(c->qg, chain[i]);
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
	const struct qr_node *p = f != NULL ? producer(c->fg, f) : NULL;

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

/* Scale tensor sc of node n: zero, negative, denormal, non-finite. */
static void
check_scale(struct gctx *c, const struct qr_node *n,
	    const struct qr_tensor_data *sc, struct qr_strmap *seen)
{
	size_t i, zero = 0, neg = 0, den = 0, inf = 0, bad;
	double first = NAN, nmin = normal_min(sc->dtype);
	struct qr_hazard *h;
	const char *layer;

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
	qr_strmap_put(seen, sc->name, 0);
	layer = layer_of_node(c, n);
	h = hz_add(c->out, QR_HZ_BAD_SCALE, c->quant);
	hz_ref(h, n->name, layer);
	hz_ref(h, sc->name, layer);
	hz_num(h, "bad", (double)bad);
	hz_num(h, "elements", (double)sc->n_elem);
	hz_num(h, "zero", (double)zero);
	hz_num(h, "negative", (double)neg);
	hz_num(h, "denormal", (double)den);
	hz_num(h, "nonfinite", (double)inf);
	hz_text(&h->what, "Scale '%s' of %s '%s': %zu of %zu values are "
		"zero (%zu), negative (%zu), denormal (%zu) or not finite "
		"(%zu); the first is %.6g.", sc->name, n->op_type, n->name,
		bad, sc->n_elem, zero, neg, den, inf, first);
	hz_text(&h->fix, "Recompute this scale from the tensor's range: a "
		"scale must be a positive, normal, finite number (zero or "
		"denormal makes x / scale overflow, negative flips the sign).");
}

/* Zero point zp of node n against the integer range of dtype. */
static void
check_zp(struct gctx *c, const struct qr_node *n,
	 const struct qr_tensor_data *zp, int dtype, struct qr_strmap *seen)
{
	double lo, hi, first = NAN;
	size_t i, bad = 0;
	struct qr_hazard *h;
	const char *layer;

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
	qr_strmap_put(seen, zp->name, 0);
	layer = layer_of_node(c, n);
	h = hz_add(c->out, QR_HZ_BAD_ZERO_POINT, c->quant);
	hz_ref(h, n->name, layer);
	hz_ref(h, zp->name, layer);
	hz_num(h, "bad", (double)bad);
	hz_num(h, "elements", (double)zp->n_elem);
	hz_num(h, "value", first);
	hz_num(h, "qmin", lo);
	hz_num(h, "qmax", hi);
	hz_text(&h->what, "Zero point '%s' (%s) of %s '%s': %zu of %zu "
		"values lie outside %s's range [%.0f, %.0f]; the first is "
		"%.6g.", zp->name, qr_dtype_name(zp->dtype), n->op_type,
		n->name, bad, zp->n_elem, qr_dtype_name(dtype), lo, hi, first);
	hz_text(&h->fix, "Store the zero point in the quantized tensor's own "
		"type (%s) with a value inside [%.0f, %.0f]; ONNX Runtime "
		"refuses the model otherwise.", qr_dtype_name(dtype), lo, hi);
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
				sl[ns++] = (struct qslot){ "", (signed char)(j + 1),
							   (signed char)(j + 2),
							   (signed char)j };
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

	if (is_op(n, "QLinearAdd")) {
		for (j = 0; j <= 3 && m < max; j += 3)
			if (in_const(c->qg, n, (long)j) == NULL &&
			    (sc = in_const(c->qg, n, (long)j + 1)) != NULL &&
			    sc->n_elem > 0 && sc->data != NULL)
				v[m++] = (struct hz_in){ n->in[j],
						 qr_tensor_get(sc, 0) };
		return m;
	}
	if (is_op(n, "QLinearConcat")) {
		for (j = 2; j + 2 < n->n_in && m < max; j += 3)
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
		p = producer(c->qg, n->in[j]);
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
	struct hz_group *g;
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
		const struct qr_node *p = f ? producer(c->fg, f) : NULL;

		g->qname[j] = xstrdup(v[j].name);
		g->fname[j] = f ? xstrdup(f) : NULL;
		g->flayer[j] = p ? xstrdup(p->name) : NULL;
	}
}

/* Concat and Add (QDQ, QLinearConcat, QLinearAdd): input scales more
 * than HZ_SCALE_SPREAD apart are a graph hazard; inputs that share one
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
		if (!(ratio > HZ_SCALE_SPREAD))
			continue;
		layer = layer_of_node(c, n);
		h = hz_add(c->out, QR_HZ_INPUT_SCALES, c->quant);
		hz_ref(h, n->name, layer);
		hz_ref(h, v[lo].name, layer_of_tensor(c, v[lo].name));
		hz_ref(h, v[hi].name, layer_of_tensor(c, v[hi].name));
		hz_num(h, "scale_min", v[lo].scale);
		hz_num(h, "scale_max", v[hi].scale);
		hz_num(h, "ratio", ratio);
		hz_text(&h->what, "%s '%s' reads inputs whose scales are "
			"%.3gx apart (%.4g for '%s', %.4g for '%s'): the "
			"result can keep only one of the two steps, and the "
			"finer input loses about %.1f bits.", n->op_type,
			n->name, ratio, v[lo].scale, v[lo].name, v[hi].scale,
			v[hi].name, log2(ratio));
		hz_text(&h->fix, "Bring the inputs' ranges closer before the "
			"%s (rescale the branch with the large range, e.g. "
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
		h = hz_add(c->out, QR_HZ_REQUANT_CHAIN, c->quant);
		for (j = k; j < nn; j++) {
			const struct qr_node *n = qr_graph_node(c->qg, topo[j]);

			if (!req[topo[j]] || uf_find(up, topo[j]) != root)
				continue;
			if (listed < HZ_MAX_REFS)
				hz_ref(h, n->name, layer_of_node(c, n));
			qr_buf_printf(&b, "%s%s", listed ? " \xe2\x86\x92 " : "",
				      n->op_type);
			listed++;
		}
		hz_num(h, "ops", (double)size[root]);
		hz_text(&h->what, "%zu elementwise ops (%s) are requantized "
			"after every step: each adds up to half a step of "
			"rounding error to what is one function written out "
			"op by op (a HardSwish, a SiLU, a normalization's "
			"scale and shift).", size[root],
			b.data ? b.data : "");
		hz_text(&h->fix, "Fuse the chain into one op (HardSwish, "
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
		h = hz_add(c->out, QR_HZ_SENSITIVE_8BIT, c->quant);
		hz_ref(h, n->name, layer_of_node(c, n));
		hz_num(h, "bits", bits);
		hz_num(h, "scale", s);
		hz_text(&h->what, "%s '%s' writes its output in %d bits "
			"(scale %.4g): values that differ by less than a step "
			"become equal%s.", n->op_type, n->name, bits, s,
			strstr(n->op_type, "Softmax") != NULL ?
				", and probabilities below half a step become 0"
				: strstr(n->op_type, "Norm") != NULL ?
				", across a normalized range whose outliers "
				"stretch the scale" : "");
		hz_text(&h->fix, "Keep this op's output in 16 bits (ONNX "
			"Runtime: a 16-bit activation type for it through "
			"TensorQuantOverrides) or in float (nodes_to_exclude).");
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
	h = hz_add(c->out, QR_HZ_FIRST_LAST, c->quant);
	for (k = 0; k < 2; k++) {
		if (!e[k]->quantized || (k == 1 && e[1] == e[0]))
			continue;
		hz_ref(h, e[k]->layer, node[k] ? layer_of_node(c, node[k])
					       : NULL);
		hz_num(h, k == 0 ? "first_weight_sqnr_db"
				 : "last_weight_sqnr_db",
		       weight_sqnr(c, e[k]->layer));
	}
	if (e[0]->quantized && e[1]->quantized && e[1] != e[0])
		hz_text(&h->what, "The first compute layer ('%s') and the "
			"last ('%s') run quantized: the first reads the raw "
			"input, whose rounding every later layer inherits, "
			"and the last writes the outputs with no layer after "
			"it to absorb its error.", e[0]->layer, e[1]->layer);
	else
		hz_text(&h->what, "The %s compute layer ('%s') runs "
			"quantized: %s", e[0]->quantized ? "first" : "last",
			e[0]->quantized ? e[0]->layer : e[1]->layer,
			e[0]->quantized ? "it reads the raw input, whose "
			"rounding every later layer inherits." :
			"it writes the outputs with no layer after it to "
			"absorb its error.");
	hz_text(&h->fix, "Keep the first and last compute layers in float "
		"or 16 bits (ONNX Runtime: nodes_to_exclude) unless the "
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
		h = hz_add(c->out, QR_HZ_PER_TENSOR, c->quant);
		hz_ref(h, q->quant_layer, q->layer);
		hz_ref(h, q->quant_weight, q->layer);
		hz_num(h, "gain_db", gain);
		hz_num(h, "sqnr_per_tensor_db", w->sqnr_per_tensor_db);
		hz_num(h, "sqnr_per_channel_db", w->sqnr_per_channel_db);
		hz_num(h, "sqnr_db", q->sqnr_db);
		hz_text(&h->what, "Weight '%s' of '%s' has one scale for the "
			"whole tensor, but its channels' ranges differ so much "
			"that one scale per channel is predicted to gain %.1f "
			"dB (%.1f dB per tensor, %.1f dB per channel).",
			q->weight != NULL ? q->weight : "", q->layer, gain,
			w->sqnr_per_tensor_db, w->sqnr_per_channel_db);
		hz_text(&h->fix, "Quantize this weight per channel (ONNX "
			"Runtime: per_channel=True), or equalize its channels "
			"with cross-layer equalization first.");
	}
}

void
qr_an_hazards_graph(struct qr_analysis *a, size_t quant,
		    const struct qr_graph *fg, const struct qr_graph *qg)
{
	struct hz_list out;
	struct gctx c;
	size_t i, nf = qr_graph_n_nodes(fg);

	if (a->hz_plan == NULL)
		a->hz_plan = xcalloc(1, sizeof *a->hz_plan);
	out.n = a->hz_plan->n_graph;
	out.v = a->hz_plan->graph;
	memset(&c, 0, sizeof c);
	c.a = a;
	c.quant = quant;
	c.fg = fg;
	c.qg = qg;
	c.out = &out;
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
	a->hz_plan->n_graph = out.n;
	a->hz_plan->graph = out.v;
}

/* ---- the data pass ---- */

double
qr_act_effective_bits(const struct qr_act_pair *p,
		      const struct qr_act_tensor *t)
{
	double lo, hi, a, b, bits;

	if (!p->has_qparams || !(p->scale > 0) || !isfinite(p->scale) ||
	    !isfinite(p->qmin) || !isfinite(p->qmax) || t->n_values == 0 ||
	    !isfinite(t->min) || !isfinite(t->max))
		return NAN;
	lo = (p->qmin - p->zero_point) * p->scale;
	hi = (p->qmax - p->zero_point) * p->scale;
	a = t->min > lo ? t->min : lo;
	b = t->max < hi ? t->max : hi;
	bits = log2(p->qmax - p->qmin + 1);
	if (!(b > a))
		return 0;
	a = log2((b - a) / p->scale + 1);
	return a < bits ? a : bits;
}

/* The float tensor called name among a's compared tensors, or NULL. */
static const struct qr_act_tensor *
act_tensor(const struct qr_analysis *a, const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < a->n_act_tensors; i++)
		if (a->act_tensors[i].name != NULL &&
		    strcmp(a->act_tensors[i].name, name) == 0)
			return &a->act_tensors[i];
	return NULL;
}

/* Span calibration covers: [min(lo, 0), max(hi, 0)]. */
static double
span0(double lo, double hi)
{
	return (hi > 0 ? hi : 0) - (lo < 0 ? lo : 0);
}

static void
check_group(const struct qr_analysis *a, const struct hz_group *g,
	    struct hz_list *out)
{
	const struct qr_act_tensor *t, *tl = NULL, *th = NULL;
	size_t j, lo = 0, hi = 0;
	double r, rl = 0, rh = 0;
	struct qr_hazard *h;

	for (j = 0; j < g->n; j++) {
		t = act_tensor(a, g->fname[j]);
		if (t == NULL || t->n_values == 0 ||
		    !(span0(t->min, t->max) > 0) ||
		    !isfinite(span0(t->min, t->max)))
			continue;
		r = span0(t->min, t->max);
		if (tl == NULL || r < rl) {
			tl = t, rl = r, lo = j;
		}
		if (th == NULL || r > rh) {
			th = t, rh = r, hi = j;
		}
	}
	if (tl == NULL || tl == th || !(rh / rl > HZ_SCALE_SPREAD))
		return;
	h = hz_add(out, QR_HZ_SHARED_SCALE, g->quant);
	hz_ref(h, g->node, g->layer);
	hz_ref(h, g->qname[lo], g->flayer[lo]);
	hz_ref(h, g->qname[hi], g->flayer[hi]);
	hz_num(h, "range_min", rl);
	hz_num(h, "range_max", rh);
	hz_num(h, "ratio", rh / rl);
	hz_num(h, "scale", g->scale);
	hz_num(h, "narrow_codes", rl / g->scale);
	hz_text(&h->what, "The inputs of %s '%s' share one scale (%.4g), "
		"but their float ranges are %.3gx apart (%.4g for '%s', %.4g "
		"for '%s'): the narrow input spans only %.0f codes.", g->op,
		g->node, g->scale, rh / rl, rl, g->qname[lo], rh,
		g->qname[hi], rl / g->scale);
	hz_text(&h->fix, "Bring the inputs' ranges closer before the %s "
		"(rescale the wide branch), or keep the %s and its inputs "
		"in 16 bits: no single scale serves ranges this far apart.",
		g->op, g->op);
}

/* The scale the data asks for: absmax / ((qmax - qmin) / 2) for a
 * symmetric range (zero point in the middle), else the float span with
 * 0 included over qmax - qmin (ONNX Runtime's MinMax calibration). */
static double
data_scale(const struct qr_act_pair *p, const struct qr_act_tensor *t)
{
	double mid = (p->qmin + p->qmax + 1) / 2, q = p->qmax - p->qmin;
	double am = fabs(t->min) > fabs(t->max) ? fabs(t->min) : fabs(t->max);

	if (fabs(p->zero_point - mid) <= 1)
		return am / (q / 2);
	return span0(t->min, t->max) / q;
}

static void
pair_hazards(const struct qr_analysis *a, size_t i, struct hz_list *out)
{
	const struct qr_act_pair *p = &a->act_pairs[i];
	const struct qr_act_tensor *t = &a->act_tensors[p->tensor];
	const char *type = range_type(p->qmin, p->qmax);
	double eb = qr_act_effective_bits(p, t), bits, sd, ratio, wasted;
	double lo, hi;
	struct qr_hazard *h;
	int sat = 0;

	if (isnan(eb) || p->samples == 0 ||
	    (p->flags & (QR_ACT_FLAG_SHAPE | QR_ACT_FLAG_CANCEL)))
		return;
	bits = log2(p->qmax - p->qmin + 1);
	lo = (p->qmin - p->zero_point) * p->scale;
	hi = (p->qmax - p->zero_point) * p->scale;
	sd = data_scale(p, t);
	ratio = sd > 0 && isfinite(sd) ? p->scale / sd : NAN;
	if (p->saturation > HZ_SATURATION) {
		sat = 1;
		h = hz_add(out, QR_HZ_SATURATION, p->quant);
		hz_ref(h, p->quant_tensor, t->layer);
		hz_num(h, "saturation", p->saturation);
		hz_num(h, "float_min", t->min);
		hz_num(h, "float_max", t->max);
		hz_num(h, "range_lo", lo);
		hz_num(h, "range_hi", hi);
		hz_num(h, "scale_ratio", ratio);
		hz_text(&h->what, "%.2f%% of the float values of '%s' lie "
			"outside the range its scale and zero point hold "
			"(%.4g \xe2\x80\xa6 %.4g) and are clipped; on the data "
			"they span %.4g \xe2\x80\xa6 %.4g.",
			100 * p->saturation, p->quant_tensor, lo, hi, t->min,
			t->max);
		hz_text(&h->fix, "Recalibrate this tensor on data like this "
			"(more representative samples, or MinMax instead of "
			"a percentile or entropy method) so its range covers "
			"%.4g \xe2\x80\xa6 %.4g.", t->min, t->max);
	}
	if (isfinite(ratio) && (ratio > HZ_SCALE_OFF ||
				(ratio < 1 / HZ_SCALE_OFF && !sat))) {
		int wide = ratio > HZ_SCALE_OFF;

		h = hz_add(out, QR_HZ_SCALE_MISMATCH, p->quant);
		hz_ref(h, p->quant_tensor, t->layer);
		hz_num(h, "scale", p->scale);
		hz_num(h, "data_scale", sd);
		hz_num(h, "ratio", ratio);
		hz_num(h, "effective_bits", eb);
		hz_num(h, "bits", bits);
		hz_text(&h->what, "The scale of '%s' (%.4g) is %.3gx %s than "
			"the data needs (%.4g for %.4g \xe2\x80\xa6 %.4g): %s",
			p->quant_tensor, p->scale, wide ? ratio : 1 / ratio,
			wide ? "larger" : "smaller", sd, t->min, t->max,
			wide ? "most codes go unused" :
			"values beyond the range are clipped");
		if (wide)
			hz_text(&h->what, "%s, and the data uses %.1f of %.0f "
				"bits.", h->what, eb, bits);
		else
			hz_text(&h->what, "%s.", h->what);
		hz_text(&h->fix, "Recalibrate this tensor on representative "
			"data: the calibration data%s.",
			wide ? " reached far beyond what this data does (an "
			"outlier, or other inputs), or the range was widened "
			"by hand" : " stopped well short of what this data "
			"does");
	}
	if (bits > 8)
		return;
	wasted = t->min >= 0 && t->max > 0 ?
		(p->zero_point - p->qmin) / (p->qmax - p->qmin) :
		t->max <= 0 && t->min < 0 ?
		(p->qmax - p->zero_point) / (p->qmax - p->qmin) : 0;
	if (!(wasted >= HZ_HALF_WASTED))
		return;
	h = hz_add(out, QR_HZ_HALF_RANGE, p->quant);
	hz_ref(h, p->quant_tensor, t->layer);
	hz_num(h, "wasted_fraction", wasted);
	hz_num(h, "zero_point", p->zero_point);
	hz_num(h, "effective_bits", eb);
	hz_num(h, "bits", bits);
	hz_text(&h->what, "'%s' holds only %s values (%.4g \xe2\x80\xa6 "
		"%.4g), but its %s range keeps %.0f%% of its codes for the "
		"other sign (zero point %.0f): it uses %.1f of %.0f bits.",
		p->quant_tensor, t->min >= 0 ? "non-negative" : "non-positive",
		t->min, t->max, type, 100 * wasted, p->zero_point, eb, bits);
	hz_text(&h->fix, "Quantize it asymmetric with the zero point at the "
		"%s end of the range (ONNX Runtime: ActivationSymmetric=False; "
		"uint8 with zero point 0 after a ReLU), which doubles its "
		"resolution.", t->min >= 0 ? "low" : "high");
}

/* 1 when a and b are of one kind and candidate with the same numbers:
 * one value under several names (a Reshape or Transpose of it). */
static int
same_numbers(const struct qr_hazard *a, const struct qr_hazard *b)
{
	size_t k;

	if (a->kind != b->kind || a->quant != b->quant ||
	    a->n_nums != b->n_nums)
		return 0;
	for (k = 0; k < a->n_nums; k++)
		if (!(a->nums[k].v == b->nums[k].v ||
		      (isnan(a->nums[k].v) && isnan(b->nums[k].v))))
			return 0;
	return 1;
}

#define HZ_MERGE_BACK 32 /* hazards looked back at for a merge */

/* Activation i's hazards into out; one that repeats a recent one's
 * numbers adds its tensor to it instead. */
static void
check_pair(const struct qr_analysis *a, size_t i, struct hz_list *out)
{
	struct hz_list tmp = { 0, NULL };
	size_t k, j, from = out->n > HZ_MERGE_BACK ? out->n - HZ_MERGE_BACK : 0;

	pair_hazards(a, i, &tmp);
	for (k = 0; k < tmp.n; k++) {
		struct qr_hazard *h = &tmp.v[k];

		for (j = out->n; j > from; j--)
			if (same_numbers(&out->v[j - 1], h))
				break;
		if (j > from) {
			hz_ref(&out->v[j - 1], h->refs[0].name,
			       h->refs[0].layer);
			hz_free_one(h);
			continue;
		}
		*hz_add(out, 0, 0) = *h;
	}
	free(tmp.v);
}

/* A sentence more for a merged hazard: the other names of the value. */
static void
note_merged(struct qr_hazard *h)
{
	if (h->n_refs < 2 || (h->kind != QR_HZ_SATURATION &&
			      h->kind != QR_HZ_SCALE_MISMATCH &&
			      h->kind != QR_HZ_HALF_RANGE))
		return;
	hz_text(&h->what, "%s The same values pass through %zu more "
		"tensor%s, listed with it.", h->what, h->n_refs - 1,
		h->n_refs == 2 ? "" : "s");
}

/* Order: candidate, then kind (enum order), then as found. */
static int
cmp_hazard(const void *x, const void *y)
{
	const struct qr_hazard *a = x, *b = y;

	if (a->quant != b->quant)
		return a->quant < b->quant ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

static void
hazards_clear(struct qr_analysis *a)
{
	size_t i;

	for (i = 0; i < a->n_hazards; i++)
		hz_free_one(&a->hazards[i]);
	free(a->hazards);
	a->hazards = NULL;
	a->n_hazards = 0;
}

void
qr_analysis_hazards(struct qr_analysis *a)
{
	const struct qr_an_hazard_plan *pl = a->hz_plan;
	struct hz_list out = { 0, NULL };
	size_t i;

	hazards_clear(a);
	for (i = 0; pl != NULL && i < pl->n_graph; i++)
		hz_copy(hz_add(&out, 0, 0), &pl->graph[i]);
	for (i = 0; pl != NULL && i < pl->n_groups; i++)
		check_group(a, &pl->groups[i], &out);
	for (i = 0; i < a->n_act_pairs; i++)
		check_pair(a, i, &out);
	for (i = 0; i < out.n; i++) {
		note_merged(&out.v[i]);
		out.v[i].seq = i;
	}
	if (out.n > 1)
		qsort(out.v, out.n, sizeof *out.v, cmp_hazard);
	a->hazards = out.v;
	a->n_hazards = out.n;
}

void
qr_an_hazards_free(struct qr_analysis *a)
{
	struct qr_an_hazard_plan *pl = a->hz_plan;
	size_t i, j;

	hazards_clear(a);
	if (pl == NULL)
		return;
	for (i = 0; i < pl->n_graph; i++)
		hz_free_one(&pl->graph[i]);
	free(pl->graph);
	for (i = 0; i < pl->n_groups; i++) {
		struct hz_group *g = &pl->groups[i];

		for (j = 0; j < g->n; j++) {
			free(g->qname[j]);
			free(g->fname[j]);
			free(g->flayer[j]);
		}
		free(g->qname);
		free(g->fname);
		free(g->flayer);
		free(g->op);
		free(g->node);
		free(g->layer);
	}
	free(pl->groups);
	free(pl);
	a->hz_plan = NULL;
}
