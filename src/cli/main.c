/*
 * cli: qreport's command line. Parses options (and --config FILE.json),
 * drives the pipeline load -> weight analysis -> representative data
 * through the float model and every candidate -> report, and is the only
 * place that prints errors (and the progress bar) and maps statuses to
 * exit codes.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "kernels/kernels.h"
#include "onnx/onnx.h"
#include "report/report.h"
#include "run/dataset.h"
#include "util/util.h"

/* Exit codes (DESIGN.md); keep --help, qreport.1 and README in step. */
enum {
	EXIT_REPORT = 0,   /* report written */
	EXIT_USAGE = 1,    /* usage error */
	EXIT_INPUT = 2,    /* bad input (file, model or dataset) */
	EXIT_GATE = 3,     /* a --fail-if threshold was crossed */
	EXIT_PARTIAL = 4,  /* partial report */
};

#define MAX_QUANT 16

#define MAX_DATA QR_DATASET_MAX_INPUTS

struct options {
	char *float_path;           /* --float */
	char *quant_paths[MAX_QUANT]; /* --quant, in order */
	size_t n_quant;
	char *outdir;               /* -o */
	char *templates;            /* --templates */
	int bits;                   /* --bits */
	int quiet;                  /* --quiet */
	int weights_only;           /* --weights-only: no data run */
	int exact;                  /* --exact: every run in ORT's order */
	int have_ort_cpu;           /* --ort-cpu given (the config's loses) */
	char *data[MAX_DATA];       /* --data [NAME=]PATH, as given */
	size_t n_data;
	char *dims[MAX_DATA];       /* --input NAME:DIMS, as given */
	size_t n_dims;
	long samples;               /* --samples; 0: unset (20) */
	int input_h, input_w;       /* --input-size; 0: unset */
	int n_mean, n_std;          /* values given (0: unset, 1 or 3) */
	float mean[3], std[3];      /* --mean, --std */
	float scale;                /* --scale; 0: unset (1/255) */
	enum qr_layout layout;      /* --layout */
	int order;                  /* --channel-order: -1 unset, else enum */
	int have_seed;
	uint64_t seed;              /* --seed */
	double cos_threshold;       /* --cos-threshold; NaN: unset (0.99) */
	double sqnr_threshold;      /* --sqnr-threshold; NaN: unset (20) */
	struct qr_gate gate;        /* --fail-if checks, parsed */
	char *compare_to;           /* --compare-to OLD/report.json */
};

static const char usage_text[] =
"usage: qreport --float FLOAT.onnx [--quant QUANT.onnx]... -o DIR [options]\n"
"       qreport run MODEL.onnx --input NAME=FILE.npy|.pb ... -o DIR\n"
"                   [--dump-all] [--profile]\n"
"\n"
"Show where quantization hurts a model: loads the float ONNX model and its\n"
"quantized version(s) and writes a self-contained report folder (open\n"
"DIR/index.html; DIR/report.json for tools, DIR/summary.md for CI).\n"
"\n"
"qreport run executes one model with qreport's engine and writes each\n"
"output as DIR/<name>.npy (--dump-all: every intermediate tensor too;\n"
"--profile: time per op type on stderr).\n"
"\n"
"Options:\n"
"  -f, --float FILE      float (reference) ONNX model\n"
"  -q, --quant FILE      quantized ONNX model; repeat to compare candidates\n"
"  -o, --output DIR      report folder (replaced atomically if it holds a\n"
"                        previous qreport report)\n"
"      --config FILE     read options from a JSON file; command-line flags\n"
"                        win. Keys: float, quant (string or array), output,\n"
"                        templates, bits, quiet, data (string or array),\n"
"                        samples, input (string or array), input_size,\n"
"                        scale, mean, std (number or array), layout,\n"
"                        channel_order, seed, cos_threshold,\n"
"                        sqnr_threshold, fail_if (string or array),\n"
"                        compare_to, weights_only, exact, ort_cpu.\n"
"                        Relative paths are relative to the config\n"
"                        file's folder.\n"
"      --templates DIR   use templates (and DIR/assets) instead of the\n"
"                        built-in ones\n"
"      --bits N          weight bits for predicted SQNR (2..16, default 8)\n"
"\n"
"Representative data (run through the float model and every candidate,\n"
"one sample at a time; without --data the samples are random, seeded,\n"
"and the report says so):\n"
"      --data [NAME=]PATH  an image folder (class subfolders give labels),\n"
"                        .npy file(s), or an ONNX test_data_set folder;\n"
"                        NAME= picks the graph input (repeat per input)\n"
"      --samples N       samples to run (default 20)\n"
"      --weights-only    no data run: the report from the weights alone\n"
"      --input NAME:DIMS  shape of an input with dynamic dims, e.g.\n"
"                        input:1x3x224x224 (repeatable)\n"
"      --input-size HxW  resize images to H x W (default: the model's)\n"
"      --scale S         pixel multiplier (default 1/255)\n"
"      --mean A[,B,C]    per-channel mean, subtracted after --scale\n"
"      --std A[,B,C]     per-channel std, divided by after --mean\n"
"      --layout nchw|nhwc  image tensor layout (default: from the model)\n"
"      --channel-order rgb|bgr  channel order the model expects (rgb)\n"
"      --seed N          seed of the random data (default 0)\n"
"      --cos-threshold C  flag layers whose mean cosine is below C (0.99)\n"
"      --sqnr-threshold DB  flag layers whose SQNR is below DB (20)\n"
"      --exact           sum the local runs' float convs in ONNX\n"
"                        Runtime's order too (slower; by default they use\n"
"                        Winograd, which moves values by rounding only);\n"
"                        the float model and cumulative runs always use\n"
"                        ORT's order\n"
"      --ort-cpu CPU     reproduce ONNX Runtime as it runs on CPU: avx512vnni,\n"
"                        avx2vnni (exact int8 sums), avx512 or avx2 (no\n"
"                        VNNI: u8 x s8 products summed in saturating 16-bit\n"
"                        pairs); the avx2 ones also use ORT's AVX2 Softmax.\n"
"                        Default: native, this machine's\n"
"      --quiet           no progress bar or summary on stderr\n"
"\n"
"CI use (the report is always written; see DIR/summary.md):\n"
"      --fail-if EXPR    exit 3 when a check fails; repeatable. EXPR is\n"
"                        SUBJECT.METRIC OP NUMBER, OP one of < <= > >=,\n"
"                        and fails when any item matches:\n"
"                          output.{cosine,cosine_min,sqnr_db,top1,accuracy}\n"
"                          layer.{cosine,cosine_min,sqnr_db,local_sqnr_db,\n"
"                                 local_cosine,mse,max_abs,norm_l2,\n"
"                                 rmse_over_scale,saturation}\n"
"                          weight.{max_rel_range,sqnr_per_tensor_db,\n"
"                                  sqnr_per_channel_db,zero_range_channels}\n"
"                          quant_weight.{sqnr_db,clipped,compression}\n"
"                        e.g. --fail-if 'output.cosine<0.999'\n"
"                             --fail-if 'layer.sqnr_db<20'\n"
"      --compare-to OLD/report.json\n"
"                        list per-layer changes against a previous report\n"
"                        (compare.html, summary.md); regressions are SQNR\n"
"                        drops over 1 dB and cosine drops over 0.0005\n"
"  -h, --help            show this help and exit\n"
"      --version         show the version and exit\n"
"\n"
"Exit codes:\n"
"  0  report written\n"
"  1  usage error\n"
"  2  bad input (file, model or dataset); a one-line reason names the file\n"
"     or node\n"
"  3  a --fail-if threshold was crossed; the report is still written\n"
"  4  partial report: something could not be analysed (e.g. a model with\n"
"     an op the engine cannot run); the report says what and why\n";

