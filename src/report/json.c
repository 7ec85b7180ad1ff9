/* report: report.json, the machine-readable contract.
 * doc/report-json.md documents every key; keep them in step. */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


cJSON *
qr_json_num(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static void
add_num(cJSON *o, const char *key, double v)
{
	cJSON_AddItemToObject(o, key, qr_json_num(v));
}

/* cJSON_AddStringToObject with NULL as JSON null. */
static void
add_str(cJSON *o, const char *key, const char *s)
{
	char *k = qr_utf8_dup(key), *v = qr_utf8_dup(s);

	if (v != NULL)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
	free(v);
	free(k);
}

cJSON *
qr_json_str(const char *s)
{
	char *v = qr_utf8_dup(s != NULL ? s : "");
	cJSON *o = cJSON_CreateString(v);

	free(v);
	return o;
}

/* float_array, double_array, u64_array: the n numbers of v as a JSON
 * array, non-finite ones as null; NULL v gives []. */
#define NUM_ARRAY(name, type)						\
	static cJSON *							\
	name(const type *v, size_t n)					\
	{								\
		cJSON *a = cJSON_CreateArray();				\
		size_t i;						\
									\
		for (i = 0; v != NULL && i < n; i++)			\
			cJSON_AddItemToArray(a, qr_json_num((double)v[i])); \
		return a;						\
	}
NUM_ARRAY(float_array, float)
NUM_ARRAY(double_array, double)
NUM_ARRAY(u64_array, uint64_t)

/*
 * v printed as cJSON prints a number (1.7.15's print_number: an integral
 * value as an int, else 15 significant digits unless they do not read
 * back within DBL_EPSILON, then 17; not finite as null), so that a
 * channel array reads the same as float_array's.
 */
static int
num_text(double d, char *buf, size_t size)
{
	double test = 0;
	int vi;

	if (!isfinite(d))
		return snprintf(buf, size, "null");
	vi = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
	if (d == (double)vi)
		return snprintf(buf, size, "%d", vi);
	snprintf(buf, size, "%1.15g", d);
	if (sscanf(buf, "%lg", &test) != 1 ||
	    !(fabs(test - d) <= fmax(fabs(test), fabs(d)) * DBL_EPSILON))
		return snprintf(buf, size, "%1.17g", d);
	return (int)strlen(buf);
}

/*
 * A per-channel array (a decoder's layers have thousands of channels,
 * its report a few million such numbers): the numbers of float_array as
 * one raw JSON text rather than a cJSON item each (64 bytes apiece: 200
 * MB of report.json's tree for a 22-layer decoder). Nothing reads these
 * arrays back from the tree; they are only printed.
 */
static cJSON *
chan_array(const float *v, size_t n)
{
	struct qr_buf b = {0};
	char num[40];
	cJSON *a;
	size_t i;

	if (v == NULL || n < 64)
		return float_array(v, n);
	qr_buf_putc(&b, '[');
	for (i = 0; i < n; i++) {
		if (i > 0)
			qr_buf_putc(&b, ',');
		num_text((double)v[i], num, sizeof num);
		qr_buf_puts(&b, num);
	}
	qr_buf_putc(&b, ']');
	a = cJSON_CreateRaw(b.data);
	qr_buf_free(&b);
	if (a == NULL)
		qr_fatal("out of memory building report.json");
	return a;
}

cJSON *
qr_json_io(const struct qr_io_desc *io, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	for (i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		add_str(o, "name", io[i].name);
		add_str(o, "dtype", io[i].dtype);
		add_str(o, "shape", io[i].shape);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static cJSON *
model_json(const struct qr_model_summary *m)
{
	cJSON *o = cJSON_CreateObject(), *ops, *meta;
	size_t i;

	add_str(o, "role", m->role);
	add_str(o, "path", m->path);
	add_str(o, "format", qr_qformat_name(m->format));
	add_str(o, "producer", m->producer);
	cJSON_AddNumberToObject(o, "ir_version", (double)m->ir_version);
	add_str(o, "opsets", m->opsets);
	cJSON_AddNumberToObject(o, "nodes", (double)m->n_nodes);
	cJSON_AddItemToObject(o, "inputs", qr_json_io(m->inputs, m->n_inputs));
	cJSON_AddItemToObject(o, "outputs",
			      qr_json_io(m->outputs, m->n_outputs));
	ops = cJSON_AddObjectToObject(o, "ops");
	for (i = 0; i < m->n_ops; i++) {
		char *k = qr_utf8_dup(m->ops[i].op ? m->ops[i].op : "");

		cJSON_AddNumberToObject(ops, k, (double)m->ops[i].count);
		free(k);
	}
	cJSON_AddNumberToObject(o, "params", (double)m->n_params);
	cJSON_AddNumberToObject(o, "param_bytes", (double)m->param_bytes);
	cJSON_AddNumberToObject(o, "file_bytes", (double)m->file_bytes);
	meta = cJSON_AddObjectToObject(o, "metadata");
	for (i = 0; i < m->n_meta; i++)
		add_str(meta, m->meta_keys[i], m->meta_values[i]);
	return o;
}

static cJSON *
weight_json(const struct qr_weight_stats *w)
{
	cJSON *o = cJSON_CreateObject(), *out;
	size_t i;

	add_str(o, "layer", w->layer);
	add_str(o, "op", w->op);
	add_str(o, "weight", w->weight);
	add_str(o, "shape", w->shape);
	cJSON_AddNumberToObject(o, "axis", w->axis);
	cJSON_AddNumberToObject(o, "channels", (double)w->channels);
	cJSON_AddNumberToObject(o, "elements", (double)w->n_elem);
	cJSON_AddItemToObject(o, "ch_min", chan_array(w->ch_min, w->channels));
	cJSON_AddItemToObject(o, "ch_max", chan_array(w->ch_max, w->channels));
	cJSON_AddItemToObject(o, "ch_mean", chan_array(w->ch_mean, w->channels));
	cJSON_AddItemToObject(o, "ch_std", chan_array(w->ch_std, w->channels));
	cJSON_AddItemToObject(o, "rel_range",
			      chan_array(w->rel_range, w->channels));
	add_num(o, "max_rel_range", w->max_rel_range);
	add_num(o, "tukey_fence", w->tukey_fence);
	out = cJSON_AddArrayToObject(o, "outlier_channels");
	for (i = 0; i < w->n_outliers; i++)
		cJSON_AddItemToArray(out,
				     cJSON_CreateNumber((double)w->outliers[i]));
	cJSON_AddNumberToObject(o, "zero_range_channels",
				(double)w->n_zero_range);
	cJSON_AddNumberToObject(o, "dead_channels", (double)w->n_dead);
	out = cJSON_AddArrayToObject(o, "dead_channel_list");
	for (i = 0; i < w->n_dead && i < QR_DEAD_LIST_MAX; i++)
		cJSON_AddItemToArray(out,
				     cJSON_CreateNumber((double)w->dead[i]));
	add_num(o, "sqnr_per_tensor_db", w->sqnr_per_tensor_db);
	add_num(o, "sqnr_per_channel_db", w->sqnr_per_channel_db);
	cJSON_AddNumberToObject(o, "depth", w->depth);
	return o;
}

static cJSON *
qweight_json(const struct qr_quant_weight *q)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "quant", (double)q->quant);
	add_str(o, "layer", q->layer);
	add_str(o, "quant_layer", q->quant_layer);
	add_str(o, "weight", q->weight);
	add_str(o, "quant_weight", q->quant_weight);
	add_str(o, "match", qr_match_name(q->match));
	add_str(o, "match_reason", q->match_reason);
	if (q->folded)
		add_str(o, "folded", q->folded);
	else
		cJSON_AddNullToObject(o, "folded");
	add_str(o, "granularity", q->granularity);
	if (q->block_size)
		cJSON_AddNumberToObject(o, "block_size", (double)q->block_size);
	else
		cJSON_AddNullToObject(o, "block_size");
	cJSON_AddNumberToObject(o, "bits", q->bits);
	add_num(o, "sqnr_db", q->sqnr_db);
	cJSON_AddNumberToObject(o, "clipped", (double)q->clipped);
	cJSON_AddNumberToObject(o, "elements", (double)q->n_elem);
	cJSON_AddNumberToObject(o, "float_bytes", (double)q->float_bytes);
	cJSON_AddNumberToObject(o, "quant_bytes", (double)q->quant_bytes);
	add_num(o, "compression", q->compression);
	return o;
}

cJSON *
qr_json_coverage(const struct qr_quant_summary *s)
{
	cJSON *cov = cJSON_CreateArray();
	size_t i;

	for (i = 0; i < s->n_coverage; i++) {
		cJSON *x = cJSON_CreateObject();

		add_str(x, "layer", s->coverage[i].layer);
		add_str(x, "op", s->coverage[i].op);
		cJSON_AddBoolToObject(x, "quantized", s->coverage[i].quantized);
		cJSON_AddItemToArray(cov, x);
	}
	return cov;
}

static cJSON *
quant_summary_json(const struct qr_quant_summary *s, size_t index)
{
	cJSON *o = cJSON_CreateObject(), *layers;
	size_t i;

	cJSON_AddNumberToObject(o, "quant", (double)index);
	add_str(o, "path", s->path);
	add_str(o, "format", qr_qformat_name(s->format));
	layers = cJSON_AddArrayToObject(o, "layers");
	for (i = 0; i < s->n_layers; i++) {
		const struct qr_quant_layer *l = &s->layers[i];
		cJSON *x = cJSON_CreateObject();

		add_str(x, "layer", l->layer);
		add_str(x, "op", l->op);
		add_str(x, "weight", l->weight);
		add_str(x, "weight_dtype", l->weight_dtype);
		cJSON_AddNumberToObject(x, "bits", l->bits);
		add_str(x, "granularity", l->block_size ? "per-block" :
			l->per_channel ? "per-channel" : "per-tensor");
		if (l->per_channel || l->block_size)
			cJSON_AddNumberToObject(x, "axis", l->axis);
		else
			cJSON_AddNullToObject(x, "axis");
		if (l->block_size)
			cJSON_AddNumberToObject(x, "block_size",
						(double)l->block_size);
		else
			cJSON_AddNullToObject(x, "block_size");
		cJSON_AddNumberToObject(x, "scales", (double)l->n_scales);
		add_num(x, "scale_min", l->scale_min);
		add_num(x, "scale_max", l->scale_max);
		add_num(x, "zero_point_min", l->zp_min);
		add_num(x, "zero_point_max", l->zp_max);
		cJSON_AddBoolToObject(x, "activation_quantized",
				      l->act_quantized);
		cJSON_AddItemToArray(layers, x);
	}
	cJSON_AddItemToObject(o, "coverage", qr_json_coverage(s));
	cJSON_AddNumberToObject(o, "quantized_nodes", (double)s->n_quantized);
	cJSON_AddNumberToObject(o, "compute_nodes", (double)s->n_coverage);
	cJSON_AddNumberToObject(o, "float_bytes", (double)s->float_bytes);
	cJSON_AddNumberToObject(o, "quant_bytes", (double)s->quant_bytes);
	add_num(o, "compression",
		s->quant_bytes ? (double)s->float_bytes / (double)s->quant_bytes
			       : NAN);
	return o;
}

static cJSON *
cle_json(const struct qr_cle_set *c)
{
	cJSON *o = cJSON_CreateObject(), *names, *joins, *scales, *detail;
	size_t i;

	names = cJSON_AddArrayToObject(o, "layers");
	detail = cJSON_AddArrayToObject(o, "layer_details");
	for (i = 0; i < c->n_layers && i < 3; i++) {
		const struct qr_cle_layer *l = &c->layers[i];
		cJSON *x = cJSON_CreateObject();

		cJSON_AddItemToArray(names, qr_json_str(l->name));
		add_str(x, "name", l->name);
		add_str(x, "op", l->op);
		cJSON_AddBoolToObject(x, "depthwise", l->depthwise);
		cJSON_AddBoolToObject(x, "bn_folded", l->bn_folded);
		cJSON_AddNumberToObject(x, "channels", (double)l->channels);
		cJSON_AddItemToObject(x, "min_before",
				      chan_array(l->min_before, l->channels));
		cJSON_AddItemToObject(x, "max_before",
				      chan_array(l->max_before, l->channels));
		cJSON_AddItemToObject(x, "min_after",
				      chan_array(l->min_after, l->channels));
		cJSON_AddItemToObject(x, "max_after",
				      chan_array(l->max_after, l->channels));
		cJSON_AddItemToArray(detail, x);
	}
	joins = cJSON_AddArrayToObject(o, "joins");
	scales = cJSON_AddArrayToObject(o, "scales");
	for (i = 0; i + 1 < c->n_layers && i < 2; i++) {
		cJSON_AddItemToArray(joins, qr_json_str(c->joins[i]));
		cJSON_AddItemToArray(scales, chan_array(c->scales[i],
							 c->n_scales[i]));
	}
	add_num(o, "max_rel_range_before", c->max_rel_range_before);
	add_num(o, "max_rel_range_after", c->max_rel_range_after);
	add_num(o, "sqnr_per_tensor_before_db", c->sqnr_per_tensor_before_db);
	add_num(o, "sqnr_per_tensor_after_db", c->sqnr_per_tensor_after_db);
	return o;
}

/* ---- activations ---- */

static cJSON *
flags_array(int f)
{
	static const struct { int bit; const char *name; } names[] = {
		{ QR_ACT_FLAG_COSINE, "cosine" },
		{ QR_ACT_FLAG_SQNR, "sqnr" },
		{ QR_ACT_FLAG_RMSE_SCALE, "rmse_over_scale" },
		{ QR_ACT_FLAG_SATURATION, "saturation" },
		{ QR_ACT_FLAG_NONFINITE, "nonfinite" },
		{ QR_ACT_FLAG_SHAPE, "shape" },
		{ QR_ACT_FLAG_CANCEL, "cancellation" },
		{ QR_ACT_FLAG_SUSPECT, "suspect_pairing" },
	};
	cJSON *a = cJSON_CreateArray();
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (f & names[i].bit)
			cJSON_AddItemToArray(a, cJSON_CreateString(names[i].name));
	return a;
}

static cJSON *
act_json(const struct qr_analysis *a, const struct qr_act_pair *p)
{
	const struct qr_act_tensor *t = &a->act_tensors[p->tensor];
	cJSON *o = cJSON_CreateObject(), *h;

	cJSON_AddNumberToObject(o, "quant", (double)p->quant);
	add_str(o, "tensor", t->name);
	add_str(o, "quant_tensor", p->quant_tensor);
	add_str(o, "match", qr_match_name(p->match));
	add_str(o, "match_reason", p->match_reason);
	/* checked against its neighbours: shapes agree, and its error does
	 * not vanish in the layers that read it (error_sources.c) */
	cJSON_AddBoolToObject(o, "verified", p->samples > 0 &&
			      !(p->flags & (QR_ACT_FLAG_SHAPE |
					    QR_ACT_FLAG_SUSPECT)));
	add_str(o, "layer", t->layer);
	add_str(o, "op", t->op);
	cJSON_AddNumberToObject(o, "depth", t->depth);
	add_str(o, "shape", t->shape);
	add_str(o, "quant_dtype", p->quant_dtype);
	cJSON_AddNumberToObject(o, "samples", (double)p->samples);
	add_num(o, "cosine_mean", p->cosine_mean);
	add_num(o, "cosine_min", p->cosine_min);
	add_num(o, "cosine_max", p->cosine_max);
	add_num(o, "mse", p->mse);
	add_num(o, "sqnr_db", p->sqnr_db);
	add_num(o, "local_sqnr_db", p->local_sqnr_db);
	add_num(o, "max_abs", p->max_abs);
	add_num(o, "norm_l2", p->norm_l2);
	add_num(o, "local_cosine_mean", p->local_cosine_mean);
	add_num(o, "local_cosine_min", p->local_cosine_min);
	add_num(o, "local_mse", p->local_mse);
	cJSON_AddNumberToObject(o, "nan_float", (double)p->nan_float);
	cJSON_AddNumberToObject(o, "inf_float", (double)p->inf_float);
	cJSON_AddNumberToObject(o, "nan_quant", (double)p->nan_quant);
	cJSON_AddNumberToObject(o, "inf_quant", (double)p->inf_quant);
	add_num(o, "scale", p->has_qparams ? p->scale : NAN);
	add_num(o, "zero_point", p->has_qparams ? p->zero_point : NAN);
	add_num(o, "saturation", p->saturation);
	add_num(o, "rmse_over_scale", p->rmse_over_scale);
	add_num(o, "effective_bits", qr_act_effective_bits(p, t));
	add_num(o, "float_min", t->min);
	add_num(o, "float_max", t->max);
	cJSON_AddItemToObject(o, "ch_min", chan_array(t->ch_min, t->channels));
	cJSON_AddItemToObject(o, "ch_max", chan_array(t->ch_max, t->channels));
	cJSON_AddItemToObject(o, "ch_mean", chan_array(t->ch_mean, t->channels));
	h = cJSON_AddObjectToObject(o, "histogram");
	add_num(h, "lo", p->hist_lo);
	add_num(h, "hi", p->hist_hi);
	cJSON_AddItemToObject(h, "float", u64_array(p->hist_float,
						    QR_ACT_HIST_BINS));
	cJSON_AddItemToObject(h, "quant", u64_array(p->hist_quant,
						    QR_ACT_HIST_BINS));
	cJSON_AddNumberToObject(h, "float_under", (double)p->under_float);
	cJSON_AddNumberToObject(h, "float_over", (double)p->over_float);
	cJSON_AddNumberToObject(h, "quant_under", (double)p->under_quant);
	cJSON_AddNumberToObject(h, "quant_over", (double)p->over_quant);
	cJSON_AddItemToObject(o, "flags", flags_array(p->flags));
	add_num(o, "noise_db", p->noise_db);
	add_num(o, "noise_share", p->noise_share);
	add_num(o, "noise_gain_db", p->noise_gain_db);
	cJSON_AddBoolToObject(o, "noise_same_grid", p->same_grid);
	return o;
}

#define FLIPS_JSON 100 /* flips listed per output, most rows first */

/* A classifier output's KL, top-k and flips (struct qr_out_classes). */
static cJSON *
classification_json(const struct qr_out_classes *r)
{
	cJSON *o = cJSON_CreateObject(), *arr, *x;
	size_t i, j;

	cJSON_AddNumberToObject(o, "classes", (double)r->classes);
	add_str(o, "input", r->probabilities ? "probabilities" : "logits");
	cJSON_AddNumberToObject(o, "k", (double)r->k);
	cJSON_AddNumberToObject(o, "rows", (double)r->rows);
	cJSON_AddNumberToObject(o, "flipped", (double)r->flipped);
	add_num(o, "kl_mean", r->kl_mean);
	add_num(o, "kl_max", r->kl_max);
	add_num(o, "top1_agreement", r->top1);
	add_num(o, "top5_overlap", r->top5);
	cJSON_AddItemToObject(o, "kl", double_array(r->kl, r->samples));
	cJSON_AddItemToObject(o, "top1", double_array(r->top1_s, r->samples));
	cJSON_AddItemToObject(o, "top5", double_array(r->top5_s, r->samples));
	cJSON_AddNumberToObject(o, "distinct_flips", (double)r->n_flips);
	arr = cJSON_AddArrayToObject(o, "flips");
	for (i = 0; i < r->n_flips && i < FLIPS_JSON; i++) {
		x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "from", (double)r->flips[i].from);
		cJSON_AddNumberToObject(x, "to", (double)r->flips[i].to);
		cJSON_AddNumberToObject(x, "count", (double)r->flips[i].count);
		cJSON_AddItemToArray(arr, x);
	}
	if (r->matrix == NULL) {
		cJSON_AddNullToObject(o, "flip_matrix");
		return o;
	}
	arr = cJSON_AddArrayToObject(o, "flip_matrix");
	for (i = 0; i < r->classes; i++) {
		x = cJSON_CreateArray();
		for (j = 0; j < r->classes; j++)
			cJSON_AddItemToArray(x, cJSON_CreateNumber(
				(double)r->matrix[i * r->classes + j]));
		cJSON_AddItemToArray(arr, x);
	}
	return o;
}

