/*
 * report_config: the report options' --config handlers, one per option
 * row of report_options.c's table: a JSON value of the config file into
 * struct qr_cli_args, paths taken relative to the config's folder.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "cli/report-opts-int.h"
#include "kernels/kernels.h"
#include "util/util.h"

/* A config number, array of numbers, or string as "a,b,c". */
static char *
config_floats(const cJSON *it)
{
	struct qr_buf b = {0};
	const cJSON *x;

	if (cJSON_IsString(it))
		return xstrdup(it->valuestring);
	if (cJSON_IsNumber(it)) {
		qr_buf_printf(&b, "%.9g", it->valuedouble);
		return qr_buf_take(&b);
	}
	cJSON_ArrayForEach(x, it)
		qr_buf_printf(&b, "%s%.9g", b.len ? "," : "",
			      cJSON_IsNumber(x) ? x->valuedouble : NAN);
	return qr_buf_take(&b);
}

/* A --data value from the config: the path made relative to the config's
 * folder, keeping NAME= in front. */
static char *
config_data(const struct qr_cli_conf *c, const char *v)
{
	const char *eq = strchr(v, '=');
	char *path, *r;

	if (eq == NULL || memchr(v, '/', (size_t)(eq - v)) != NULL)
		return qr_cli_conf_path(c, v);
	path = qr_cli_conf_path(c, eq + 1);
	r = xasprintf("%.*s=%s", (int)(eq - v), v, path);
	free(path);
	return r;
}

enum qr_status
conf_path(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	  const struct qr_cli_conf *c, struct qr_diag *d)
{
	char **p = (char **)((char *)opts + e->off);

	if (*p == NULL)
		*p = qr_cli_conf_path(c, it->valuestring);
	return QR_OK;
}

enum qr_status
conf_flag(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	  const struct qr_cli_conf *c, struct qr_diag *d)
{
	int *p = (int *)((char *)opts + e->off);

	if (!*p)
		*p = cJSON_IsTrue(it);
	return QR_OK;
}

enum qr_status
conf_quant(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	   const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;
	const cJSON *q;

	if (cJSON_IsString(it)) {
		if (o->n_quant == MAX_QUANT)
			return qr_errorf(d, QR_EUSAGE, "config '%s': more "
					 "than %d quant models", c->path,
					 MAX_QUANT);
		o->quant_paths[o->n_quant++] =
			qr_cli_conf_path(c, it->valuestring);
		return QR_OK;
	}
	cJSON_ArrayForEach(q, it) {
		if (!cJSON_IsString(q))
			return qr_errorf(d, QR_EUSAGE, "config '%s': \"quant\" "
					 "must hold strings", c->path);
		if (o->n_quant == MAX_QUANT)
			return qr_errorf(d, QR_EUSAGE, "config '%s': more "
					 "than %d quant models", c->path,
					 MAX_QUANT);
		o->quant_paths[o->n_quant++] =
			qr_cli_conf_path(c, q->valuestring);
	}
	return QR_OK;
}

/* A config number that must be a whole number in [lo, hi]: 20.5 samples
 * is refused, not truncated. */
static enum qr_status
conf_whole(const cJSON *it, const char *key, double lo, double hi,
	   double *out, const struct qr_cli_conf *c, struct qr_diag *d)
{
	double v = it->valuedouble;

	if (!(v >= lo && v <= hi) || v != floor(v))
		return qr_errorf(d, QR_EUSAGE, "config '%s': %s must be a "
				 "whole number %.0f..%.0f", c->path, key, lo,
				 hi);
	*out = v;
	return QR_OK;
}

enum qr_status
conf_bits(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	  const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	double v = 0;
	enum qr_status st;

	if (o->bits == 0) {
		if ((st = conf_whole(it, "bits", 2, 16, &v, c, d)) != QR_OK)
			return st;
		o->bits = (int)v;
	}
	return QR_OK;
}

enum qr_status
conf_ort_cpu(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	     const struct qr_cli_conf *c, struct qr_diag *d)
{
	if (!qr_kernels_set_ort_cpu(it->valuestring))
		return qr_errorf(d, QR_EUSAGE, "config '%s': \"ort_cpu\" '%s': "
				 "expected native, avx512vnni, avx512, "
				 "avx2vnni or avx2", c->path, it->valuestring);
	return QR_OK;
}

/* "data" or "input": a string or an array of strings into v (unless an
 * earlier key filled it); data paths are relative to the config's
 * folder. */
static enum qr_status
conf_strings(const cJSON *it, char ***v, size_t *n, int is_data,
	     const struct qr_cli_conf *c, struct qr_diag *d)
{
	const char *k = it->string;
	const cJSON *x, *arr = cJSON_IsArray(it) ? it : NULL;
	enum qr_status st = QR_OK;

	if (*n > 0)
		return QR_OK;
	cJSON_ArrayForEach(x, arr) {
		if (!cJSON_IsString(x))
			return qr_errorf(d, QR_EUSAGE, "config '%s': \"%s\" "
					 "must hold strings", c->path, k);
	}
	if (cJSON_IsString(it)) {
		char *val = is_data ? config_data(c, it->valuestring)
				    : xstrdup(it->valuestring);

		st = push_str(v, n, k, val, d);
		free(val);
	}
	cJSON_ArrayForEach(x, arr) {
		char *val = is_data ? config_data(c, x->valuestring)
				    : xstrdup(x->valuestring);

		if (st == QR_OK)
			st = push_str(v, n, k, val, d);
		free(val);
	}
	return st;
}