static int
exit_code(enum qr_status st)
{
	switch (st) {
	case QR_OK:
		return EXIT_REPORT;
	case QR_EUSAGE:
		return EXIT_USAGE;
	case QR_ETHRESHOLD:
		return EXIT_GATE;
	case QR_EPARTIAL:
		return EXIT_PARTIAL;
	case QR_EIO:
	case QR_EFORMAT:
	case QR_EUNSUPPORTED:
	case QR_ESHAPE:
	case QR_EGRAPH:
		break;
	}
	return EXIT_INPUT;
}

static void
set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = xstrdup(s);
}

/* A path from the config file, made relative to the config's folder. */
static char *
config_path(const char *cfg_dir, const char *p)
{
	if (p[0] == '/' || strcmp(cfg_dir, ".") == 0)
		return xstrdup(p);
	return qr_path_join(cfg_dir, p);
}

/* ---- option values ---- */

static enum qr_status
parse_long(const char *opt, const char *v, long lo, long hi, long *out,
	   struct qr_diag *d)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi)
		return qr_errorf(d, QR_EUSAGE, "%s '%s': expected an integer "
				 "%ld..%ld", opt, v, lo, hi);
	*out = x;
	return QR_OK;
}

static enum qr_status
parse_double(const char *opt, const char *v, double lo, double hi,
	     double *out, struct qr_diag *d)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || *end || !(x >= lo && x <= hi))
		return qr_errorf(d, QR_EUSAGE, "%s '%s': expected a number "
				 "%g..%g", opt, v, lo, hi);
	*out = x;
	return QR_OK;
}

/* "a" or "a,b,c" into v (one value is used for every channel). */
static enum qr_status
parse_floats(const char *opt, const char *s, float v[3], int *n,
	     struct qr_diag *d)
{
	const char *p = s;
	char *end;
	int k = 0;

	while (k < 3) {
		errno = 0;
		v[k] = strtof(p, &end);
		if (errno || end == p || !isfinite(v[k]))
			break;
		k++;
		if (*end != ',')
			break;
		p = end + 1;
	}
	if ((k != 1 && k != 3) || *end != '\0')
		return qr_errorf(d, QR_EUSAGE, "%s '%s': expected one number "
				 "or three separated by commas", opt, s);
	if (k == 1)
		v[1] = v[2] = v[0];
	*n = k;
	return QR_OK;
}

/* "HxW" (or "H,W"). */
static enum qr_status
parse_hw(const char *opt, const char *s, int *h, int *w, struct qr_diag *d)
{
	char *end;
	long a, b;

	errno = 0;
	a = strtol(s, &end, 10);
	if (errno || end == s || (*end != 'x' && *end != ','))
		goto bad;
	b = strtol(end + 1, &end, 10);
	if (errno || *end || a < 1 || b < 1 || a > 65536 || b > 65536)
		goto bad;
	*h = (int)a;
	*w = (int)b;
	return QR_OK;
bad:
	return qr_errorf(d, QR_EUSAGE, "%s '%s': expected HxW, e.g. 224x224",
			 opt, s);
}

static enum qr_status
parse_layout(const char *s, enum qr_layout *out, struct qr_diag *d)
{
	if (strcmp(s, "nchw") == 0 || strcmp(s, "NCHW") == 0)
		*out = QR_LAYOUT_NCHW;
	else if (strcmp(s, "nhwc") == 0 || strcmp(s, "NHWC") == 0)
		*out = QR_LAYOUT_NHWC;
	else
		return qr_errorf(d, QR_EUSAGE,
				 "--layout '%s': expected nchw or nhwc", s);
	return QR_OK;
}

