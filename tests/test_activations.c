/*
 * test_activations: float <-> quant activation matching on the digits
 * samples (names, structure on the renamed model, fused activations in
 * QOperator), the streaming statistics on literal arrays, quantize /
 * dequantize, and qr_analysis_run_data end to end: the float model as its
 * own candidate (exact), digits_qdq on the 20 samples of digits_test.npy
 * (local error below cumulative, top-1 and accuracy), determinism, a
 * model the engine cannot run (partial), and image samples the float
 * model cannot take (skipped, in the library and through the CLI).
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/analysis-int.h"
#include "chart/chart.h"
#include "graph/tensor.h"
#include "kernels/kernels.h"
#include "onnx/onnx.h"
#include "run/dataset.h"
#include "run/run.h"
#include "tap.h"
#include "util/util.h"

#define SAMPLES QR_SRCDIR "/samples/"

static struct qr_model *
load(const char *path)
{
	struct qr_model *m = NULL;
	struct qr_diag d = { 0 };

	if (qr_onnx_load(path, &m, &d) != QR_OK)
		diag("%s", d.msg);
	qr_diag_clear(&d);
	return m;
}

static struct qr_model *
sample(const char *file)
{
	char *p = xasprintf("%s%s", SAMPLES, file);
	struct qr_model *m = load(p);

	free(p);
	return m;
}

static struct qr_act_match *
match_models(struct qr_model *fm, struct qr_model *qm)
{
	struct qr_act_match *m = NULL;
	struct qr_diag d = { 0 };

	if (fm && qm && qr_act_match_new(fm, qm, &m, &d) != QR_OK)
		diag("%s", d.msg);
	qr_diag_clear(&d);
	qr_onnx_free(fm);
	qr_onnx_free(qm);
	return m;
}

static struct qr_act_match *
match(const char *f, const char *q)
{
	return match_models(sample(f), sample(q));
}

/* Path of a model in tests/data/activations (heap). */
static char *
fixture_path(const char *file)
{
	return xasprintf("%s/tests/data/activations/%s", QR_SRCDIR, file);
}

static struct qr_model *
fixture(const char *file)
{
	char *p = fixture_path(file);
	struct qr_model *m = load(p);

	free(p);
	return m;
}

/* A float [dims] tensor of values in [-1, 1) from a seeded LCG, or NULL. */
static struct qr_tensor *
lcg_data(const int64_t dims[3], uint32_t r)
{
	struct qr_tensor *x = NULL;
	struct qr_diag d = { 0 };
	size_t i;

	if (qr_tensor_new(QR_DT_FLOAT, 3, dims, &x, &d) != QR_OK) {
		diag("%s", d.msg);
		qr_diag_clear(&d);
		return NULL;
	}
	for (i = 0; i < x->n_elem; i++) {
		r = r * 1664525u + 1013904223u;
		((float *)x->data)[i] = (float)(r >> 8) / (1 << 23) - 1.0f;
	}
	return x;
}

static size_t
count_kind(const struct qr_act_match *m, enum qr_match k)
{
	size_t i, n = 0;

	for (i = 0; i < m->n; i++)
		n += m->pairs[i].match == k;
	return n;
}

static const struct qr_act_match_pair *
pair_for(const struct qr_act_match *m, const char *ftensor)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (strcmp(m->pairs[i].ftensor, ftensor) == 0)
			return &m->pairs[i];
	return NULL;
}

static void
test_matching(void)
{
	struct qr_act_match *qdq = match("digits_float.onnx", "digits_qdq.onnx");
	struct qr_act_match *ren = match("digits_float.onnx",
					 "digits_qdq_renamed.onnx");
	struct qr_act_match *qop = match("digits_float.onnx", "digits_qop.onnx");
	const struct qr_act_match_pair *p;
	size_t i, same = 0;

	if (!ok(qdq && ren && qop, "matching runs on the digits models"))
		goto out;
	/* input, relu1..5 (clip4), pool, flatten, logits */
	ok(qdq->n == 9 && count_kind(qdq, QR_MATCH_NAME) == 9,
	   "digits_qdq: 9 tensors matched, all by name (got %zu, %zu by name)",
	   qdq->n, count_kind(qdq, QR_MATCH_NAME));
	p = pair_for(qdq, "/relu3/Relu_output_0");
	ok(p && strcmp(p->qtensor,
		       "/relu3/Relu_output_0_DequantizeLinear_Output") == 0,
	   "QDQ: float X matches X_DequantizeLinear_Output");
	p = pair_for(qdq, "logits");
	ok(p && strcmp(p->qtensor, "logits") == 0,
	   "QDQ: the graph output keeps its name");
	ok(qdq->n_unmatched == 7, "digits_qdq: 7 float tensors unmatched "
	   "(conv outputs before BN/activation) (got %zu)", qdq->n_unmatched);
	for (i = 0; i < qdq->n_unmatched; i++)
		if (strstr(qdq->unmatched[i], "/conv1/Conv_output_0") == qdq->unmatched[i])
			ok(strstr(qdq->unmatched[i], "BatchNormalization") != NULL,
			   "unmatched conv1 output says BN was folded: %s",
			   qdq->unmatched[i]);

	ok(ren->n == qdq->n && count_kind(ren, QR_MATCH_STRUCTURE) == ren->n,
	   "renamed: %zu pairs, all by structure (got %zu, %zu structure)",
	   qdq->n, ren->n, count_kind(ren, QR_MATCH_STRUCTURE));
	for (i = 0; i < ren->n && i < qdq->n; i++)
		same += strcmp(ren->pairs[i].ftensor, qdq->pairs[i].ftensor) == 0;
	ok(same == qdq->n, "renamed: structure matches the same float "
	   "tensors as names do, position by position (%zu of %zu)", same,
	   qdq->n);
	p = pair_for(ren, "/relu1/Relu_output_0");
	ok(p && strcmp(p->qtensor, "t37") == 0,
	   "renamed: relu1 ~ t37 (conv1's DequantizeLinear output), got %s",
	   p ? p->qtensor : "-");
	p = pair_for(ren, "input");
	ok(p && strcmp(p->qtensor, "t4") == 0,
	   "renamed: graph input by position, compared after its Q/DQ");

	ok(qop->n == 9, "digits_qop: 9 tensors matched (got %zu)", qop->n);
	p = pair_for(qop, "/relu3/Relu_output_0");
	ok(p && strcmp(p->qtensor, "/conv3/Conv_output_0_quantized") == 0 &&
	   strstr(p->reason, "fused") != NULL,
	   "QOperator: the fused Relu's output matches the QLinearConv "
	   "output (%s)", p ? p->reason : "-");
	p = pair_for(qop, "/Flatten_output_0");
	ok(p && strcmp(p->qtensor, "/Flatten_output_0_quantized") == 0,
	   "QOperator: X matches X_quantized");
	ok(pair_for(qop, "/conv3/Conv_output_0") == NULL,
	   "QOperator: the pre-activation float tensor is not paired");
out:
	qr_act_match_free(qdq);
	qr_act_match_free(ren);
	qr_act_match_free(qop);
}

/* PyTorch's attention export computes reshape targets from Shape on
 * int64 tensors: those are not activations, so they are neither paired
 * nor listed as unmatched, while the float tensors they shape are. */
static void
test_shape_arith(void)
{
	static const char *const shape[] = {
		"/enc/self_attn/Shape_output_0", "/enc/self_attn/Gather_output_0",
		"/enc/self_attn/Add_1_output_0", "/enc/self_attn/Div_output_0",
		"/enc/self_attn/Mul_output_0", "/enc/self_attn/Mul_1_output_0",
		"/enc/self_attn/Mul_2_output_0",
	};
	struct qr_act_match *m = match_models(fixture("attn_float.onnx"),
					      fixture("attn_qdq.onnx"));
	size_t i, k, bad = 0;

	if (!ok(m != NULL, "matching runs on the attention fixture"))
		return;
	for (k = 0; k < sizeof shape / sizeof *shape; k++) {
		bad += pair_for(m, shape[k]) != NULL;
		for (i = 0; i < m->n_unmatched; i++)
			bad += strncmp(m->unmatched[i], shape[k],
				       strlen(shape[k])) == 0 &&
			       m->unmatched[i][strlen(shape[k])] == ':';
	}
	ok(bad == 0, "attention: no int64 shape tensor is paired or listed "
	   "as unmatched (%zu are)", bad);
	ok(pair_for(m, "/enc/self_attn/Slice_output_0") != NULL &&
	   pair_for(m, "/enc/self_attn/MatMul_1_output_0") != NULL &&
	   pair_for(m, "/enc/self_attn/Softmax_output_0") != NULL,
	   "attention: the sliced projections, scores and softmax are paired");
	ok(m->n == 48 && count_kind(m, QR_MATCH_NAME) == m->n,
	   "attention: 48 float tensors paired, all by name (got %zu, %zu)",
	   m->n, count_kind(m, QR_MATCH_NAME));
	qr_act_match_free(m);
}