/* A segmenter output's pixel agreement and IoU (struct qr_out_seg). */
static cJSON *
segmentation_json(const struct qr_out_seg *r)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	size_t i;

	cJSON_AddNumberToObject(o, "classes", (double)r->classes);
	cJSON_AddNumberToObject(o, "pixels", (double)r->pixels);
	add_num(o, "pixel_agreement", r->pixels
		? (double)r->agree / (double)r->pixels : NAN);
	add_num(o, "miou", r->miou);
	arr = cJSON_AddArrayToObject(o, "iou");
	for (i = 0; i < r->classes; i++)
		cJSON_AddItemToArray(arr, qr_json_num(r->uni[i]
			? (double)r->inter[i] / (double)r->uni[i] : NAN));
	cJSON_AddItemToObject(o, "pixel_agreement_per_sample",
			      double_array(r->agree_s, r->samples));
	return o;
}

static cJSON *
output_json(const struct qr_act_output *p)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "quant", (double)p->quant);
	add_str(o, "name", p->name);
	add_str(o, "quant_name", p->quant_name);
	cJSON_AddNumberToObject(o, "samples", (double)p->samples);
	add_num(o, "cosine_mean", p->cosine_mean);
	add_num(o, "cosine_min", p->cosine_min);
	add_num(o, "sqnr_db", p->sqnr_total_db);
	cJSON_AddItemToObject(o, "cosine", double_array(p->cosine, p->samples));
	cJSON_AddItemToObject(o, "sqnr_db_per_sample",
			      double_array(p->sqnr_db, p->samples));
	cJSON_AddBoolToObject(o, "classifier", p->classifier);
	add_num(o, "top1_agreement", p->classifier && p->rows
		? (double)p->agree / (double)p->rows : NAN);
	add_num(o, "accuracy", p->classifier && p->labeled
		? (double)p->quant_correct / (double)p->labeled : NAN);
	add_num(o, "float_accuracy", p->classifier && p->labeled
		? (double)p->float_correct / (double)p->labeled : NAN);
	cJSON_AddNumberToObject(o, "rows", (double)p->rows);
	cJSON_AddNumberToObject(o, "labeled", (double)p->labeled);
	add_str(o, "kind", qr_out_kind_name(p->kind));
	if (p->cls != NULL)
		cJSON_AddItemToObject(o, "classification",
				      classification_json(p->cls));
	else
		cJSON_AddNullToObject(o, "classification");
	if (p->seg != NULL)
		cJSON_AddItemToObject(o, "segmentation",
				      segmentation_json(p->seg));
	else
		cJSON_AddNullToObject(o, "segmentation");
	return o;
}

