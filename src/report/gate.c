/*
 * report: --fail-if, the CI gate. Each check is SUBJECT.METRIC OP NUMBER
 * (grammar in report.h) and runs over the report.json tree, so a check
 * means exactly what doc/report-json.md says the key means. A check fails
 * when any item of its subject matches; the report lists the failures
 * (report.json "gate", index.html, summary.md) and cli/ turns them into
 * exit code 3.
 */
#include "report/report.h"
#include "report/report-int.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LISTED_FAILURES 100 /* per check, in report.json */

/* A metric name accepted after SUBJECT. and the key it reads. */
struct metric {
	const char *name;  /* as written in the expression */
	const char *key;   /* report.json key */
	const char *what;  /* for messages and help */
};

static const struct metric output_metrics[] = {
	{ "cosine", "cosine_mean", "mean cosine over samples" },
	{ "cosine_mean", "cosine_mean", "mean cosine over samples" },
	{ "cosine_min", "cosine_min", "lowest per-sample cosine" },
	{ "sqnr_db", "sqnr_db", "SQNR, dB" },
	{ "top1", "top1_agreement", "top-1 agreement, 0..1" },
	{ "top1_agreement", "top1_agreement", "top-1 agreement, 0..1" },
	{ "accuracy", "accuracy", "candidate top-1 accuracy, 0..1" },
	{ NULL, NULL, NULL },
};
static const struct metric layer_metrics[] = {
	{ "cosine", "cosine_mean", "mean cosine over samples" },
	{ "cosine_mean", "cosine_mean", "mean cosine over samples" },
	{ "cosine_min", "cosine_min", "lowest per-sample cosine" },
	{ "sqnr_db", "sqnr_db", "cumulative SQNR, dB" },
	{ "local_sqnr_db", "local_sqnr_db", "local SQNR, dB" },
	{ "local_cosine", "local_cosine_mean", "local mean cosine" },
	{ "local_cosine_mean", "local_cosine_mean", "local mean cosine" },
	{ "mse", "mse", "mean squared error" },
	{ "max_abs", "max_abs", "largest |float - quantized|" },
	{ "norm_l2", "norm_l2", "||x-y|| / ||x||" },
	{ "rmse_over_scale", "rmse_over_scale", "local RMSE in steps" },
	{ "saturation", "saturation", "fraction outside the range" },
	{ NULL, NULL, NULL },
};
static const struct metric weight_metrics[] = {
	{ "max_rel_range", "max_rel_range", "max relative range" },
	{ "sqnr_per_tensor_db", "sqnr_per_tensor_db",
	  "predicted per-tensor SQNR, dB" },
	{ "sqnr_per_channel_db", "sqnr_per_channel_db",
	  "predicted per-channel SQNR, dB" },
	{ "zero_range_channels", "zero_range_channels",
	  "channels whose range is 0" },
	{ NULL, NULL, NULL },
};
static const struct metric qweight_metrics[] = {
	{ "sqnr_db", "sqnr_db", "SQNR of the dequantized weight, dB" },
	{ "clipped", "clipped", "values at qmin or qmax" },
	{ "compression", "compression", "float bytes / quantized bytes" },
	{ NULL, NULL, NULL },
};

/* The subjects: which report.json array, and how an item is named. */
static const struct subject {
	const char *name;          /* SUBJECT */
	const char *array;         /* report.json key */
	const char *item_key;      /* the item's name */
	const char *noun;          /* for messages: "layers" */
	const struct metric *metrics;
} subjects[] = {
	{ "output", "outputs", "name", "outputs", output_metrics },
	{ "layer", "activations", "tensor", "layers", layer_metrics },
	{ "weight", "weights", "layer", "weight layers", weight_metrics },
	{ "quant_weight", "quant_weights", "layer", "quantized weights",
	  qweight_metrics },
};
#define N_SUBJECTS (sizeof subjects / sizeof subjects[0])

static const char *const op_names[] = { "<", "<=", ">", ">=" };