static void
test_stats(void)
{
	static const float x[4] = { 1, 2, 3, 4 }, y[4] = { 1, 2, 3, 5 };
	static const float x2[3] = { 0, -1, 2 }, y2[3] = { 0.5f, -1, 2 };
	static const float z[3] = { 0, 0, 0 };
	static const float bad[3] = { NAN, 1, INFINITY };
	struct qr_cmp_acc a = { 0 };
	double c1 = 34 / (sqrt(30.0) * sqrt(39.0)), c2 = 5 / (sqrt(5.0) * sqrt(5.25));

	ok_near(qr_cosine(x, y, 4), c1, 1e-12, "cosine of literal arrays");
	ok(qr_cosine(z, z, 3) == 1.0 && qr_cosine(z, x, 3) == 0.0,
	   "cosine: both zero is 1, one zero is 0");
	ok(isnan(qr_cmp_sqnr_db(&a)) && isnan(qr_cmp_cosine_mean(&a)),
	   "no sample: NaN");
	qr_cmp_add(&a, x, y, 4);
	ok_near(qr_cmp_sqnr_db(&a), 10 * log10(30.0), 1e-12,
		"SQNR of one sample: 10 log10(30/1)");
	qr_cmp_add(&a, x2, y2, 3);
	/* concatenated: sum x^2 = 35, sum e^2 = 1.25 */
	ok_near(qr_cmp_sqnr_db(&a), 10 * log10(35 / 1.25), 1e-12,
		"SQNR with samples concatenated");
	ok_near(qr_cmp_mse(&a), 1.25 / 7, 1e-12, "MSE over all elements");
	ok_near(qr_cmp_norm_l2(&a), sqrt(1.25 / 35), 1e-12,
		"normalized L2 = ||x-y|| / ||x||");
	ok_near(qr_cmp_cosine_mean(&a), (c1 + c2) / 2, 1e-12,
		"cosine mean over samples");
	ok_near(a.cos_min, c2 < c1 ? c2 : c1, 1e-12, "cosine min");
	ok_near(a.max_abs, 1.0, 0, "max abs error");
	qr_cmp_add(&a, bad, x, 3);
	ok(a.nan_x == 1 && a.inf_x == 1 && a.nan_y == 0,
	   "NaN and Inf are counted, not summed");
	memset(&a, 0, sizeof a);
	qr_cmp_add(&a, x, x, 4);
	ok(isinf(qr_cmp_sqnr_db(&a)) && qr_cmp_sqnr_db(&a) > 0 &&
	   qr_cmp_cosine_mean(&a) == 1.0, "identical: SQNR +inf, cosine 1");
}

/* The vector paths of the statistics (taken for runs of 8 or 16 values)
 * give the portable loops' results: counts and ranges exactly, sums to
 * rounding; NaN and Inf land in every position of a vector. */
static void
test_stats_simd(void)
{
	enum { N = 1000, CH = 5 };
	static float x[N], y[N];
	int64_t dims[4] = { 1, CH, 10, 20 };
	struct qr_as_qparams p = { 0 };
	struct qr_as_chan c[2];
	struct qr_cmp_acc a[2];
	uint64_t sat[2], hb[2][QR_ACT_HIST_BINS], hu[2], ho[2];
	float sc[CH] = { 0.01f, 0.02f, 0.05f, 0.1f, 0.03f };
	int32_t zp[CH] = { 128, 0, 100, 255, 3 };
	uint32_t r = 12345;
	int pass, same = 1, k;
	size_t i;

	for (i = 0; i < N; i++) {
		r = r * 1103515245u + 12345u;
		x[i] = ((float)(r >> 8) / 16777216.0f - 0.5f) * 12.0f;
		y[i] = x[i] + ((float)(r & 0xff) - 128) / 512.0f;
	}
	x[3] = NAN;
	x[37] = INFINITY;
	y[100] = -INFINITY;
	x[517] = -INFINITY;
	y[999] = NAN;
	/* exactly on channel 3's upper bound, (255 - 255) * 0.1 + 0.1 / 2:
	 * inside, not saturated */
	x[610] = 0.05f;
	p.dtype = QR_DT_UINT8;
	p.n = CH;
	p.axis = 1;
	p.scale = sc;
	p.zp = zp;
	p.qmin = 0;
	p.qmax = 255;
	for (pass = 0; pass < 2; pass++) {
		qr_kernels_force_portable(pass);
		memset(&c[pass], 0, sizeof c[pass]);
		memset(&a[pass], 0, sizeof a[pass]);
		qr_as_chan_add(&c[pass], x, dims, 4);
		qr_as_chan_add(&c[pass], y, dims, 4);
		sat[pass] = qr_as_saturated(&p, x, N, dims, 4);
		qr_cmp_add(&a[pass], x, y, N);
		qr_cmp_add(&a[pass], x + 200, y + 200, 600);
		memset(hb[pass], 0, sizeof hb[pass]);
		hu[pass] = ho[pass] = 0;
		qr_as_hist_add(-5.0, 4.0, hb[pass], QR_ACT_HIST_BINS, &hu[pass],
			       &ho[pass], x, N - 3);
		qr_as_hist_add(-5.0, 4.0, hb[pass], QR_ACT_HIST_BINS, &hu[pass],
			       &ho[pass], y + 1, N - 1);
	}
	qr_kernels_force_portable(0);
	for (k = 0; k < CH; k++)
		same &= c[0].mn[k] == c[1].mn[k] && c[0].mx[k] == c[1].mx[k] &&
			c[0].cnt[k] == c[1].cnt[k] &&
			fabs(c[0].sum[k] - c[1].sum[k]) <=
				1e-12 * (1 + fabs(c[1].sum[k]));
	ok(same && c[0].cnt[0] == 2 * 200 - 3 && c[0].cnt[2] == 2 * 200 - 1,
	   "per-channel min, max, count and sum: vector = portable, "
	   "non-finite values skipped (%llu)",
	   (unsigned long long)c[0].cnt[0]);
	ok(sat[0] == sat[1] && sat[1] > 0,
	   "saturation with per-channel ranges: vector = portable (%llu)",
	   (unsigned long long)sat[0]);
	/* glibc's isinf gives -1 for -Inf: it was once added as is */
	ok(a[0].n == a[1].n && a[0].nan_x == a[1].nan_x &&
	   a[0].inf_x == a[1].inf_x && a[0].nan_y == a[1].nan_y &&
	   a[0].inf_y == a[1].inf_y && a[1].nan_x == 1 && a[1].inf_x == 3 &&
	   a[1].inf_y == 1 && a[1].nan_y == 1 && a[0].max_abs == a[1].max_abs &&
	   fabs(a[0].see - a[1].see) <= 1e-12 * a[1].see &&
	   fabs(a[0].sxx - a[1].sxx) <= 1e-12 * a[1].sxx &&
	   fabs(a[0].cos_sum - a[1].cos_sum) <= 1e-12,
	   "comparison sums and non-finite counts: vector = portable "
	   "(%llu compared)", (unsigned long long)a[0].n);
	same = hu[0] == hu[1] && ho[0] == ho[1] && hu[1] > 0 && ho[1] > 0;
	for (k = 0; k < QR_ACT_HIST_BINS; k++)
		same &= hb[0][k] == hb[1][k];
	{
		uint64_t tot = hu[1] + ho[1];

		for (k = 0; k < QR_ACT_HIST_BINS; k++)
			tot += hb[1][k];
		/* 2 * N - 4 values, 5 of them not finite */
		ok(same && tot == 2 * N - 4 - 5,
		   "histogram bins, under and over: vector = portable "
		   "(%llu below, %llu above)", (unsigned long long)hu[0],
		   (unsigned long long)ho[0]);
	}
	/* a degenerate range (lo == hi): (t - lo) * k is 0 * inf, NaN; both
	 * paths put such values in the first bin, never outside the bins */
	{
		static const float one[20] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
					       1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
		uint64_t db[2][QR_ACT_HIST_BINS] = { { 0 } }, u = 0, o = 0;

		for (pass = 0; pass < 2; pass++) {
			qr_kernels_force_portable(pass);
			qr_as_hist_add(1.0, 1.0, db[pass], QR_ACT_HIST_BINS, &u,
				       &o, one, 20);
		}
		qr_kernels_force_portable(0);
		ok(db[0][0] == 20 && db[1][0] == 20 && u == 0 && o == 0,
		   "histogram of a zero-width range: every value in bin 0 "
		   "(%llu, %llu)", (unsigned long long)db[0][0],
		   (unsigned long long)db[1][0]);
	}
	qr_as_chan_free(&c[0]);
	qr_as_chan_free(&c[1]);
}

static void
test_quant(void)
{
	struct qr_as_qparams p = { 0 };
	struct qr_tensor *t = NULL;
	static const float v[8] = { -1.0f, 0.05f, 0.15f, 0.25f, 0.35f,
				    1.0f, 30.0f, NAN };
	float back[8], sc = 0.1f;
	int32_t zp = 10;
	int64_t dims[1] = { 8 };
	const uint8_t *q;
	uint64_t lo_hist[4] = { 0 }, under = 0, over = 0;
	double lo, hi;

	p.dtype = QR_DT_UINT8;
	p.n = 1;
	p.scale = &sc;
	p.zp = &zp;
	p.qmin = 0;
	p.qmax = 255;
	qr_tensor_new(QR_DT_UINT8, 1, dims, &t, NULL);
	ok(qr_as_from_float(t, &p, v), "quantize into a uint8 tensor");
	q = t->data;
	/* -1/0.1 = -10 -> 0; 0.5 -> 0 (even) -> 10; 1.5 -> 2 -> 12;
	 * 2.5 -> 2 -> 12; 3.5 -> 4 -> 14; 10 -> 20; 300 -> 255; NaN -> zp */
	ok(q[0] == 0 && q[1] == 10 && q[2] == 12 && q[3] == 12 &&
	   q[4] == 14 && q[5] == 20 && q[6] == 255 && q[7] == 10,
	   "round half to even, saturate (%d %d %d %d %d %d %d %d)", q[0],
	   q[1], q[2], q[3], q[4], q[5], q[6], q[7]);
	ok(qr_as_to_float(t, &p, back) && fabsf(back[0] - (-1.0f)) < 1e-6f &&
	   fabsf(back[5] - 1.0f) < 1e-6f && fabsf(back[6] - 24.5f) < 1e-5f,
	   "dequantize (q - zp) * scale");
	ok(qr_as_saturated(&p, v, 7, dims, 1) == 1,
	   "saturation counts values beyond half a step outside the range");
	qr_as_hist_range(v, NULL, 7, &lo, &hi);
	ok(lo < -1.0 && hi > 30.0, "histogram range padded (%g..%g)", lo, hi);
	qr_as_hist_add(0, 1, lo_hist, 4, &under, &over, v, 8);
	ok(under == 1 && over == 1 && lo_hist[0] == 2 && lo_hist[1] == 2 &&
	   lo_hist[3] == 1, "histogram bins, hi in the last bin, "
	   "under/overflow, NaN skipped");
	qr_tensor_free(t);
}

