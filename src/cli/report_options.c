/*
 * report_options: the report's option table (`qreport --float ... -o DIR
 * [options]`), one row per option with its setter, --config handler,
 * help and man text, and qr_cli_args_parse, which drives it over argv
 * and the --config file into struct qr_cli_args (cli.h).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "cli/report-opts-int.h"
#include "kernels/kernels.h"
#include "report/report.h"
#include "run/dataset.h"
#include "util/util.h"

/* The generic setters' field of struct qr_cli_args. */
#define OFF(field) offsetof(struct qr_cli_args, field)

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
enum qr_status
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
enum qr_status
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

enum qr_status
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

enum qr_status
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

/* Append a --data or --input value to the heap array *v (no limit: a
 * decoder takes two inputs per layer). */
enum qr_status
push_str(char ***v, size_t *n, const char *opt, const char *s,
	 struct qr_diag *d)
{
	*v = xreallocarray(*v, *n + 1, sizeof **v);
	(*v)[(*n)++] = xstrdup(s);
	return QR_OK;
}


/* ---- command-line values ---- */

/* A string of its own at e->off; a later one replaces it. */
static enum qr_status
set_owned(const struct qr_cli_opt *e, void *opts, const char *val,
	  struct qr_diag *d)
{
	char **p = (char **)((char *)opts + e->off);

	free(*p);
	*p = xstrdup(val);
	return QR_OK;
}

static enum qr_status
set_quant(const struct qr_cli_opt *e, void *opts, const char *val,
	  struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	if (o->n_quant == MAX_QUANT)
		return qr_errorf(d, QR_EUSAGE, "at most %d --quant models",
				 MAX_QUANT);
	o->quant_paths[o->n_quant++] = xstrdup(val);
	return QR_OK;
}

static enum qr_status
set_bits(const struct qr_cli_opt *e, void *opts, const char *val,
	 struct qr_diag *d)
{
	struct qr_cli_args *o = opts;
	char *end;
	long v;

	errno = 0;
	v = strtol(val, &end, 10);
	if (errno || *end || v < 2 || v > 16)
		return qr_errorf(d, QR_EUSAGE, "--bits '%s': expected 2..16",
				 val);
	o->bits = (int)v;
	return QR_OK;
}

static enum qr_status
set_data(const struct qr_cli_opt *e, void *opts, const char *val,
	 struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return push_str(&o->data, &o->n_data, "--data", val, d);
}

static enum qr_status
set_input(const struct qr_cli_opt *e, void *opts, const char *val,
	  struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return push_str(&o->dims, &o->n_dims, "--input", val, d);
}

static enum qr_status
set_samples(const struct qr_cli_opt *e, void *opts, const char *val,
	    struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return parse_long("--samples", val, 1, 1000000000L, &o->samples, d);
}

static enum qr_status
set_input_size(const struct qr_cli_opt *e, void *opts, const char *val,
	       struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return parse_hw("--input-size", val, &o->input_h, &o->input_w, d);
}

static enum qr_status
set_mean(const struct qr_cli_opt *e, void *opts, const char *val,
	 struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return parse_floats("--mean", val, o->mean, &o->n_mean, d);
}

static enum qr_status
set_std(const struct qr_cli_opt *e, void *opts, const char *val,
	struct qr_diag *d)
{
	struct qr_cli_args *o = opts;
	enum qr_status st;

	st = parse_floats("--std", val, o->std, &o->n_std, d);
	if (st == QR_OK && (o->std[0] == 0 || o->std[1] == 0 ||
			    o->std[2] == 0))
		st = qr_errorf(d, QR_EUSAGE, "--std '%s': must not be 0", val);
	return st;
}

static enum qr_status
set_scale(const struct qr_cli_opt *e, void *opts, const char *val,
	  struct qr_diag *d)
{
	struct qr_cli_args *o = opts;
	enum qr_status st;
	double x;

	st = parse_double("--scale", val, 1e-30, 1e30, &x, d);
	o->scale = (float)x;
	return st;
}

static enum qr_status
set_layout(const struct qr_cli_opt *e, void *opts, const char *val,
	   struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return parse_layout(val, &o->layout, d);
}

static enum qr_status
set_order(const struct qr_cli_opt *e, void *opts, const char *val,
	  struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return parse_order(val, &o->order, d);
}

