/*
 * test_outputs: what the graph outputs say (src/analysis/outputs.c), on
 * the fixtures of tests/data/outputs/ (made by
 * tests/data/make_output_fixtures.py, which says what each holds and
 * recomputes every number with numpy into expected.json):
 *   - a classifier candidate that flips exactly samples 2 and 5 from class
 *     3 to 7 and sample 9 from 1 to 4: that flip list and matrix, and KL,
 *     top-1 and top-5 per sample as numpy has them;
 *   - a classifier whose values are probabilities ([N, C, 1, 1], 2 rows a
 *     sample, 30 classes, the candidate's rounded to 1/256 so some are 0):
 *     read as probabilities, no full matrix, numpy's numbers;
 *   - a segmenter-shaped output: per-sample SQNR and cosine, pixel
 *     agreement and per-class IoU as numpy has them; a detector-shaped
 *     output beside it is neither kind and keeps its per-sample SQNR;
 *   - report.json's keys and the verdict's flip clause.
 */
#include <cjson/cJSON.h>
#include <math.h>
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

#define DIR QR_SRCDIR "/tests/data/outputs/"

static cJSON *expected;

/* rows rows of data at a time, as one input named input. */
struct rows_feed {
	struct qr_tensor *data;
	size_t rows, at;
	const char *input;
	struct qr_tensor view;
	struct qr_tensor *one;
	char name[24];
};

static enum qr_status
rows_next(void *user, struct qr_tensor *const **inputs, size_t *n_inputs,
	  int *label, const char **name, struct qr_diag *d)
{
	struct rows_feed *f = user;
	size_t per = f->data->n_elem / (size_t)f->data->dims[0];

	(void)d;
	*label = -1;
	*n_inputs = 0;
	if ((f->at + 1) * f->rows > (size_t)f->data->dims[0])
		return QR_OK;
	f->view = *f->data;
	f->view.name = f->input;
	f->view.owned = 0;
	f->view.dims[0] = (int64_t)f->rows;
	f->view.n_elem = f->rows * per;
	f->view.nbytes = f->view.n_elem * sizeof(float);
	f->view.data = (float *)f->data->data + f->at * f->rows * per;
	f->one = &f->view;
	*inputs = &f->one;
	*n_inputs = 1;
	snprintf(f->name, sizeof f->name, "sample %zu", f->at++);
	*name = f->name;
	return QR_OK;
}

/* The analysis of case name: name_float.onnx against name_cand.onnx on
 * name_input.npy, rows rows a sample; NULL (said) when it fails. */
static struct qr_analysis *
run_case(const char *name, size_t rows)
{
	char *fp = xasprintf("%s%s_float.onnx", DIR, name);
	char *qp = xasprintf("%s%s_cand.onnx", DIR, name);
	char *np = xasprintf("%s%s_input.npy", DIR, name);
	struct qr_model *fm = NULL, *qm = NULL;
	struct qr_analysis *a = NULL;
	struct qr_act_opts o = { 0 };
	struct rows_feed f = { 0 };
	struct qr_diag d = { 0 };

	if (qr_onnx_load(fp, &fm, &d) != QR_OK ||
	    qr_onnx_load(qp, &qm, &d) != QR_OK ||
	    qr_npy_read(np, "x", &f.data, &d) != QR_OK ||
	    qr_analysis_new(fm, (const struct qr_model *const *)&qm, 1, NULL,
			    &a, &d) != QR_OK) {
		diag("%s: %s", name, d.msg);
		goto out;
	}
	f.rows = rows;
	f.input = fm->graph.inputs[0].name;
	o.next = rows_next;
	o.user = &f;
	o.samples = (size_t)f.data->dims[0] / rows;
	o.source = "npy";
	o.cos_threshold = 0.99;
	o.sqnr_threshold = 20;
	o.n_threads = 1;
	if (qr_analysis_run_data(a, fm, (const struct qr_model *const *)&qm,
				 1, &o, &d) != QR_OK) {
		diag("%s: run: %s", name, d.msg);
		qr_analysis_free(a);
		a = NULL;
	}
out:
	qr_tensor_free(f.data);
	qr_onnx_free(qm);
	qr_onnx_free(fm);
	qr_diag_clear(&d);
	free(np);
	free(qp);
	free(fp);
	return a;
}

static const struct qr_act_output *
output_named(const struct qr_analysis *a, const char *name)
{
	size_t i;

	for (i = 0; a != NULL && i < a->n_act_outputs; i++)
		if (strcmp(a->act_outputs[i].name, name) == 0)
			return &a->act_outputs[i];
	return NULL;
}

static double
num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* |got - want| <= tol (1 + |want|); a null want is +inf. */
static int
close_to(double got, const cJSON *want, double tol)
{
	double w = cJSON_IsNumber(want) ? want->valuedouble : INFINITY;

	if (isinf(w))
		return isinf(got) && got > 0;
	return fabs(got - w) <= tol * (1 + fabs(w));
}

