/*
 * fallback: the layers of a candidate to keep float so that its output
 * meets a target, found greedily and run to confirm.
 *
 * The candidates are the layers whose kept-float run improved the
 * target's metric over the candidate as it is, best first (the
 * single-layer sensitivities). Step i keeps the first i of them float;
 * the steps are run on the same samples (as many at once as the
 * sensitivity runs have lanes) until one meets the target. The first
 * runs beside the last, every candidate kept float: when that misses
 * the target no step can meet it (the plan is then every candidate, not
 * met), and only steps 2, 4, 8, ... are run for the curve. The curve is
 * the measured metric after each step run; the plan is the steps up to
 * the first that meets the target.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis-int.h"
#include "graph/graph.h"
#include "onnx/onnx.h"

/* Steps at most (a run of every sample each). */
#define FB_MAX_STEPS 64

static double
metric_of(const struct qr_sens_metric *m, int which)
{
	if (!m->ran)
		return NAN;
	switch (which) {
	case QR_SENS_SQNR:
		return m->sqnr_db;
	case QR_SENS_TOP1:
		return m->top1;
	default:
		return m->cosine;
	}
}

static const struct qr_sens_layer *cmp_l;
static int cmp_which;

/* Better kept-float metric first, then shallower. */
static int
cmp_gain(const void *x, const void *y)
{
	const struct qr_sens_layer *a = &cmp_l[*(const size_t *)x];
	const struct qr_sens_layer *b = &cmp_l[*(const size_t *)y];
	double ma = metric_of(&a->kept_float, cmp_which);
	double mb = metric_of(&b->kept_float, cmp_which);

	if (ma != mb)
		return ma > mb ? -1 : 1;
	return (a->depth > b->depth) - (a->depth < b->depth);
}

/* Whether metric m meets target t. */
static int
meets(const struct qr_sens_metric *m, const struct qr_sens_target *t)
{
	double v = metric_of(m, t->metric);

	return !isnan(v) && v >= t->value;
}

/* Run the steps k[0..m) (m <= the lanes) side by side: step k keeps the
 * first k candidates float; its metric goes to fb->curve[k - 1]. */
static void
run_steps(struct qr_sens_ctx *c, const struct qr_sens_result *r,
	  struct qr_sens_fallback *fb, const size_t *cand,
	  unsigned char **sets, const size_t *k, size_t m)
{
	struct qr_sens_metric out[FB_MAX_STEPS];
	size_t j, s;

	for (j = 0; j < m; j++) {
		memset(sets[j], 0, r->n_layers);
		for (s = 0; s < k[j]; s++)
			sets[j][cand[s]] = 1;
	}
	qr_sens_measure_sets(c, (const unsigned char *const *)sets, out, m);
	for (j = 0; j < m; j++)
		fb->curve[k[j] - 1] = out[j];
}