/* ---- qr_analysis_run_data ---- */

/* Rows per sample, in turn, when set (0 ends the list); else 1. */
static const size_t *feed_batches;

/* A feed over the rows of a [N,...] float tensor, with labels. */
struct feed {
	struct qr_tensor *all;   /* [N, ...] */
	const int *labels;
	size_t next, n, taken;   /* taken: samples given */
	struct qr_tensor one;    /* row view */
	struct qr_tensor *ptr;
	char name[32];
	const char *input;
};

static enum qr_status
feed_next(void *user, struct qr_tensor *const **inputs, size_t *n_inputs,
	  int *label, const char **name, struct qr_diag *d)
{
	struct feed *f = user;
	size_t row, k = 1, len = 0;

	(void)d;
	if (f->next >= f->n) {
		*n_inputs = 0;
		return QR_OK;
	}
	while (feed_batches != NULL && feed_batches[len] != 0)
		len++;
	if (len > 0)
		k = feed_batches[f->taken % len];
	if (k > f->n - f->next)
		k = f->n - f->next;
	row = f->all->n_elem / (size_t)f->all->dims[0];
	f->one = *f->all;
	f->one.name = f->input;
	f->one.dims[0] = (int64_t)k;
	f->one.n_elem = k * row;
	f->one.nbytes = k * row * sizeof(float);
	f->one.data = (float *)f->all->data + f->next * row;
	f->one.owned = 0;
	f->ptr = &f->one;
	*inputs = &f->ptr;
	*n_inputs = 1;
	*label = f->labels && k == 1 ? f->labels[f->next] : -1;
	snprintf(f->name, sizeof f->name, "row %zu", f->next);
	*name = f->name;
	f->next += k;
	f->taken++;
	return QR_OK;
}

static int digit_labels[20];

static struct qr_tensor *
digits_data(void)
{
	struct qr_tensor *t = NULL;
	struct qr_diag d = { 0 };
	FILE *fp = fopen(SAMPLES "digits_labels.txt", "r");
	int i;

	for (i = 0; fp && i < 20; i++)
		if (fscanf(fp, "%d", &digit_labels[i]) != 1)
			digit_labels[i] = -1;
	if (fp)
		fclose(fp);
	if (qr_npy_read(SAMPLES "digits_test.npy", "input", &t, &d) != QR_OK)
		diag("%s", d.msg);
	qr_diag_clear(&d);
	return t;
}

static int run_threads;          /* qr_act_opts.n_threads of run_data */
static int run_exact;            /* qr_act_opts.exact of run_data */
static size_t run_pipe;          /* qr_act_opts.pipe_bytes of run_data */
static size_t run_fold;          /* qr_act_opts.fold_max of run_data */

/* qr_analysis_new, then qr_analysis_run_data with o's feed and the
 * run_* settings. */
static struct qr_analysis *
run_models(const struct qr_model *fm, struct qr_model *const *qm, size_t nq,
	   struct qr_act_opts *o, enum qr_status *stp, struct qr_diag *d)
{
	struct qr_analysis *a = NULL;

	*stp = qr_analysis_new(fm, (const struct qr_model *const *)qm, nq,
			       NULL, &a, d);
	if (*stp != QR_OK)
		return a;
	o->cos_threshold = 0.99;
	o->sqnr_threshold = 20;
	o->n_threads = run_threads;
	o->exact = run_exact;
	o->pipe_bytes = run_pipe;
	o->fold_max = run_fold;
	*stp = qr_analysis_run_data(a, fm, (const struct qr_model *const *)qm,
				    nq, o, d);
	return a;
}

static struct qr_analysis *
run_data(const char *ffile, const char *const *qfiles, size_t nq,
	 struct qr_tensor *data, enum qr_status *stp, struct qr_diag *d)
{
	struct qr_model *fm = strchr(ffile, '/') ? load(ffile) : sample(ffile);
	struct qr_model *qm[4] = { 0 };
	struct qr_analysis *a;
	struct qr_act_opts o = { 0 };
	struct feed f = { 0 };
	size_t i;

	for (i = 0; i < nq; i++)
		qm[i] = strchr(qfiles[i], '/') ? load(qfiles[i])
					       : sample(qfiles[i]);
	f.all = data;
	f.labels = digit_labels;
	f.n = (size_t)data->dims[0];
	f.input = fm->graph.n_input ? fm->graph.inputs[0].name : "input";
	o.next = feed_next;
	o.user = &f;
	o.samples = f.n;
	o.source = "npy";
	a = run_models(fm, qm, nq, &o, stp, d);
	qr_onnx_free(fm);
	for (i = 0; i < nq; i++)
		qr_onnx_free(qm[i]);
	return a;
}

/* run_data on one fixture pair of tests/data/activations with dims[0]
 * seeded LCG samples (the models, paths and data are freed here). */
static struct qr_analysis *
run_fixtures(const char *ffile, const char *qfile, const int64_t dims[3],
	     uint32_t seed, enum qr_status *st, struct qr_diag *d)
{
	char *fp = fixture_path(ffile), *qp = fixture_path(qfile);
	const char *const q[] = { qp };
	struct qr_tensor *x = lcg_data(dims, seed);
	struct qr_analysis *a = NULL;

	*st = QR_EUSAGE;
	if (x != NULL)
		a = run_data(fp, q, 1, x, st, d);
	qr_tensor_free(x);
	free(fp);
	free(qp);
	return a;
}

static const struct qr_act_pair *
act_pair(const struct qr_analysis *a, size_t cand, const char *tensor)
{
	size_t i;

	for (i = 0; i < a->n_act_pairs; i++)
		if (a->act_pairs[i].quant == cand &&
		    strcmp(a->act_tensors[a->act_pairs[i].tensor].name,
			   tensor) == 0)
			return &a->act_pairs[i];
	return NULL;
}