/* Every v[i] against the array key of e; diag the first miss. */
static int
series_ok(const double *v, size_t n, const cJSON *e, const char *key,
	  double tol)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(e, key);
	size_t i;

	if ((size_t)cJSON_GetArraySize(arr) != n) {
		diag("%s: %zu values, numpy has %d", key, n,
		     cJSON_GetArraySize(arr));
		return 0;
	}
	for (i = 0; i < n; i++)
		if (!close_to(v[i], cJSON_GetArrayItem(arr, (int)i), tol)) {
			diag("%s[%zu] = %.17g, numpy %.17g", key, i, v[i],
			     num(cJSON_GetArrayItem(arr, (int)i), NULL));
			return 0;
		}
	return 1;
}

/* The flip list against numpy's [[from, to, count], ...], in order. */
static int
flips_ok(const struct qr_out_classes *c, const cJSON *e)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(e, "flips");
	size_t i;

	if ((size_t)cJSON_GetArraySize(arr) != c->n_flips)
		return 0;
	for (i = 0; i < c->n_flips; i++) {
		const cJSON *f = cJSON_GetArrayItem(arr, (int)i);

		if (c->flips[i].from != (size_t)cJSON_GetArrayItem(f, 0)->valueint ||
		    c->flips[i].to != (size_t)cJSON_GetArrayItem(f, 1)->valueint ||
		    c->flips[i].count != (size_t)cJSON_GetArrayItem(f, 2)->valueint)
			return 0;
	}
	return 1;
}

static void
test_logits(void)
{
	struct qr_analysis *a = run_case("logits", 1);
	const struct qr_act_output *o = output_named(a, "y");
	const cJSON *e = cJSON_GetObjectItem(expected, "logits");
	const struct qr_out_classes *c = o ? o->cls : NULL;
	const cJSON *m;
	size_t i, j;
	int mat = 1;

	ok(o != NULL && o->kind == QR_OUT_CLASSIFIER && o->classifier &&
	   c != NULL && o->seg == NULL, "logits: a classifier");
	if (c == NULL)
		goto out;
	ok(!c->probabilities && c->classes == 10 && c->k == 5 &&
	   c->rows == 12 && c->samples == 12, "logits: read as logits, 10 "
	   "classes, 12 rows");
	ok(c->flipped == 3 && c->n_flips == 2 && c->flips[0].from == 3 &&
	   c->flips[0].to == 7 && c->flips[0].count == 2 &&
	   c->flips[1].from == 1 && c->flips[1].to == 4 &&
	   c->flips[1].count == 1 && flips_ok(c, e),
	   "logits: 3 -> 7 twice, 1 -> 4 once, nothing else");
	ok(c->top1_s[2] == 0 && c->top1_s[5] == 0 && c->top1_s[9] == 0 &&
	   c->top1_s[0] == 1 && fabs(c->top1 - 9.0 / 12) < 1e-15 &&
	   o->agree == 9 && o->rows == 12,
	   "logits: samples 2, 5 and 9 are the ones that flipped");
	m = cJSON_GetObjectItem(e, "matrix");
	for (i = 0; c->matrix != NULL && i < 10; i++)
		for (j = 0; j < 10; j++)
			mat &= c->matrix[i * 10 + j] == (uint64_t)
			       cJSON_GetArrayItem(cJSON_GetArrayItem(
					m, (int)i), (int)j)->valueint;
	ok(c->matrix != NULL && mat && c->matrix[3 * 10 + 7] == 2,
	   "logits: the 10 x 10 flip matrix is numpy's");
	ok(series_ok(c->kl, c->samples, e, "kl", 1e-9) &&
	   close_to(c->kl_mean, cJSON_GetObjectItem(e, "kl_mean"), 1e-9) &&
	   close_to(c->kl_max, cJSON_GetObjectItem(e, "kl_max"), 1e-9),
	   "logits: KL per sample, mean and max equal numpy's (%.6g nats)",
	   c->kl_mean);
	ok(series_ok(c->top5_s, c->samples, e, "top5", 1e-12) &&
	   series_ok(c->top1_s, c->samples, e, "top1", 1e-12) &&
	   close_to(c->top5, cJSON_GetObjectItem(e, "top5_overlap"), 1e-12),
	   "logits: top-1 and top-5 per sample equal numpy's");
out:
	qr_analysis_free(a);
}

static void
test_probs(void)
{
	struct qr_analysis *a = run_case("probs", 2);
	const struct qr_act_output *o = output_named(a, "p");
	const cJSON *e = cJSON_GetObjectItem(expected, "probs");
	const struct qr_out_classes *c = o ? o->cls : NULL;

	ok(o != NULL && o->kind == QR_OUT_CLASSIFIER && c != NULL,
	   "probs: [N, C, 1, 1] is a classifier");
	if (c == NULL)
		goto out;
	ok(c->probabilities && c->classes == 30 && c->rows == 10 &&
	   c->samples == 5 && c->matrix == NULL,
	   "probs: read as probabilities, 2 rows a sample, no full matrix "
	   "for 30 classes");
	ok(flips_ok(c, e) && c->flipped == (size_t)num(e, "flipped"),
	   "probs: the flips are numpy's (%zu rows)", c->flipped);
	ok(series_ok(c->kl, c->samples, e, "kl", 1e-9) &&
	   close_to(c->kl_mean, cJSON_GetObjectItem(e, "kl_mean"), 1e-9) &&
	   series_ok(c->top1_s, c->samples, e, "top1", 1e-12) &&
	   series_ok(c->top5_s, c->samples, e, "top5", 1e-12),
	   "probs: KL (zeros floored at 1e-7), top-1, top-5 equal numpy's");
out:
	qr_analysis_free(a);
}

