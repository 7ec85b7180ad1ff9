/*
 * test_analysis_models: qr_analysis_new on the tiny models of
 * tests/data/analysis/ (made by tests/data/make_analysis_fixtures.py, which
 * prints the SQNR/clipping/CLE numbers hard-coded below): CLE pair,
 * triplet with BN and blocker; Constant-node weights and weight axes;
 * QDQ (ORT names and renamed), QOperator, dynamic and weight-only
 * candidates; a weight with a bad shape.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "onnx/onnx.h"
#include "tap.h"
#include "util/util.h"

#define DATA QR_SRCDIR "/tests/data/analysis/"

static struct qr_model *
load(const char *file)
{
	char *path = xasprintf("%s%s", DATA, file);
	struct qr_model *m = NULL;
	struct qr_diag d = { 0 };

	if (qr_onnx_load(path, &m, &d) != QR_OK)
		diag("%s", d.msg);
	qr_diag_clear(&d);
	free(path);
	return m;
}

/* Analyse float file f against the candidates q[0..n). */
static struct qr_analysis *
analyse(const char *f, const char **q, size_t n)
{
	struct qr_model *fm = load(f), *qm[4] = { 0 };
	struct qr_analysis *a = NULL;
	struct qr_diag d = { 0 };
	size_t i;

	for (i = 0; i < n; i++)
		qm[i] = load(q[i]);
	if (fm && qr_analysis_new(fm, (const struct qr_model *const *)qm, n,
				  NULL, &a, &d) != QR_OK)
		diag("%s", d.msg);
	qr_diag_clear(&d);
	/* the result must not borrow from the models */
	qr_onnx_free(fm);
	for (i = 0; i < n; i++)
		qr_onnx_free(qm[i]);
	return a;
}

static const struct qr_weight_stats *
wstat(const struct qr_analysis *a, const char *layer)
{
	size_t i;

	for (i = 0; i < a->n_weights; i++)
		if (strcmp(a->weights[i].layer, layer) == 0)
			return &a->weights[i];
	return NULL;
}

static const struct qr_quant_weight *
qweight(const struct qr_analysis *a, size_t cand, const char *layer)
{
	size_t i;

	for (i = 0; i < a->n_qweights; i++)
		if (a->qweights[i].quant == cand &&
		    strcmp(a->qweights[i].layer, layer) == 0)
			return &a->qweights[i];
	return NULL;
}

static int
unmatched_has(const struct qr_analysis *a, const char *prefix)
{
	size_t i;

	for (i = 0; i < a->n_unmatched; i++)
		if (strncmp(a->unmatched[i], prefix, strlen(prefix)) == 0)
			return 1;
	return 0;
}

static const struct qr_coverage_entry *
coverage(const struct qr_quant_summary *q, const char *layer)
{
	size_t i;

	for (i = 0; i < q->n_coverage; i++)
		if (strcmp(q->coverage[i].layer, layer) == 0)
			return &q->coverage[i];
	return NULL;
}