static enum qr_status
parse_order(const char *s, int *out, struct qr_diag *d)
{
	if (strcmp(s, "rgb") == 0 || strcmp(s, "RGB") == 0)
		*out = QR_ORDER_RGB;
	else if (strcmp(s, "bgr") == 0 || strcmp(s, "BGR") == 0)
		*out = QR_ORDER_BGR;
	else
		return qr_errorf(d, QR_EUSAGE,
				 "--channel-order '%s': expected rgb or bgr", s);
	return QR_OK;
}

/* "NAME:1x3x224x224" (or with commas) into an override. */
static enum qr_status
parse_dims(const char *s, struct qr_dims_override *o, char **name,
	   struct qr_diag *d)
{
	const char *colon = strrchr(s, ':'), *p;
	char *end;

	*name = NULL;
	if (colon == NULL || colon == s || colon[1] == '\0')
		goto bad;
	o->ndim = 0;
	for (p = colon + 1;;) {
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v < 1 || o->ndim == 8)
			goto bad;
		o->dims[o->ndim++] = v;
		if (*end == '\0')
			break;
		if (*end != 'x' && *end != ',')
			goto bad;
		p = end + 1;
	}
	*name = xstrndup(s, (size_t)(colon - s));
	o->input = *name;
	return QR_OK;
bad:
	return qr_errorf(d, QR_EUSAGE, "--input '%s': expected NAME:DIMS, "
			 "e.g. input:1x3x224x224", s);
}

/* Append a --data or --input value (and its count check). */
static enum qr_status
push_str(char **v, size_t *n, const char *opt, const char *s,
	 struct qr_diag *d)
{
	if (*n == MAX_DATA)
		return qr_errorf(d, QR_EUSAGE, "at most %d %s values",
				 MAX_DATA, opt);
	v[(*n)++] = xstrdup(s);
	return QR_OK;
}

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
config_data(const char *cfg_dir, const char *v)
{
	const char *eq = strchr(v, '=');
	char *path, *r;

	if (eq == NULL || memchr(v, '/', (size_t)(eq - v)) != NULL)
		return config_path(cfg_dir, v);
	path = config_path(cfg_dir, eq + 1);
	r = xasprintf("%.*s=%s", (int)(eq - v), v, path);
	free(path);
	return r;
}

