/*
 * outputs: what a candidate's graph outputs say beyond cosine and SQNR,
 * from the float and candidate values of each sample (act_hook.c hands
 * them over, cumulative run, sample order).
 *
 * The kind of an output is read from the float model's first sample
 * (enum qr_out_kind): a float [N, C] or [N, C, 1, 1] with C >= 2 and N
 * the first input's dim 0 is a classifier; a float [N, C, H, W] with
 * C >= 2 and H W > 1 a segmenter; anything else (a detector's boxes and
 * scores, features) keeps cosine and SQNR per sample. A later sample
 * whose shape does not fit its output's kind counts in none of the
 * metrics below (NaN in the per-sample arrays).
 *
 * Classifier, per row (one item of the batch): P_float and P_quant are
 * softmax(row) in double, or the row divided by its sum when the float
 * model's first sample gives probabilities (every row in [0, 1] summing
 * to 1 within 1e-3), each probability floored at 1e-7 before its log
 * (distribution.c);
 *   - KL(P_float || P_quant) = sum_c p_f (log p_f - log p_q), nats;
 *   - top-1 agreement: the same argmax (the first index of the maximum);
 *   - top-5 overlap: |top5_f ∩ top5_q| / 5 (ties to the lower index;
 *     min(5, C) when C < 5);
 *   - a flip: a row whose argmaxes differ, counted per (float class,
 *     candidate class) pair; up to QR_FLIP_MATRIX_MAX classes the whole
 *     C x C matrix of rows by (float class, candidate class) is kept,
 *     its diagonal the rows that agree.
 * Segmenter, per pixel of each item: its class is the argmax over C;
 * pixel agreement = pixels with the same class / pixels, and per class
 * c the intersection over union of the pixels the float model and the
 * candidate give c (summed over every sample, mIoU their mean over the
 * classes either gives at all). Per sample: means over its rows or
 * pixels; overall: every row or pixel pooled.
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"

#define TOPK 5

/* A growing per-sample series of up to 3 values. */
struct om_series {
	size_t n, cap;           /* entries used, allocated */
	double *v[3];            /* per sample */
};

/* A flip and its rows, kept sorted by key = from * C + to. */
struct om_flip {
	uint64_t key;
	size_t count;
};

/* Running sums of one output of one candidate. */
struct qr_om_acc {
	int kind;                /* enum qr_out_kind */
	size_t classes;          /* C */
	int64_t dims[4];         /* the first sample's shape */
	int ndim;
	/* classifier */
	int probs;               /* the values are probabilities */
	size_t rows, agree;      /* rows compared, same top-1 */
	double kl_sum, kl_max, top5; /* over rows */
	uint64_t *same;          /* per class: rows both give it */
	struct om_flip *flips;   /* n_flips distinct, sorted by key */
	size_t n_flips, cap_flips;
	double *lf, *lq;         /* C doubles each: one row's log-probs */
	/* segmenter */
	uint64_t pixels, pagree; /* pixels compared, same class */
	uint64_t *inter, *uni;   /* per class */
	struct om_series s;      /* classifier: kl, top1, top5; segmenter:
				  * pixel agreement */
};

/* See analysis.h. */
const char *
qr_out_kind_name(int kind)
{
	switch (kind) {
	case QR_OUT_CLASSIFIER: return "classifier";
	case QR_OUT_SEGMENTER: return "segmenter";
	default: return "other";
	}
}

/* The kind of float output t in sample sl. */
static int
kind_of(const struct qr_tensor *t, const struct qr_ar_slot *sl)
{
	int64_t batch = sl->n_ins > 0 && sl->ins[0]->ndim > 0
		? sl->ins[0]->dims[0] : -1;

	if (!qr_an_is_float(t->dtype) || t->ndim < 2 || t->dims[1] < 2)
		return QR_OUT_OTHER;
	if ((t->ndim == 2 || (t->ndim == 4 && t->dims[2] == 1 &&
			      t->dims[3] == 1)) && t->dims[0] == batch)
		return QR_OUT_CLASSIFIER;
	if (t->ndim == 4 && t->dims[2] * t->dims[3] > 1)
		return QR_OUT_SEGMENTER;
	return QR_OUT_OTHER;
}

static void
series_push(struct om_series *s, double a, double b, double c)
{
	int i;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		for (i = 0; i < 3; i++)
			s->v[i] = xreallocarray(s->v[i], s->cap,
						sizeof *s->v[i]);
	}
	s->v[0][s->n] = a;
	s->v[1][s->n] = b;
	s->v[2][s->n] = c;
	s->n++;
}