static void
test_pair(void)
{
	struct qr_analysis *a = analyse("cle_pair.onnx", NULL, 0);
	const struct qr_weight_stats *w;
	const struct qr_cle_set *s;

	if (!ok(a != NULL, "cle_pair analysed"))
		return;
	ok(a->n_models == 1 && a->models[0].format == QR_QFMT_FLOAT,
	   "float model detected as float");
	ok(strcmp(a->models[0].producer, "qreport-fixtures 1") == 0,
	   "producer 'name version'");
	ok(strcmp(a->models[0].opsets, "ai.onnx:13") == 0, "opsets string");
	ok(a->models[0].n_inputs == 1 &&
	   strcmp(a->models[0].inputs[0].shape, "[1,2,4,4]") == 0 &&
	   strcmp(a->models[0].inputs[0].dtype, "float") == 0,
	   "input x float [1,2,4,4]");
	ok(a->models[0].n_ops == 2 && strcmp(a->models[0].ops[0].op,
					     "Conv") == 0 &&
	   a->models[0].ops[0].count == 2, "op histogram: Conv x2 first");
	ok(a->models[0].n_params == 12 && a->models[0].param_bytes == 48,
	   "params 12 elements, 48 bytes");

	w = wstat(a, "c1");
	/* W1 rows [4,-1], [1,.5], [.5,-.5]: ranges 5, .5, 1 -> rel 10,1,2 */
	ok(w && w->channels == 3 && w->axis == 0 &&
	   strcmp(w->shape, "[3,2,1,1]") == 0, "c1: 3 channels on axis 0");
	ok(w && w->rel_range[0] == 10 && w->rel_range[1] == 1 &&
	   w->rel_range[2] == 2 && w->max_rel_range == 10,
	   "c1: rel range 10, 1, 2");
	ok(w && w->sqnr_per_channel_db >= w->sqnr_per_tensor_db,
	   "c1: per-channel SQNR >= per-tensor");

	if (!ok(a->n_cle == 1 && a->n_cle_blockers == 0, "one CLE set"))
		goto out;
	s = &a->cle[0];
	ok(s->n_layers == 2 && strcmp(s->layers[0].name, "c1") == 0 &&
	   strcmp(s->layers[1].name, "c2") == 0 &&
	   strcmp(s->joins[0], "Relu") == 0, "set c1 -Relu-> c2");
	/* r1 = 4, 1, .5; r2 = 1, 4, 2 -> s = 2, .5, .5 */
	ok(s->n_scales[0] == 3, "3 scales");
	ok_near(s->scales[0][0], 2, 1e-6, "s0 = 2");
	ok_near(s->scales[0][1], 0.5, 1e-6, "s1 = 0.5");
	ok_near(s->scales[0][2], 0.5, 1e-6, "s2 = 0.5");
	/* after: c1 rows / s -> [2,-.5], [2,1], [1,-1] */
	ok(s->layers[0].max_after[0] == 2 && s->layers[0].min_after[0] == -0.5f &&
	   s->layers[0].max_after[1] == 2 && s->layers[0].min_after[2] == -1,
	   "c1 rows divided by s");
	ok(s->layers[0].max_before[0] == 4 && s->layers[0].min_before[0] == -1,
	   "c1 before is the original");
	ok(s->max_rel_range_after < s->max_rel_range_before,
	   "equalization lowers the max relative range (%g -> %g)",
	   s->max_rel_range_before, s->max_rel_range_after);
out:
	qr_analysis_free(a);
}

static void
test_triplet(void)
{
	struct qr_analysis *a = analyse("cle_triplet.onnx", NULL, 0);
	static const double s12[4] = { 1.756354, 0.198895, 0.954126,
				       0.044437 };
	static const double s23[4] = { 2.583868, 0.383435, 1.388117,
				       0.310647 };
	const struct qr_cle_set *s;
	int i;

	if (!ok(a != NULL && a->n_cle == 1, "triplet: exactly one set "
		"(no extra depthwise->conv pair)"))
		goto out;
	s = &a->cle[0];
	ok(s->n_layers == 3 && strcmp(s->layers[0].name, "t0") == 0 &&
	   strcmp(s->layers[1].name, "t1") == 0 &&
	   strcmp(s->layers[2].name, "t2") == 0, "set t0, t1, t2");
	ok(s->layers[0].bn_folded && !s->layers[1].bn_folded,
	   "BN folded into t0");
	ok(s->layers[1].depthwise && !s->layers[0].depthwise,
	   "t1 is depthwise");
	ok(strcmp(s->joins[0], "Relu") == 0 && strcmp(s->joins[1], "Relu") == 0,
	   "joined by Relu");
	for (i = 0; i < 4; i++) {
		ok_near(s->scales[0][i], s12[i], 1e-5 + 1e-5 * s12[i],
			"triplet s12");
		ok_near(s->scales[1][i], s23[i], 1e-5 + 1e-5 * s23[i],
			"triplet s23");
	}
	ok_near(s->max_rel_range_before, 176.418671, 1e-3,
		"max rel range before (BN folded) = 176.42");
	ok(s->max_rel_range_after < s->max_rel_range_before,
	   "equalization lowers the max relative range: %g -> %g",
	   s->max_rel_range_before, s->max_rel_range_after);
	ok(isfinite(s->sqnr_per_tensor_before_db) &&
	   isfinite(s->sqnr_per_tensor_after_db),
	   "mean per-tensor SQNR %.2f -> %.2f dB",
	   s->sqnr_per_tensor_before_db, s->sqnr_per_tensor_after_db);
out:
	qr_analysis_free(a);
}

/* Sets sharing a layer (k1 -> k2, then k2 -> k3): the second starts
 * from k2 as the first left it, not from the file's k2. */