static cJSON *
dataset_json(const struct qr_analysis *a)
{
	const struct qr_act_data *dt = &a->data;
	cJSON *o = cJSON_CreateObject(), *arr;
	size_t i;

	add_str(o, "source", dt->source ? dt->source : "none");
	cJSON_AddNumberToObject(o, "samples", (double)dt->samples);
	cJSON_AddBoolToObject(o, "random", dt->source != NULL &&
			      strcmp(dt->source, "random") == 0);
	add_str(o, "preprocessing", dt->preprocessing);
	arr = cJSON_AddArrayToObject(o, "sample_names");
	for (i = 0; i < dt->samples; i++)
		cJSON_AddItemToArray(arr, qr_json_str(dt->sample_names[i]));
	arr = cJSON_AddArrayToObject(o, "labels");
	for (i = 0; i < dt->samples; i++)
		cJSON_AddItemToArray(arr, dt->labels[i] >= 0
				     ? cJSON_CreateNumber(dt->labels[i])
				     : cJSON_CreateNull());
	arr = cJSON_AddArrayToObject(o, "classes");
	for (i = 0; i < dt->n_classes; i++)
		cJSON_AddItemToArray(arr, qr_json_str(dt->classes[i]));
	arr = cJSON_AddArrayToObject(o, "warnings");
	for (i = 0; i < dt->n_warnings; i++)
		cJSON_AddItemToArray(arr, qr_json_str(dt->warnings[i]));
	if (dt->n_skipped > 0) {
		cJSON_AddNumberToObject(o, "skipped", (double)dt->n_skipped);
		arr = cJSON_AddArrayToObject(o, "skipped_samples");
		for (i = 0; i < dt->n_skipped; i++) {
			cJSON *x = cJSON_CreateObject();

			add_str(x, "sample", dt->skipped[i].sample);
			add_str(x, "why", dt->skipped[i].why);
			cJSON_AddItemToArray(arr, x);
		}
	}
	add_str(o, "error", dt->why);
	add_num(o, "cos_threshold", dt->source ? dt->cos_threshold : NAN);
	add_num(o, "sqnr_threshold_db", dt->source ? dt->sqnr_threshold : NAN);
	add_num(o, "seconds", dt->source ? dt->seconds : NAN);
	return o;
}

