/*
 * cli: qreport's command line. Parses options (and --config FILE.json),
 * drives the pipeline load -> analysis -> report, and is the only place
 * that prints errors and maps statuses to exit codes.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "onnx/onnx.h"
#include "report/report.h"
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

struct options {
	char *float_path;           /* --float */
	char *quant_paths[MAX_QUANT]; /* --quant, in order */
	size_t n_quant;
	char *outdir;               /* -o */
	char *templates;            /* --templates */
	int bits;                   /* --bits */
	int quiet;                  /* --quiet */
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
"                        templates, bits. Relative paths are relative to\n"
"                        the config file's folder.\n"
"      --templates DIR   use templates (and DIR/assets) instead of the\n"
"                        built-in ones\n"
"      --bits N          weight bits for predicted SQNR (2..16, default 8)\n"
"      --quiet           no progress or summary on stderr\n"
"  -h, --help            show this help and exit\n"
"      --version         show the version and exit\n"
"\n"
"Exit codes:\n"
"  0  report written\n"
"  1  usage error\n"
"  2  bad input (file, model or dataset); a one-line reason names the file\n"
"     or node\n"
"  3  a --fail-if threshold was crossed; the report is still written\n"
"  4  partial report: something could not be analysed; the report says\n"
"     what and why\n";

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

/* Fill the options the command line left unset from a JSON config. */
static enum qr_status
read_config(const char *path, struct options *o, int have_quant,
	    struct qr_diag *d)
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
}

/* Parse argv into o. Returns QR_OK, or QR_EUSAGE with a message; *exit_now
 * is set for --help/--version. */
static enum qr_status
parse_args(int argc, char **argv, struct options *o, int *exit_now,
	   struct qr_diag *d)
{
	enum { OPT_CONFIG = 256, OPT_TEMPLATES, OPT_BITS, OPT_QUIET,
	       OPT_VERSION };
	static const struct option longopts[] = {
		{"float", required_argument, NULL, 'f'},
		{"quant", required_argument, NULL, 'q'},
		{"output", required_argument, NULL, 'o'},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"templates", required_argument, NULL, OPT_TEMPLATES},
		{"bits", required_argument, NULL, OPT_BITS},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, OPT_VERSION},
		{NULL, 0, NULL, 0},
	};
	const char *config = NULL;
	char *end;
	long v;
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
		case 'h':
			fputs(usage_text, stdout);
			*exit_now = 1;
			return QR_OK;
		case OPT_VERSION:
			printf("qreport %s\n", QR_VERSION);
			*exit_now = 1;
			return QR_OK;
		case ':':
			return qr_errorf(d, QR_EUSAGE, "option '%s' needs a value",
					 argv[optind - 1]);
		default:
			return qr_errorf(d, QR_EUSAGE, "unknown option '%s'",
					 argv[optind - 1]);
		}
	}
	if (optind < argc)
		return qr_errorf(d, QR_EUSAGE, "unexpected argument '%s'",
				 argv[optind]);
	if (config != NULL) {
		enum qr_status st = read_config(config, o, o->n_quant > 0, d);

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

static enum qr_status
run_report(const struct options *o, const char *cmdline, struct qr_diag *d)
{
	struct qr_model *fmodel = NULL;
	struct qr_model *qmodels[MAX_QUANT] = {0};
	struct qr_analysis *an = NULL;
	struct qr_analysis_opts aopts = {0};
	struct qr_report_opts ropts = {0};
	enum qr_status st;
	double t0 = qr_now();
	size_t i;

	st = qr_onnx_load(o->float_path, &fmodel, d);
	if (st != QR_OK)
		goto out;
	for (i = 0; i < o->n_quant; i++) {
		st = qr_onnx_load(o->quant_paths[i], &qmodels[i], d);
		if (st != QR_OK)
			goto out;
	}
	aopts.bits = o->bits;
	aopts.tukey_k = 1.5;
	st = qr_analysis_new(fmodel, (const struct qr_model *const *)qmodels,
			     o->n_quant, &aopts, &an, d);
	if (st != QR_OK)
		goto out;
	ropts.templates_dir = o->templates;
	ropts.command_line = cmdline;
	ropts.version = QR_VERSION;
	st = qr_report_write(an, &ropts, o->outdir, d);
	if (st != QR_OK)
		goto out;
	if (!o->quiet)
		fprintf(stderr,
			"qreport: wrote %s/index.html (%zu weighted layers, "
			"%zu CLE sets, %zu quant pairings) in %.0f ms\n",
			o->outdir, an->n_weights, an->n_cle, an->n_qweights,
			(qr_now() - t0) * 1e3);
out:
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
	if (st != QR_OK)
		fprintf(stderr, "qreport: error: %s\n", d.msg);
	rc = exit_code(st);
	qr_diag_clear(&d);
	options_free(&o);
	free(cmdline);
	return rc;
}