/* See analysis-int.h. */
void
qr_fb_search(struct qr_sens_ctx *c, struct qr_sens_result *r,
	     const struct qr_sens_target *t)
{
	struct qr_sens_fallback *fb = &r->fb;
	double base = metric_of(&r->base, t->metric);
	size_t *cand = xcalloc(r->n_layers + 1, sizeof *cand);
	size_t n = 0, i, done = 0, lanes = (size_t)qr_sens_lanes(c);
	unsigned char **sets = NULL;

	fb->computed = 1;
	if (!isnan(base) && base >= t->value) {
		fb->met = 1; /* nothing to keep float */
		goto out;
	}
	for (i = 0; i < r->n_layers; i++) {
		double m = metric_of(&r->layers[i].kept_float, t->metric);

		if (!isnan(m) && (isnan(base) || m > base))
			cand[n++] = i;
	}
	cmp_l = r->layers;
	cmp_which = t->metric;
	qsort(cand, n, sizeof *cand, cmp_gain);
	if (n > FB_MAX_STEPS)
		n = FB_MAX_STEPS;
	fb->order = xcalloc(n + 1, sizeof *fb->order);
	fb->curve = xcalloc(n + 1, sizeof *fb->curve);
	for (i = 0; i < n; i++)
		fb->order[i] = cand[i];
	sets = xcalloc(lanes + 1, sizeof *sets);
	for (i = 0; i < lanes; i++)
		sets[i] = xcalloc(r->n_layers + 1, 1);
	if (n >= 3 && lanes >= 2) {
		/* the first step beside the last */
		size_t k[2] = { 1, n };

		run_steps(c, r, fb, cand, sets, k, 2);
		if (meets(&fb->curve[0], t)) {
			done = 1;
			fb->met = 1;
		} else if (fb->curve[n - 1].ran &&
			   !meets(&fb->curve[n - 1], t)) {
			size_t ks[FB_MAX_STEPS], nk = 0, p;

			/* out of reach: the curve at 2, 4, 8, ... */
			for (p = 2; p < n; p *= 2)
				ks[nk++] = p;
			for (i = 0; i < nk; i += lanes)
				run_steps(c, r, fb, cand, sets, ks + i,
					  nk - i < lanes ? nk - i : lanes);
			done = n;
		} else {
			done = 1;
		}
	}
	while (done < n && !fb->met) {
		size_t m = n - done < lanes ? n - done : lanes, j, nk = 0;
		size_t ks[FB_MAX_STEPS];

		/* the next m steps, those not run already */
		for (j = 0; j < m; j++)
			if (!fb->curve[done + j].ran)
				ks[nk++] = done + j + 1;
		if (nk > 0)
			run_steps(c, r, fb, cand, sets, ks, nk);
		for (j = 0; j < m && !fb->met; j++)
			fb->met = meets(&fb->curve[done++], t);
	}
	fb->n_steps = done;
	fb->n_plan = done;
	for (i = 0; i < fb->n_plan; i++) {
		const struct qr_sens_layer *l = &r->layers[fb->order[i]];

		fb->float_bytes += l->params * sizeof(float);
		fb->macs += l->macs;
	}
out:
	for (i = 0; sets && i < lanes; i++)
		free(sets[i]);
	free(sets);
	free(cand);
}

/* See analysis.h. */
enum qr_status
qr_analysis_write_fallback(const struct qr_analysis *a, size_t k,
			   const struct qr_model *fmodel,
			   const struct qr_model *quant, const char *path,
			   struct qr_diag *d)
{
	const struct qr_sens_result *r = a->sens && k < a->n_quant ?
		&a->sens[k] : NULL;
	struct qr_graph *fg = NULL, *qg = NULL;
	struct qr_hy_plan *p = NULL;
	struct qr_hy_model *h = NULL;
	unsigned char *keep = NULL;
	enum qr_status st;
	size_t i, j, found = 0;

	if (r == NULL || !r->ran || !r->fb.computed)
		return qr_errorf(d, QR_EUSAGE, "--write-fallback '%s': "
				 "candidate %zu has no fallback plan (%s)",
				 path, k + 1, r && r->why ? r->why :
				 "--sensitivity none");
	if ((st = qr_graph_new(fmodel, &fg, d)) != QR_OK ||
	    (st = qr_graph_new(quant, &qg, d)) != QR_OK)
		goto out;
	qr_hy_plan_new(a, k, fg, qg, &p);
	keep = xcalloc(p->n + 1, 1);
	for (i = 0; i < r->fb.n_plan; i++) {
		const char *name = r->layers[r->fb.order[i]].layer;

		for (j = 0; j < p->n; j++)
			if (strcmp(p->l[j].layer, name) == 0 && !keep[j]) {
				keep[j] = 1;
				found++;
				break;
			}
	}
	QR_ASSERT(found == r->fb.n_plan);
	h = qr_hy_keep_float(p, keep, 0);
	st = qr_onnx_save(&h->m, path, d);
out:
	qr_hy_model_free(h);
	free(keep);
	qr_hy_plan_free(p);
	qr_graph_free(qg);
	qr_graph_free(fg);
	return st;
}
