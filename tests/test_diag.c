/*
 * test_diag: where the error comes from, activation outliers and worst
 * samples, on the fixtures of tests/data/diag/ (made by
 * tests/data/make_diag_fixtures.py, which says what each holds):
 *   - a QDQ chain whose layers all make about as much noise: no layer is
 *     named, the error builds up, and each share is the layer's local
 *     noise-to-signal ratio over their sum;
 *   - the same chain with one activation's scale 20 times too large: that
 *     layer is named, not the first one (whose cumulative SQNR falls
 *     furthest, from an exact input);
 *   - a Softmax after logits with a large common offset amplifies the
 *     noise it is given; the gain follows its definition;
 *   - a Flatten that re-rounds onto its input's grid makes no noise;
 *   - SmoothQuant's predicted SQNR, per input channel ranges and
 *     kurtosis for a Conv, a grouped Conv, a MatMul and a Gemm against
 *     numpy (sq_expected.json);
 *   - the worst samples: the lowest output cosines in order, with their
 *     per-layer traces, and a thumbnail when the data are images;
 *   - report.json's keys for all of it.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "report/report.h"
#include "report/report-int.h"
#include "run/run.h"
#include "tap.h"
#include "util/util.h"

#define DIAG QR_SRCDIR "/tests/data/diag/"

static struct qr_model *
load(const char *path)
{
	struct qr_model *m = NULL;
	struct qr_diag d = { 0 };

	if (qr_onnx_load(path, &m, &d) != QR_OK)
		diag("%s: %s", path, d.msg);
	qr_diag_clear(&d);
	return m;
}

static struct qr_tensor *
npy(const char *file)
{
	char *p = xasprintf("%s%s", DIAG, file);
	struct qr_tensor *t = NULL;
	struct qr_diag d = { 0 };

	if (qr_npy_read(p, "x", &t, &d) != QR_OK)
		diag("%s: %s", p, d.msg);
	qr_diag_clear(&d);
	free(p);
	return t;
}

/* Samples of `rows` rows of all ([N, ...]) in turn, named "s<i>". */
struct feed {
	struct qr_tensor *all;
	size_t rows, next;
	const char *input;
	struct qr_tensor one;
	struct qr_tensor *ptr;
	char name[16];
};

static enum qr_status
feed_next(void *user, struct qr_tensor *const **inputs, size_t *n_inputs,
	  int *label, const char **name, struct qr_diag *d)
{
	struct feed *f = user;
	size_t row = f->all->n_elem / (size_t)f->all->dims[0];

	(void)d;
	if (f->next + f->rows > (size_t)f->all->dims[0]) {
		*n_inputs = 0;
		return QR_OK;
	}
	f->one = *f->all;
	f->one.name = f->input;
	f->one.dims[0] = (int64_t)f->rows;
	f->one.n_elem = f->rows * row;
	f->one.nbytes = f->one.n_elem * sizeof(float);
	f->one.data = (float *)f->all->data + f->next * row;
	f->one.owned = 0;
	f->ptr = &f->one;
	*inputs = &f->ptr;
	*n_inputs = 1;
	*label = -1;
	snprintf(f->name, sizeof f->name, "s%zu", f->next / f->rows);
	*name = f->name;
	f->next += f->rows;
	return QR_OK;
}

/* The float model ffile against the candidates qfiles (NULL-ended;
 * paths under tests/data/diag/ unless absolute), on data in samples of
 * rows rows. */
