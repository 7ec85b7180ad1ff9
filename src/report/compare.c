/*
 * report: --compare-to OLD/report.json. Reads a previous report and lists
 * what changed per layer: outputs, activations (cumulative and local
 * SQNR, cosine), quantized weights and float weight ranges. Items are
 * matched by name (and candidate index, i.e. --quant position); an item
 * only one report has is listed as new or gone.
 *
 * A change is a regression when it crosses one of the tolerances below;
 * improvements are the mirror image. Both reports are read as report.json
 * trees, so a comparison means what doc/report-json.md says the keys mean.
 */
#include "report/report.h"
#include "report/report-int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_SQNR_DB 1.0      /* SQNR drops by more than this: regression */
#define TOL_COSINE 0.0005    /* cosine drops by more than this */
#define TOL_REL_RANGE 0.10   /* relative weight range grows by > 10% */

struct qr_compare {
	char *path;   /* the old report.json, as given */
	cJSON *old;   /* its tree */
};

enum qr_status
qr_compare_load(const char *path, struct qr_compare **out,
		struct qr_diag *d)
{
	enum qr_status st;
	char *text = NULL;
	size_t len = 0;
	cJSON *root;
	const cJSON *sv;

	*out = NULL;
	st = qr_read_file(path, &text, &len, d);
	if (st != QR_OK)
		return qr_errorf(d, QR_EIO, "--compare-to '%s': cannot read "
				 "it (%s); give the report.json of a previous "
				 "qreport run", path, d->msg);
	root = cJSON_ParseWithLength(text, len);
	free(text);
	if (root == NULL || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return qr_errorf(d, QR_EFORMAT, "--compare-to '%s': not JSON; "
				 "give the report.json of a previous qreport "
				 "run", path);
	}
	sv = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
	if (!cJSON_IsNumber(sv) ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "weights"))) {
		cJSON_Delete(root);
		return qr_errorf(d, QR_EFORMAT, "--compare-to '%s': not a "
				 "qreport report.json (no schema_version or "
				 "weights[])", path);
	}
	if (sv->valueint > QR_SCHEMA_VERSION)
		qr_warnf(d, "--compare-to '%s': schema_version %d is newer "
			 "than this qreport's %d; keys may have changed meaning",
			 path, sv->valueint, QR_SCHEMA_VERSION);
	*out = xcalloc(1, sizeof **out);
	(*out)->path = xstrdup(path);
	(*out)->old = root;
	return QR_OK;
}

void
qr_compare_free(struct qr_compare *c)
{
	if (c == NULL)
		return;
	cJSON_Delete(c->old);
	free(c->path);
	free(c);
}

/* The item of arr with the same name (and candidate) as want. */
static const cJSON *
find(const cJSON *arr, const char *name_key, const char *name, long quant)
{
	const cJSON *x;

	cJSON_ArrayForEach(x, arr) {
		const char *s = qr_report_item_str(x, name_key, NULL);

		if (s != NULL && strcmp(s, name) == 0 &&
		    qr_report_item_quant(x) == quant)
			return x;
	}
	return NULL;
}

/* How one metric changed: -1 worse, 0 within tolerance, 1 better. kind:
 * 's' SQNR (dB, higher is better), 'c' cosine (higher is better), 'r'
 * relative range (lower is better). */
static int
verdict(int kind, double o, double n)
{
	if (isnan(o) || isnan(n))
		return 0;
	if (o == n)
		return 0;
	switch (kind) {
	case 's':
		if (isinf(o) || isinf(n))
			return n > o ? 1 : -1;
		return n < o - TOL_SQNR_DB ? -1 : n > o + TOL_SQNR_DB ? 1 : 0;
	case 'c':
		return n < o - TOL_COSINE ? -1 : n > o + TOL_COSINE ? 1 : 0;
	default:
		return n > o * (1 + TOL_REL_RANGE) ? -1
		       : n < o / (1 + TOL_REL_RANGE) ? 1 : 0;
	}
}

/* One compared metric of one item. */
struct field {
	const char *key;  /* in both reports */
	const char *out;  /* prefix of the keys written: <out>_old, ... */
	int kind;         /* see verdict() */
};

static void
add_change(cJSON *o, const struct field *f, const cJSON *old,
	   const cJSON *now, int *worst, int *best)
{
	double a = old ? qr_report_item_num(old, f->key) : NAN;
	double b = now ? qr_report_item_num(now, f->key) : NAN;
	char k[64];
	int v = verdict(f->kind, a, b);

	/* a side the item is missing from has no key; null is a value
	 * that is not finite (an exact SQNR) */
	if (old != NULL) {
		snprintf(k, sizeof k, "%s_old", f->out);
		cJSON_AddItemToObject(o, k, qr_json_num(a));
	}
	if (now != NULL) {
		snprintf(k, sizeof k, "%s_new", f->out);
		cJSON_AddItemToObject(o, k, qr_json_num(b));
	}
	if (old != NULL && now != NULL) {
		snprintf(k, sizeof k, "%s_delta", f->out);
		cJSON_AddItemToObject(o, k, qr_json_num(b - a));
	}
	if (v < *worst)
		*worst = v;
	if (v > *best)
		*best = v;
}

struct tally {
	size_t regressed, improved, same, added, gone;
};