cJSON *
qr_json_act_unmatched(const struct qr_analysis *a, size_t k)
{
	cJSON *arr = cJSON_CreateArray();
	size_t i;

	for (i = 0; i < a->n_act_unmatched; i++) {
		const struct qr_act_unmatched *u = &a->act_unmatched[i];
		cJSON *x;

		if (u->quant != k)
			continue;
		x = cJSON_CreateObject();
		add_str(x, "tensor", u->tensor);
		add_str(x, "layer", u->layer);
		add_str(x, "reason", u->reason);
		cJSON_AddItemToArray(arr, x);
	}
	return arr;
}

/* ---- error sources, outliers, worst samples ---- */

/* A pair as a creator or amplifier: tensor, layer, op and the number. */
static cJSON *
source_json(const struct qr_analysis *a, long pi, const char *key, double v)
{
	const struct qr_act_pair *p = &a->act_pairs[pi];
	const struct qr_act_tensor *t = &a->act_tensors[p->tensor];
	cJSON *o = cJSON_CreateObject();

	add_str(o, "tensor", t->name);
	add_str(o, "layer", t->layer);
	add_str(o, "op", t->op);
	add_num(o, key, v);
	add_num(o, "noise_db", p->noise_db);
	return o;
}

static cJSON *
error_sources_json(const struct qr_analysis *a,
		   const struct qr_error_sources *es)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	size_t i;

	add_num(o, "created_db", es->created_db);
	add_num(o, "top_share", es->top_share);
	cJSON_AddNumberToObject(o, "dominant_share", QR_ES_DOMINANT);
	cJSON_AddBoolToObject(o, "accumulates", es->accumulates);
	cJSON_AddNumberToObject(o, "suspect_pairs", (double)es->n_suspect);
	arr = cJSON_AddArrayToObject(o, "creators");
	for (i = 0; i < es->n_creators; i++)
		cJSON_AddItemToArray(arr, source_json(
			a, es->creators[i], "noise_share",
			a->act_pairs[es->creators[i]].noise_share));
	arr = cJSON_AddArrayToObject(o, "amplifiers");
	for (i = 0; i < es->n_amplifiers; i++)
		cJSON_AddItemToArray(arr, source_json(
			a, es->amplifiers[i], "noise_gain_db",
			a->act_pairs[es->amplifiers[i]].noise_gain_db));
	arr = cJSON_AddArrayToObject(o, "groups");
	for (i = 0; i < QR_OPG_N; i++) {
		cJSON *g;

		if (es->group_pairs[i] == 0)
			continue;
		g = cJSON_CreateObject();
		add_str(g, "group", qr_op_group_name((int)i));
		add_num(g, "share", es->group_share[i]);
		cJSON_AddNumberToObject(g, "layers",
					(double)es->group_pairs[i]);
		cJSON_AddItemToArray(arr, g);
	}
	return o;
}