static void
test_run(struct qr_tensor *data)
{
	static const char *const self[] = { "digits_float.onnx" };
	static const char *const qdq[] = { "digits_qdq.onnx",
					   "digits_qdq_renamed.onnx" };
	struct qr_diag d = { 0 };
	struct qr_analysis *a, *b;
	enum qr_status st;
	size_t i, exact = 0, local_better = 0, n0 = 0, same = 1;
	const struct qr_act_pair *p;
	const struct qr_act_output *o;

	/* The float model as its own candidate: every tensor exact (the
	 * local run too, in ONNX Runtime's order). */
	run_exact = 1;
	a = run_data("digits_float.onnx", self, 1, data, &st, &d);
	run_exact = 0;
	ok(st == QR_OK && a != NULL, "float vs itself runs (%s)", d.msg);
	if (a == NULL)
		return;
	ok(a->data.samples == 20, "20 samples run (%zu)", a->data.samples);
	ok(a->n_act_pairs >= 16, "float vs itself: every activation paired "
	   "(%zu)", a->n_act_pairs);
	for (i = 0; i < a->n_act_pairs; i++) {
		p = &a->act_pairs[i];
		exact += p->cosine_mean == 1.0 && isinf(p->sqnr_db) &&
			 isinf(p->local_sqnr_db) && p->max_abs == 0 &&
			 p->samples == 20;
	}
	ok(exact == a->n_act_pairs, "float vs itself: cosine 1, SQNR +inf, "
	   "cumulative and local (%zu of %zu)", exact, a->n_act_pairs);
	o = a->n_act_outputs ? &a->act_outputs[0] : NULL;
	ok(o && o->classifier && o->agree == o->rows && o->rows == 20,
	   "float vs itself: top-1 agreement 20/20");
	ok(o && o->labeled == 20 && o->float_correct == o->quant_correct &&
	   o->float_correct >= 18, "float accuracy on 20 digits: %zu/20",
	   o ? o->float_correct : 0);
	qr_analysis_free(a);

	/* digits_qdq and its renamed twin side by side. */
	a = run_data("digits_float.onnx", qdq, 2, data, &st, &d);
	ok(st == QR_OK && a != NULL, "float vs qdq + renamed runs (%s)",
	   d.msg);
	if (a == NULL)
		return;
	for (i = 0; i < a->n_act_pairs; i++) {
		p = &a->act_pairs[i];
		if (p->quant != 0)
			continue;
		n0++;
		local_better += p->local_sqnr_db >= p->sqnr_db - 1e-9;
		diag("%-36s cos %.6f min %.6f sqnr %6.2f local %6.2f "
		     "rmse/s %.3f sat %.4f", a->act_tensors[p->tensor].name,
		     p->cosine_mean, p->cosine_min, p->sqnr_db,
		     p->local_sqnr_db, p->rmse_over_scale, p->saturation);
	}
	ok(n0 == 9, "qdq: 9 activations compared (%zu)", n0);
	ok(local_better >= n0 - 1, "local SQNR >= cumulative for %zu of %zu "
	   "layers", local_better, n0);
	/* The digits pixels are x = 2p/255 - 1 and the input scale is 2/255
	 * with zero point 127, so x/s + zp = p - 0.5: every value sits on a
	 * half step and rounding loses exactly half a step (rmse/scale 0.5,
	 * not the 0.289 of values spread over the steps). */
	p = act_pair(a, 0, "input");
	ok(p && fabs(p->local_sqnr_db - p->sqnr_db) < 1e-9 &&
	   fabs(p->rmse_over_scale - 0.5) < 1e-3 && p->zero_point == 127,
	   "graph input: local = cumulative, rmse/scale 0.5 (%g)",
	   p ? p->rmse_over_scale : NAN);
	p = act_pair(a, 0, "/relu5/Relu_output_0");
	ok(p && p->has_qparams && p->cosine_mean > 0.9 &&
	   p->cosine_min <= p->cosine_mean && p->sqnr_db > 5,
	   "relu5: plausible cosine %g and SQNR %g", p ? p->cosine_mean : 0,
	   p ? p->sqnr_db : 0);
	ok(p && p->local_sqnr_db > p->sqnr_db + 3,
	   "relu5: fed float inputs, its own error is far smaller (local %g "
	   "dB, cumulative %g dB)", p ? p->local_sqnr_db : 0,
	   p ? p->sqnr_db : 0);
	/* the renamed candidate is the same model: same numbers */
	for (i = 0; i < a->n_act_pairs; i++) {
		const struct qr_act_pair *x = &a->act_pairs[i], *y;

		if (x->quant != 0)
			continue;
		y = act_pair(a, 1, a->act_tensors[x->tensor].name);
		if (y == NULL || y->sqnr_db != x->sqnr_db ||
		    y->local_sqnr_db != x->local_sqnr_db ||
		    y->cosine_min != x->cosine_min)
			same = 0;
	}
	ok(same, "renamed candidate: identical numbers through structure "
	   "matching");
	/* the layer that makes the most noise is the one with the lowest
	 * local SQNR: its noise-to-signal ratio is the largest */
	ok(a->act_runs[0].es.computed && a->act_runs[0].es.n_creators > 0 &&
	   a->act_runs[0].worst_local >= 0 &&
	   a->act_runs[0].es.creators[0] == a->act_runs[0].worst_local &&
	   (a->act_runs[0].born == a->act_runs[0].worst_local) !=
	   a->act_runs[0].es.accumulates,
	   "most noise made at %s, the worst local error (%.0f%% of it%s)",
	   a->act_runs[0].worst_local >= 0 ? a->act_tensors[a->act_pairs[
		   a->act_runs[0].worst_local].tensor].name : "-",
	   100 * a->act_runs[0].es.top_share,
	   a->act_runs[0].es.accumulates ? ": it builds up" : ": born there");
	o = &a->act_outputs[0];
	ok(o->classifier && o->rows == 20 && o->agree >= 18 &&
	   o->samples == 20, "qdq: top-1 agreement %zu/20", o->agree);
	for (i = 0; i < a->n_act_tensors; i++)
		if (strcmp(a->act_tensors[i].name, "/relu1/Relu_output_0") == 0)
			ok(a->act_tensors[i].channels == 16 &&
			   a->act_tensors[i].ch_min[0] >= 0 &&
			   a->act_tensors[i].ch_max[0] >= a->act_tensors[i].ch_mean[0],
			   "relu1: 16 channels of float min/max/mean");

	/* Determinism: the same run twice gives the same bits. */
	b = run_data("digits_float.onnx", qdq, 2, data, &st, &d);
	same = b != NULL && b->n_act_pairs == a->n_act_pairs;
	for (i = 0; same && i < a->n_act_pairs; i++)
		same = memcmp(&a->act_pairs[i].cosine_mean,
			      &b->act_pairs[i].cosine_mean,
			      offsetof(struct qr_act_pair, nan_float) -
			      offsetof(struct qr_act_pair, cosine_mean)) == 0 &&
		       memcmp(a->act_pairs[i].hist_quant,
			      b->act_pairs[i].hist_quant,
			      sizeof a->act_pairs[i].hist_quant) == 0;
	ok(same, "two runs give identical statistics");
	qr_analysis_free(b);
	qr_analysis_free(a);
	qr_diag_clear(&d);
}

static void
test_partial(struct qr_tensor *data)
{
	static const char *const q[] = { "digits_qdq.onnx" };
	struct qr_diag d = { 0 };
	struct qr_analysis *a;
	enum qr_status st;
	char *path = fixture_path("unsupported.onnx");
	static const char *qq[1];

	qq[0] = path;
	a = run_data("digits_float.onnx", qq, 1, data, &st, &d);
	ok(st == QR_EPARTIAL && a && a->act_runs[0].why != NULL &&
	   strstr(a->act_runs[0].why, "Frobnicate") != NULL,
	   "a candidate the engine cannot run: partial, reason names the op "
	   "(%s)", a && a->act_runs[0].why ? a->act_runs[0].why : d.msg);
	qr_analysis_free(a);
	/* the float model itself: nothing compared, the reason kept */
	a = run_data(path, qq, 1, data, &st, &d);
	ok(st == QR_EPARTIAL && a && !a->data.ran && a->data.why != NULL &&
	   strstr(a->data.why, "Frobnicate") != NULL && a->n_act_pairs == 0,
	   "a float model the engine cannot run: partial, data.why names "
	   "the op");
	qr_analysis_free(a);
	(void)q;
	free(path);
	qr_diag_clear(&d);
}

/*
 * Two lanes: the local run gets an executor of its own, whose float convs
 * may take Winograd (3x3 stride-1, as digits' conv1) unless exact is set;
 * the float and cumulative runs keep ONNX Runtime's order either way.
 */
static void
test_lanes(struct qr_tensor *data)
{
	static const char *const self[] = { "digits_float.onnx" };
	static const char *const qdq[] = { "digits_qdq.onnx" };
	struct qr_analysis *one = NULL, *ex, *fast;
	struct qr_diag d = { 0 };
	enum qr_status st;
	const struct qr_act_pair *p;
	size_t i, cum_inf = 0, loc_inf = 0, n_fast = 0, same = 1, near = 1;
	double worst = 0;

	run_threads = 2;
	run_exact = 1;
	ex = run_data("digits_float.onnx", self, 1, data, &st, &d);
	run_exact = 0;
	fast = run_data("digits_float.onnx", self, 1, data, &st, &d);
	if (!ok(ex != NULL && fast != NULL && st == QR_OK,
		"float vs itself on two lanes, exact and not (%s)", d.msg))
		goto out;
	for (i = 0; i < ex->n_act_pairs; i++)
		loc_inf += isinf(ex->act_pairs[i].local_sqnr_db);
	ok(loc_inf == ex->n_act_pairs, "--exact: the local run is the float "
	   "model's bits (%zu of %zu)", loc_inf, ex->n_act_pairs);
	for (i = 0; i < fast->n_act_pairs; i++) {
		p = &fast->act_pairs[i];
		cum_inf += isinf(p->sqnr_db) && p->cosine_mean == 1.0;
		if (!isinf(p->local_sqnr_db)) {
			n_fast++;
			worst = n_fast == 1 || p->local_sqnr_db < worst
					? p->local_sqnr_db : worst;
		}
	}
	ok(cum_inf == fast->n_act_pairs, "the cumulative run keeps the float "
	   "model's bits (%zu of %zu)", cum_inf, fast->n_act_pairs);
	/* conv1's output; the local run overwrites it before relu1 */
	p = act_pair(fast, 0, "/conv1/Conv_output_0");
	ok(n_fast == 1 && p != NULL && !isinf(p->local_sqnr_db) &&
	   worst > 100, "the local run's Winograd conv1 differs by rounding "
	   "only: %zu tensor, local SQNR %.1f dB", n_fast, worst);
	qr_analysis_free(ex);
	qr_analysis_free(fast);
	ex = fast = NULL;

	/* a QDQ candidate: every number identical on one lane and on two
	 * (the local run has its own executor either way) */
	run_threads = 0;
	one = run_data("digits_float.onnx", qdq, 1, data, &st, &d);
	run_threads = 2;
	fast = run_data("digits_float.onnx", qdq, 1, data, &st, &d);
	if (!ok(one != NULL && fast != NULL &&
		one->n_act_pairs == fast->n_act_pairs,
		"qdq on one lane and on two"))
		goto out;
	for (i = 0; i < one->n_act_pairs; i++) {
		const struct qr_act_pair *x = &one->act_pairs[i];
		const struct qr_act_pair *y = &fast->act_pairs[i];
		double r = fabs(x->local_sqnr_db - y->local_sqnr_db) /
			   fabs(x->local_sqnr_db);

		same &= x->sqnr_db == y->sqnr_db &&
			x->cosine_mean == y->cosine_mean &&
			x->cosine_min == y->cosine_min;
		near &= x->local_sqnr_db == y->local_sqnr_db &&
			x->local_cosine_mean == y->local_cosine_mean;
		worst = i == 0 || r > worst ? r : worst;
	}
	ok(same, "qdq: cumulative cosine and SQNR equal on two lanes");
	ok(near, "qdq: local cosine and SQNR equal on two lanes (worst "
	   "relative difference %.2g)", worst);
out:
	qr_analysis_free(one);
	qr_analysis_free(ex);
	qr_analysis_free(fast);
	run_threads = 0;
	run_exact = 0;
}