static void
test_chain(void)
{
	struct qr_analysis *a = analyse("cle_chain.onnx", NULL, 0);
	const struct qr_weight_stats *w;
	const struct qr_cle_set *s, *t;

	if (!ok(a != NULL && a->n_cle == 2, "chain: two sets"))
		goto out;
	s = &a->cle[0];
	t = &a->cle[1];
	w = wstat(a, "k2");
	ok(strcmp(s->layers[0].name, "k1") == 0 &&
	   strcmp(s->layers[1].name, "k2") == 0 &&
	   strcmp(t->layers[0].name, "k2") == 0 &&
	   strcmp(t->layers[1].name, "k3") == 0, "sets k1 -> k2, k2 -> k3");
	ok(memcmp(t->layers[0].min_before, s->layers[1].min_after,
		  3 * sizeof(float)) == 0 &&
	   memcmp(t->layers[0].max_before, s->layers[1].max_after,
		  3 * sizeof(float)) == 0,
	   "k2 before the second set = k2 after the first");
	ok(w != NULL && w->channels == 3 &&
	   memcmp(t->layers[0].min_before, w->ch_min, 3 * sizeof(float)) != 0,
	   "which is not the file's k2");
out:
	qr_analysis_free(a);
}

static void
test_relu6(void)
{
	struct qr_analysis *a = analyse("cle_relu6.onnx", NULL, 0);

	if (!ok(a != NULL, "relu6 analysed"))
		return;
	ok(a->n_cle == 0, "Clip(0,6) blocks equalization");
	ok(a->n_cle_blockers == 1 &&
	   strcmp(a->cle_blockers[0].from, "k1") == 0 &&
	   strcmp(a->cle_blockers[0].to, "k2") == 0 &&
	   strstr(a->cle_blockers[0].fix, "ReLU") != NULL &&
	   strstr(a->cle_blockers[0].reason, "relu6") != NULL,
	   "blocker k1 -> k2 with a fix");
	qr_analysis_free(a);
}

static void
test_const_weight(void)
{
	struct qr_analysis *a = analyse("const_weight.onnx", NULL, 0);
	const struct qr_weight_stats *w;

	if (!ok(a != NULL, "const_weight analysed"))
		return;
	ok(a->n_weights == 3, "3 weighted layers (Constant, Gemm, MatMul)");
	w = wstat(a, "conv");
	ok(w && strcmp(w->weight, "wc") == 0 && w->axis == 0 &&
	   w->channels == 4 && w->n_elem == 72,
	   "Constant-node weight of conv");
	w = wstat(a, "fc");
	ok(w && w->axis == 0 && w->channels == 5, "Gemm transB=1: axis 0");
	w = wstat(a, "mm");
	ok(w && w->axis == 1 && w->channels == 6, "MatMul [K,N]: axis 1");
	ok(a->models[0].n_params == 122 && a->models[0].param_bytes == 488,
	   "params count the Constant node");
	ok(strcmp(a->models[0].inputs[0].shape, "[batch,2,4,4]") == 0,
	   "symbolic dim in input shape");
	qr_analysis_free(a);
}