/* A decoder's next-token metrics (struct qr_llm_result). */
static cJSON *
llm_json(const struct qr_analysis *a, const struct qr_llm_result *r)
{
	cJSON *o = cJSON_CreateObject(), *arr, *x;
	size_t i;

	add_str(o, "output", r->output);
	cJSON_AddNumberToObject(o, "vocab", (double)r->vocab);
	cJSON_AddNumberToObject(o, "samples", (double)r->samples);
	cJSON_AddNumberToObject(o, "positions", (double)r->positions);
	add_num(o, "kl_mean", r->kl_mean);
	add_num(o, "kl_max", r->kl_max);
	add_num(o, "top1_agree", r->top1_agree);
	add_num(o, "top5_overlap", r->top5_overlap);
	cJSON_AddItemToObject(o, "kl", double_array(r->kl, r->samples));
	cJSON_AddItemToObject(o, "top1", double_array(r->top1, r->samples));
	cJSON_AddItemToObject(o, "top5", double_array(r->top5, r->samples));
	if (r->perplexity) {
		x = cJSON_AddObjectToObject(o, "perplexity");
		cJSON_AddNumberToObject(x, "tokens", (double)r->ppl_tokens);
		add_num(x, "float", r->ppl_float_all);
		add_num(x, "quant", r->ppl_quant_all);
		add_num(x, "change", r->ppl_change);
		cJSON_AddItemToObject(x, "float_per_sample",
				      double_array(r->ppl_float, r->samples));
		cJSON_AddItemToObject(x, "quant_per_sample",
				      double_array(r->ppl_quant, r->samples));
	} else {
		cJSON_AddNullToObject(o, "perplexity");
	}
	arr = cJSON_AddArrayToObject(o, "blocks");
	for (i = 0; i < r->n_blocks; i++) {
		const struct qr_llm_block *b = &r->blocks[i];
		const struct qr_act_pair *p = &a->act_pairs[b->pair];

		x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "block", b->block);
		add_str(x, "tensor", a->act_tensors[p->tensor].name);
		add_str(x, "layer", a->act_tensors[p->tensor].layer);
		add_num(x, "sqnr_db", b->sqnr_db);
		add_num(x, "cosine", b->cosine);
		add_num(x, "local_sqnr_db", b->local_sqnr_db);
		cJSON_AddItemToArray(arr, x);
	}
	return o;
}