/* "8G", "512M", "1.5G", "4096" (MiB) into bytes; 0 when not a size. */
static size_t
parse_size(const char *v)
{
	char *end;
	double x, unit = 1 << 20;

	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || !(x > 0))
		return 0;
	switch (*end) {
	case 'K': case 'k': unit = 1 << 10; end++; break;
	case 'M': case 'm': unit = 1 << 20; end++; break;
	case 'G': case 'g': unit = (double)(1 << 30); end++; break;
	case 'T': case 't': unit = (double)(1 << 30) * 1024; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end += *end == 'i' ? 1 : 0;
	if (*end == 'B')
		end++;
	if (*end != '\0' || x * unit >= (double)SIZE_MAX || x * unit < 1)
		return 0;
	return (size_t)(x * unit);
}

static enum qr_status
set_max_memory(const struct qr_cli_opt *e, void *opts, const char *val,
	       struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	(void)e;
	if ((o->max_memory = parse_size(val)) == 0)
		return qr_errorf(d, QR_EUSAGE, "--max-memory '%s': expected a "
				 "size such as 8G, 512M or 4096 (MiB)", val);
	return QR_OK;
}

static enum qr_status
conf_max_memory(const struct qr_cli_opt *e, void *opts, const cJSON *it,
		const struct qr_cli_conf *c, struct qr_diag *d)
{
	struct qr_cli_args *o = opts;
	char buf[64];

	(void)e;
	if (cJSON_IsNumber(it))
		snprintf(buf, sizeof buf, "%.17g", it->valuedouble);
	else
		snprintf(buf, sizeof buf, "%.60s", it->valuestring);
	if ((o->max_memory = parse_size(buf)) == 0)
		return qr_errorf(d, QR_EUSAGE, "config '%s': max_memory: "
				 "expected a size such as \"8G\" or 4096 (MiB)",
				 c->path);
	return QR_OK;
}

static enum qr_status
set_seed(const struct qr_cli_opt *e, void *opts, const char *val,
	 struct qr_diag *d)
{
	struct qr_cli_args *o = opts;
	enum qr_status st = QR_OK;
	char *end;

	errno = 0;
	o->seed = strtoull(val, &end, 10);
	if (errno || end == val || *end || val[0] == '-')
		st = qr_errorf(d, QR_EUSAGE, "--seed '%s': expected a "
			       "non-negative integer", val);
	o->have_seed = 1;
	return st;
}

static enum qr_status
set_cos(const struct qr_cli_opt *e, void *opts, const char *val,
	struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return parse_double("--cos-threshold", val, -1, 1, &o->cos_threshold,
			    d);
}

static enum qr_status
set_sqnr(const struct qr_cli_opt *e, void *opts, const char *val,
	 struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return parse_double("--sqnr-threshold", val, -1000, 1000,
			    &o->sqnr_threshold, d);
}

/* "none", "quick" or "full" into *mode. */
enum qr_status
parse_sens(const char *what, const char *v, int *mode, struct qr_diag *d)
{
	static const char *const names[] = { "none", "quick", "full" };
	int i;

	for (i = 0; i < 3; i++)
		if (v != NULL && strcmp(v, names[i]) == 0) {
			*mode = i; /* enum qr_sens_mode's order */
			return QR_OK;
		}
	return qr_errorf(d, QR_EUSAGE, "%s '%s': expected none, quick or "
			 "full", what, v ? v : "");
}

static enum qr_status
set_sens(const struct qr_cli_opt *e, void *opts, const char *val,
	 struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return parse_sens("--sensitivity", val, &o->sensitivity, d);
}

static enum qr_status
set_sens_samples(const struct qr_cli_opt *e, void *opts, const char *val,
		 struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return parse_long("--sensitivity-samples", val, 1, 1000000L,
			  &o->sens_samples, d);
}

static enum qr_status
set_target(const struct qr_cli_opt *e, void *opts, const char *val,
	   struct qr_diag *d)
{
	struct qr_cli_args *o = opts;
	struct qr_sens_target t;

	free(o->target);
	o->target = xstrdup(val);
	return qr_sens_target_parse(val, &t, d);
}

static enum qr_status
set_fail_if(const struct qr_cli_opt *e, void *opts, const char *val,
	    struct qr_diag *d)
{
	struct qr_cli_args *o = opts;

	return qr_gate_add(&o->gate, val, d);
}