static const char *
status_of(const cJSON *old, const cJSON *now, int worst, int best,
	  struct tally *t)
{
	if (old == NULL) {
		t->added++;
		return "new";
	}
	if (now == NULL) {
		t->gone++;
		return "gone";
	}
	if (worst < 0) {
		t->regressed++;
		return "regressed";
	}
	if (best > 0) {
		t->improved++;
		return "improved";
	}
	t->same++;
	return "same";
}

/* Compare the arrays arr_key of both trees, items named by name_key. */
static cJSON *
compare_array(const cJSON *oldroot, const cJSON *newroot,
	      const char *arr_key, const char *name_key,
	      const struct field *fields, size_t n_fields, struct tally *t)
{
	const cJSON *olda = cJSON_GetObjectItemCaseSensitive(oldroot, arr_key);
	const cJSON *newa = cJSON_GetObjectItemCaseSensitive(newroot, arr_key);
	cJSON *out = cJSON_CreateArray();
	const cJSON *x;
	int pass;

	/* pass 0: every new item (and its old twin); pass 1: old items
	 * without a twin */
	for (pass = 0; pass < 2; pass++) {
		const cJSON *walk = pass == 0 ? newa : olda;

		cJSON_ArrayForEach(x, walk) {
			const char *name = qr_report_item_str(x, name_key,
							      NULL);
			const char *layer = qr_report_item_str(x, "layer",
							       NULL);
			long quant = qr_report_item_quant(x);
			const cJSON *twin, *old, *now;
			cJSON *o;
			int worst = 0, best = 0;
			size_t i;

			if (name == NULL)
				continue;
			twin = find(pass == 0 ? olda : newa, name_key, name,
				    quant);
			if (pass == 1 && twin != NULL)
				continue;
			old = pass == 0 ? twin : x;
			now = pass == 0 ? x : NULL;
			o = cJSON_CreateObject();
			if (quant >= 0)
				cJSON_AddNumberToObject(o, "quant",
							(double)quant);
			cJSON_AddStringToObject(o, name_key, name);
			if (layer != NULL && strcmp(name_key, "layer"))
				cJSON_AddStringToObject(o, "layer", layer);
			for (i = 0; i < n_fields; i++)
				add_change(o, &fields[i], old, now, &worst,
					   &best);
			/* rounding noise on either side moves freely */
			if ((old && qr_report_is_noise(old)) ||
			    (now && qr_report_is_noise(now)))
				worst = best = 0;
			cJSON_AddStringToObject(o, "status",
						status_of(old, now, worst, best,
							  t));
			cJSON_AddItemToArray(out, o);
		}
	}
	return out;
}

cJSON *
qr_report_compare_new(const struct qr_compare *c, const cJSON *json)
{
	static const struct field out_f[] = {
		{ "cosine_mean", "cosine", 'c' },
		{ "sqnr_db", "sqnr_db", 's' },
		{ "top1_agreement", "top1", 'c' },
	};
	static const struct field act_f[] = {
		{ "sqnr_db", "sqnr_db", 's' },
		{ "local_sqnr_db", "local_sqnr_db", 's' },
		{ "cosine_mean", "cosine", 'c' },
	};
	static const struct field qw_f[] = {
		{ "sqnr_db", "sqnr_db", 's' },
	};
	static const struct field w_f[] = {
		{ "max_rel_range", "max_rel_range", 'r' },
		{ "sqnr_per_tensor_db", "sqnr_per_tensor_db", 's' },
	};
	struct tally t = {0};
	cJSON *o = cJSON_CreateObject(), *x;
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(c->old, "generator");
	const char *version = qr_report_item_str(g, "version", NULL);
	const char *cmd = qr_report_item_str(c->old, "command_line", NULL);

	x = cJSON_AddObjectToObject(o, "old");
	cJSON_AddStringToObject(x, "path", c->path);
	cJSON_AddItemToObject(x, "schema_version", cJSON_Duplicate(
		cJSON_GetObjectItemCaseSensitive(c->old, "schema_version"), 0));
	if (version != NULL)
		cJSON_AddStringToObject(x, "version", version);
	else
		cJSON_AddNullToObject(x, "version");
	if (cmd != NULL)
		cJSON_AddStringToObject(x, "command_line", cmd);
	else
		cJSON_AddNullToObject(x, "command_line");
	x = cJSON_AddObjectToObject(o, "tolerances");
	cJSON_AddNumberToObject(x, "sqnr_db", TOL_SQNR_DB);
	cJSON_AddNumberToObject(x, "cosine", TOL_COSINE);
	cJSON_AddNumberToObject(x, "rel_range_fraction", TOL_REL_RANGE);
	cJSON_AddItemToObject(o, "outputs", compare_array(
		c->old, json, "outputs", "name", out_f, 3, &t));
	cJSON_AddItemToObject(o, "activations", compare_array(
		c->old, json, "activations", "tensor", act_f, 3, &t));
	cJSON_AddItemToObject(o, "quant_weights", compare_array(
		c->old, json, "quant_weights", "layer", qw_f, 1, &t));
	cJSON_AddItemToObject(o, "weights", compare_array(
		c->old, json, "weights", "layer", w_f, 2, &t));
	cJSON_AddNumberToObject(o, "regressed", (double)t.regressed);
	cJSON_AddNumberToObject(o, "improved", (double)t.improved);
	cJSON_AddNumberToObject(o, "same", (double)t.same);
	cJSON_AddNumberToObject(o, "new", (double)t.added);
	cJSON_AddNumberToObject(o, "gone", (double)t.gone);
	return o;
}