static struct qr_analysis *
run(const char *ffile, const char *const *qfiles, struct qr_tensor *data,
    size_t rows, const char *source)
{
	char *fp = ffile[0] == '/' ? xstrdup(ffile)
				   : xasprintf("%s%s", DIAG, ffile);
	struct qr_model *fm = load(fp), *qm[4] = { 0 };
	struct qr_analysis *a = NULL;
	struct qr_act_opts o = { 0 };
	struct feed f = { 0 };
	struct qr_diag d = { 0 };
	enum qr_status st;
	size_t n = 0, i;

	for (; qfiles[n] != NULL && n < 4; n++) {
		char *qp = qfiles[n][0] == '/' ? xstrdup(qfiles[n])
			: xasprintf("%s%s", DIAG, qfiles[n]);

		qm[n] = load(qp);
		free(qp);
	}
	if (fm == NULL || data == NULL)
		goto out;
	st = qr_analysis_new(fm, (const struct qr_model *const *)qm, n, NULL,
			     &a, &d);
	if (st != QR_OK) {
		diag("qr_analysis_new: %s", d.msg);
		goto out;
	}
	f.all = data;
	f.rows = rows;
	f.input = fm->graph.inputs[0].name;
	o.next = feed_next;
	o.user = &f;
	o.samples = (size_t)data->dims[0] / rows;
	o.source = source;
	o.cos_threshold = 0.99;
	o.sqnr_threshold = 20;
	o.n_threads = 2;
	st = qr_analysis_run_data(a, fm, (const struct qr_model *const *)qm,
				  n, &o, &d);
	if (st != QR_OK) {
		diag("qr_analysis_run_data: %s", d.msg);
		qr_analysis_free(a);
		a = NULL;
	}
out:
	for (i = 0; i < n; i++)
		qr_onnx_free(qm[i]);
	qr_onnx_free(fm);
	qr_diag_clear(&d);
	free(fp);
	return a;
}

/* Candidate k's pair on tensor, or -1. */
static long
pair_of(const struct qr_analysis *a, size_t k, const char *tensor)
{
	size_t i;

	for (i = 0; i < a->n_act_pairs; i++)
		if (a->act_pairs[i].quant == k &&
		    strcmp(a->act_tensors[a->act_pairs[i].tensor].name,
			   tensor) == 0)
			return (long)i;
	return -1;
}

static const char *
name_of(const struct qr_analysis *a, long pi)
{
	return pi >= 0 ? a->act_tensors[a->act_pairs[pi].tensor].name : "-";
}

/* noise-to-signal ratio of an SQNR in dB */
static double
nsr(double db)
{
	return pow(10.0, -db / 10.0);
}

/* The verdict clause of candidate k (heap). */
static char *
sentence(const struct qr_analysis *a, size_t k)
{
	struct qr_buf b = {0};

	qr_view_sources_text(a, k, &b);
	return b.len ? qr_buf_take(&b) : xstrdup("");
}