static void
test_seg(void)
{
	struct qr_analysis *a = run_case("seg", 1);
	const struct qr_act_output *s = output_named(a, "s");
	const struct qr_act_output *d = output_named(a, "d");
	const cJSON *e = cJSON_GetObjectItem(expected, "seg");
	const struct qr_out_seg *g = s ? s->seg : NULL;
	double iou[3];
	size_t i;

	ok(s != NULL && s->kind == QR_OUT_SEGMENTER && g != NULL &&
	   s->cls == NULL && !s->classifier, "seg: [1,3,4,5] is a segmenter");
	ok(d != NULL && d->kind == QR_OUT_OTHER && d->cls == NULL &&
	   d->seg == NULL, "seg: [1,6,10] is neither kind");
	if (g == NULL || d == NULL)
		goto out;
	ok(series_ok(s->sqnr_db, s->samples, e, "sqnr", 1e-6) &&
	   series_ok(s->cosine, s->samples, e, "cos", 1e-6),
	   "seg: per-sample SQNR and cosine equal numpy's");
	ok(series_ok(d->sqnr_db, d->samples, e, "d_sqnr", 1e-6) &&
	   series_ok(d->cosine, d->samples, e, "d_cos", 1e-6),
	   "detector-shaped: per-sample SQNR and cosine equal numpy's");
	for (i = 0; i < 3; i++)
		iou[i] = g->uni[i] ? (double)g->inter[i] / g->uni[i] : NAN;
	ok(g->classes == 3 && g->pixels == 80 &&
	   series_ok(g->agree_s, g->samples, e, "agree", 1e-12) &&
	   series_ok(iou, 3, e, "iou", 1e-12) &&
	   close_to(g->miou, cJSON_GetObjectItem(e, "miou"), 1e-12) &&
	   close_to((double)g->agree / g->pixels,
		    cJSON_GetObjectItem(e, "pixel_agreement"), 1e-12),
	   "seg: pixel agreement per sample, IoU per class and mIoU equal "
	   "numpy's");
out:
	qr_analysis_free(a);
}

static void
test_report(void)
{
	struct qr_analysis *a = run_case("logits", 1);
	struct qr_buf b = { 0 };
	const char *cls = "good";
	cJSON *j, *o, *c;

	if (a == NULL) {
		ok(0, "report: logits runs");
		return;
	}
	j = qr_report_json_new(a, NULL, NULL);
	ok(num(j, "schema_version") == 3 && QR_SCHEMA_VERSION == 3,
	   "report.json: schema_version 3");
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "outputs"), 0);
	c = cJSON_GetObjectItem(o, "classification");
	ok(strcmp(cJSON_GetObjectItem(o, "kind")->valuestring,
		  "classifier") == 0 &&
	   cJSON_IsNull(cJSON_GetObjectItem(o, "segmentation")) &&
	   strcmp(cJSON_GetObjectItem(c, "input")->valuestring,
		  "logits") == 0 && num(c, "flipped") == 3 &&
	   num(c, "distinct_flips") == 2 && num(c, "classes") == 10 &&
	   num(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "flips"), 0),
	       "from") == 3 &&
	   num(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "flips"), 0),
	       "count") == 2 &&
	   cJSON_GetArraySize(cJSON_GetObjectItem(c, "flip_matrix")) == 10 &&
	   cJSON_GetArraySize(cJSON_GetObjectItem(c, "kl")) == 12 &&
	   !isnan(num(c, "kl_mean")) && !isnan(num(c, "top5_overlap")),
	   "report.json: outputs[].kind, classification with flips and the "
	   "matrix");
	qr_view_act_verdict(a, 0, &b, &cls);
	ok(b.len && strstr(b.data, "top-1 agreement 75.0% (3 of 12 samples "
			   "flipped: 3 \xe2\x86\x92 7 x2, 1 \xe2\x86\x92 4)") != NULL &&
	   strstr(b.data, "KL ") != NULL && strcmp(cls, "bad") == 0,
	   "verdict: the flips and KL");
	diag("%s", b.data ? b.data : "");
	free(b.data);
	cJSON_Delete(j);
	qr_analysis_free(a);
}

int
main(void)
{
	char *text = NULL;
	size_t len;
	struct qr_diag d = { 0 };

	plan_no_plan();
	if (qr_read_file(DIR "expected.json", &text, &len, &d) != QR_OK)
		diag("%s", d.msg);
	expected = cJSON_Parse(text ? text : "");
	ok(expected != NULL, "expected.json read");
	RUN(test_logits);
	RUN(test_probs);
	RUN(test_seg);
	RUN(test_report);
	cJSON_Delete(expected);
	free(text);
	return done();
}