static cJSON *
worst_samples_json(const struct qr_analysis *a, size_t k)
{
	const struct qr_act_run *r = &a->act_runs[k];
	cJSON *arr = cJSON_CreateArray();
	size_t i;

	for (i = 0; i < r->n_worst; i++) {
		const struct qr_worst_sample *w = &r->worst[i];
		int label = w->sample < a->data.samples
			? a->data.labels[w->sample] : -1;
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "sample", (double)w->sample);
		add_str(o, "name", w->sample < a->data.samples
			? a->data.sample_names[w->sample] : NULL);
		cJSON_AddItemToObject(o, "label", label >= 0
				      ? cJSON_CreateNumber(label)
				      : cJSON_CreateNull());
		add_num(o, "cosine", w->cosine);
		if (w->thumb != NULL) {
			char f[64];

			snprintf(f, sizeof f, "charts/" QR_THUMB_FMT, k + 1,
				 i + 1);
			add_str(o, "thumbnail", f);
		} else {
			cJSON_AddNullToObject(o, "thumbnail");
		}
		cJSON_AddItemToObject(o, "trace",
				      float_array(w->trace, w->n_trace));
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

static cJSON *
outlier_json(const struct qr_analysis *a, const struct qr_act_outlier *x)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	size_t k;

	add_str(o, "layer", x->layer);
	add_str(o, "op", x->op);
	add_str(o, "tensor", a->act_tensors[x->tensor].name);
	cJSON_AddNumberToObject(o, "depth", x->depth);
	cJSON_AddNumberToObject(o, "channels", (double)x->channels);
	add_num(o, "absmax_max", x->absmax_max);
	add_num(o, "absmax_median", x->absmax_median);
	add_num(o, "max_over_median", x->max_over_median);
	cJSON_AddNumberToObject(o, "top_channel", (double)x->top_channel);
	add_num(o, "kurtosis", x->kurtosis);
	add_num(o, "sqnr_db", x->sqnr_none_db);
	add_num(o, "sqnr_alpha05_db", x->sqnr_db[(QR_OL_ALPHAS - 1) / 2]);
	add_num(o, "best_alpha", x->best_alpha);
	add_num(o, "best_sqnr_db", x->best_sqnr_db);
	add_num(o, "gain_db", x->best_sqnr_db - x->sqnr_none_db);
	arr = cJSON_AddArrayToObject(o, "alphas");
	for (k = 0; k < QR_OL_ALPHAS; k++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(
			(double)k / (QR_OL_ALPHAS - 1)));
	cJSON_AddItemToObject(o, "sqnr_by_alpha_db",
			      double_array(x->sqnr_db, QR_OL_ALPHAS));
	cJSON_AddItemToObject(o, "act_absmax",
			      chan_array(x->act_absmax, x->channels));
	cJSON_AddItemToObject(o, "w_range",
			      chan_array(x->w_range, x->channels));
	return o;
}