/* The chain: spread evenly (candidate 0) and one bad scale (candidate 1). */
static void
test_chain(void)
{
	static const char *const q[] = { "chain_qdq.onnx", "chain_bad.onnx",
					 NULL };
	struct qr_tensor *x = npy("chain_input.npy");
	struct qr_analysis *a = run("chain_float.onnx", q, x, 4, "npy");
	const struct qr_act_run *r;
	double sum = 0, lam = 0, worst = 0;
	size_t i, bad = 0, n = 0;
	long r0, r4, r5;
	char *s;

	ok(a != NULL && a->data.samples == 10, "chain: 10 samples through "
	   "the float model and two candidates");
	if (a == NULL)
		goto out;
	/* evenly spread */
	r = &a->act_runs[0];
	r0 = pair_of(a, 0, "r0");
	ok(r->es.computed && r->es.accumulates && r->born < 0 &&
	   r->es.top_share < QR_ES_DOMINANT,
	   "even chain: no layer is named (largest share %.3f, born %s)",
	   r->es.top_share, name_of(a, r->born));
	for (i = 0; i < a->n_act_pairs; i++) {
		const struct qr_act_pair *p = &a->act_pairs[i];

		if (p->quant != 0 || isnan(p->noise_share))
			continue;
		sum += p->noise_share;
		if (!p->same_grid && isfinite(p->local_sqnr_db))
			lam += nsr(p->local_sqnr_db);
	}
	ok_near(sum, 1.0, 1e-9, "even chain: the shares add up to 1");
	for (i = 0; i < a->n_act_pairs; i++) {
		const struct qr_act_pair *p = &a->act_pairs[i];

		if (p->quant != 0 || isnan(p->noise_share) ||
		    !isfinite(p->local_sqnr_db))
			continue;
		n++;
		bad += fabs(p->noise_share - nsr(p->local_sqnr_db) / lam) >
		       1e-9 || fabs(p->noise_db + p->local_sqnr_db) > 1e-9;
	}
	ok(n == 9 && bad == 0, "even chain: each share is the local NSR over "
	   "their sum, noise_db = -local SQNR (%zu of %zu pairs off)", bad, n);
	ok(r->es.group_pairs[QR_OPG_LINEAR] == 9 &&
	   fabs(r->es.group_share[QR_OPG_LINEAR] - 1) < 1e-9,
	   "even chain: Gemm + Relu layers count as Conv/Gemm/MatMul (%zu, "
	   "%.3f)", r->es.group_pairs[QR_OPG_LINEAR],
	   r->es.group_share[QR_OPG_LINEAR]);
	s = sentence(a, 0);
	ok(strstr(s, "builds up over many layers") != NULL &&
	   strstr(s, "Conv/Gemm/MatMul 100%") != NULL &&
	   strstr(s, "born") == NULL, "even chain says so: %s", s);
	free(s);
	ok(r0 >= 0 && r->born != r0, "even chain: the first layer is not "
	   "named although its cumulative SQNR falls furthest (from an exact "
	   "input to %.1f dB)", r0 >= 0 ? a->act_pairs[r0].sqnr_db : NAN);

	/* one scale 20x too large */
	r = &a->act_runs[1];
	r0 = pair_of(a, 1, "r0");
	r4 = pair_of(a, 1, "r4");
	r5 = pair_of(a, 1, "r5");
	ok(r4 >= 0 && r->born == r4 && r->es.creators[0] == r4 &&
	   !r->es.accumulates && r->born_share > 0.9,
	   "bad scale: error is born at %s (want r4), %.3f of the noise",
	   name_of(a, r->born), r->born_share);
	ok(r0 >= 0 && r->born != r0 && a->act_pairs[r0].noise_share < 0.05,
	   "bad scale: not the first layer (share %.4f)",
	   r0 >= 0 ? a->act_pairs[r0].noise_share : NAN);
	for (i = 0; i < a->n_act_pairs; i++)
		if (a->act_pairs[i].quant == 1 && (long)i != r4 &&
		    isfinite(a->act_pairs[i].local_sqnr_db) &&
		    a->act_pairs[i].local_sqnr_db > worst)
			worst = a->act_pairs[i].local_sqnr_db;
	ok(r4 >= 0 && a->act_pairs[r4].local_sqnr_db < 25 && worst > 30,
	   "bad scale: r4's local SQNR %.1f dB, the others above 30",
	   r4 >= 0 ? a->act_pairs[r4].local_sqnr_db : NAN);
	s = sentence(a, 1);
	ok(strstr(s, "error is born at r4") != NULL, "bad scale says so: %s",
	   s);
	free(s);
	/* the gain as defined: rho_out / (rho_in + lambda) */
	if (r4 >= 0 && r5 >= 0) {
		const struct qr_act_pair *p = &a->act_pairs[r5];
		double want = 10 * log10(nsr(p->sqnr_db) /
					 (nsr(a->act_pairs[r4].sqnr_db) +
					  nsr(p->local_sqnr_db)));

		ok_near(p->noise_gain_db, want, 1e-6, "r5's noise gain is its "
			"cumulative NSR over r4's plus its own");
	}
out:
	qr_analysis_free(a);
	qr_tensor_free(x);
}