/* Fill the options the command line left unset from a JSON config. */
static enum qr_status
read_config(const char *path, struct options *o, int have_quant,
	    int have_gate, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	char *text = NULL, *dir = NULL;
	cJSON *root = NULL, *it;
	size_t len;

	st = qr_read_file(path, &text, &len, d);
	if (st != QR_OK)
		return qr_errorf(d, QR_EUSAGE, "%s", d->msg);
	root = cJSON_ParseWithLength(text, len);
	if (root == NULL || !cJSON_IsObject(root)) {
		st = qr_errorf(d, QR_EUSAGE,
			       "config '%s': not a JSON object (near byte %ld)",
			       path, root ? 0L :
			       (long)(cJSON_GetErrorPtr() - text));
		goto out;
	}
	dir = qr_path_dirname(path);
	cJSON_ArrayForEach(it, root) {
		const char *k = it->string;

		if (strcmp(k, "float") == 0 && cJSON_IsString(it)) {
			if (o->float_path == NULL)
				o->float_path = config_path(dir, it->valuestring);
		} else if (strcmp(k, "quant") == 0 &&
			   (cJSON_IsString(it) || cJSON_IsArray(it))) {
			cJSON *q;

			if (have_quant)
				continue;
			if (cJSON_IsString(it)) {
				o->quant_paths[o->n_quant++] =
					config_path(dir, it->valuestring);
				continue;
			}
			cJSON_ArrayForEach(q, it) {
				if (!cJSON_IsString(q)) {
					st = qr_errorf(d, QR_EUSAGE,
						"config '%s': \"quant\" must hold strings",
						path);
					goto out;
				}
				if (o->n_quant == MAX_QUANT) {
					st = qr_errorf(d, QR_EUSAGE,
						"config '%s': more than %d quant models",
						path, MAX_QUANT);
					goto out;
				}
				o->quant_paths[o->n_quant++] =
					config_path(dir, q->valuestring);
			}
		} else if (strcmp(k, "output") == 0 && cJSON_IsString(it)) {
			if (o->outdir == NULL)
				o->outdir = config_path(dir, it->valuestring);
		} else if (strcmp(k, "templates") == 0 && cJSON_IsString(it)) {
			if (o->templates == NULL)
				o->templates = config_path(dir, it->valuestring);
		} else if (strcmp(k, "bits") == 0 && cJSON_IsNumber(it)) {
			if (o->bits == 0)
				o->bits = it->valueint;
		} else if (strcmp(k, "quiet") == 0 && cJSON_IsBool(it)) {
			if (!o->quiet)
				o->quiet = cJSON_IsTrue(it);
		} else if (strcmp(k, "weights_only") == 0 &&
			   cJSON_IsBool(it)) {
			if (!o->weights_only)
				o->weights_only = cJSON_IsTrue(it);
		} else if (strcmp(k, "exact") == 0 && cJSON_IsBool(it)) {
			if (!o->exact)
				o->exact = cJSON_IsTrue(it);
		} else if (strcmp(k, "ort_cpu") == 0 && cJSON_IsString(it)) {
			if (!o->have_ort_cpu &&
			    !qr_kernels_set_ort_cpu(it->valuestring)) {
				st = qr_errorf(d, QR_EUSAGE, "config '%s': "
					       "\"ort_cpu\" '%s': expected "
					       "native, avx512vnni, avx512, "
					       "avx2vnni or avx2", path,
					       it->valuestring);
				goto out;
			}
		} else if ((strcmp(k, "data") == 0 || strcmp(k, "input") == 0) &&
			   (cJSON_IsString(it) || cJSON_IsArray(it))) {
			int is_data = k[0] == 'd';
			char **v = is_data ? o->data : o->dims;
			size_t *n = is_data ? &o->n_data : &o->n_dims;
			const cJSON *x, *arr = cJSON_IsArray(it) ? it : NULL;

			if (*n > 0)
				continue;
			cJSON_ArrayForEach(x, arr) {
				if (!cJSON_IsString(x)) {
					st = qr_errorf(d, QR_EUSAGE,
						"config '%s': \"%s\" must hold strings",
						path, k);
					goto out;
				}
			}
			if (cJSON_IsString(it)) {
				char *val = is_data ? config_data(dir, it->valuestring)
						    : xstrdup(it->valuestring);

				st = push_str(v, n, k, val, d);
				free(val);
			}
			cJSON_ArrayForEach(x, arr) {
				char *val = is_data ? config_data(dir, x->valuestring)
						    : xstrdup(x->valuestring);

				if (st == QR_OK)
					st = push_str(v, n, k, val, d);
				free(val);
			}
			if (st != QR_OK)
				goto out;
		} else if (strcmp(k, "samples") == 0 && cJSON_IsNumber(it)) {
			if (o->samples == 0) {
				if (it->valuedouble < 1 || it->valuedouble > 1e9) {
					st = qr_errorf(d, QR_EUSAGE,
						"config '%s': samples must be 1..1000000000",
						path);
					goto out;
				}
				o->samples = (long)it->valuedouble;
			}
		} else if (strcmp(k, "seed") == 0 && cJSON_IsNumber(it)) {
			if (!o->have_seed) {
				o->seed = (uint64_t)it->valuedouble;
				o->have_seed = 1;
			}
		} else if ((strcmp(k, "scale") == 0 ||
			    strcmp(k, "cos_threshold") == 0 ||
			    strcmp(k, "sqnr_threshold") == 0) &&
			   cJSON_IsNumber(it)) {
			if (k[0] == 's' && k[1] == 'c' && o->scale == 0) {
				if (!(it->valuedouble > 0)) {
					st = qr_errorf(d, QR_EUSAGE,
						"config '%s': scale must be > 0", path);
					goto out;
				}
				o->scale = (float)it->valuedouble;
			} else if (k[0] == 'c' && isnan(o->cos_threshold)) {
				o->cos_threshold = it->valuedouble;
			} else if (k[0] == 's' && k[1] == 'q' &&
				   isnan(o->sqnr_threshold)) {
				o->sqnr_threshold = it->valuedouble;
			}
		} else if ((strcmp(k, "mean") == 0 || strcmp(k, "std") == 0) &&
			   (cJSON_IsNumber(it) || cJSON_IsArray(it) ||
			    cJSON_IsString(it))) {
			int is_mean = k[0] == 'm';
			char *val;

			if ((is_mean ? o->n_mean : o->n_std) > 0)
				continue;
			val = config_floats(it);
			st = parse_floats(k, val, is_mean ? o->mean : o->std,
					  is_mean ? &o->n_mean : &o->n_std, d);
			free(val);
			if (st != QR_OK)
				goto out;
		} else if (strcmp(k, "input_size") == 0 &&
			   (cJSON_IsString(it) || cJSON_IsArray(it))) {
			char *val = NULL;

			if (o->input_h > 0)
				continue;
			if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2)
				val = xasprintf("%gx%g",
					cJSON_GetArrayItem(it, 0)->valuedouble,
					cJSON_GetArrayItem(it, 1)->valuedouble);
			else
				val = cJSON_IsString(it) ? xstrdup(it->valuestring)
							 : xstrdup("?");
			st = parse_hw("input_size", val, &o->input_h,
				      &o->input_w, d);
			free(val);
			if (st != QR_OK)
				goto out;
		} else if (strcmp(k, "layout") == 0 && cJSON_IsString(it)) {
			if (o->layout == QR_LAYOUT_AUTO &&
			    (st = parse_layout(it->valuestring, &o->layout, d)) !=
				    QR_OK)
				goto out;
		} else if (strcmp(k, "fail_if") == 0 &&
			   (cJSON_IsString(it) || cJSON_IsArray(it))) {
			const cJSON *x;

			if (have_gate)
				continue;
			if (cJSON_IsString(it)) {
				st = qr_gate_add(&o->gate, it->valuestring, d);
			} else {
				cJSON_ArrayForEach(x, it) {
					if (!cJSON_IsString(x)) {
						st = qr_errorf(d, QR_EUSAGE,
							"config '%s': \"fail_if\" must hold strings",
							path);
						break;
					}
					if ((st = qr_gate_add(&o->gate, x->valuestring,
							      d)) != QR_OK)
						break;
				}
			}
			if (st != QR_OK) {
				st = qr_errorf(d, QR_EUSAGE, "config '%s': %s",
					       path, d->msg);
				goto out;
			}
		} else if (strcmp(k, "compare_to") == 0 && cJSON_IsString(it)) {
			if (o->compare_to == NULL)
				o->compare_to = config_path(dir, it->valuestring);
		} else if (strcmp(k, "channel_order") == 0 &&
			   cJSON_IsString(it)) {
			if (o->order < 0 &&
			    (st = parse_order(it->valuestring, &o->order, d)) !=
				    QR_OK)
				goto out;
		} else {
			st = qr_errorf(d, QR_EUSAGE,
				       "config '%s': unknown or mistyped key \"%s\"",
				       path, k);
			goto out;
		}
	}