/* Whether candidate qa of a and candidate qb of b have the same numbers,
 * bit for bit: pairs, histograms, outputs; and a and b the same float
 * statistics. */
static int
same_numbers(const struct qr_analysis *a, size_t qa,
	     const struct qr_analysis *b, size_t qb)
{
	size_t i, j = 0, k, n = 0;

	if (a->n_act_tensors != b->n_act_tensors ||
	    a->data.samples != b->data.samples)
		return 0;
	for (i = 0; i < a->n_act_tensors; i++) {
		const struct qr_act_tensor *x = &a->act_tensors[i];
		const struct qr_act_tensor *y = &b->act_tensors[i];

		if (x->channels != y->channels || x->n_values != y->n_values ||
		    memcmp(&x->min, &y->min, sizeof x->min) ||
		    memcmp(&x->max, &y->max, sizeof x->max) ||
		    strcmp(x->shape, y->shape) != 0 ||
		    memcmp(x->ch_min, y->ch_min, x->channels * sizeof(float)) ||
		    memcmp(x->ch_max, y->ch_max, x->channels * sizeof(float)) ||
		    memcmp(x->ch_mean, y->ch_mean, x->channels * sizeof(float)))
			return 0;
	}
	for (i = 0; i < a->n_act_pairs; i++) {
		const struct qr_act_pair *x = &a->act_pairs[i], *y;

		if (x->quant != qa)
			continue;
		while (j < b->n_act_pairs && b->act_pairs[j].quant != qb)
			j++;
		if (j == b->n_act_pairs)
			return 0;
		y = &b->act_pairs[j++];
		n++;
		if (x->tensor != y->tensor || x->samples != y->samples ||
		    memcmp(&x->cosine_mean, &y->cosine_mean,
			   offsetof(struct qr_act_pair, nan_float) -
			   offsetof(struct qr_act_pair, cosine_mean)) ||
		    memcmp(&x->saturation, &y->saturation,
			   offsetof(struct qr_act_pair, flags) -
			   offsetof(struct qr_act_pair, saturation)))
			return 0;
	}
	for (i = 0; i < a->n_act_outputs; i++) {
		const struct qr_act_output *x = &a->act_outputs[i], *y = NULL;

		if (x->quant != qa)
			continue;
		for (k = 0; k < b->n_act_outputs && y == NULL; k++)
			if (b->act_outputs[k].quant == qb)
				y = &b->act_outputs[k];
		if (y == NULL || x->samples != y->samples ||
		    x->agree != y->agree || x->quant_correct != y->quant_correct ||
		    memcmp(x->cosine, y->cosine, x->samples * sizeof(double)) ||
		    memcmp(x->sqnr_db, y->sqnr_db, x->samples * sizeof(double)))
			return 0;
	}
	return n > 0;
}

/*
 * In step for every sample (pipe_bytes 1: each float tensor freed once
 * every run has read it) and the default (the first sample in step, the
 * rest through the pipeline): the same numbers, bit for bit, on one lane
 * and on two. A candidate that fails in the middle of its runs is left
 * out either way, and the candidate beside it goes on unchanged; a float
 * model that fails in the middle of its run stops the data run without
 * leaving a candidate run waiting for it.
 */
static void
test_step(struct qr_tensor *data)
{
	static const char *const qdq[] = { "digits_qdq.onnx",
					   "digits_qdq_renamed.onnx" };
	static const char *qq[2];
	static const int threads[4] = { 0, 0, 2, 2 };
	static const size_t pipe[4] = { 0, 1, 0, 1 };
	struct qr_analysis *r[4] = { 0 }, *f;
	struct qr_diag d = { 0 };
	enum qr_status st;
	char *path = fixture_path("run_fails.onnx");
	char *fpath = fixture_path("run_fails_float.onnx");
	int i, same = 1;

	for (i = 0; i < 4; i++) {
		run_threads = threads[i];
		run_pipe = pipe[i];
		r[i] = run_data("digits_float.onnx", qdq, 2, data, &st, &d);
		if (!ok(st == QR_OK && r[i] != NULL && r[i]->data.samples == 20,
			"%d thread(s), %s: runs (%s)", threads[i] ? 2 : 1,
			pipe[i] ? "every sample in step" : "default", d.msg))
			goto out;
	}
	for (i = 1; i < 4; i++)
		same &= same_numbers(r[0], 0, r[i], 0) &&
			same_numbers(r[0], 1, r[i], 1);
	ok(same, "in step and through the pipeline, one lane and two: the "
	   "same numbers, bit for bit");

	/* batches of 1 to 4 rows in turn: the pipeline's slots outgrow
	 * their first buffers (carved once) and take heap ones, growing
	 * again; in step every sample gets pages of its own */
	{
		static const size_t batches[] = { 1, 3, 2, 4, 1, 0 };
		struct qr_analysis *v[2] = { 0 };
		int k, vsame;

		feed_batches = batches;
		for (k = 0; k < 2; k++) {
			run_threads = 2;
			run_pipe = k;
			v[k] = run_data("digits_float.onnx", qdq, 2, data, &st,
					&d);
		}
		feed_batches = NULL;
		vsame = v[0] != NULL && v[1] != NULL &&
			v[0]->data.samples == 9 && v[1]->data.samples == 9 &&
			same_numbers(v[0], 0, v[1], 0) &&
			same_numbers(v[0], 1, v[1], 1);
		ok(vsame, "batches of 1 to 4 rows: the pipeline (slots "
		   "outgrowing their buffers) and every sample in step give "
		   "the same numbers, bit for bit (%zu samples)",
		   v[0] ? v[0]->data.samples : 0);
		qr_analysis_free(v[0]);
		qr_analysis_free(v[1]);
	}

	qq[0] = path;
	qq[1] = "digits_qdq.onnx";
	for (i = 0; i < 4; i++) {
		run_threads = threads[i];
		run_pipe = pipe[i];
		f = run_data("digits_float.onnx", qq, 2, data, &st, &d);
		ok(st == QR_EPARTIAL && f != NULL && f->act_runs[0].why &&
		   strstr(f->act_runs[0].why, "bad_reshape") != NULL &&
		   !f->act_runs[0].ran && f->act_runs[1].ran &&
		   same_numbers(r[0], 0, f, 1),
		   "%d thread(s), %s: a candidate failing mid-run is left out "
		   "(%s), the other one's numbers unchanged",
		   threads[i] ? 2 : 1,
		   pipe[i] ? "every sample in step" : "default",
		   f && f->act_runs[0].why ? f->act_runs[0].why : "no reason");
		qr_analysis_free(f);
	}
	/* the float model failing mid-run (a shape error, returned as the
	 * data not fitting the model is): the candidate runs waiting on it
	 * in step give up, nothing hangs, and the message names the node */
	for (i = 0; i < 4; i++) {
		run_threads = threads[i];
		run_pipe = pipe[i];
		f = run_data(fpath, qdq, 1, data, &st, &d);
		ok(st == QR_ESHAPE && f != NULL && !f->data.ran &&
		   strstr(d.msg, "bad_reshape") != NULL,
		   "%d thread(s), %s: the float model failing mid-run: %s",
		   threads[i] ? 2 : 1,
		   pipe[i] ? "every sample in step" : "default", d.msg);
		qr_analysis_free(f);
	}
out:
	for (i = 0; i < 4; i++)
		qr_analysis_free(r[i]);
	run_threads = 0;
	run_pipe = 0;
	free(path);
	free(fpath);
	qr_diag_clear(&d);
}

/* The whole data run, every weight past a fold budget of 1 byte (read
 * as views): the same numbers as with every weight folded (the local runs
 * in ONNX Runtime's order: Winograd takes folded weights only). */
static void
test_fold_budget(struct qr_tensor *data)
{
	static const char *const qdq[] = { "digits_qdq.onnx",
					   "digits_qdq_pertensor.onnx" };
	struct qr_analysis *r[2] = { 0 };
	struct qr_diag d = { 0 };
	enum qr_status st;
	int k;

	for (k = 0; k < 2; k++) {
		run_fold = k ? 1 : 0;
		run_threads = 2;
		run_exact = 1;
		r[k] = run_data("digits_float.onnx", qdq, 2, data, &st, &d);
		if (!ok(st == QR_OK && r[k] != NULL && r[k]->data.samples == 20,
			"digits, fold budget %s: runs (%s)",
			k ? "1 byte" : "default", d.msg))
			goto out;
	}
	ok(same_numbers(r[0], 0, r[1], 0) && same_numbers(r[0], 1, r[1], 1),
	   "digits per channel and per tensor: weights read as views give "
	   "the folded numbers, bit for bit");
out:
	run_fold = 0;
	run_threads = 0;
	run_exact = 0;
	for (k = 0; k < 2; k++)
		qr_analysis_free(r[k]);
	qr_diag_clear(&d);
}

/* The attention fixture end to end: QDQ MatMul of two activations runs,
 * float ops the quantizer left alone (LayerNorm's Pow) have no local
 * error, and the output stays close. */