/* A Softmax whose logits share a large offset amplifies their noise. */
static void
test_amplifier(void)
{
	static const char *const q[] = { "amp_qdq.onnx", NULL };
	struct qr_tensor *x = npy("amp_input.npy");
	struct qr_analysis *a = run("amp_float.onnx", q, x, 4, "npy");
	const struct qr_act_run *r;
	long p;
	char *s;

	ok(a != NULL, "amplifier fixture runs");
	if (a == NULL)
		goto out;
	r = &a->act_runs[0];
	p = pair_of(a, 0, "p");
	ok(p >= 0 && r->es.n_amplifiers >= 1 && r->es.amplifiers[0] == p &&
	   a->act_pairs[p].noise_gain_db > 6,
	   "the Softmax amplifies most: %s at %+.1f dB",
	   name_of(a, r->es.n_amplifiers ? r->es.amplifiers[0] : -1),
	   p >= 0 ? a->act_pairs[p].noise_gain_db : NAN);
	ok(p >= 0 && fabs(a->act_pairs[pair_of(a, 0, "l")].noise_gain_db) < 1,
	   "the logits' Gemm passes its noise on (%+.2f dB)",
	   a->act_pairs[pair_of(a, 0, "l")].noise_gain_db);
	s = sentence(a, 0);
	ok(strstr(s, "noise amplified most at p (+") != NULL, "%s", s);
	free(s);
out:
	qr_analysis_free(a);
	qr_tensor_free(x);
}

/* digits_qdq's Flatten re-rounds onto the grid its input is on (the
 * quantizer gives both one scale and zero point): the candidate loses
 * nothing there, though the local run, fed float values, measures a
 * rounding. Its GlobalAveragePool averages: new values, a real rounding. */
static void
test_same_grid(void)
{
	static const char *const q[] = { QR_SRCDIR "/samples/digits_qdq.onnx",
					 NULL };
	struct qr_tensor *x = NULL;
	struct qr_analysis *a = NULL;
	struct qr_diag d = { 0 };
	long f, g;

	if (qr_npy_read(QR_SRCDIR "/samples/digits_test.npy", "input", &x,
			&d) != QR_OK) {
		ok(0, "digits_test.npy: %s", d.msg);
		goto out;
	}
	a = run(QR_SRCDIR "/samples/digits_float.onnx", q, x, 1, "npy");
	f = a ? pair_of(a, 0, "/Flatten_output_0") : -1;
	g = a ? pair_of(a, 0, "/pool/GlobalAveragePool_output_0") : -1;
	ok(f >= 0 && a->act_pairs[f].same_grid &&
	   a->act_pairs[f].noise_share == 0 &&
	   isfinite(a->act_pairs[f].local_sqnr_db) &&
	   fabs(a->act_pairs[f].noise_gain_db) < 0.01,
	   "the Flatten makes no noise of its own and passes it on (local "
	   "SQNR %.1f dB, gain %+.3f dB)",
	   f >= 0 ? a->act_pairs[f].local_sqnr_db : NAN,
	   f >= 0 ? a->act_pairs[f].noise_gain_db : NAN);
	ok(g >= 0 && !a->act_pairs[g].same_grid &&
	   a->act_pairs[g].noise_share > 0, "the GlobalAveragePool makes "
	   "some (%.2f%%)", g >= 0 ? 100 * a->act_pairs[g].noise_share : NAN);
out:
	qr_diag_clear(&d);
	qr_analysis_free(a);
	qr_tensor_free(x);
}

static double
num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const struct qr_act_outlier *
outlier_of(const struct qr_analysis *a, const char *layer)
{
	size_t i;

	for (i = 0; i < a->n_outliers; i++)
		if (strcmp(a->outliers[i].layer, layer) == 0)
			return &a->outliers[i];
	return NULL;
}