out:
	cJSON_Delete(root);
	free(text);
	free(dir);
	return st;
}

static void
options_free(struct options *o)
{
	size_t i;

	free(o->float_path);
	for (i = 0; i < o->n_quant; i++)
		free(o->quant_paths[i]);
	free(o->outdir);
	free(o->templates);
	free(o->compare_to);
	qr_gate_clear(&o->gate);
	for (i = 0; i < o->n_data; i++)
		free(o->data[i]);
	for (i = 0; i < o->n_dims; i++)
		free(o->dims[i]);
}

/* Parse argv into o. Returns QR_OK, or QR_EUSAGE with a message; *exit_now
 * is set for --help/--version. */
static enum qr_status
parse_args(int argc, char **argv, struct options *o, int *exit_now,
	   struct qr_diag *d)
{
	enum { OPT_CONFIG = 256, OPT_TEMPLATES, OPT_BITS, OPT_QUIET,
	       OPT_VERSION, OPT_WEIGHTS_ONLY, OPT_DATA, OPT_SAMPLES, OPT_INPUT,
	       OPT_INPUT_SIZE,
	       OPT_MEAN, OPT_STD, OPT_SCALE, OPT_LAYOUT, OPT_ORDER, OPT_SEED,
	       OPT_COS, OPT_SQNR, OPT_FAIL_IF, OPT_COMPARE, OPT_EXACT,
	       OPT_ORT_CPU };
	static const struct option longopts[] = {
		{"float", required_argument, NULL, 'f'},
		{"quant", required_argument, NULL, 'q'},
		{"output", required_argument, NULL, 'o'},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"templates", required_argument, NULL, OPT_TEMPLATES},
		{"bits", required_argument, NULL, OPT_BITS},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"weights-only", no_argument, NULL, OPT_WEIGHTS_ONLY},
		{"exact", no_argument, NULL, OPT_EXACT},
		{"ort-cpu", required_argument, NULL, OPT_ORT_CPU},
		{"data", required_argument, NULL, OPT_DATA},
		{"samples", required_argument, NULL, OPT_SAMPLES},
		{"input", required_argument, NULL, OPT_INPUT},
		{"input-size", required_argument, NULL, OPT_INPUT_SIZE},
		{"mean", required_argument, NULL, OPT_MEAN},
		{"std", required_argument, NULL, OPT_STD},
		{"scale", required_argument, NULL, OPT_SCALE},
		{"layout", required_argument, NULL, OPT_LAYOUT},
		{"channel-order", required_argument, NULL, OPT_ORDER},
		{"seed", required_argument, NULL, OPT_SEED},
		{"cos-threshold", required_argument, NULL, OPT_COS},
		{"sqnr-threshold", required_argument, NULL, OPT_SQNR},
		{"fail-if", required_argument, NULL, OPT_FAIL_IF},
		{"compare-to", required_argument, NULL, OPT_COMPARE},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, OPT_VERSION},
		{NULL, 0, NULL, 0},
	};
	const char *config = NULL;
	enum qr_status st = QR_OK;
	char *end;
	long v;
	double x;
	int c;

	*exit_now = 0;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:q:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			set_str(&o->float_path, optarg);
			break;
		case 'q':
			if (o->n_quant == MAX_QUANT)
				return qr_errorf(d, QR_EUSAGE,
						 "at most %d --quant models",
						 MAX_QUANT);
			o->quant_paths[o->n_quant++] = xstrdup(optarg);
			break;
		case 'o':
			set_str(&o->outdir, optarg);
			break;
		case OPT_CONFIG:
			config = optarg;
			break;
		case OPT_TEMPLATES:
			set_str(&o->templates, optarg);
			break;
		case OPT_BITS:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 2 || v > 16)
				return qr_errorf(d, QR_EUSAGE,
						 "--bits '%s': expected 2..16",
						 optarg);
			o->bits = (int)v;
			break;
		case OPT_QUIET:
			o->quiet = 1;
			break;
		case OPT_WEIGHTS_ONLY:
			o->weights_only = 1;
			break;
		case OPT_EXACT:
			o->exact = 1;
			break;
		case OPT_ORT_CPU:
			if (!qr_kernels_set_ort_cpu(optarg))
				return qr_errorf(d, QR_EUSAGE, "--ort-cpu '%s': "
						 "expected native, avx512vnni, "
						 "avx512, avx2vnni or avx2",
						 optarg);
			o->have_ort_cpu = 1;
			break;
		case OPT_DATA:
			st = push_str(o->data, &o->n_data, "--data", optarg, d);
			break;
		case OPT_INPUT:
			st = push_str(o->dims, &o->n_dims, "--input", optarg, d);
			break;
		case OPT_SAMPLES:
			st = parse_long("--samples", optarg, 1, 1000000000L,
					&o->samples, d);
			break;
		case OPT_INPUT_SIZE:
			st = parse_hw("--input-size", optarg, &o->input_h,
				      &o->input_w, d);
			break;
		case OPT_MEAN:
			st = parse_floats("--mean", optarg, o->mean,
					  &o->n_mean, d);
			break;
		case OPT_STD:
			st = parse_floats("--std", optarg, o->std, &o->n_std,
					  d);
			if (st == QR_OK && (o->std[0] == 0 || o->std[1] == 0 ||
					    o->std[2] == 0))
				st = qr_errorf(d, QR_EUSAGE,
					       "--std '%s': must not be 0",
					       optarg);
			break;
		case OPT_SCALE:
			st = parse_double("--scale", optarg, 1e-30, 1e30, &x,
					  d);
			o->scale = (float)x;
			break;
		case OPT_LAYOUT:
			st = parse_layout(optarg, &o->layout, d);
			break;
		case OPT_ORDER:
			st = parse_order(optarg, &o->order, d);
			break;
		case OPT_SEED:
			errno = 0;
			o->seed = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-')
				st = qr_errorf(d, QR_EUSAGE, "--seed '%s': "
					       "expected a non-negative integer",
					       optarg);
			o->have_seed = 1;
			break;
		case OPT_COS:
			st = parse_double("--cos-threshold", optarg, -1, 1,
					  &o->cos_threshold, d);
			break;
		case OPT_SQNR:
			st = parse_double("--sqnr-threshold", optarg, -1000,
					  1000, &o->sqnr_threshold, d);
			break;
		case OPT_FAIL_IF:
			st = qr_gate_add(&o->gate, optarg, d);
			break;
		case OPT_COMPARE:
			set_str(&o->compare_to, optarg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			*exit_now = 1;
			return QR_OK;
		case OPT_VERSION:
			printf("qreport %s\n", QR_VERSION);
			*exit_now = 1;
			return QR_OK;
		case ':':
			return qr_errorf(d, QR_EUSAGE, "option '%s' needs a "
					 "value (see qreport --help)",
					 argv[optind - 1]);
		default:
			return qr_errorf(d, QR_EUSAGE, "unknown option '%s' "
					 "(see qreport --help)",
					 argv[optind - 1]);
		}
		if (st != QR_OK)
			return st;
	}
	if (optind < argc)
		return qr_errorf(d, QR_EUSAGE, "unexpected argument '%s' "
				 "(options take their value after them; see "
				 "qreport --help)", argv[optind]);
	if (config != NULL) {
		enum qr_status st = read_config(config, o, o->n_quant > 0,
						o->gate.n > 0, d);

		if (st != QR_OK)
			return st;
	}
	if (o->float_path == NULL)
		return qr_errorf(d, QR_EUSAGE,
				 "missing --float FILE (see qreport --help)");
	if (o->outdir == NULL)
		return qr_errorf(d, QR_EUSAGE,
				 "missing -o DIR (see qreport --help)");
	if (o->bits == 0)
		o->bits = 8;
	if (isnan(o->cos_threshold))
		o->cos_threshold = 0.99;
	if (isnan(o->sqnr_threshold))
		o->sqnr_threshold = 20.0;
	if (o->bits < 2 || o->bits > 16)
		return qr_errorf(d, QR_EUSAGE, "bits %d: expected 2..16",
				 o->bits);
	return QR_OK;
}

