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
 * This file holds the kinds, the helpers that build a hazard, the data
 * pass and the result; hazards_graph.c the graph pass, which keeps what
 * the data pass needs (its hazards, and the shared-scale groups by float
 * tensor name) in a->hz_plan, so the result borrows nothing.
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HZ_SCALE_OFF 4.0      /* a scale this far off the data's */
#define HZ_SATURATION 0.01    /* share of values clipped (as the
			       * saturation flag) */
#define HZ_HALF_WASTED 0.4    /* share of codes kept for the absent sign */

/* report.json's name of a kind; "unknown" out of range. */
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

/* See analysis-int.h; l owns the new entry. */
struct qr_hazard *
qr_an_hz_add(struct qr_an_hz_list *l, int kind, size_t quant)
{
	struct qr_hazard *h;

	l->v = xreallocarray(l->v, l->n + 1, sizeof *l->v);
	h = &l->v[l->n++];
	memset(h, 0, sizeof *h);
	h->kind = kind;
	h->quant = quant;
	return h;
}

/* name and layer are copied; a layer of "" is none (a graph input). */
void
qr_an_hz_ref(struct qr_hazard *h, const char *name, const char *layer)
{
	struct qr_hazard_ref *r;

	h->refs = xreallocarray(h->refs, h->n_refs + 1, sizeof *h->refs);
	r = &h->refs[h->n_refs++];
	r->name = xstrdup(name != NULL ? name : "");
	r->layer = layer != NULL && layer[0] != '\0' ? xstrdup(layer) : NULL;
}

/* Up to QR_HAZARD_MAX_NUMS per hazard (an invariant of the checks). */
void
qr_an_hz_num(struct qr_hazard *h, const char *key, double v)
{
	QR_ASSERT(h->n_nums < QR_HAZARD_MAX_NUMS);
	h->nums[h->n_nums].key = key;
	h->nums[h->n_nums++].v = v;
}

/* *dst becomes a new heap string; the old one is freed only after the
 * formatting, which may read it. */
void
qr_an_hz_text(char **dst, const char *fmt, ...)
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

/* ---- the data pass ---- */