/* SmoothQuant's predictions against numpy's. */
static void
test_smooth(void)
{
	static const char *const q[] = { "sq_float.onnx", NULL };
	struct qr_tensor *x = npy("sq_input.npy");
	struct qr_analysis *a = run("sq_float.onnx", q, x, 1, "npy");
	char *text = NULL;
	size_t len, k, j;
	cJSON *exp = NULL, *e;
	struct qr_diag d = { 0 };

	ok(a != NULL && a->n_outliers == 4, "smooth: four weighted layers "
	   "with their inputs summed (%zu)", a ? a->n_outliers : 0);
	if (a == NULL ||
	    qr_read_file(DIAG "sq_expected.json", &text, &len, &d) != QR_OK ||
	    (exp = cJSON_Parse(text)) == NULL) {
		ok(0, "sq_expected.json read (%s)", d.msg);
		goto out;
	}
	cJSON_ArrayForEach(e, exp) {
		const char *layer = cJSON_GetObjectItem(e, "layer")->valuestring;
		const struct qr_act_outlier *o = outlier_of(a, layer);
		const cJSON *am = cJSON_GetObjectItem(e, "act_absmax");
		const cJSON *wr = cJSON_GetObjectItem(e, "w_range");
		const cJSON *al = cJSON_GetObjectItem(e, "sqnr_by_alpha_db");
		size_t bad = 0;
		char what[128];

		if (!ok(o != NULL && o->channels == (size_t)num(e, "channels"),
			"%s: %zu input channels", layer, o ? o->channels : 0))
			continue;
		for (j = 0; j < o->channels; j++)
			bad += o->act_absmax[j] !=
			       (float)cJSON_GetArrayItem(am, (int)j)->valuedouble
			       || o->w_range[j] !=
			       (float)cJSON_GetArrayItem(wr, (int)j)->valuedouble;
		ok(bad == 0 && o->top_channel == (size_t)num(e, "top_channel"),
		   "%s: per-channel max |x| and max |w| as numpy's, top channel "
		   "%zu", layer, o->top_channel);
		snprintf(what, sizeof what, "%s: max / median", layer);
		ok_near(o->max_over_median, num(e, "max_over_median"),
			1e-9 * num(e, "max_over_median"), what);
		snprintf(what, sizeof what, "%s: kurtosis", layer);
		ok_near(o->kurtosis, num(e, "kurtosis"), 1e-6, what);
		snprintf(what, sizeof what, "%s: predicted SQNR as it is",
			 layer);
		ok_near(o->sqnr_none_db, num(e, "sqnr_db"), 1e-6, what);
		for (k = 0, bad = 0; k < QR_OL_ALPHAS; k++)
			bad += !(fabs(o->sqnr_db[k] - cJSON_GetArrayItem(
				al, (int)k)->valuedouble) <= 1e-6);
		ok(bad == 0, "%s: predicted SQNR at every alpha as numpy's "
		   "(alpha 0.5: %.4f dB)", layer, o->sqnr_db[5]);
		ok(o->best_alpha == num(e, "best_alpha") &&
		   fabs(o->best_sqnr_db - num(e, "best_sqnr_db")) < 1e-6,
		   "%s: best alpha %.1f, %.3f dB (gain %+.2f dB)", layer,
		   o->best_alpha, o->best_sqnr_db,
		   o->best_sqnr_db - o->sqnr_none_db);
	}
	e = cJSON_GetArrayItem(exp, 0);
	ok(e != NULL && num(e, "best_sqnr_db") > num(e, "sqnr_db") + 3 &&
	   num(e, "max_over_median") > 20, "the conv's outlier channels cost "
	   "it: migration gains over 3 dB");
out:
	cJSON_Delete(exp);
	free(text);
	qr_diag_clear(&d);
	qr_analysis_free(a);
	qr_tensor_free(x);
}