static char *
join_argv(int argc, char **argv)
{
	struct qr_buf b = {0};
	int i;

	for (i = 0; i < argc; i++) {
		if (i > 0)
			qr_buf_putc(&b, ' ');
		qr_buf_puts(&b, argv[i]);
	}
	return qr_buf_take(&b);
}

/* ---- the data run ---- */

/* Progress on stderr: samples x models. */
struct progress {
	double last;             /* time of the last redraw */
	int drawn;               /* something is on the line */
};

static void
progress_draw(size_t done, size_t total, void *user)
{
	struct progress *p = user;
	double now = qr_now();
	int width = 30, fill;

	if (done < total && now - p->last < 0.1)
		return;
	p->last = now;
	fill = total ? (int)((double)width * done / total) : width;
	fprintf(stderr, "\rqreport: running data [%.*s%*s] %zu/%zu",
		fill, "##############################", width - fill, "",
		done, total);
	p->drawn = 1;
	fflush(stderr);
}

static enum qr_status
feed_next(void *user, struct qr_tensor *const **inputs, size_t *n_inputs,
	  int *label, const char **name, struct qr_diag *d)
{
	return qr_dataset_next(user, inputs, n_inputs, label, name, d);
}

/* Open the data for the float model and run it through every model.
 * QR_EPARTIAL when some model could not run (the report says why). */
static enum qr_status
run_data(const struct options *o, const struct qr_model *fmodel,
	 struct qr_model *const *qmodels, struct qr_analysis *an,
	 struct qr_diag *d)
{
	struct qr_dataset_opts dopts;
	struct qr_act_opts aopts = {0};
	struct qr_dataset *ds = NULL;
	struct progress prog = {0};
	char *names[MAX_DATA] = {0}, *dnames[MAX_DATA] = {0};
	enum qr_status st = QR_OK;
	size_t i, warn_first = d->n_warnings, n_classes = 0;
	long nproc = sysconf(_SC_NPROCESSORS_ONLN);