static enum qr_status
set_version(const struct qr_cli_opt *e, void *opts, const char *val,
	    struct qr_diag *d)
{
	printf("qreport %s\n", QR_VERSION);
	return QR_OK;
}


/* ---- the table ---- */

static const char usage_head[] =
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
"Options:\n";

/* Exit codes: keep main.c's enum, qreport.1 and README in step. */
static const char usage_tail[] =
"\n"
"Exit codes:\n"
"  0  report written\n"
"  1  usage error\n"
"  2  bad input, one line naming the file or node: unreadable or not a\n"
"     regular file (FIFOs are refused), not an ONNX model, a malformed\n"
"     model or dataset, a config/--compare-to/template over 256 MiB, an\n"
"     output folder that holds an input, not enough memory (--max-memory)\n"
"  3  a --fail-if threshold was crossed; the report is still written\n"
"  4  partial report: something could not be analysed (e.g. an op the\n"
"     engine cannot run, samples the model cannot take: skipped and\n"
"     counted); the report says what and why\n";

/*
 * Every option of the report, in --help and man page order. doc/qreport.1's
 * OPTIONS section is `qreport --roff-options` (`make man-options` rewrites
 * it; tests/test_cli checks they agree).
 */
static const struct qr_cli_opt report_opts[] = {
	{ .name = "float", .short_flag = 'f', .arg = "FILE",
	  .set = set_owned, .off = OFF(float_path),
	  .json = QR_CLI_JSTR, .conf = conf_path,
	  .help =
		"float (reference) ONNX model",
	  .man =
		"Float (reference) ONNX model." },
	{ .name = "quant", .short_flag = 'q', .arg = "FILE",
	  .set = set_quant,
	  .json = QR_CLI_JSTR | QR_CLI_JARR, .conf = conf_quant,
	  .help =
		"quantized ONNX model; repeat to compare candidates",
	  .man =
		"Quantized ONNX model. Repeat to compare several candidates." },
	{ .name = "output", .short_flag = 'o', .arg = "DIR",
	  .set = set_owned, .off = OFF(outdir),
	  .json = QR_CLI_JSTR, .conf = conf_path,
	  .help =
		"report folder (replaced atomically if it holds a\n"
		"previous qreport report)",
	  .man =
		"Report folder. It is built beside\n"
		".I DIR\n"
		"and renamed into place; an existing folder is replaced only when it holds\n"
		"a previous qreport report or is empty." },
	{ .name = "config", .arg = "FILE", .flags = QR_CLI_KEYS,
	  .set = qr_cli_set_arg, .off = OFF(config),
	  .help =
		"read options from a JSON file; command-line flags\n"
		"win. Relative paths are relative to the config\n"
		"file's folder. Keys:",
	  .man =
		"Read options from a JSON object. Command-line flags win (a\n"
		".B \\-\\-fail\\-if\n"
		"flag replaces the file's list). Relative paths are relative to the config\n"
		"file. Keys:" },
	{ .name = "templates", .arg = "DIR",
	  .set = set_owned, .off = OFF(templates),
	  .json = QR_CLI_JSTR, .conf = conf_path,
	  .help =
		"use templates (and DIR/assets) instead of the\n"
		"built-in ones",
	  .man =
		"Use the HTML templates in\n"
		".I DIR\n"
		"(and its\n"
		".I assets/\n"
		"folder) instead of the built-in ones." },
	{ .name = "bits", .arg = "N",
	  .set = set_bits,
	  .json = QR_CLI_JNUM, .conf = conf_bits,
	  .help =
		"weight bits for predicted SQNR (2..16, default 8)",
	  .man =
		"Weight bits for the predicted SQNR (2..16, default 8)." },
	{ .name = "data", .arg = "[NAME=]PATH",
	  .set = set_data,
	  .json = QR_CLI_JSTR | QR_CLI_JARR, .conf = conf_data,
	  .heading =
		"Representative data (run through the float model and every candidate,\n"
		"one sample at a time; without --data the samples are random, seeded,\n"
		"and the report says so):",
	  .help =
		"an image folder (class subfolders give labels),\n"
		".npy file(s), or an ONNX test_data_set folder;\n"
		"NAME= picks the graph input (repeat per input)",
	  .man =
		"Representative data, run one sample at a time through the float model and\n"
		"every candidate: an image folder (PNG, JPEG, BMP; class subfolders give\n"
		"labels and accuracy), one or more\n"
		".I .npy\n"
		"files, or an ONNX\n"
		".I test_data_set_*\n"
		"folder.\n"
		".I NAME=\n"
		"picks the graph input; repeat for models with several inputs. Without\n"
		".B \\-\\-data\n"
		"the samples are random (seeded) and the report says so. Unreadable files\n"
		"are skipped with a warning; data that cannot be read at all is exit 2." },
	{ .name = "samples", .arg = "N",
	  .set = set_samples,
	  .json = QR_CLI_JNUM, .conf = conf_samples,
	  .help =
		"samples to run (default 20)",
	  .man =
		"Samples to run (default 20). Memory does not grow with N: only running\n"
		"statistics are kept." },
	{ .name = "weights-only",
	  .set = qr_cli_set_flag, .off = OFF(weights_only),
	  .json = QR_CLI_JBOOL, .conf = conf_flag,
	  .help =
		"no data run: the report from the weights alone",
	  .man =
		"Skip the data run: the report from the weights alone (model and\n"
		"quantization summaries, weight ranges, quantized weights, CLE, memory)." },
	{ .name = "input", .arg = "NAME:DIMS",
	  .set = set_input,
	  .json = QR_CLI_JSTR | QR_CLI_JARR, .conf = conf_input,
	  .help =
		"shape of an input with dynamic dims, e.g.\n"
		"input:1x3x224x224 (repeatable)",
	  .man =
		"Shape of an input with dynamic dims, e.g.\n"
		".BR input:1x3x224x224 .\n"
		"A dim may be 0: an empty KV cache,\n"
		".BR past_key_values.0.key:1x2x0x32 ,\n"
		"which is also what a decoder LLM's past inputs get by default." },
	{ .name = "input-size", .arg = "HxW",
	  .set = set_input_size,
	  .json = QR_CLI_JSTR | QR_CLI_JARR, .conf = conf_input_size,
	  .help =
		"resize images to H x W (default: the model's)",
	  .man =
		"Resize images to H x W (default: the model's input size)." },
	{ .name = "scale", .arg = "S",
	  .set = set_scale,
	  .json = QR_CLI_JNUM, .conf = conf_scale,
	  .help =
		"pixel multiplier (default 1/255)",
	  .man =
		"Pixel multiplier (default 1/255). An image pixel p becomes\n"
		"(p * S - mean) / std." },
	{ .name = "mean", .arg = "A[,B,C]",
	  .set = set_mean,
	  .json = QR_CLI_JNUM | QR_CLI_JARR | QR_CLI_JSTR, .conf = conf_mean,
	  .help =
		"per-channel mean, subtracted after --scale",
	  .man =
		"Per-channel mean (one value for every channel, or three)." },
	{ .name = "std", .arg = "A[,B,C]",
	  .set = set_std,
	  .json = QR_CLI_JNUM | QR_CLI_JARR | QR_CLI_JSTR, .conf = conf_std,
	  .help =
		"per-channel std, divided by after --mean",
	  .man =
		"Per-channel standard deviation." },
	{ .name = "layout", .arg = "nchw|nhwc",
	  .set = set_layout,
	  .json = QR_CLI_JSTR, .conf = conf_layout,
	  .help =
		"image tensor layout (default: from the model)",
	  .man =
		"Image tensor layout (default: from the model's input shape)." },
	{ .name = "channel-order", .arg = "rgb|bgr",
	  .set = set_order,
	  .json = QR_CLI_JSTR, .conf = conf_order,
	  .help =
		"channel order the model expects (rgb)",
	  .man =
		"Channel order the model expects (default rgb)." },
	{ .name = "max-memory", .arg = "SIZE",
	  .set = set_max_memory,
	  .json = QR_CLI_JSTR | QR_CLI_JNUM, .conf = conf_max_memory,
	  .help =
		"memory the run may use, e.g. 8G or 512M (a bare number is "
		"MiB; default: what the machine has available, and the "
		"ulimit -v limit); a model that would need more is refused "
		"(exit 2)",
	  .man =
		"Memory the run may use, as 8G, 512M or a number of MiB "
		"(default: what the machine has available when the run "
		"starts, and the address-space limit of ulimit -v). "
		"Tensors and large buffers are checked before they get "
		"memory; a model that would need more is refused with the "
		"numbers (exit 2) instead of being killed by the system." },
	{ .name = "seed", .arg = "N",
	  .set = set_seed,
	  .json = QR_CLI_JNUM, .conf = conf_seed,
	  .help =
		"seed of the random data (default 0)",
	  .man =
		"Seed of the random data (default 0)." },
	{ .name = "cos-threshold", .arg = "C",
	  .set = set_cos,
	  .json = QR_CLI_JNUM, .conf = conf_cos,
	  .help =
		"flag layers whose mean cosine is below C (0.99)",
	  .man =
		"Flag layers whose mean cosine similarity is below C (default 0.99)." },
	{ .name = "sqnr-threshold", .arg = "DB",
	  .set = set_sqnr,
	  .json = QR_CLI_JNUM, .conf = conf_sqnr,
	  .help =
		"flag layers whose SQNR is below DB (20)",
	  .man =
		"Flag layers whose SQNR is below DB dB (default 20)." },
	{ .name = "sensitivity", .arg = "none|quick|full",
	  .set = set_sens,
	  .json = QR_CLI_JSTR, .conf = conf_sens,
	  .help =
		"what to change: runs with layers kept float,\n"
		"and CLE measured (quick: the 10 layers making\n"
		"most of the local error kept float, every CLE\n"
		"set equalized at once; full: every quantized\n"
		"layer both ways, each CLE set alone too;\n"
		"default quick)",
	  .man =
		"What to change: the candidate with only its weights and with only its\n"
		"activations quantized, each quantized layer kept float alone and\n"
		"quantized alone, and the fallback plan (the layers to keep float to\n"
		"meet\n"
		".BR \\-\\-target ),\n"
		"each measured by running it (doc/sensitivity.md says what each run\n"
		"means per format), and cross-layer equalization measured: the float\n"
		"model with its CLE sets' weights quantized per tensor, with and without\n"
		"the equalization.\n"
		".B quick\n"
		"(the default) keeps float alone the 10 layers that make most of the\n"
		"local error and measures every CLE set equalized at once,\n"
		".B full\n"
		"every quantized layer both ways and each CLE set alone too,\n"
		".B none\n"
		"nothing." },
	{ .name = "sensitivity-samples", .arg = "N",
	  .set = set_sens_samples,
	  .json = QR_CLI_JNUM, .conf = conf_sens_samples,
	  .help =
		"samples each sensitivity run uses (default 8)",
	  .man =
		"Samples each sensitivity run uses: the first N of the data (default 8)." },
	{ .name = "target", .arg = "EXPR",
	  .set = set_target,
	  .json = QR_CLI_JSTR, .conf = conf_target,
	  .help =
		"what the fallback plan must reach, e.g.\n"
		"'output.cosine>=0.999', output.sqnr>=30 or\n"
		"output.top1>=0.99 (default: output.cosine at\n"
		"--cos-threshold)",
	  .man =
		"What the fallback plan must reach:\n"
		".BR output.cosine>=C ,\n"
		".B output.sqnr>=DB\n"
		"or\n"
		".B output.top1>=F\n"
		"(the lowest over graph outputs; default output.cosine at\n"
		".BR \\-\\-cos\\-threshold )." },
	{ .name = "write-fallback", .arg = "FILE.onnx",
	  .set = set_owned, .off = OFF(write_fallback),
	  .json = QR_CLI_JSTR, .conf = conf_path,
	  .help =
		"also write the first candidate with the fallback\n"
		"plan's layers in float as an ONNX model",
	  .man =
		"Also write the first candidate with the fallback plan's layers kept\n"
		"float as an ONNX model (the report's fallback.json lists them)." },
	{ .name = "exact",
	  .set = qr_cli_set_flag, .off = OFF(exact),
	  .json = QR_CLI_JBOOL, .conf = conf_flag,
	  .help =
		"sum the local runs' float convs in ONNX\n"
		"Runtime's order too (slower; by default they use\n"
		"Winograd, which moves values by rounding only);\n"
		"the float model and cumulative runs always use\n"
		"ORT's order",
	  .man =
		"Sum the local runs' float convs in ONNX Runtime's order too. By default a\n"
		"local run's 3x3 stride-1 convs use Winograd (two to three times faster),\n"
		"which moves local errors by rounding only: a value at a quantization tie\n"
		"may land one step away. The float model's run and the candidates'\n"
		"cumulative runs always sum in ONNX Runtime's order." },
	{ .name = "ort-cpu", .arg = "CPU",
	  .set = qr_cli_set_ort_cpu,
	  .json = QR_CLI_JSTR, .conf = conf_ort_cpu,
	  .help =
		"reproduce ONNX Runtime as it runs on CPU: avx512vnni,\n"
		"avx2vnni (exact int8 sums), avx512 or avx2 (no\n"
		"VNNI: u8 x s8 products summed in saturating 16-bit\n"
		"pairs); the avx2 ones also use ORT's AVX2 Softmax.\n"
		"Default: native, this machine's",
	  .man =
		"Reproduce ONNX Runtime as it runs on CPU, whose kernels MLAS picks by CPU:\n"
		".B avx512vnni\n"
		"or\n"
		".B avx2vnni\n"
		"sum int8 products exactly;\n"
		".B avx512\n"
		"or\n"
		".B avx2\n"
		"(no VNNI) sum the products of uint8 activations and int8 weights in\n"
		"saturating 16-bit pairs (vpmaddubsw) in the integer GEMMs, QLinearConv\n"
		"and the other QOperator and com.microsoft integer ops, which can cost a\n"
		"layer several dB of SQNR; the avx2 ones also compute Softmax with ORT's\n"
		"AVX2 kernel. Default\n"
		".BR native :\n"
		"this machine's. Recorded in report.json as generator.ort_cpu." },
	{ .name = "quiet",
	  .set = qr_cli_set_flag, .off = OFF(quiet),
	  .json = QR_CLI_JBOOL, .conf = conf_flag,
	  .help =
		"no progress bar or summary on stderr",
	  .man =
		"Print nothing but errors: no progress bar (otherwise drawn on stderr when\n"
		"it is a terminal, counting samples x models) and no summary." },
	{ .name = "fail-if", .arg = "EXPR",
	  .set = set_fail_if,
	  .json = QR_CLI_JSTR | QR_CLI_JARR, .conf = conf_fail_if,
	  .heading =
		"CI use (the report is always written; see DIR/summary.md):",
	  .help =
		"exit 3 when a check fails; repeatable. EXPR is\n"
		"SUBJECT.METRIC OP NUMBER, OP one of < <= > >=,\n"
		"and fails when any item matches:\n"
		"  output.{cosine,cosine_min,sqnr_db,top1,accuracy}\n"
		"  layer.{cosine,cosine_min,sqnr_db,local_sqnr_db,\n"
		"         local_cosine,mse,max_abs,norm_l2,\n"
		"         rmse_over_scale,saturation}\n"
		"  weight.{max_rel_range,sqnr_per_tensor_db,\n"
		"          sqnr_per_channel_db,zero_range_channels}\n"
		"  quant_weight.{sqnr_db,clipped,compression}\n"
		"e.g. --fail-if 'output.cosine<0.999'\n"
		"     --fail-if 'layer.sqnr_db<20'",
	  .man =
		"A CI check; repeatable.\n"
		".I EXPR\n"
		"is\n"
		".IB SUBJECT . METRIC \" OP NUMBER\"\n"
		"with\n"
		".I OP\n"
		"one of\n"
		".BR \"< <= > >=\" ;\n"
		"the check fails when any item of the subject matches. Subjects and metrics\n"
		"(the report.json keys they read):\n"
		".B output\n"
		"(outputs[]: cosine, cosine_min, sqnr_db, top1, accuracy),\n"
		".B layer\n"
		"(activations[]: cosine, cosine_min, sqnr_db, local_sqnr_db, local_cosine,\n"
		"mse, max_abs, norm_l2, rmse_over_scale, saturation),\n"
		".B weight\n"
		"(weights[]: max_rel_range, sqnr_per_tensor_db, sqnr_per_channel_db,\n"
		"zero_range_channels),\n"
		".B quant_weight\n"
		"(quant_weights[]: sqnr_db, clipped, compression).\n"
		"An exact SQNR counts as infinite. A layer check skips tensors flagged\n"
		"cancellation (an Add, Sub or mean whose float value is rounding noise,\n"
		"below 1e\\-5 of its inputs). When a check fails the report is still\n"
		"written and lists it (index.html, summary.md, report.json \"gate\"), each\n"
		"failed check is one line on stderr, and the exit status is 3. A malformed\n"
		"expression is a usage error (exit 1)." },
	{ .name = "compare-to", .arg = "OLD/report.json",
	  .set = set_owned, .off = OFF(compare_to),
	  .json = QR_CLI_JSTR, .conf = conf_path,
	  .help =
		"list per-layer changes against a previous report\n"
		"(compare.html, summary.md); regressions are SQNR\n"
		"drops over 1 dB and cosine drops over 0.0005",
	  .man =
		"Compare with a previous report: outputs, activations and weights matched\n"
		"by name (candidates by\n"
		".B \\-\\-quant\n"
		"position) with before, after and change, regressions first\n"
		".RI ( DIR/compare.html ,\n"
		"summary.md, report.json \"compare\"). A regression is an SQNR drop over\n"
		"1 dB, a cosine drop over 0.0005 or a relative weight range grown by over\n"
		"10%. A missing or unreadable file is exit 2." },
	{ .name = "help", .short_flag = 'h', .flags = QR_CLI_HELP,
	  .help =
		"show this help and exit",
	  .man =
		"Show the help and exit." },
	{ .name = "version", .flags = QR_CLI_STOP,
	  .set = set_version,
	  .help =
		"show the version and exit",
	  .man =
		"Show the version and exit." },
	/* the man page's OPTIONS section (hidden) */
	{ .name = "roff-options", .flags = QR_CLI_MAN },
};

