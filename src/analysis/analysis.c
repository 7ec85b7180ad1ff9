/*
 * analysis: the order of the weight analyses (summaries, weight stats,
 * quant summaries, pairing, graph hazards, CLE) and the ownership of
 * their result.
 */
#include "analysis/analysis-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"

const char *
qr_qformat_name(enum qr_qformat f)
{
	switch (f) {
	case QR_QFMT_FLOAT:
		return "float";
	case QR_QFMT_QDQ:
		return "qdq";
	case QR_QFMT_QOPERATOR:
		return "qoperator";
	case QR_QFMT_DYNAMIC:
		return "dynamic";
	case QR_QFMT_WEIGHT_ONLY:
		return "weight-only";
	}
	return "float";
}

const char *
qr_match_name(enum qr_match m)
{
	switch (m) {
	case QR_MATCH_NAME:
		return "name";
	case QR_MATCH_STRUCTURE:
		return "structure";
	case QR_MATCH_NONE:
		break;
	}
	return "none";
}

/*
 * Analyse the float model and its candidates; see analysis.h. Graph
 * indexes are built here and dropped before returning, so the result
 * borrows nothing. Errors: QR_EGRAPH from qr_graph_new, QR_ESHAPE from a
 * float weight that disagrees with its node, QR_EUSAGE for opts->bits
 * outside 2..16. *out is NULL on error.
 */
enum qr_status
qr_analysis_new(const struct qr_model *fmodel,
		const struct qr_model *const *quant, size_t n_quant,
		const struct qr_analysis_opts *opts,
		struct qr_analysis **out, struct qr_diag *d)
{
	struct qr_analysis_opts o = { 8, 1.5 };
	struct qr_analysis *a = xcalloc(1, sizeof *a);
	struct qr_graph *fg = NULL, *qg = NULL;
	struct qr_an_wlayer *fl = NULL;
	struct qr_an_qlayer *ql = NULL;
	size_t n_fl = 0, n_ql = 0, i;
	enum qr_status st;
	double t0 = qr_now();

	*out = NULL;
	if (opts)
		o = *opts;
	if (o.bits < 2 || o.bits > 16) {
		st = qr_errorf(d, QR_EUSAGE, "weight bits %d: expected 2..16",
			       o.bits);
		goto out;
	}
	a->models = xcalloc(n_quant + 1, sizeof *a->models);
	a->quants = xcalloc(n_quant + 1, sizeof *a->quants);
	if ((st = qr_graph_new(fmodel, &fg, d)) != QR_OK)
		goto out;
	qr_an_summary(fg, "float", &a->models[a->n_models]);
	a->models[a->n_models++].format = qr_an_detect_format(fg);
	if ((st = qr_an_wlayers(fg, &fl, &n_fl, d)) != QR_OK) {
		/* Name the file as well as the node. */
		char msg[QR_DIAG_MSG_MAX];

		snprintf(msg, sizeof msg, "%s", d ? d->msg : "");
		st = qr_errorf(d, st, "model '%s': %s", fmodel->path, msg);
		goto out;
	}
	a->weights = xcalloc(n_fl + 1, sizeof *a->weights);
	for (i = 0; i < n_fl; i++)
		qr_an_weight_stats(&fl[i], &o, &a->weights[a->n_weights++]);

	for (i = 0; i < n_quant; i++) {
		struct qr_quant_summary *qs = &a->quants[a->n_quant];

		if ((st = qr_graph_new(quant[i], &qg, d)) != QR_OK)
			goto out;
		qr_an_summary(qg, "quant", &a->models[a->n_models]);
		a->models[a->n_models++].format = qr_an_detect_format(qg);
		qr_an_quant_summary(qg, quant[i]->path, qs, &ql, &n_ql);
		qs->float_bytes = a->models[0].param_bytes;
		qs->quant_bytes = a->models[a->n_models - 1].param_bytes;
		a->n_quant++;
		qr_an_match(a, i, fg, fl, n_fl, qg, ql, n_ql, d);
		qr_an_hazards_graph(a, i, fg, qg);
		qr_an_qlayers_free(ql, n_ql);
		ql = NULL;
		qr_graph_free(qg);
		qg = NULL;
	}
	qr_an_cle(a, fg, fl, n_fl, &o);
	qr_analysis_hazards(a);
	a->seconds = qr_now() - t0;
	st = QR_OK;
out:
	free(fl);
	qr_an_qlayers_free(ql, n_ql);
	qr_graph_free(qg);
	qr_graph_free(fg);
	if (st != QR_OK) {
		qr_analysis_free(a);
		return st;
	}
	*out = a;
	return QR_OK;
}

struct qr_analysis *
qr_analysis_new_data(size_t n_quant)
{
	struct qr_analysis *a = xcalloc(1, sizeof *a);

	/* zeroed summaries, so qr_analysis_free walks n_quant of them */
	a->quants = xcalloc(n_quant + 1, sizeof *a->quants);
	a->n_quant = n_quant;
	return a;
}

void
qr_analysis_take_data(struct qr_analysis *dst, struct qr_analysis *src)
{
	QR_ASSERT(dst->n_quant == src->n_quant && dst->act_runs == NULL &&
		  dst->n_act_pairs == 0 && dst->n_act_tensors == 0);
	dst->data = src->data;
	dst->n_act_tensors = src->n_act_tensors;
	dst->act_tensors = src->act_tensors;
	dst->n_act_pairs = src->n_act_pairs;
	dst->act_pairs = src->act_pairs;
	dst->n_act_outputs = src->n_act_outputs;
	dst->act_outputs = src->act_outputs;
	dst->n_act_unmatched = src->n_act_unmatched;
	dst->act_unmatched = src->act_unmatched;
	dst->act_runs = src->act_runs;
	dst->n_outliers = src->n_outliers;
	dst->outliers = src->outliers;
	memset(&src->data, 0, sizeof src->data);
	src->n_act_tensors = src->n_act_pairs = 0;
	src->n_act_outputs = src->n_act_unmatched = 0;
	src->act_tensors = NULL;
	src->act_pairs = NULL;
	src->act_outputs = NULL;
	src->act_unmatched = NULL;
	src->act_runs = NULL;
	qr_analysis_hazards(dst);
	src->n_outliers = 0;
	src->outliers = NULL;
}

/* Free a and everything it owns; NULL does nothing. */
void
qr_analysis_free(struct qr_analysis *a)
{
	size_t i;

	if (a == NULL)
		return;
	for (i = 0; i < a->n_models; i++)
		qr_an_summary_free(&a->models[i]);
	free(a->models);
	for (i = 0; i < a->n_weights; i++)
		qr_an_weight_stats_free(&a->weights[i]);
	free(a->weights);
	for (i = 0; i < a->n_quant; i++)
		qr_an_quant_summary_free(&a->quants[i]);
	free(a->quants);
	for (i = 0; i < a->n_qweights; i++) {
		struct qr_quant_weight *q = &a->qweights[i];

		free(q->layer);
		free(q->quant_layer);
		free(q->weight);
		free(q->quant_weight);
		free(q->match_reason);
		free(q->folded);
		free(q->granularity);
	}
	free(a->qweights);
	for (i = 0; i < a->n_unmatched; i++)
		free(a->unmatched[i]);
	free(a->unmatched);
	qr_an_cle_free(a);
	qr_an_act_free(a);
	qr_an_hazards_free(a);
	qr_sens_free(a);
	qr_clm_free(a);
	free(a);
}