static size_t
argmax_row(const float *v, size_t n)
{
	size_t i, best = 0;

	for (i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return best;
}

/* One more row flipped from class f to class q. */
static void
flip_add(struct qr_om_acc *a, size_t f, size_t q)
{
	uint64_t key = (uint64_t)f * a->classes + q;
	size_t lo = 0, hi = a->n_flips, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (a->flips[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < a->n_flips && a->flips[lo].key == key) {
		a->flips[lo].count++;
		return;
	}
	if (a->n_flips == a->cap_flips) {
		a->cap_flips = a->cap_flips ? 2 * a->cap_flips : 16;
		a->flips = xreallocarray(a->flips, a->cap_flips,
					 sizeof *a->flips);
	}
	memmove(a->flips + lo + 1, a->flips + lo,
		(a->n_flips - lo) * sizeof *a->flips);
	a->flips[lo].key = key;
	a->flips[lo].count = 1;
	a->n_flips++;
}

/* The classifier rows of one sample: x, y [rows, C]. */
static void
add_classes(struct qr_om_acc *a, struct qr_ar_outacc *o,
	    const struct qr_ar_slot *sl, size_t rows, const float *x,
	    const float *y)
{
	size_t c = a->classes, k = c < TOPK ? c : TOPK, r;
	size_t tf[TOPK], tq[TOPK];
	double kl_s = 0, t1_s = 0, t5_s = 0;

	for (r = 0; r < rows; r++) {
		const float *xr = x + r * c, *yr = y + r * c;
		size_t af = argmax_row(xr, c), aq = argmax_row(yr, c);
		double kl;

		if (a->probs) {
			qr_an_log_probs(xr, c, a->lf);
			qr_an_log_probs(yr, c, a->lq);
		} else {
			qr_an_log_softmax(xr, c, a->lf);
			qr_an_log_softmax(yr, c, a->lq);
		}
		kl = qr_an_kl(a->lf, a->lq, c);
		qr_an_top_k(xr, c, k, tf);
		qr_an_top_k(yr, c, k, tq);
		if (kl > a->kl_max || a->rows == 0)
			a->kl_max = kl;
		a->rows++;
		kl_s += kl;
		t1_s += af == aq;
		t5_s += (double)qr_an_top_common(tf, tq, k) / (double)k;
		if (af != aq)
			flip_add(a, af, aq);
		else
			a->same[af]++;
		o->rows++;
		o->agree += af == aq;
		if (sl->label >= 0 && rows == 1) {
			o->labeled++;
			o->fcorrect += af == (size_t)sl->label;
			o->qcorrect += aq == (size_t)sl->label;
		}
	}
	a->kl_sum += kl_s;
	a->agree += (size_t)t1_s;
	a->top5 += t5_s;
	series_push(&a->s, kl_s / (double)rows, t1_s / (double)rows,
		    t5_s / (double)rows);
}

/* The pixels of one sample: x, y [N, C, H W]. */
static void
add_pixels(struct qr_om_acc *a, size_t items, size_t hw, const float *x,
	   const float *y)
{
	size_t c = a->classes, n, p, ch, same = 0;

	for (n = 0; n < items; n++) {
		const float *xs = x + n * c * hw, *ys = y + n * c * hw;

		for (p = 0; p < hw; p++) {
			size_t af = 0, aq = 0;

			for (ch = 1; ch < c; ch++) {
				if (xs[ch * hw + p] > xs[af * hw + p])
					af = ch;
				if (ys[ch * hw + p] > ys[aq * hw + p])
					aq = ch;
			}
			if (af == aq) {
				same++;
				a->inter[af]++;
				a->uni[af]++;
			} else {
				a->uni[af]++;
				a->uni[aq]++;
			}
		}
	}
	a->pixels += items * hw;
	a->pagree += same;
	series_push(&a->s, (double)same / (double)(items * hw), NAN, NAN);
}

/* Whether float output t of this sample has the shape its kind was read
 * from (the batch may differ for a classifier, not the rest). */
static int
fits(const struct qr_om_acc *a, const struct qr_tensor *t)
{
	int i;

	if (t->ndim != a->ndim)
		return 0;
	for (i = 1; i < t->ndim; i++)
		if (t->dims[i] != a->dims[i])
			return 0;
	return 1;
}

/* See analysis-int.h. */
void
qr_om_add(struct qr_ar_outacc *o, const struct qr_ar_slot *sl, size_t i,
	  const float *x, const float *y)
{
	const struct qr_tensor *t = sl->fouts[i];
	struct qr_om_acc *a = o->om;
	int d;

	if (a == NULL) {
		a = o->om = xcalloc(1, sizeof *a);
		a->kind = kind_of(t, sl);
		a->ndim = t->ndim < 4 ? t->ndim : 4;
		for (d = 0; d < a->ndim; d++)
			a->dims[d] = t->dims[d];
		o->classifier = a->kind == QR_OUT_CLASSIFIER;
		if (a->kind == QR_OUT_OTHER)
			return;
		a->classes = (size_t)t->dims[1];
		if (a->kind == QR_OUT_CLASSIFIER) {
			size_t r, rows = (size_t)t->dims[0];

			a->probs = rows > 0;
			for (r = 0; r < rows && a->probs; r++)
				a->probs = qr_an_is_distribution(
					x + r * a->classes, a->classes);
			a->lf = xcalloc(a->classes, sizeof *a->lf);
			a->lq = xcalloc(a->classes, sizeof *a->lq);
			a->same = xcalloc(a->classes, sizeof *a->same);
		} else {
			a->inter = xcalloc(a->classes, sizeof *a->inter);
			a->uni = xcalloc(a->classes, sizeof *a->uni);
		}
	}
	if (a->kind == QR_OUT_OTHER)
		return;
	if (!fits(a, t) || t->dims[0] < 1) {
		series_push(&a->s, NAN, NAN, NAN);
		return;
	}
	if (a->kind == QR_OUT_CLASSIFIER)
		add_classes(a, o, sl, (size_t)t->dims[0], x, y);
	else
		add_pixels(a, (size_t)t->dims[0],
			   (size_t)(t->dims[2] * t->dims[3]), x, y);
}

/* See analysis-int.h. */
void
qr_om_acc_free(struct qr_om_acc *a)
{
	int i;

	if (a == NULL)
		return;
	for (i = 0; i < 3; i++)
		free(a->s.v[i]);
	free(a->flips);
	free(a->same);
	free(a->lf);
	free(a->lq);
	free(a->inter);
	free(a->uni);
	free(a);
}

static double *
copy_series(const double *v, size_t n)
{
	double *r = xcalloc(n + 1, sizeof *r);

	if (n > 0)
		memcpy(r, v, n * sizeof *r);
	return r;
}

/* Most rows first, then by float class, then candidate class. */
static int
flip_cmp(const void *pa, const void *pb)
{
	const struct qr_class_flip *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	return (a->to > b->to) - (a->to < b->to);
}

static struct qr_out_classes *
classes_result(const struct qr_om_acc *a)
{
	struct qr_out_classes *r = xcalloc(1, sizeof *r);
	size_t i, c = a->classes;

	r->classes = c;
	r->probabilities = a->probs;
	r->k = c < TOPK ? c : TOPK;
	r->rows = a->rows;
	r->flipped = a->rows - a->agree;
	r->kl_mean = a->rows ? a->kl_sum / (double)a->rows : NAN;
	r->kl_max = a->rows ? a->kl_max : NAN;
	r->top1 = a->rows ? (double)a->agree / (double)a->rows : NAN;
	r->top5 = a->rows ? a->top5 / (double)a->rows : NAN;
	r->samples = a->s.n;
	r->kl = copy_series(a->s.v[0], a->s.n);
	r->top1_s = copy_series(a->s.v[1], a->s.n);
	r->top5_s = copy_series(a->s.v[2], a->s.n);
	r->n_flips = a->n_flips;
	r->flips = xcalloc(a->n_flips + 1, sizeof *r->flips);
	for (i = 0; i < a->n_flips; i++) {
		r->flips[i].from = (size_t)(a->flips[i].key / c);
		r->flips[i].to = (size_t)(a->flips[i].key % c);
		r->flips[i].count = a->flips[i].count;
	}
	if (c <= QR_FLIP_MATRIX_MAX) {
		r->matrix = xcalloc(c * c, sizeof *r->matrix);
		for (i = 0; i < a->n_flips; i++)
			r->matrix[a->flips[i].key] = a->flips[i].count;
		for (i = 0; i < c; i++)
			r->matrix[i * c + i] = a->same[i];
	}
	qsort(r->flips, r->n_flips, sizeof *r->flips, flip_cmp);
	return r;
}

static struct qr_out_seg *
seg_result(const struct qr_om_acc *a)
{
	struct qr_out_seg *r = xcalloc(1, sizeof *r);
	size_t c = a->classes, i, n = 0;
	double sum = 0;

	r->classes = c;
	r->pixels = a->pixels;
	r->agree = a->pagree;
	r->samples = a->s.n;
	r->agree_s = copy_series(a->s.v[0], a->s.n);
	r->inter = xcalloc(c, sizeof *r->inter);
	r->uni = xcalloc(c, sizeof *r->uni);
	memcpy(r->inter, a->inter, c * sizeof *r->inter);
	memcpy(r->uni, a->uni, c * sizeof *r->uni);
	for (i = 0; i < c; i++)
		if (a->uni[i] > 0) {
			sum += (double)a->inter[i] / (double)a->uni[i];
			n++;
		}
	r->miou = n ? sum / (double)n : NAN;
	return r;
}

/* See analysis-int.h. */
void
qr_om_results(const struct qr_ar_outacc *oa, struct qr_act_output *o)
{
	const struct qr_om_acc *a = oa->om;

	o->kind = a != NULL ? a->kind : QR_OUT_OTHER;
	if (o->kind == QR_OUT_CLASSIFIER)
		o->cls = classes_result(a);
	else if (o->kind == QR_OUT_SEGMENTER)
		o->seg = seg_result(a);
}

/* See analysis-int.h. */
void
qr_om_result_free(struct qr_act_output *o)
{
	if (o->cls != NULL) {
		free(o->cls->kl);
		free(o->cls->top1_s);
		free(o->cls->top5_s);
		free(o->cls->flips);
		free(o->cls->matrix);
		free(o->cls);
	}
	if (o->seg != NULL) {
		free(o->seg->agree_s);
		free(o->seg->inter);
		free(o->seg->uni);
		free(o->seg);
	}
	o->cls = NULL;
	o->seg = NULL;
}