static cJSON *
run_json(const struct qr_analysis *a, size_t k)
{
	const struct qr_act_run *r = &a->act_runs[k];
	cJSON *o = cJSON_CreateObject(), *x;

	cJSON_AddNumberToObject(o, "quant", (double)k);
	add_str(o, "path", r->path);
	cJSON_AddBoolToObject(o, "compared", r->ran);
	add_str(o, "error", r->why);
	cJSON_AddNumberToObject(o, "pairs", (double)r->n_pairs);
	cJSON_AddNumberToObject(o, "name_matches", (double)r->n_name);
	cJSON_AddNumberToObject(o, "structure_matches",
				(double)r->n_structure);
	cJSON_AddNumberToObject(o, "flagged", (double)r->n_flagged);
	if (r->born >= 0) {
		const struct qr_act_pair *p = &a->act_pairs[r->born];

		x = cJSON_AddObjectToObject(o, "error_born_at");
		add_str(x, "tensor", a->act_tensors[p->tensor].name);
		add_str(x, "layer", a->act_tensors[p->tensor].layer);
		add_num(x, "noise_share", r->born_share);
		add_num(x, "local_sqnr_db", p->local_sqnr_db);
		add_num(x, "sqnr_drop_db", r->born_drop_db);
	} else {
		cJSON_AddNullToObject(o, "error_born_at");
	}
	if (r->worst_local >= 0) {
		const struct qr_act_pair *p = &a->act_pairs[r->worst_local];

		x = cJSON_AddObjectToObject(o, "worst_local");
		add_str(x, "tensor", a->act_tensors[p->tensor].name);
		add_str(x, "layer", a->act_tensors[p->tensor].layer);
		add_num(x, "local_sqnr_db", p->local_sqnr_db);
	} else {
		cJSON_AddNullToObject(o, "worst_local");
	}
	cJSON_AddItemToObject(o, "unmatched", qr_json_act_unmatched(a, k));
	if (r->llm != NULL)
		cJSON_AddItemToObject(o, "llm", llm_json(a, r->llm));
	add_num(o, "seconds", r->seconds);
	if (r->es.computed)
		cJSON_AddItemToObject(o, "error_sources",
				      error_sources_json(a, &r->es));
	cJSON_AddItemToObject(o, "worst_samples", worst_samples_json(a, k));
	return o;
}