/* The worst samples of the bad chain: the five lowest output cosines. */
static void
test_worst(void)
{
	static const char *const q[] = { "chain_bad.onnx", NULL };
	struct qr_tensor *x = npy("chain_input.npy");
	struct qr_analysis *a = run("chain_float.onnx", q, x, 4, "npy");
	const struct qr_act_run *r;
	const struct qr_act_output *o;
	size_t i, j, lower, bad = 0, n = 0;
	long py, px;

	ok(a != NULL && a->n_act_outputs == 1, "worst: chain runs");
	if (a == NULL)
		goto out;
	r = &a->act_runs[0];
	o = &a->act_outputs[0];
	ok(r->n_worst == QR_WORST_SAMPLES && o->samples == 10,
	   "worst: %d of 10 samples kept", QR_WORST_SAMPLES);
	for (i = 0; i < r->n_worst; i++) {
		const struct qr_worst_sample *w = &r->worst[i];

		lower = 0;
		for (j = 0; j < o->samples; j++)
			lower += o->cosine[j] < w->cosine;
		bad += w->cosine != o->cosine[w->sample] || lower != i ||
		       (i > 0 && w->cosine < r->worst[i - 1].cosine) ||
		       w->thumb != NULL;
	}
	ok(bad == 0, "worst: the lowest output cosines, lowest first, each "
	   "its sample's (%g first)", r->n_worst ? r->worst[0].cosine : NAN);
	py = pair_of(a, 0, "y");
	px = pair_of(a, 0, "x");
	for (i = 0; i < a->n_act_pairs; i++)
		n += a->act_pairs[i].quant == 0;
	bad = 0;
	for (i = 0; i < r->n_worst; i++)
		bad += r->worst[i].n_trace != n || py < 0 || px < 0 ||
		       r->worst[i].trace[py] != (float)r->worst[i].cosine ||
		       r->worst[i].trace[px] != 1.0f ||
		       !(r->worst[i].trace[pair_of(a, 0, "r5")] < 1.0f);
	ok(bad == 0, "worst: a cosine per pair, the output's that of the "
	   "sample, the exact input's 1");
out:
	qr_analysis_free(a);
	qr_tensor_free(x);
}

/* Image data get thumbnails: the digits CNN on three gradient images. */
static void
test_thumbnail(void)
{
	static const int64_t dims[4] = { 3, 1, 8, 8 };
	static const char *const q[] = { QR_SRCDIR "/samples/digits_qdq.onnx",
					 NULL };
	struct qr_tensor *x = NULL;
	struct qr_analysis *a = NULL;
	struct qr_diag d = { 0 };
	const struct qr_worst_sample *w;
	size_t i, s, bad = 0;

	if (qr_tensor_new(QR_DT_FLOAT, 4, dims, &x, &d) != QR_OK) {
		ok(0, "tensor: %s", d.msg);
		goto out;
	}
	for (s = 0; s < 3; s++)
		for (i = 0; i < 64; i++)
			((float *)x->data)[s * 64 + i] =
				(float)((i * (s + 1)) % 64) / 32.0f - 1.0f;
	a = run(QR_SRCDIR "/samples/digits_float.onnx", q, x, 1, "images");
	ok(a != NULL && a->act_runs[0].n_worst == 3, "thumbnail: digits on 3 "
	   "images");
	if (a == NULL || a->act_runs[0].n_worst == 0)
		goto out;
	w = &a->act_runs[0].worst[0];
	ok(w->thumb != NULL && w->thumb_w == 8 && w->thumb_h == 8,
	   "thumbnail: 8 x 8 for an 8 x 8 image");
	if (w->thumb == NULL)
		goto out;
	for (i = 0; i < 64; i++) {
		const float *v = (const float *)x->data + w->sample * 64;
		float lo = v[0], hi = v[0];
		size_t k;

		for (k = 1; k < 64; k++) {
			lo = v[k] < lo ? v[k] : lo;
			hi = v[k] > hi ? v[k] : hi;
		}
		for (k = 0; k < 3; k++)
			bad += w->thumb[i * 3 + k] !=
			       (uint8_t)lround(255.0 * (v[i] - lo) / (hi - lo));
	}
	ok(bad == 0, "thumbnail: each pixel its value stretched to 0..255, "
	   "grey as RGB");
out:
	qr_diag_clear(&d);
	qr_analysis_free(a);
	qr_tensor_free(x);
}