/* "a, b, c" of the metric names of s (for messages). */
static char *
metric_list(const struct subject *s)
{
	struct qr_buf b = {0};
	const struct metric *m;

	for (m = s->metrics; m->name != NULL; m++)
		qr_buf_printf(&b, "%s%s", b.len ? ", " : "", m->name);
	return qr_buf_take(&b);
}

enum qr_status
qr_gate_add(struct qr_gate *g, const char *expr, struct qr_diag *d)
{
	const struct subject *s = NULL;
	const struct metric *m = NULL;
	const char *p = expr, *dot, *name_end, *num;
	char *end, *list;
	size_t i, len;
	int op;
	double v;

	while (isspace((unsigned char)*p))
		p++;
	for (i = 0; i < N_SUBJECTS; i++) {
		len = strlen(subjects[i].name);
		if (strncmp(p, subjects[i].name, len) == 0 && p[len] == '.') {
			s = &subjects[i];
			break;
		}
	}
	if (s == NULL)
		return qr_errorf(d, QR_EUSAGE,
				 "--fail-if '%s': expected SUBJECT.METRIC OP NUMBER "
				 "with SUBJECT output, layer, weight or quant_weight, "
				 "e.g. 'layer.sqnr_db<20'", expr);
	dot = p + strlen(s->name);
	name_end = dot + 1;
	while (isalnum((unsigned char)*name_end) || *name_end == '_')
		name_end++;
	for (m = s->metrics; m->name != NULL; m++)
		if (strlen(m->name) == (size_t)(name_end - dot - 1) &&
		    strncmp(m->name, dot + 1, strlen(m->name)) == 0)
			break;
	if (m->name == NULL) {
		enum qr_status st;

		list = metric_list(s);
		st = qr_errorf(d, QR_EUSAGE,
			       "--fail-if '%s': unknown metric '%.*s' for %s; "
			       "use one of %s", expr,
			       (int)(name_end - dot - 1), dot + 1, s->name,
			       list);
		free(list);
		return st;
	}
	p = name_end;
	while (isspace((unsigned char)*p))
		p++;
	if (p[0] == '<' || p[0] == '>') {
		op = (p[0] == '<' ? 0 : 2) + (p[1] == '=');
		p += 1 + (p[1] == '=');
	} else {
		return qr_errorf(d, QR_EUSAGE,
				 "--fail-if '%s': expected <, <=, > or >= after "
				 "%s.%s", expr, s->name, m->name);
	}
	while (isspace((unsigned char)*p))
		p++;
	num = p;
	errno = 0;
	v = strtod(num, &end);
	while (end != num && isspace((unsigned char)*end))
		end++;
	if (end == num || *end != '\0' || errno != 0 || !isfinite(v))
		return qr_errorf(d, QR_EUSAGE,
				 "--fail-if '%s': expected a finite number after "
				 "'%s'", expr, op_names[op]);
	g->checks = xreallocarray(g->checks, g->n + 1, sizeof *g->checks);
	memset(&g->checks[g->n], 0, sizeof g->checks[g->n]);
	g->checks[g->n].expr = xasprintf("%s.%s %s %.9g", s->name, m->name,
					 op_names[op], v);
	g->checks[g->n].subject = (int)(s - subjects);
	g->checks[g->n].metric = m->key;
	g->checks[g->n].op = op;
	g->checks[g->n].value = v;
	g->n++;
	return QR_OK;
}

void
qr_gate_clear(struct qr_gate *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->n; i++) {
		free(g->checks[i].expr);
		free(g->checks[i].worst);
	}
	free(g->checks);
	memset(g, 0, sizeof *g);
}

static int
matches(int op, double x, double v)
{
	switch (op) {
	case 0: return x < v;
	case 1: return x <= v;
	case 2: return x > v;
	default: return x >= v;
	}
}