static void
test_net(void)
{
	const char *q[3] = { "net_qdq.onnx", "net_qdq_renamed.onnx",
			     "net_qop.onnx" };
	struct qr_analysis *a = analyse("net_float.onnx", q, 3);
	const struct qr_quant_weight *p;
	const struct qr_weight_stats *w;
	const struct qr_quant_summary *qs;
	const struct qr_coverage_entry *ce;

	if (!ok(a != NULL && a->n_models == 4 && a->n_quant == 3,
		"net analysed with 3 candidates"))
		goto out;
	ok(a->models[1].format == QR_QFMT_QDQ &&
	   a->models[2].format == QR_QFMT_QDQ &&
	   a->models[3].format == QR_QFMT_QOPERATOR &&
	   a->quants[2].format == QR_QFMT_QOPERATOR,
	   "formats qdq, qdq, qoperator");
	w = wstat(a, "conv1");
	ok(w && w->n_outliers == 1 && w->outliers[0] == 3,
	   "conv1: channel 3 above the Tukey fence");

	qs = &a->quants[0];
	ok(qs->n_layers == 3, "qdq: 3 quantized layers");
	ok(qs->n_layers == 3 && strcmp(qs->layers[0].layer, "conv1") == 0 &&
	   qs->layers[0].per_channel && qs->layers[0].axis == 0 &&
	   qs->layers[0].n_scales == 8 && qs->layers[0].bits == 8 &&
	   strcmp(qs->layers[0].weight_dtype, "int8") == 0 &&
	   qs->layers[0].act_quantized, "qdq conv1: int8 per-channel axis 0");
	ok(qs->n_layers == 3 && !qs->layers[2].per_channel &&
	   qs->layers[2].n_scales == 1, "qdq fc: per-tensor");
	ce = coverage(qs, "conv2");
	ok(ce && ce->quantized, "qdq coverage: conv2 quantized");

	p = qweight(a, 0, "conv1");
	ok(p && p->match == QR_MATCH_NAME &&
	   strcmp(p->quant_weight, "conv1.weight_quantized") == 0 &&
	   strstr(p->match_reason, "BatchNormalization") != NULL,
	   "conv1 <-> conv1.weight_quantized, BN folded");
	ok_near(p ? p->sqnr_db : 0, 45.132410, 1e-3, "conv1 SQNR 45.13 dB");
	ok(p && p->clipped == 2 && p->out_of_range == 0 &&
	   strcmp(p->granularity, "per-channel") == 0, "conv1 clipped 2");
	p = qweight(a, 0, "conv2");
	ok_near(p ? p->sqnr_db : 0, 21.571464, 1e-3, "conv2 SQNR 21.57 dB");
	ok(p && p->clipped == 6 && p->out_of_range == 8,
	   "conv2 (shrunk scale): clipped 6, 8 out of range");
	p = qweight(a, 0, "fc");
	ok_near(p ? p->sqnr_db : 0, 45.947078, 1e-3, "fc SQNR 45.95 dB");
	ok(p && p->clipped == 1 && p->bits == 8 &&
	   strcmp(p->granularity, "per-tensor") == 0, "fc clipped 1");
	/* 40 floats = 160 bytes vs 40 int8 + 4 scale + 1 zp */
	ok(p && p->float_bytes == 160 && p->quant_bytes == 45,
	   "fc bytes 160 -> 45");
	ok_near(p ? p->compression : 0, 160.0 / 45, 1e-9, "compression");

	p = qweight(a, 1, "conv1");
	ok(p && p->match == QR_MATCH_STRUCTURE &&
	   strcmp(p->quant_layer, "n17") == 0, "renamed: conv1 by structure");
	ok_near(p ? p->sqnr_db : 0, 45.132410, 1e-3,
		"renamed conv1 SQNR (BN folded)");
	p = qweight(a, 1, "fc");
	ok(p && p->match == QR_MATCH_STRUCTURE &&
	   strcmp(p->quant_layer, "n20") == 0,
	   "renamed: fc by structure despite conv2 left float");
	ok(qweight(a, 1, "conv2") == NULL &&
	   unmatched_has(a, "conv2 (candidate 2"), "renamed: conv2 unmatched");

	qs = &a->quants[2];
	ok(qs->n_layers == 1 && strcmp(qs->layers[0].op, "QLinearConv") == 0 &&
	   qs->layers[0].per_channel && qs->layers[0].axis == 0,
	   "qop: QLinearConv per-channel axis 0");
	ce = coverage(qs, "conv1_quant");
	ok(ce && ce->quantized, "qop coverage: QLinearConv quantized");
	ce = coverage(qs, "conv2");
	ok(ce && !ce->quantized, "qop coverage: conv2 float");
	ok(qs->n_quantized == 1, "qop: 1 quantized compute op");
	p = qweight(a, 2, "conv1");
	ok(p && p->match == QR_MATCH_NAME, "qop: conv1 by name");
	ok_near(p ? p->sqnr_db : 0, 45.132410, 1e-3, "qop conv1 SQNR");
	ok(unmatched_has(a, "fc (candidate 3"), "qop: fc unmatched");
out:
	qr_analysis_free(a);
}

/* Fake-quantized weights (TensorRT, pytorch-quantization): conv1's and
 * fc's weights stay float, quantized in the graph by a QuantizeLinear of
 * net_qdq.onnx's scales; the integers, so every number, are net_qdq's. */