/*
 * Effective bits = log2((b - a) / scale + 1), [a, b] the float range of
 * the data cut to what the scale and zero point represent, [(qmin - zp)
 * s, (qmax - zp) s]: the codes the data spans. 0 when nothing of the
 * range is representable.
 */
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
check_group(const struct qr_analysis *a, const struct qr_an_hz_group *g,
	    struct qr_an_hz_list *out)
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
	if (tl == NULL || tl == th || !(rh / rl > QR_AN_HZ_SPREAD))
		return;
	h = qr_an_hz_add(out, QR_HZ_SHARED_SCALE, g->quant);
	qr_an_hz_ref(h, g->node, g->layer);
	qr_an_hz_ref(h, g->qname[lo], g->flayer[lo]);
	qr_an_hz_ref(h, g->qname[hi], g->flayer[hi]);
	qr_an_hz_num(h, "range_min", rl);
	qr_an_hz_num(h, "range_max", rh);
	qr_an_hz_num(h, "ratio", rh / rl);
	qr_an_hz_num(h, "scale", g->scale);
	qr_an_hz_num(h, "narrow_codes", rl / g->scale);
	qr_an_hz_text(&h->what, "The inputs of %s '%s' share one scale (%.4g), "
		"but their float ranges are %.3gx apart (%.4g for '%s', %.4g "
		"for '%s'): the narrow input spans only %.0f codes.", g->op,
		g->node, g->scale, rh / rl, rl, g->qname[lo], rh,
		g->qname[hi], rl / g->scale);
	qr_an_hz_text(&h->fix, "Bring the inputs' ranges closer before the %s "
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
pair_hazards(const struct qr_analysis *a, size_t i, struct qr_an_hz_list *out)
{
	const struct qr_act_pair *p = &a->act_pairs[i];
	const struct qr_act_tensor *t = &a->act_tensors[p->tensor];
	const char *type = range_type(p->qmin, p->qmax);
	double eb = qr_act_effective_bits(p, t), bits, sd, ratio, wasted;
	double lo, hi;
	struct qr_hazard *h;
	int sat = 0;

	if (isnan(eb) || p->samples == 0 ||
	    (p->flags & (QR_ACT_FLAG_SHAPE | QR_ACT_NOT_FINDING)))
		return;
	bits = log2(p->qmax - p->qmin + 1);
	lo = (p->qmin - p->zero_point) * p->scale;
	hi = (p->qmax - p->zero_point) * p->scale;
	sd = data_scale(p, t);
	ratio = sd > 0 && isfinite(sd) ? p->scale / sd : NAN;
	if (p->saturation > HZ_SATURATION) {
		sat = 1;
		h = qr_an_hz_add(out, QR_HZ_SATURATION, p->quant);
		qr_an_hz_ref(h, p->quant_tensor, t->layer);
		qr_an_hz_num(h, "saturation", p->saturation);
		qr_an_hz_num(h, "float_min", t->min);
		qr_an_hz_num(h, "float_max", t->max);
		qr_an_hz_num(h, "range_lo", lo);
		qr_an_hz_num(h, "range_hi", hi);
		qr_an_hz_num(h, "scale_ratio", ratio);
		qr_an_hz_text(&h->what, "%.2f%% of the float values of '%s' "
			"lie outside the range its scale and zero point hold "
			"(%.4g \xe2\x80\xa6 %.4g) and are clipped; on the data "
			"they span %.4g \xe2\x80\xa6 %.4g.",
			100 * p->saturation, p->quant_tensor, lo, hi, t->min,
			t->max);
		qr_an_hz_text(&h->fix, "Recalibrate this tensor on data like "
			"this (more representative samples, or MinMax instead "
			"of a percentile or entropy method) so its range "
			"covers %.4g \xe2\x80\xa6 %.4g.", t->min, t->max);
	}
	if (isfinite(ratio) && (ratio > HZ_SCALE_OFF ||
				(ratio < 1 / HZ_SCALE_OFF && !sat))) {
		int wide = ratio > HZ_SCALE_OFF;

		h = qr_an_hz_add(out, QR_HZ_SCALE_MISMATCH, p->quant);
		qr_an_hz_ref(h, p->quant_tensor, t->layer);
		qr_an_hz_num(h, "scale", p->scale);
		qr_an_hz_num(h, "data_scale", sd);
		qr_an_hz_num(h, "ratio", ratio);
		qr_an_hz_num(h, "effective_bits", eb);
		qr_an_hz_num(h, "bits", bits);
		qr_an_hz_text(&h->what, "The scale of '%s' (%.4g) is %.3gx %s "
			"than the data needs (%.4g for %.4g \xe2\x80\xa6 "
			"%.4g): %s",
			p->quant_tensor, p->scale, wide ? ratio : 1 / ratio,
			wide ? "larger" : "smaller", sd, t->min, t->max,
			wide ? "most codes go unused" :
			"values beyond the range are clipped");
		if (wide)
			qr_an_hz_text(&h->what, "%s, and the data uses %.1f of "
				"%.0f bits.", h->what, eb, bits);
		else
			qr_an_hz_text(&h->what, "%s.", h->what);
		qr_an_hz_text(&h->fix, "Recalibrate this tensor on "
			"representative data: the calibration data%s.",
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
	h = qr_an_hz_add(out, QR_HZ_HALF_RANGE, p->quant);
	qr_an_hz_ref(h, p->quant_tensor, t->layer);
	qr_an_hz_num(h, "wasted_fraction", wasted);
	qr_an_hz_num(h, "zero_point", p->zero_point);
	qr_an_hz_num(h, "effective_bits", eb);
	qr_an_hz_num(h, "bits", bits);
	qr_an_hz_text(&h->what, "'%s' holds only %s values (%.4g \xe2\x80\xa6 "
		"%.4g), but its %s range keeps %.0f%% of its codes for the "
		"other sign (zero point %.0f): it uses %.1f of %.0f bits.",
		p->quant_tensor, t->min >= 0 ? "non-negative" : "non-positive",
		t->min, t->max, type, 100 * wasted, p->zero_point, eb, bits);
	qr_an_hz_text(&h->fix, "Quantize it asymmetric with the zero point at "
		"the %s end of the range (ONNX Runtime: "
		"ActivationSymmetric=False; uint8 with zero point 0 after a "
		"ReLU), which doubles its resolution.",
		t->min >= 0 ? "low" : "high");
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
check_pair(const struct qr_analysis *a, size_t i, struct qr_an_hz_list *out)
{
	struct qr_an_hz_list tmp = { 0, NULL };
	size_t k, j, from = out->n > HZ_MERGE_BACK ? out->n - HZ_MERGE_BACK : 0;

	pair_hazards(a, i, &tmp);
	for (k = 0; k < tmp.n; k++) {
		struct qr_hazard *h = &tmp.v[k];

		for (j = out->n; j > from; j--)
			if (same_numbers(&out->v[j - 1], h))
				break;
		if (j > from) {
			qr_an_hz_ref(&out->v[j - 1], h->refs[0].name,
			       h->refs[0].layer);
			hz_free_one(h);
			continue;
		}
		*qr_an_hz_add(out, 0, 0) = *h;
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
	qr_an_hz_text(&h->what, "%s The same values pass through %zu more "
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

/* a->hazards from scratch: the plan's graph hazards (copied), then the
 * shared-scale groups and every activation pair against the data, then
 * sorted by candidate and kind. */
void
qr_analysis_hazards(struct qr_analysis *a)
{
	const struct qr_an_hazard_plan *pl = a->hz_plan;
	struct qr_an_hz_list out = { 0, NULL };
	size_t i;

	hazards_clear(a);
	for (i = 0; pl != NULL && i < pl->graph.n; i++)
		hz_copy(qr_an_hz_add(&out, 0, 0), &pl->graph.v[i]);
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

/* a->hazards and a->hz_plan; a keeps the rest. */
void
qr_an_hazards_free(struct qr_analysis *a)
{
	struct qr_an_hazard_plan *pl = a->hz_plan;
	size_t i, j;

	hazards_clear(a);
	if (pl == NULL)
		return;
	for (i = 0; i < pl->graph.n; i++)
		hz_free_one(&pl->graph.v[i]);
	free(pl->graph.v);
	for (i = 0; i < pl->n_groups; i++) {
		struct qr_an_hz_group *g = &pl->groups[i];

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