	memset(&dopts, 0, sizeof dopts);
	for (i = 0; i < o->n_data; i++) {
		const char *v = o->data[i], *eq = strchr(v, '=');

		if (eq != NULL && eq != v &&
		    memchr(v, '/', (size_t)(eq - v)) == NULL) {
			names[i] = xstrndup(v, (size_t)(eq - v));
			dopts.sources[i].input = names[i];
			dopts.sources[i].path = eq + 1;
		} else {
			dopts.sources[i].path = v;
		}
	}
	dopts.n_sources = o->n_data;
	for (i = 0; i < o->n_dims && st == QR_OK; i++)
		st = parse_dims(o->dims[i], &dopts.overrides[i], &dnames[i],
				d);
	if (st != QR_OK)
		goto out;
	dopts.n_overrides = o->n_dims;
	dopts.samples = o->samples > 0 ? (size_t)o->samples : 20;
	dopts.seed = o->seed;
	dopts.input_h = o->input_h;
	dopts.input_w = o->input_w;
	for (i = 0; i < 3; i++) {
		dopts.mean[i] = o->n_mean ? o->mean[i] : 0.0f;
		dopts.std[i] = o->n_std ? o->std[i] : 1.0f;
	}
	dopts.scale = o->scale;
	dopts.layout = o->layout;
	dopts.order = o->order < 0 ? QR_ORDER_RGB
				   : (enum qr_channel_order)o->order;
	if ((st = qr_dataset_open(fmodel, &dopts, &ds, d)) != QR_OK)
		goto out;
	aopts.next = feed_next;
	aopts.user = ds;
	aopts.samples = qr_dataset_count(ds);
	aopts.source = qr_dataset_source(ds);
	aopts.preprocessing = qr_dataset_describe(ds);
	aopts.classes = qr_dataset_classes(ds, &n_classes);
	aopts.n_classes = n_classes;
	aopts.warn_first = warn_first;
	aopts.cos_threshold = o->cos_threshold;
	aopts.sqnr_threshold = o->sqnr_threshold;
	aopts.n_threads = nproc > 0 ? (int)nproc : 1;
	aopts.exact = o->exact;
	if (!o->quiet && isatty(2)) {
		aopts.progress = progress_draw;
		aopts.progress_user = &prog;
	}
	st = qr_analysis_run_data(an, fmodel,
				  (const struct qr_model *const *)qmodels,
				  o->n_quant, &aopts, d);
	if (prog.drawn)
		fputc('\n', stderr);
out:
	qr_dataset_free(ds);
	for (i = 0; i < MAX_DATA; i++) {
		free(names[i]);
		free(dnames[i]);
	}
	return st;
}

/* The weight analysis (qr_analysis_new) on a thread of its own. */
struct an_job {
	const struct qr_model *fmodel;
	const struct qr_model *const *qmodels;
	size_t n_quant;
	struct qr_analysis_opts opts;
	struct qr_analysis *an;
	struct qr_diag d;        /* its own: diags are not shared */
	enum qr_status st;
};

/* A job run on a thread of its own beside the caller, or by the caller
 * when no thread starts (or none is wanted); its own diag and status are
 * merged into the caller's once it is over (job_end). */
struct job {
	pthread_t th;
	int threaded;
	size_t at;               /* the caller's warnings before it */
};

static void
job_start(struct job *j, void *(*fn)(void *), void *arg, int thread,
	  const struct qr_diag *d)
{
	j->at = d->n_warnings;
	j->threaded = thread && pthread_create(&j->th, NULL, fn, arg) == 0;
	if (!j->threaded)
		fn(arg);
}

/* Wait for j; its warnings go before the caller's later ones, and its
 * error (jst, message in jd), if any, becomes d's and is returned. */
static enum qr_status
job_end(struct job *j, struct qr_diag *d, struct qr_diag *jd,
	enum qr_status jst)
{
	if (j->threaded)
		pthread_join(j->th, NULL);
	qr_diag_take_warnings(d, j->at, jd);
	if (jst != QR_OK)
		jst = qr_errorf(d, jst, "%s", jd->msg);
	qr_diag_clear(jd);
	return jst;
}

/* A model loading on a thread of its own. */
struct load_job {
	const char *path;
	struct qr_model *m;
	struct qr_diag d;        /* its own: diags are not shared */
	enum qr_status st;
};

static void *
load_job_run(void *arg)
{
	struct load_job *j = arg;

	j->st = qr_onnx_load(j->path, &j->m, &j->d);
	return NULL;
}

static void *
an_job_run(void *arg)
{
	struct an_job *j = arg;

	j->st = qr_analysis_new(j->fmodel, j->qmodels, j->n_quant, &j->opts,
				&j->an, &j->d);
	return NULL;
}