static void
test_attention_run(void)
{
	static const int64_t dims[3] = { 8, 4, 6 };
	struct qr_analysis *a;
	struct qr_diag d = { 0 };
	const struct qr_act_pair *p;
	enum qr_status st;
	size_t i, full = 0;

	a = run_fixtures("attn_float.onnx", "attn_qdq.onnx", dims, 12345, &st,
			 &d);
	ok(st == QR_OK && a != NULL, "attention: float vs qdq runs (%s)",
	   d.msg);
	if (a == NULL)
		goto out;
	for (i = 0; i < a->n_act_pairs; i++)
		full += a->act_pairs[i].samples == 8 &&
			!isnan(a->act_pairs[i].cosine_mean);
	ok(a->n_act_pairs == 48 && full == 48, "attention: 48 pairs, each "
	   "over 8 samples (%zu, %zu)", a->n_act_pairs, full);
	p = act_pair(a, 0, "/enc/self_attn/MatMul_1_output_0");
	ok(p && p->has_qparams && p->sqnr_db > 10 && p->sqnr_db < 60 &&
	   p->local_sqnr_db >= p->sqnr_db - 1e-9,
	   "attention scores (MatMul of two activations): SQNR %.2f dB, "
	   "local %.2f dB", p ? p->sqnr_db : NAN, p ? p->local_sqnr_db : NAN);
	p = act_pair(a, 0, "/enc/norm1/Pow_output_0");
	ok(p && !p->has_qparams && isfinite(p->sqnr_db) &&
	   isinf(p->local_sqnr_db),
	   "LayerNorm's Pow stays float in QDQ: cumulative %.2f dB, no local "
	   "error (%.2f)", p ? p->sqnr_db : NAN, p ? p->local_sqnr_db : NAN);
	ok(a->n_act_outputs == 1 && a->act_outputs[0].cosine_mean > 0.99,
	   "attention output cosine %.5f",
	   a->n_act_outputs ? a->act_outputs[0].cosine_mean : NAN);
out:
	qr_diag_clear(&d);
	qr_analysis_free(a);
}

/* Two LayerNorms in a row: the second one's first mean averages rows the
 * first centred, so the float model holds rounding noise there
 * (cancellation). It is flagged as such and no verdict points at it: it
 * takes no share of the noise, and the layers named make an error of
 * their own. */
static void
test_cancellation(void)
{
	static const int64_t dims[3] = { 8, 4, 8 };
	struct qr_analysis *a;
	struct qr_diag d = { 0 };
	const struct qr_act_pair *p, *b, *w;
	enum qr_status st;
	size_t i, n_cancel = 0;

	a = run_fixtures("lnln_float.onnx", "lnln_qdq.onnx", dims, 777, &st,
			 &d);
	ok(st == QR_OK && a != NULL, "two LayerNorms: float vs qdq runs (%s)",
	   d.msg);
	if (a == NULL)
		goto out;
	for (i = 0; i < a->n_act_pairs; i++)
		n_cancel += (a->act_pairs[i].flags & QR_ACT_FLAG_CANCEL) != 0;
	p = act_pair(a, 0, "/n2/ReduceMean_output_0");
	ok(p && p->flags == QR_ACT_FLAG_CANCEL && p->sqnr_db < -50 &&
	   n_cancel == 1,
	   "the second LayerNorm's mean is the one cancellation (SQNR %.1f "
	   "dB, flags %d, %zu flagged so)", p ? p->sqnr_db : NAN,
	   p ? p->flags : -1, n_cancel);
	p = act_pair(a, 0, "/n1/ReduceMean_output_0");
	ok(p && !(p->flags & QR_ACT_FLAG_CANCEL),
	   "the first LayerNorm's mean is a real value (flags %d)",
	   p ? p->flags : -1);
	p = act_pair(a, 0, "/n2/ReduceMean_output_0");
	for (i = 0, n_cancel = 0; i < a->act_runs[0].es.n_creators; i++) {
		b = &a->act_pairs[a->act_runs[0].es.creators[i]];
		n_cancel += (b->flags & QR_ACT_FLAG_CANCEL) ||
			    !isfinite(b->local_sqnr_db);
	}
	ok(p && isnan(p->noise_share) && isnan(p->noise_gain_db) &&
	   a->act_runs[0].es.n_creators > 0 && n_cancel == 0 &&
	   (a->act_runs[0].born < 0 ||
	    !(a->act_pairs[a->act_runs[0].born].flags & QR_ACT_FLAG_CANCEL)),
	   "the cancellation takes no share of the noise, and every layer "
	   "named makes an error of its own");
	b = act_pair(a, 0, "/fc2/MatMul_output_0");
	p = act_pair(a, 0, "/n2/Add_1_output_0");
	ok(b && p && fabs(b->noise_gain_db - 10 * log10(
		   pow(10, -b->sqnr_db / 10) / (pow(10, -p->sqnr_db / 10) +
						pow(10, -b->local_sqnr_db / 10))))
	   < 1e-6, "fc2's noise gain (%.3f dB) is measured from its input "
	   "(%.3f dB), not from the variance path before it in depth order",
	   b ? b->noise_gain_db : NAN, p ? p->sqnr_db : NAN);
	w = a->act_runs[0].worst_local >= 0
		? &a->act_pairs[a->act_runs[0].worst_local] : NULL;
	ok(w && !(w->flags & QR_ACT_FLAG_CANCEL), "worst local error at %s",
	   w ? a->act_tensors[w->tensor].name : "-");
out:
	qr_diag_clear(&d);
	qr_analysis_free(a);
}

/* ONNX Runtime's dynamic quantization: the uint8 input of
 * DynamicQuantizeLinear and the int32 accumulator of ConvInteger or
 * MatMulInteger are not what the float tensor is compared with; the
 * float input and the scaled output (after the conv's bias) are. */
static void
test_dynamic_match(void)
{
	static const char *const names[] = { "x", "c", "r", "f", "m", "out" };
	struct qr_act_match *m = match_models(fixture("dyn_float.onnx"),
					      fixture("dyn_quant.onnx"));
	const struct qr_act_match_pair *p;
	size_t k, same = 0;

	if (!ok(m != NULL, "matching runs on the dynamic fixture"))
		return;
	for (k = 0; k < sizeof names / sizeof *names; k++) {
		p = pair_for(m, names[k]);
		same += p && strcmp(p->qtensor, names[k]) == 0 &&
			p->match == QR_MATCH_NAME;
		if (p && strcmp(p->qtensor, names[k]) != 0)
			diag("%s -> %s", names[k], p->qtensor);
	}
	ok(m->n == 6 && same == 6, "dynamic: x, c, r, f, m, out each matched "
	   "by name to its own name (%zu of %zu)", same, m->n);
	qr_act_match_free(m);
}

/* A same-named tensor in another layout (layout_b.onnx's r is [6,4]
 * where layout_a.onnx's is [1,24], other values in the same count, as a
 * renumbered export's runtime-shaped Reshape gives): not compared element
 * by element, flagged "shape" and left alone in the local run. */
static void
test_layout(void)
{
	static const int64_t dims[3] = { 3, 4, 6 };
	struct qr_analysis *a;
	struct qr_diag d = { 0 };
	const struct qr_act_pair *r, *y, *in;
	enum qr_status st;

	a = run_fixtures("layout_a.onnx", "layout_b.onnx", dims, 99, &st, &d);
	ok(st == QR_OK && a != NULL, "layout: both models run (%s)", d.msg);
	if (a == NULL)
		goto out;
	r = act_pair(a, 0, "r");
	y = act_pair(a, 0, "y");
	in = act_pair(a, 0, "input");
	ok(r && y && r->flags == QR_ACT_FLAG_SHAPE &&
	   y->flags == QR_ACT_FLAG_SHAPE && isnan(r->sqnr_db) &&
	   isnan(r->local_sqnr_db),
	   "[1,24] against [6,4]: flagged shape, not compared (flags %d %d, "
	   "SQNR %g)", r ? r->flags : -1, y ? y->flags : -1,
	   r ? r->sqnr_db : NAN);
	ok(in && in->flags == 0 && isinf(in->sqnr_db),
	   "the input is the same tensor in both (SQNR %g)",
	   in ? in->sqnr_db : NAN);
out:
	qr_diag_clear(&d);
	qr_analysis_free(a);
}

/*
 * A candidate made from ONNX Runtime's optimised graph (what
 * quant_pre_process runs before quantizing): the MatMul + Add of every
 * Linear is one Gemm between Reshapes. tfm_ortopt.onnx is such a graph,
 * in float, so every pair should read as float rounding. The qkv Gemm's
 * output holds the bias: it is paired with the float bias Add's output,
 * not the MatMul's (which read 14.8 dB of "error", the bias itself).
 */