static const struct qr_cli_cmd report_cmd = {
	report_opts, sizeof report_opts / sizeof report_opts[0],
	usage_head, usage_tail, " (see qreport --help)",
};

/* See cli.h. */
enum qr_status
qr_cli_args_parse(int argc, char **argv, struct qr_cli_args *o,
		  int *exit_now, struct qr_diag *d)
{
	struct qr_cli_parsed p;
	enum qr_status st;

	memset(o, 0, sizeof *o);
	o->order = -1;
	o->cos_threshold = NAN;
	o->sqnr_threshold = NAN;
	o->sensitivity = -1;
	*exit_now = 0;
	st = qr_cli_parse(&report_cmd, argc, argv, o, &p, d);
	if (st != QR_OK || p.stop) {
		*exit_now = p.stop;
		return st;
	}
	if (p.next < argc)
		return qr_errorf(d, QR_EUSAGE, "unexpected argument '%s' "
				 "(options take their value after them; see "
				 "qreport --help)", argv[p.next]);
	if (o->config != NULL &&
	    (st = qr_cli_config(&report_cmd, o->config, o, p.given, d)) !=
		    QR_OK)
		return st;
	if (o->float_path == NULL)
		return qr_errorf(d, QR_EUSAGE,
				 "missing --float FILE (see qreport --help)");
	if (o->outdir == NULL)
		return qr_errorf(d, QR_EUSAGE,
				 "missing -o DIR (see qreport --help)");
	if (o->outdir[0] == '\0')
		return qr_errorf(d, QR_EUSAGE, "-o '': name a report folder");
	if (o->bits == 0)
		o->bits = 8;
	if (isnan(o->cos_threshold))
		o->cos_threshold = 0.99;
	if (isnan(o->sqnr_threshold))
		o->sqnr_threshold = 20.0;
	if (o->bits < 2 || o->bits > 16)
		return qr_errorf(d, QR_EUSAGE, "bits %d: expected 2..16",
				 o->bits);
	if (o->write_fallback != NULL &&
	    (o->sensitivity == QR_SENS_NONE || o->n_quant == 0 ||
	     o->weights_only))
		return qr_errorf(d, QR_EUSAGE, "--write-fallback '%s' needs a "
				 "--quant candidate run on data with "
				 "--sensitivity quick or full",
				 o->write_fallback);
	return QR_OK;
}

/* See cli.h. */
void
qr_cli_args_free(struct qr_cli_args *o)
{
	size_t i;

	free(o->float_path);
	for (i = 0; i < o->n_quant; i++)
		free(o->quant_paths[i]);
	free(o->outdir);
	free(o->templates);
	free(o->compare_to);
	free(o->target);
	free(o->write_fallback);
	qr_gate_clear(&o->gate);
	for (i = 0; i < o->n_data; i++)
		free(o->data[i]);
	for (i = 0; i < o->n_dims; i++)
		free(o->dims[i]);
	free(o->data);
	free(o->dims);
}