static void
test_fake_quant(void)
{
	const char *q[1] = { "net_fakeq.onnx" };
	struct qr_analysis *a = analyse("net_float.onnx", q, 1);
	const struct qr_quant_weight *p;
	const struct qr_quant_summary *qs;

	if (!ok(a != NULL && a->n_quant == 1, "fake-quant net analysed"))
		goto out;
	qs = &a->quants[0];
	ok(qs->format == QR_QFMT_QDQ && qs->n_layers == 3 &&
	   strcmp(qs->layers[0].layer, "conv1") == 0 &&
	   qs->layers[0].per_channel && qs->layers[0].axis == 0 &&
	   strcmp(qs->layers[0].weight_dtype, "int8") == 0 &&
	   strcmp(qs->layers[2].layer, "fc") == 0 &&
	   !qs->layers[2].per_channel,
	   "fake-quant: QDQ, 3 quantized layers (conv1 int8 per-channel, fc "
	   "per-tensor) (%zu)", qs->n_layers);
	p = qweight(a, 0, "conv1");
	ok(p && strcmp(p->quant_weight, "conv1.weight_quantized") == 0 &&
	   p->clipped == 2, "fake-quant conv1: the QuantizeLinear's output, "
	   "clipped 2");
	ok_near(p ? p->sqnr_db : 0, 45.132410, 1e-3,
		"fake-quant conv1 SQNR as net_qdq's");
	p = qweight(a, 0, "fc");
	ok_near(p ? p->sqnr_db : 0, 45.947078, 1e-3,
		"fake-quant fc SQNR as net_qdq's");
	p = qweight(a, 0, "conv2");
	ok_near(p ? p->sqnr_db : 0, 21.571464, 1e-3,
		"conv2 (an integer constant, as in net_qdq)");
out:
	qr_analysis_free(a);
}

/*
 * 4-bit weight-only, as ONNX Runtime's MatMul4BitsQuantizer writes it
 * (tests/data/make_weightonly_fixtures.py): com.microsoft MatMulNBits
 * with packed codes and zero points, and the QDQ flavour (uint4
 * DequantizeLinear, blocks of 32 along axis 0) holding the same numbers.
 * Expected SQNR and clipped counts from numpy on the fixtures' own bytes.
 */
static void
test_weight_only(void)
{
	static const char *const layer[3] = {"/fc1/MatMul", "/fc2/MatMul",
					     "/head/MatMul"};
	static const double want[3] = {24.189028, 23.970472, 24.305995};
	static const size_t clipped[3] = {1019, 854, 100};
	static const double want8[3] = {48.952181, 48.654079, 49.021845};
	const char *q[4] = { "../activations/wo_nbits.onnx",
			     "../activations/wo_dq4.onnx",
			     "../activations/wo_nbits8.onnx",
			     "../activations/wo_nbits_sym.onnx" };
	struct qr_analysis *a = analyse("../activations/wo_float.onnx", q, 4);
	char what[160];
	size_t c, i;

	if (!ok(a != NULL && a->n_quant == 4, "weight-only 4-bit analysed"))
		goto out;
	for (c = 0; c < 3; c++) {
		const struct qr_quant_summary *qs = &a->quants[c];
		const struct qr_quant_layer *l = qs->n_layers == 3 ?
			&qs->layers[0] : NULL;

		ok(qs->format == QR_QFMT_WEIGHT_ONLY && l &&
		   l->block_size == 32 && l->axis == 0 &&
		   l->bits == (c == 2 ? 8 : 4) && !l->act_quantized &&
		   strcmp(l->weight_dtype, c == 2 ? "uint8" : "uint4") == 0 &&
		   qs->n_quantized == 3,
		   "%s: weight-only, 3 layers blocked by 32 along K, %d-bit",
		   q[c], c == 2 ? 8 : 4);
		for (i = 0; i < 3; i++) {
			const struct qr_quant_weight *p = qweight(a, c,
								  layer[i]);

			ok(p && p->match == QR_MATCH_NAME && p->bits ==
			   (c == 2 ? 8 : 4) && p->block_size == 32 &&
			   strcmp(p->granularity, "per-block") == 0 &&
			   (c == 2 || p->clipped == clipped[i]),
			   "%s %s: paired by ORT's weight-only name, "
			   "per-block 32 (clipped %zu)", q[c], layer[i],
			   p ? p->clipped : 0);
			snprintf(what, sizeof what, "%s %s weight SQNR", q[c],
				 layer[i]);
			ok_near(p ? p->sqnr_db : 0, c == 2 ? want8[i] : want[i],
				1e-3, what);
		}
	}
	/* 4-bit codes stored two to a byte: fc1's [72, 96] weight is 3456
	 * bytes of codes, 3 blocks x 96 scales and zero points */
	ok(qweight(a, 0, "/fc1/MatMul") && qweight(a, 1, "/fc1/MatMul") &&
	   qweight(a, 0, "/fc1/MatMul")->quant_bytes ==
		   3456 + 288 * 4 + 144 &&
	   qweight(a, 1, "/fc1/MatMul")->quant_bytes ==
		   3456 + 288 * 4 + 144, "4-bit bytes counted packed");
	/* the model's parameters as stored: wo_dq4's uint4 initializers two
	 * codes to a byte (its initializers' raw bytes, three float
	 * Constants) */
	ok(a->models[2].param_bytes == 10963 + 3 * 4,
	   "wo_dq4: parameters counted as stored, 4-bit packed (%zu bytes)",
	   a->models[2].param_bytes);
	/* symmetric as ORT writes it: no zero points stored (8 implied),
	 * about half the scales negative */
	ok(qweight(a, 3, "/fc1/MatMul") &&
	   qweight(a, 3, "/fc1/MatMul")->quant_bytes == 3456 + 288 * 4 &&
	   a->quants[3].layers[0].zp_min == 8 &&
	   a->quants[3].layers[0].zp_max == 8 &&
	   a->quants[3].layers[0].scale_min < 0,
	   "symmetric: implied zero point 8 not counted as stored bytes");
	ok_near(qweight(a, 3, "/fc1/MatMul") ?
		qweight(a, 3, "/fc1/MatMul")->sqnr_db : 0, 23.916006, 1e-3,
		"symmetric fc1 SQNR with negative scales");
out:
	qr_analysis_free(a);
}