static void
test_bias_fused(void)
{
	static const int64_t dims[3] = { 4, 16, 32 };
	struct qr_analysis *a;
	struct qr_diag d = { 0 };
	const struct qr_act_pair *qkv, *mm;
	enum qr_status st;
	size_t i, low = 0;

	a = run_fixtures("tfm_float.onnx", "tfm_ortopt.onnx", dims, 7, &st,
			 &d);
	ok(st == QR_OK && a != NULL, "ORT-optimised transformer runs (%s)",
	   d.msg);
	if (a == NULL)
		goto out;
	for (i = 0; i < a->n_act_pairs; i++)
		if (a->act_pairs[i].sqnr_db < 100) {
			low++;
			diag("%s: %.1f dB",
			     a->act_tensors[a->act_pairs[i].tensor].name,
			     a->act_pairs[i].sqnr_db);
		}
	qkv = act_pair(a, 0, "/qkv/Add_output_0");
	mm = act_pair(a, 0, "/qkv/MatMul_output_0");
	ok(qkv && !mm &&
	   strcmp(qkv->quant_tensor, "gemm_output_reshape_arg") == 0,
	   "the fused Gemm is paired with the float bias Add's output");
	ok(low == 0 && a->n_act_pairs > 20, "every one of %zu pairs above "
	   "100 dB (%zu below)", a->n_act_pairs, low);
	qr_analysis_free(a);
	/* the same graph quantized QDQ (tfm_pre_qdq.onnx), as a QDQ model
	 * made after quant_pre_process is: no MatMul output is compared
	 * with a Gemm's (once 6 pairs at 0.8-14.7 dB, flagged, and the
	 * verdicts "born at /proj/MatMul", "worst local 0.8 dB") */
	a = run_fixtures("tfm_float.onnx", "tfm_pre_qdq.onnx", dims, 7, &st,
			 &d);
	ok(st == QR_OK && a != NULL, "QDQ of the basic-optimised graph runs "
	   "(%s)", d.msg);
	if (a == NULL)
		goto out;
	low = 0;
	for (i = 0; i < a->n_act_pairs; i++)
		low += strstr(a->act_tensors[a->act_pairs[i].tensor].name,
			      "MatMul_output") != NULL &&
		       strstr(a->act_pairs[i].quant_tensor, "gemm") != NULL;
	qkv = act_pair(a, 0, "/qkv/Add_output_0");
	ok(low == 0 && qkv && qkv->sqnr_db > 30 && qkv->flags == 0 &&
	   a->act_runs[0].worst_local >= 0 &&
	   a->act_pairs[a->act_runs[0].worst_local].local_sqnr_db > 25,
	   "QDQ: the qkv Gemm read after its bias (%.1f dB), no MatMul "
	   "output against a Gemm (%zu), worst local error above 25 dB",
	   qkv ? qkv->sqnr_db : NAN, low);
out:
	qr_diag_clear(&d);
	qr_analysis_free(a);
}

/* A16W8 as ONNX Runtime writes it: com.microsoft Q/DQ with uint16
 * activations runs, matches by name like the 8-bit candidate, and its
 * rmse/scale (large: the int8 weights' error over a 16-bit step) is
 * reported but not flagged. */
static void
test_qdq16(struct qr_tensor *data)
{
	char *q16 = fixture_path("digits_qdq16.onnx");
	const char *const q[] = { "digits_qdq.onnx", q16 };
	struct qr_analysis *a;
	struct qr_diag d = { 0 };
	enum qr_status st;
	size_t i, n8 = 0, n16 = 0, wide = 0, big = 0, flagged = 0;

	a = run_data("digits_float.onnx", q, 2, data, &st, &d);
	ok(st == QR_OK && a != NULL && a->act_runs[1].ran,
	   "A16W8 (com.microsoft Q/DQ) runs beside the 8-bit QDQ (%s)", d.msg);
	if (a == NULL)
		goto out;
	for (i = 0; i < a->n_act_pairs; i++) {
		const struct qr_act_pair *p = &a->act_pairs[i];

		if (p->quant == 0) {
			n8++;
			continue;
		}
		n16++;
		wide += p->has_qparams && p->qmin == 0 && p->qmax == 65535;
		big += p->rmse_over_scale > 0.7;
		flagged += (p->flags & QR_ACT_FLAG_RMSE_SCALE) != 0;
	}
	ok(n16 == n8 && n16 == 9 && a->act_runs[1].n_name == 9,
	   "A16W8: the same 9 tensors matched, by name (%zu, %zu)", n16, n8);
	ok(wide == 9, "A16W8: 9 tensors quantized to uint16 [0, 65535] (%zu)",
	   wide);
	ok(big > 0 && flagged == 0, "A16W8: rmse/scale above 0.7 on %zu "
	   "tensors, flagged on none (%zu)", big, flagged);
	ok(a->n_act_outputs == 2 && a->act_outputs[1].cosine_mean > 0.999 &&
	   a->act_outputs[1].cosine_mean >= a->act_outputs[0].cosine_mean,
	   "A16W8 output cosine %.6f, at least the 8-bit one's %.6f",
	   a->n_act_outputs == 2 ? a->act_outputs[1].cosine_mean : NAN,
	   a->n_act_outputs == 2 ? a->act_outputs[0].cosine_mean : NAN);
out:
	qr_diag_clear(&d);
	qr_analysis_free(a);
	free(q16);
}

/* Twin nodes (one op, one input, different indices or perm) whose output
 * names are swapped in the candidate: the attribute and constant checks
 * refuse the names, and structure pairs each with its real twin. */
static void
test_twins(void)
{
	struct qr_act_match *m = match_models(fixture("twin_a.onnx"),
					      fixture("twin_b.onnx"));
	static const char *const want[][2] = {
		{ "g0", "g1" }, { "g1", "g0" }, { "t0", "t1" }, { "t1", "t0" },
	};
	size_t k, right = 0;

	if (!ok(m != NULL, "matching runs on the twin fixtures"))
		return;
	for (k = 0; k < 4; k++) {
		const struct qr_act_match_pair *p = pair_for(m, want[k][0]);

		right += p && strcmp(p->qtensor, want[k][1]) == 0 &&
			 p->match == QR_MATCH_STRUCTURE;
	}
	ok(right == 4, "twins: Gathers of other indices and Transposes of "
	   "other perms are not taken by name (%zu of 4 right)", right);
	qr_act_match_free(m);
}

/* Two exports of one attention module whose Transpose numbering differs:
 * a same-named tensor of the other model is another computation, so the
 * name is refused (its producer reads other tensors) and structure pairs
 * it. Before, 5 pairs joined different tensors (cosine 0.08 on a float
 * model against another export of itself). */
static void
test_name_shift(void)
{
	static const int64_t dims[3] = { 4, 5, 16 };
	struct qr_analysis *a;
	struct qr_diag d = { 0 };
	enum qr_status st;
	size_t i, exact = 0, tr = 0, tr_struct = 0;

	a = run_fixtures("mha_fold.onnx", "mha_nofold.onnx", dims, 777, &st,
			 &d);
	ok(st == QR_OK && a != NULL, "two exports of one attention module "
	   "run (%s)", d.msg);
	if (a == NULL)
		goto out;
	for (i = 0; i < a->n_act_pairs; i++) {
		const struct qr_act_pair *p = &a->act_pairs[i];
		const char *name = a->act_tensors[p->tensor].name;

		/* the two exports fold the q/k/v projections differently:
		 * about 140 dB apart, where a wrong pair gives -2.5 dB */
		exact += p->cosine_mean > 1.0 - 1e-12 && p->sqnr_db > 120;
		if (strstr(name, "/Transpose") != NULL) {
			tr++;
			tr_struct += p->match == QR_MATCH_STRUCTURE;
		}
	}
	ok(a->n_act_pairs == 24 && exact == 24, "the same values: 24 pairs, "
	   "all above 120 dB (%zu of %zu)", exact, a->n_act_pairs);
	ok(tr == 6 && tr_struct == 5, "the 5 shifted Transposes of 6 paired "
	   "by structure (%zu of %zu)", tr_struct, tr);
out:
	qr_diag_clear(&d);
	qr_analysis_free(a);
}

/* ---- samples the float model cannot take ---- */

static char skip_dir[] = "/tmp/qr-skip-XXXXXX";

/* A w x h PNG of seeded pixels, skip_dir/dir/name. */
static void
write_png(const char *dir, const char *name, int w, int h, uint32_t r)
{
	char *folder = qr_path_join(skip_dir, dir);
	char *path = qr_path_join(folder, name);
	size_t i, n = (size_t)w * (size_t)h * 4;
	uint8_t *px = xmalloc(n);
	struct qr_diag d = { 0 };

	for (i = 0; i < n; i++) {
		r = r * 1664525u + 1013904223u;
		px[i] = i % 4 == 3 ? 255 : (uint8_t)(r >> 24);
	}
	if (qr_mkdirs(folder, &d) != QR_OK ||
	    qr_png_write_rgba(path, px, w, h, w * 4, &d) != QR_OK)
		diag("%s", d.msg);
	qr_diag_clear(&d);
	free(px);
	free(path);
	free(folder);
}

static enum qr_status
images_next(void *user, struct qr_tensor *const **inputs, size_t *n_inputs,
	    int *label, const char **name, struct qr_diag *d)
{
	return qr_dataset_next(user, inputs, n_inputs, label, name, d);
}

/* skip_float.onnx against skip_qdq.onnx on the images of skip_dir/dir,
 * each at its own size (scale 1/255). */
static struct qr_analysis *
run_images(const char *dir, enum qr_status *stp, struct qr_diag *d)
{
	char *fp = fixture_path("skip_float.onnx");
	char *qp = fixture_path("skip_qdq.onnx");
	char *path = qr_path_join(skip_dir, dir);
	struct qr_model *fm = load(fp), *qm = load(qp);
	struct qr_dataset_opts dopts;
	struct qr_data_source src;
	struct qr_dataset *ds = NULL;
	struct qr_act_opts o = { 0 };
	struct qr_analysis *a = NULL;
	int c;

	memset(&dopts, 0, sizeof dopts);
	memset(&src, 0, sizeof src);
	src.path = path;
	dopts.n_sources = 1;
	dopts.sources = &src;
	for (c = 0; c < 3; c++)
		dopts.std[c] = 1;
	*stp = fm == NULL || qm == NULL ? QR_EIO
		: qr_dataset_open(fm, &dopts, &ds, d);
	if (*stp == QR_OK) {
		o.next = images_next;
		o.user = ds;
		o.samples = qr_dataset_count(ds);
		o.source = qr_dataset_source(ds);
		o.warn_first = d->n_warnings;
		a = run_models(fm, &qm, 1, &o, stp, d);
	}
	qr_dataset_free(ds);
	qr_onnx_free(fm);
	qr_onnx_free(qm);
	free(path);
	free(fp);
	free(qp);
	return a;
}