static int
has(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key) != NULL;
}

/* report.json carries all of it. */
static void
test_json(void)
{
	static const char *const q[] = { "chain_qdq.onnx", "chain_bad.onnx",
					 NULL };
	struct qr_tensor *x = npy("chain_input.npy");
	struct qr_analysis *a = run("chain_float.onnx", q, x, 4, "npy");
	cJSON *j, *v, *e;
	int all = 1;

	if (a == NULL) {
		ok(0, "json: chain runs");
		goto out;
	}
	j = qr_report_json_new(a, NULL, NULL);
	v = cJSON_GetObjectItem(j, "schema_version");
	ok(cJSON_IsNumber(v) && v->valueint == QR_SCHEMA_VERSION &&
	   QR_SCHEMA_VERSION == 3, "schema_version 3");
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "activations"))
		all &= has(e, "noise_db") && has(e, "noise_share") &&
		       has(e, "noise_gain_db") && has(e, "noise_same_grid");
	ok(all, "every activation has noise_db, noise_share, noise_gain_db, "
	   "noise_same_grid");
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "activation_runs"), 0);
	v = cJSON_GetObjectItem(e, "error_sources");
	ok(cJSON_IsNull(cJSON_GetObjectItem(e, "error_born_at")) &&
	   cJSON_IsTrue(cJSON_GetObjectItem(v, "accumulates")) &&
	   cJSON_GetArraySize(cJSON_GetObjectItem(v, "creators")) ==
	   QR_ES_TOP && has(v, "amplifiers") && has(v, "groups") &&
	   has(v, "top_share") && has(v, "created_db") &&
	   num(v, "dominant_share") == QR_ES_DOMINANT,
	   "candidate 1: error_sources, no error_born_at");
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "activation_runs"), 1);
	v = cJSON_GetObjectItem(e, "error_born_at");
	ok(strcmp(cJSON_GetObjectItem(v, "tensor")->valuestring, "r4") == 0 &&
	   num(v, "noise_share") > 0.9 && has(v, "local_sqnr_db") &&
	   has(v, "sqnr_drop_db"), "candidate 2: error_born_at r4 with its "
	   "share");
	v = cJSON_GetObjectItem(e, "worst_samples");
	e = cJSON_GetArrayItem(v, 0);
	ok(cJSON_GetArraySize(v) == QR_WORST_SAMPLES && has(e, "sample") &&
	   has(e, "name") && has(e, "cosine") &&
	   cJSON_IsNull(cJSON_GetObjectItem(e, "thumbnail")) &&
	   cJSON_GetArraySize(cJSON_GetObjectItem(e, "trace")) == 10,
	   "worst_samples: sample, name, cosine, trace per pair, no "
	   "thumbnail for npy data");
	v = cJSON_GetObjectItem(j, "outliers");
	e = cJSON_GetArrayItem(v, 0);
	ok(cJSON_GetArraySize(v) == 9 && has(e, "layer") &&
	   has(e, "max_over_median") && has(e, "kurtosis") &&
	   has(e, "sqnr_db") && has(e, "sqnr_alpha05_db") &&
	   has(e, "best_alpha") && has(e, "gain_db") &&
	   cJSON_GetArraySize(cJSON_GetObjectItem(e, "sqnr_by_alpha_db")) ==
	   QR_OL_ALPHAS &&
	   cJSON_GetArraySize(cJSON_GetObjectItem(e, "act_absmax")) == 32,
	   "outliers: one per Gemm, with the documented keys");
	cJSON_Delete(j);
out:
	qr_analysis_free(a);
	qr_tensor_free(x);
}

int
main(void)
{
	plan_no_plan();
	RUN(test_chain);
	RUN(test_amplifier);
	RUN(test_same_grid);
	RUN(test_smooth);
	RUN(test_worst);
	RUN(test_thumbnail);
	RUN(test_json);
	return done();
}