cJSON *
qr_report_gate_eval(struct qr_gate *g, const cJSON *json)
{
	cJSON *out = cJSON_CreateObject(), *checks;
	size_t i;

	g->n_failed = 0;
	checks = cJSON_AddArrayToObject(out, "checks");
	for (i = 0; i < g->n; i++) {
		struct qr_gate_check *c = &g->checks[i];
		const struct subject *s = &subjects[c->subject];
		const cJSON *item, *arr = cJSON_GetObjectItemCaseSensitive(
			json, s->array);
		const cJSON *worst = NULL;
		double worst_v = NAN;
		cJSON *o = cJSON_CreateObject(), *fails;
		char vbuf[64];
		size_t skipped = 0;

		cJSON_AddItemToArray(checks, o);
		cJSON_AddStringToObject(o, "expr", c->expr);
		cJSON_AddStringToObject(o, "subject", s->name);
		cJSON_AddStringToObject(o, "metric", c->metric);
		cJSON_AddStringToObject(o, "op", op_names[c->op]);
		cJSON_AddNumberToObject(o, "value", c->value);
		fails = cJSON_CreateArray();
		c->n_items = c->n_fail = 0;
		free(c->worst);
		c->worst = NULL;
		cJSON_ArrayForEach(item, arr) {
			/* NaN (an absent or null value) never matches */
			double x = qr_report_item_num(item, c->metric);
			cJSON *f;

			if (qr_report_is_noise(item)) {
				skipped++;
				continue;
			}
			c->n_items++;
			if (isnan(x) || !matches(c->op, x, c->value))
				continue;
			if (c->n_fail++ < MAX_LISTED_FAILURES) {
				long q = qr_report_item_quant(item);

				f = cJSON_CreateObject();
				cJSON_AddStringToObject(
					f, "name", qr_report_item_str(
						item, s->item_key, ""));
				if (q >= 0)
					cJSON_AddNumberToObject(f, "quant",
								(double)q);
				cJSON_AddItemToObject(f, "actual", qr_json_num(x));
				cJSON_AddItemToArray(fails, f);
			}
			/* the item furthest past the threshold */
			if (worst == NULL || (c->op < 2 ? x < worst_v
							 : x > worst_v)) {
				worst = item;
				worst_v = x;
			}
		}
		cJSON_AddNumberToObject(o, "items", (double)c->n_items);
		cJSON_AddNumberToObject(o, "skipped", (double)skipped);
		cJSON_AddBoolToObject(o, "passed", c->n_fail == 0);
		cJSON_AddNumberToObject(o, "failures", (double)c->n_fail);
		cJSON_AddItemToObject(o, "failed_items", fails);
		if (worst != NULL) {
			long q = qr_report_item_quant(worst);
			struct qr_buf b = {0};

			qr_fmt_finite(vbuf, sizeof vbuf, QR_CHECK_FMT,
				      worst_v);
			qr_buf_puts(&b, qr_report_item_str(worst, s->item_key,
							   ""));
			if (q >= 0)
				qr_buf_printf(&b, " (candidate %ld)", q + 1);
			qr_buf_printf(&b, " %s = %s", c->metric, vbuf);
			c->worst = qr_buf_take(&b);
			cJSON_AddStringToObject(o, "worst", c->worst);
		} else {
			cJSON_AddNullToObject(o, "worst");
		}
		if (c->n_fail > 0)
			g->n_failed++;
	}
	cJSON_AddBoolToObject(out, "passed", g->n_failed == 0);
	cJSON_AddNumberToObject(out, "failed", (double)g->n_failed);
	return out;
}

/* One line per check for stderr (see report.h). */
char *
qr_gate_line(const struct qr_gate *g, size_t i)
{
	const struct qr_gate_check *c = &g->checks[i];
	const struct subject *s = &subjects[c->subject];

	if (c->n_fail == 0)
		return xasprintf("%s (%zu %s checked)", c->expr, c->n_items,
				 s->noun);
	return xasprintf("%s: %zu of %zu %s match; worst: %s", c->expr,
			 c->n_fail, c->n_items, s->noun,
			 c->worst ? c->worst : "?");
}