/* Whether a's data warnings name the skipped sample. */
static int
warns_of(const struct qr_analysis *a, const char *sample)
{
	size_t i;

	for (i = 0; i < a->data.n_warnings; i++)
		if (strstr(a->data.warnings[i], sample) != NULL &&
		    strstr(a->data.warnings[i], "skipped") != NULL)
			return 1;
	return 0;
}

/*
 * An image folder whose images differ in size, one of them too small
 * for the float model's MaxPool (3 pixels high), first or in the middle:
 * that sample is skipped with a warning naming it (partial), and every
 * number is the one of the folder without it, bit for bit: the float
 * statistics it fed before the MaxPool failed are put back, and so are
 * the candidate runs' sums, which in step read its tensors while the
 * float run made them (16384 pixels wide: its 17 MB Relu output makes
 * the float run wait for them to read it). In step for every sample and
 * by default (pipeline after the first), on one lane and on two. A
 * folder of nothing but such images fails, naming the first.
 */
static void
test_skip_samples(void)
{
	static const char *const dirs[2] = { "mid", "first" };
	static const char *const bad[2] = { "b_wide.png", "0_wide.png" };
	static const char *const names[3] = { "a.png", "c.png", "d.png" };
	static const int size[3][2] = { { 10, 12 }, { 14, 9 }, { 8, 8 } };
	static const int threads[4] = { 0, 0, 2, 2 };
	static const size_t pipe[4] = { 0, 1, 0, 1 };
	struct qr_analysis *ref, *x;
	struct qr_diag d = { 0 };
	enum qr_status st;
	int m, k, i;

	for (i = 0; i < 3; i++) {
		write_png("clean", names[i], size[i][0], size[i][1],
			  (uint32_t)i + 1);
		for (k = 0; k < 2; k++)
			write_png(dirs[k], names[i], size[i][0], size[i][1],
				  (uint32_t)i + 1);
	}
	for (k = 0; k < 2; k++)
		write_png(dirs[k], bad[k], 16384, 3, 7);
	write_png("bad", "0_tiny.png", 5, 3, 8);
	write_png("bad", "1_tiny.png", 4, 2, 9);
	for (m = 0; m < 4; m++) {
		const char *mode = pipe[m] ? "every sample in step" : "default";

		run_threads = threads[m];
		run_pipe = pipe[m];
		ref = run_images("clean", &st, &d);
		if (!ok(st == QR_OK && ref != NULL && ref->data.samples == 3,
			"%d thread(s), %s: the 3 images of mixed sizes run "
			"(%s)", threads[m] ? 2 : 1, mode, d.msg)) {
			qr_analysis_free(ref);
			break;
		}
		qr_diag_clear(&d);
		for (k = 0; k < 2; k++) {
			int same;

			x = run_images(dirs[k], &st, &d);
			ok(st == QR_EPARTIAL && x != NULL && x->data.ran &&
			   x->data.samples == 3 && x->data.n_skipped == 1 &&
			   strcmp(x->data.skipped[0].sample, bad[k]) == 0 &&
			   strstr(x->data.skipped[0].why, "MaxPool") != NULL &&
			   warns_of(x, bad[k]),
			   "%d thread(s), %s, %s one too small: partial, it "
			   "is skipped with a warning naming it (%s)",
			   threads[m] ? 2 : 1, mode, k ? "first" : "middle",
			   x && x->data.n_skipped ? x->data.skipped[0].why
						  : d.msg);
			same = x != NULL && same_numbers(ref, 0, x, 0);
			for (i = 0; same && i < 3; i++)
				same = strcmp(x->data.sample_names[i],
					      ref->data.sample_names[i]) == 0;
			ok(same, "%d thread(s), %s, %s one too small: samples, "
			   "float ranges, cosines and outputs are those of the "
			   "folder without it, bit for bit", threads[m] ? 2 : 1,
			   mode, k ? "first" : "middle");
			qr_analysis_free(x);
			qr_diag_clear(&d);
		}
		qr_analysis_free(ref);
		x = run_images("bad", &st, &d);
		ok(st == QR_ESHAPE && x != NULL && !x->data.ran &&
		   x->data.n_skipped == 2 && strstr(d.msg, "0_tiny.png") &&
		   strstr(d.msg, "MaxPool"),
		   "%d thread(s), %s, every image too small: the run fails "
		   "naming the first (%s)", threads[m] ? 2 : 1, mode, d.msg);
		qr_analysis_free(x);
		qr_diag_clear(&d);
	}
	run_threads = 0;
	run_pipe = 0;
}

/* Run the qreport binary on the skip fixtures and skip_dir/dir into
 * skip_dir/out-dir; its stderr into *err (heap). Returns its exit code. */
static int
cli_images(const char *bin, const char *dir, char **err)
{
	char *fp = fixture_path("skip_float.onnx");
	char *qp = fixture_path("skip_qdq.onnx");
	char *cmd = xasprintf("'%s' --float '%s' --quant '%s' --data '%s/%s' "
			      "-o '%s/out-%s' 2>'%s/err'", bin, fp, qp,
			      skip_dir, dir, skip_dir, dir, skip_dir);
	char *ep = qr_path_join(skip_dir, "err");
	size_t len;
	int rc = system(cmd);

	if (qr_read_file(ep, err, &len, NULL) != QR_OK)
		*err = xstrdup("");
	free(ep);
	free(cmd);
	free(fp);
	free(qp);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The text of skip_dir/rel (heap; "" when it cannot be read). */
static char *
skip_text(const char *rel)
{
	char *p = qr_path_join(skip_dir, rel), *text;
	size_t len;

	if (qr_read_file(p, &text, &len, NULL) != QR_OK)
		text = xstrdup("");
	free(p);
	return text;
}

/* The CLI: exit 4 with a sample skipped (named on stderr, counted and
 * listed in report.json, index.html and summary.md), exit 2 and no
 * report when every sample is. */
static void
test_skip_cli(void)
{
	const char *bin = getenv("QREPORT");
	char *err = NULL, *text, *p;
	cJSON *j;
	const cJSON *ds, *sk;
	int rc;

	if (bin == NULL) {
		diag("QREPORT is not set (run by make check): no CLI check");
		return;
	}
	rc = cli_images(bin, "mid", &err);
	ok(rc == 4 && strstr(err, "warning: sample 'b_wide.png' skipped") &&
	   strstr(err, "MaxPool") && strstr(err, "partial report"),
	   "qreport: one image too small: exit 4 (got %d), the warning names "
	   "it: %s", rc, err);
	free(err);
	text = skip_text("out-mid/report.json");
	j = cJSON_Parse(text);
	free(text);
	ds = cJSON_GetObjectItemCaseSensitive(j, "dataset");
	sk = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
					ds, "skipped_samples"), 0);
	ok(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
		   ds, "samples")) == 3 &&
	   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
		   ds, "skipped")) == 1 &&
	   cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
		   ds, "skipped_samples")) == 1 &&
	   strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		   sk, "sample")) ?: "", "b_wide.png") == 0 &&
	   strstr(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		   sk, "why")) ?: "", "MaxPool") != NULL,
	   "report.json: dataset.samples 3, skipped 1, skipped_samples names "
	   "b_wide.png and why");
	cJSON_Delete(j);
	text = skip_text("out-mid/index.html");
	ok(strstr(text, "1 sample skipped") != NULL &&
	   strstr(text, "<li>b_wide.png: node") != NULL,
	   "index.html: 1 sample skipped, named, with the reason");
	free(text);
	text = skip_text("out-mid/summary.md");
	ok(strstr(text, "- 1 sample skipped") != NULL &&
	   strstr(text, "b\\_wide.png: node") != NULL,
	   "summary.md: 1 sample skipped, named, with the reason");
	free(text);
	rc = cli_images(bin, "bad", &err);
	p = xasprintf("%s/out-bad", skip_dir);
	ok(rc == 2 && strstr(err, "warning: sample '0_tiny.png' skipped") &&
	   strstr(err, "error: every sample was skipped (2)") &&
	   strstr(err, "'0_tiny.png': node 'pool' (MaxPool)") &&
	   access(p, F_OK) != 0,
	   "qreport: every image too small: exit 2 (got %d) naming the "
	   "first, no report: %s", rc, err);
	free(p);
	free(err);
}

int
main(void)
{
	struct qr_tensor *data;

	plan_no_plan();
	RUN(test_matching);
	RUN(test_shape_arith);
	RUN(test_attention_run);
	RUN(test_cancellation);
	RUN(test_layout);
	RUN(test_dynamic_match);
	RUN(test_bias_fused);
	RUN(test_name_shift);
	RUN(test_twins);
	RUN(test_stats);
	RUN(test_stats_simd);
	RUN(test_quant);
	data = digits_data();
	if (ok(data != NULL && data->ndim == 4 && data->dims[0] == 20,
	       "digits_test.npy read")) {
		test_run(data);
		test_partial(data);
		test_lanes(data);
		test_step(data);
		test_fold_budget(data);
		test_qdq16(data);
	}
	qr_tensor_free(data);
	if (ok(mkdtemp(skip_dir) != NULL, "a temporary folder for images")) {
		test_skip_samples();
		test_skip_cli();
		qr_remove_tree(skip_dir);
	}
	return done();
}