static void
test_matmul(void)
{
	const char *q[2] = { "mm_dynamic.onnx", "mm_weightonly.onnx" };
	struct qr_analysis *a = analyse("mm_float.onnx", q, 2);
	const struct qr_quant_layer *l;
	const struct qr_quant_weight *p;

	if (!ok(a != NULL && a->n_quant == 2, "matmul analysed"))
		goto out;
	ok(a->quants[0].format == QR_QFMT_DYNAMIC, "dynamic detected");
	ok(a->quants[1].format == QR_QFMT_WEIGHT_ONLY, "weight-only detected");
	l = a->quants[0].n_layers == 1 ? &a->quants[0].layers[0] : NULL;
	ok(l && strcmp(l->op, "MatMulInteger") == 0 &&
	   strcmp(l->weight_dtype, "uint8") == 0 && !l->per_channel &&
	   l->n_scales == 1 && l->act_quantized && l->zp_min > 0,
	   "dynamic: uint8 per-tensor with its W_scale");
	ok(a->quants[0].n_coverage == 2 && a->quants[0].n_quantized == 1,
	   "dynamic coverage: MatMulInteger quantized, Add float");
	p = qweight(a, 0, "mm");
	ok(p && p->match == QR_MATCH_NAME, "dynamic: W -> W_quantized");
	ok_near(p ? p->sqnr_db : 0, 45.824079, 1e-3, "dynamic SQNR 45.82 dB");
	ok(p && p->clipped == 2, "dynamic clipped 2");

	l = a->quants[1].n_layers == 1 ? &a->quants[1].layers[0] : NULL;
	ok(l && l->per_channel && l->axis == 1 && l->n_scales == 8 &&
	   !l->act_quantized, "weight-only: per-channel, default axis 1");
	p = qweight(a, 1, "mm");
	ok(p && p->match == QR_MATCH_NAME &&
	   strstr(p->match_reason, "node name") != NULL,
	   "weight-only: same node name");
	ok_near(p ? p->sqnr_db : 0, 47.120081, 1e-3,
		"weight-only SQNR 47.12 dB");
	ok(p && p->clipped == 5 && p->quant_bytes == 128 + 32,
	   "weight-only clipped 5, 160 bytes");
out:
	qr_analysis_free(a);
}

static void
test_bad_shape(void)
{
	struct qr_model *m = load("bad_shape.onnx");
	struct qr_analysis *a = (struct qr_analysis *)1;
	struct qr_diag d = { 0 };
	enum qr_status st = QR_OK;

	if (m)
		st = qr_analysis_new(m, NULL, 0, NULL, &a, &d);
	ok(st == QR_ESHAPE && a == NULL, "bad weight shape is QR_ESHAPE");
	ok(strstr(d.msg, "convbad") && strstr(d.msg, "wbad") &&
	   strstr(d.msg, "[4,5,3,3]"), "message names node, weight, shape");
	diag("%s", d.msg);
	qr_diag_clear(&d);
	qr_onnx_free(m);
}

int
main(void)
{
	plan_no_plan();
	(void)skip_all;
	RUN(test_pair);
	RUN(test_triplet);
	RUN(test_chain);
	RUN(test_relu6);
	RUN(test_const_weight);
	RUN(test_net);
	RUN(test_fake_quant);
	RUN(test_matmul);
	RUN(test_weight_only);
	RUN(test_bad_shape);
	return done();
}