static enum qr_status
run_report(const struct options *o, const char *cmdline, struct qr_diag *d)
{
	struct qr_model *fmodel = NULL;
	struct qr_model *qmodels[MAX_QUANT] = {0};
	struct qr_analysis *an = NULL;
	struct qr_analysis_opts aopts = {0};
	struct qr_report_opts ropts = {0};
	struct qr_compare *old = NULL;
	enum qr_status st;
	double t0 = qr_now();
	size_t i;
	int partial = 0;

	/* a missing old report fails before minutes of analysis */
	if (o->compare_to != NULL &&
	    (st = qr_compare_load(o->compare_to, &old, d)) != QR_OK)
		goto out;
	{
		/*
		 * The float model loads on a thread of its own while this one
		 * loads the candidates: loading is mostly copying weights
		 * into fresh pages, and the second core would sit idle. Its
		 * error, if any, wins, as when it loaded first.
		 */
		struct load_job fj = { o->float_path, NULL, { 0 }, QR_OK };
		struct job j;
		enum qr_status fst;

		job_start(&j, load_job_run, &fj, o->n_quant > 0, d);
		st = QR_OK;
		for (i = 0; i < o->n_quant && st == QR_OK; i++)
			st = qr_onnx_load(o->quant_paths[i], &qmodels[i], d);
		fst = job_end(&j, d, &fj.d, fj.st);
		fmodel = fj.m;
		if (fst != QR_OK)
			st = fst;
		if (st != QR_OK)
			goto out;
	}
	aopts.bits = o->bits;
	aopts.tukey_k = 1.5;
	if (o->n_quant > 0 && !o->weights_only) {
		/*
		 * The weight analysis and the data run read the models and
		 * fill disjoint parts of the analysis, so the weights are
		 * analysed on a thread of their own while the data run
		 * starts (loading executors, the first float sample: work
		 * that leaves the second core idle). The weight analysis's
		 * error, if any, wins, as when it ran first.
		 */
		struct an_job job = { fmodel,
				      (const struct qr_model *const *)qmodels,
				      o->n_quant, aopts, NULL, { 0 }, QR_OK };
		struct qr_analysis *act = qr_analysis_new_data(o->n_quant);
		struct job j;
		enum qr_status dst;

		job_start(&j, an_job_run, &job, 1, d);
		dst = run_data(o, fmodel, qmodels, act, d);
		st = job_end(&j, d, &job.d, job.st);
		an = job.an;
		if (st == QR_OK && (st = dst) == QR_EPARTIAL)
			partial = 1;
		if (st == QR_OK || st == QR_EPARTIAL)
			qr_analysis_take_data(an, act);
		qr_analysis_free(act);
		if (st != QR_OK && st != QR_EPARTIAL)
			goto out;
		st = QR_OK;
	} else if ((st = qr_analysis_new(fmodel,
				(const struct qr_model *const *)qmodels,
				o->n_quant, &aopts, &an, d)) != QR_OK) {
		goto out;
	} else if (o->n_data > 0) {
		qr_warnf(d, "--data is ignored without --quant: there is no "
			 "candidate to compare");
	}
	ropts.templates_dir = o->templates;
	ropts.command_line = cmdline;
	ropts.version = QR_VERSION;
	ropts.ort_cpu = qr_kernels_ort_cpu();
	ropts.float_model = fmodel;
	ropts.gate = o->gate.n > 0 ? (struct qr_gate *)&o->gate : NULL;
	ropts.compare = old;
	st = qr_report_write(an, &ropts, o->outdir, d);
	if (st != QR_OK)
		goto out;
	if (!o->quiet)
		fprintf(stderr,
			"qreport: wrote %s/index.html (%zu weighted layers, "
			"%zu CLE sets, %zu quant pairings, %zu activations "
			"compared over %zu samples of %s data) in %.0f ms\n",
			o->outdir, an->n_weights, an->n_cle, an->n_qweights,
			an->n_act_pairs, an->data.samples,
			an->data.source ? an->data.source : "no",
			(qr_now() - t0) * 1e3);
	if (partial) {
		const char *why = an->data.why;

		for (i = 0; why == NULL && an->act_runs && i < o->n_quant; i++)
			why = an->act_runs[i].why;
		st = qr_errorf(d, QR_EPARTIAL, "activations not compared: %s",
			       why ? why : "a model could not run");
	}
	/* the gate: one line per check on stderr; a failed check wins over
	 * a partial report (exit 3, not 4) */
	for (i = 0; i < o->gate.n; i++) {
		char *line = qr_gate_line(&o->gate, i);

		if (o->gate.checks[i].n_fail > 0)
			fprintf(stderr, "qreport: check failed: %s\n", line);
		else if (o->gate.checks[i].n_items == 0)
			fprintf(stderr, "qreport: warning: check '%s' had "
				"nothing to check (no such items in this "
				"report)\n", o->gate.checks[i].expr);
		else if (!o->quiet)
			fprintf(stderr, "qreport: check passed: %s\n", line);
		free(line);
	}
	if (o->gate.n_failed > 0)
		st = qr_errorf(d, QR_ETHRESHOLD, "%zu of %zu --fail-if checks "
			       "failed; the report lists them in %s/index.html "
			       "and %s/summary.md", o->gate.n_failed, o->gate.n,
			       o->outdir, o->outdir);
out:
	qr_compare_free(old);
	qr_analysis_free(an);
	for (i = 0; i < o->n_quant; i++)
		qr_onnx_free(qmodels[i]);
	qr_onnx_free(fmodel);
	return st;
}

int
main(int argc, char **argv)
{
	struct options o = {0};
	struct qr_diag d = {0};
	enum qr_status st;
	char *cmdline;
	int exit_now, rc;
	size_t i;

	o.order = -1;
	o.cos_threshold = NAN;
	o.sqnr_threshold = NAN;
#ifdef M_MMAP_THRESHOLD
	/*
	 * Buffers of a few MiB come and go by the hundred (a chart's
	 * surface, a sample's file, a kernel's scratch). glibc gives each
	 * such buffer pages of its own until a free moves its threshold,
	 * and its first write then faults once per 4 KiB, 10 us apiece
	 * under a hypervisor that shadows page tables. From the heap,
	 * kept rather than trimmed, they are reused pages instead
	 * (resnet18's report: 27,000 page faults down to 20,000). These
	 * are the thresholds glibc itself moves to (at most) once such a
	 * buffer is freed, set from the start.
	 */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
	/* the kernels' pool owns the cores (see src/kernels/parallel.c):
	 * OpenBLAS's idle threads go before they spin through loading */
	qr_kernels_set_blas_threads(1);

	if (argc > 1 && strcmp(argv[1], "run") == 0)
		return qr_cli_run(argc - 1, argv + 1);
	cmdline = join_argv(argc, argv);
	st = parse_args(argc, argv, &o, &exit_now, &d);
	if (st == QR_OK && !exit_now)
		st = run_report(&o, cmdline, &d);
	if (!o.quiet)
		for (i = 0; i < d.n_warnings; i++)
			fprintf(stderr, "qreport: warning: %s\n",
				d.warnings[i].msg);
	if (st == QR_EPARTIAL)
		fprintf(stderr, "qreport: partial report: %s\n", d.msg);
	else if (st == QR_ETHRESHOLD)
		fprintf(stderr, "qreport: %s\n", d.msg);
	else if (st != QR_OK)
		fprintf(stderr, "qreport: error: %s\n", d.msg);
	rc = exit_code(st);
	qr_diag_clear(&d);
	options_free(&o);
	free(cmdline);
	return rc;
}