enum qr_status
conf_data(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	  const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return conf_strings(it, &o->data, &o->n_data, 1, c, d);
}

enum qr_status
conf_input(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	   const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return conf_strings(it, &o->dims, &o->n_dims, 0, c, d);
}

enum qr_status
conf_samples(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	     const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	double v = 0;
	enum qr_status st;

	if (o->samples == 0) {
		if ((st = conf_whole(it, "samples", 1, 1e9, &v, c, d)) !=
		    QR_OK)
			return st;
		o->samples = (long)v;
	}
	return QR_OK;
}

enum qr_status
conf_seed(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	  const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	double v = 0;
	enum qr_status st;

	if (!o->have_seed) {
		/* 2^53: every whole number up to it is exact in JSON's double */
		if ((st = conf_whole(it, "seed", 0, 9007199254740992.0, &v, c,
				     d)) != QR_OK)
			return st;
		o->seed = (uint64_t)v;
		o->have_seed = 1;
	}
	return QR_OK;
}

enum qr_status
conf_scale(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	   const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	if (o->scale == 0) {
		if (!(it->valuedouble > 0))
			return qr_errorf(d, QR_EUSAGE, "config '%s': scale "
					 "must be > 0", c->path);
		o->scale = (float)it->valuedouble;
	}
	return QR_OK;
}

enum qr_status
conf_cos(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	 const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	if (isnan(o->cos_threshold))
		o->cos_threshold = it->valuedouble;
	return QR_OK;
}

enum qr_status
conf_sqnr(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	  const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	if (isnan(o->sqnr_threshold))
		o->sqnr_threshold = it->valuedouble;
	return QR_OK;
}

enum qr_status
conf_sens(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	  const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	if (o->sensitivity >= 0)
		return QR_OK;
	return parse_sens("config sensitivity", it->valuestring,
			  &o->sensitivity, d);
}

enum qr_status
conf_sens_samples(const struct qr_cli_opt *e, void *opts, const cJSON *it,
		  const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;
	double v = 0;
	enum qr_status st;

	if (o->sens_samples == 0) {
		if ((st = conf_whole(it, "sensitivity_samples", 1, 1e6, &v, c,
				     d)) != QR_OK)
			return st;
		o->sens_samples = (long)v;
	}
	return QR_OK;
}

enum qr_status
conf_target(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	    const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;
	struct qr_sens_target t;

	if (o->target != NULL)
		return QR_OK;
	o->target = xstrdup(it->valuestring);
	return qr_sens_target_parse(it->valuestring, &t, d);
}

/* "mean" or "std": a number, an array of them or a string "a,b,c". */
static enum qr_status
conf_floats(const cJSON *it, float v[3], int *n, struct qr_diag *d)
{
	enum qr_status st;
	char *val;

	if (*n > 0)
		return QR_OK;
	val = config_floats(it);
	st = parse_floats(it->string, val, v, n, d);
	free(val);
	return st;
}

enum qr_status
conf_mean(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	  const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return conf_floats(it, o->mean, &o->n_mean, d);
}

enum qr_status
conf_std(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	 const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return conf_floats(it, o->std, &o->n_std, d);
}

enum qr_status
conf_input_size(const struct qr_cli_opt *e, void *opts, const cJSON *it,
		const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;
	enum qr_status st;
	char *val;

	if (o->input_h > 0)
		return QR_OK;
	if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2)
		val = xasprintf("%gx%g",
				cJSON_GetArrayItem(it, 0)->valuedouble,
				cJSON_GetArrayItem(it, 1)->valuedouble);
	else
		val = cJSON_IsString(it) ? xstrdup(it->valuestring)
					 : xstrdup("?");
	st = parse_hw("input_size", val, &o->input_h, &o->input_w, d);
	free(val);
	return st;
}

enum qr_status
conf_layout(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	    const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	if (o->layout != QR_LAYOUT_AUTO)
		return QR_OK;
	return parse_layout(it->valuestring, &o->layout, d);
}

enum qr_status
conf_order(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	   const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	if (o->order >= 0)
		return QR_OK;
	return parse_order(it->valuestring, &o->order, d);
}

enum qr_status
conf_fail_if(const struct qr_cli_opt *e, void *opts, const cJSON *it,
	     const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;
	enum qr_status st = QR_OK;
	const cJSON *x;

	if (cJSON_IsString(it)) {
		if ((st = qr_gate_add(&o->gate, it->valuestring, d)) != QR_OK)
			st = qr_errorf(d, QR_EUSAGE, "config '%s': %s",
				       c->path, d->msg);
	} else {
		cJSON_ArrayForEach(x, it) {
			if (!cJSON_IsString(x)) {
				st = qr_errorf(d, QR_EUSAGE, "config '%s': "
					       "\"fail_if\" must hold strings",
					       c->path);
				break;
			}
			if ((st = qr_gate_add(&o->gate, x->valuestring, d)) !=
			    QR_OK) {
				st = qr_errorf(d, QR_EUSAGE, "config '%s': %s",
					       c->path, d->msg);
				break;
			}
		}
	}
	return st;
}