/* One hazard: kind, candidate, what it concerns, the numbers, the
 * sentences. */
static cJSON *
hazard_json(const struct qr_hazard *h)
{
	cJSON *o = cJSON_CreateObject(), *arr, *x;
	size_t i;

	add_str(o, "kind", qr_hazard_kind_name(h->kind));
	cJSON_AddNumberToObject(o, "quant", (double)h->quant);
	arr = cJSON_AddArrayToObject(o, "items");
	for (i = 0; i < h->n_refs; i++) {
		x = cJSON_CreateObject();
		add_str(x, "name", h->refs[i].name);
		add_str(x, "layer", h->refs[i].layer);
		cJSON_AddItemToArray(arr, x);
	}
	x = cJSON_AddObjectToObject(o, "numbers");
	for (i = 0; i < h->n_nums; i++)
		add_num(x, h->nums[i].key, h->nums[i].v);
	add_str(o, "message", h->what);
	add_str(o, "fix", h->fix);
	return o;
}

cJSON *
qr_json_cle_blockers(const struct qr_analysis *a)
{
	cJSON *arr = cJSON_CreateArray();
	size_t i;

	for (i = 0; i < a->n_cle_blockers; i++) {
		const struct qr_cle_blocker *b = &a->cle_blockers[i];
		cJSON *o = cJSON_CreateObject();

		add_str(o, "from", b->from);
		add_str(o, "to", b->to);
		add_str(o, "reason", b->reason);
		add_str(o, "fix", b->fix);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

cJSON *
qr_report_json_new(const struct qr_analysis *a,
		   const struct qr_report_opts *opts, const struct qr_diag *d)
{
	cJSON *root = cJSON_CreateObject(), *arr, *o;
	size_t i;

	cJSON_AddNumberToObject(root, "schema_version", QR_SCHEMA_VERSION);
	o = cJSON_AddObjectToObject(root, "generator");
	cJSON_AddStringToObject(o, "name", "qreport");
	add_str(o, "version", opts != NULL ? opts->version : NULL);
	add_str(o, "ort_cpu", opts != NULL ? opts->ort_cpu : NULL);
	add_str(root, "command_line", opts != NULL ? opts->command_line : NULL);
	add_num(root, "analysis_seconds", a->seconds);

	arr = cJSON_AddArrayToObject(root, "models");
	for (i = 0; i < a->n_models; i++)
		cJSON_AddItemToArray(arr, model_json(&a->models[i]));

	cJSON_AddItemToObject(root, "dataset", dataset_json(a));

	arr = cJSON_AddArrayToObject(root, "weights");
	for (i = 0; i < a->n_weights; i++)
		cJSON_AddItemToArray(arr, weight_json(&a->weights[i]));
	arr = cJSON_AddArrayToObject(root, "cle");
	for (i = 0; i < a->n_cle; i++)
		cJSON_AddItemToArray(arr, cle_json(&a->cle[i]));
	cJSON_AddItemToObject(root, "cle_blockers", qr_json_cle_blockers(a));
	cJSON_AddItemToObject(root, "cle_measured", qr_json_cle_measured(a));
	arr = cJSON_AddArrayToObject(root, "quant_weights");
	for (i = 0; i < a->n_qweights; i++)
		cJSON_AddItemToArray(arr, qweight_json(&a->qweights[i]));
	arr = cJSON_AddArrayToObject(root, "quant_summaries");
	for (i = 0; i < a->n_quant; i++)
		cJSON_AddItemToArray(arr, quant_summary_json(&a->quants[i], i));
	arr = cJSON_AddArrayToObject(root, "unmatched");
	for (i = 0; i < a->n_unmatched; i++)
		cJSON_AddItemToArray(arr, qr_json_str(a->unmatched[i]));

	arr = cJSON_AddArrayToObject(root, "activations");
	for (i = 0; i < a->n_act_pairs; i++)
		cJSON_AddItemToArray(arr, act_json(a, &a->act_pairs[i]));
	arr = cJSON_AddArrayToObject(root, "outputs");
	for (i = 0; i < a->n_act_outputs; i++)
		cJSON_AddItemToArray(arr, output_json(&a->act_outputs[i]));
	arr = cJSON_AddArrayToObject(root, "activation_runs");
	for (i = 0; a->act_runs != NULL && i < a->n_quant; i++)
		cJSON_AddItemToArray(arr, run_json(a, i));
	arr = cJSON_AddArrayToObject(root, "outliers");
	for (i = 0; i < a->n_outliers; i++)
		cJSON_AddItemToArray(arr, outlier_json(a, &a->outliers[i]));

	cJSON_AddItemToObject(root, "sensitivity", qr_json_sens(a));

	arr = cJSON_AddArrayToObject(root, "hazards");
	for (i = 0; i < a->n_hazards; i++)
		cJSON_AddItemToArray(arr, hazard_json(&a->hazards[i]));

	arr = cJSON_AddArrayToObject(root, "warnings");
	for (i = 0; d != NULL && i < d->n_warnings; i++)
		cJSON_AddItemToArray(arr, qr_json_str(d->warnings[i].msg));
	return root;
}
