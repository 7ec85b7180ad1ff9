/*
 * run_cmd: `qreport run`, which runs one model on given inputs and writes
 * its outputs (and with --dump-all every intermediate tensor) as .npy
 * files. Useful on its own, and the way to check qreport's executor
 * against another runtime. See cli.h.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "graph/tensor.h"
#include "kernels/kernels.h"
#include "onnx/onnx.h"
#include "run/run.h"
#include "util/util.h"

enum {
	RUN_EXIT_OK = 0,
	RUN_EXIT_USAGE = 1,
	RUN_EXIT_INPUT = 2,
};

#define MAX_INPUTS 256

struct run_opts {
	const char *model;            /* positional */
	const char *in_spec[MAX_INPUTS]; /* NAME=FILE or FILE, borrowed */
	size_t n_in;
	const char *outdir;
	int dump_all;
	int profile;
	int threads;                  /* --threads, 0: online CPUs */
	int repeat;                   /* --repeat, 0: one plain run */
};

/* Names already given a file in the output folder. */
struct file_names {
	char **tensor;                /* tensor names (heap) */
	char **file;                  /* their file names (heap) */
	size_t n;
};

/* Hook state for --dump-all. */
struct dump_ctx {
	const char *outdir;
	struct file_names *names;
	struct qr_diag d;             /* why the hook stopped the run */
};

static int
is_ext(const char *path, const char *ext)
{
	size_t n = strlen(path), e = strlen(ext);

	return n >= e && strcmp(path + n - e, ext) == 0;
}

/* The file name for tensor name: safe characters, unique in the folder. */
static const char *
file_for(struct file_names *f, const char *name)
{
	char *s, *cand;
	size_t i, k;
	int clash, n = 1;

	for (i = 0; i < f->n; i++)
		if (strcmp(f->tensor[i], name) == 0)
			return f->file[i];
	s = xstrdup(name[0] ? name : "_");
	for (k = 0; s[k] != '\0'; k++) {
		char c = s[k];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			s[k] = '_';
	}
	cand = xasprintf("%s.npy", s);
	do {
		clash = 0;
		for (i = 0; i < f->n; i++)
			if (strcmp(f->file[i], cand) == 0)
				clash = 1;
		if (clash) {
			free(cand);
			cand = xasprintf("%s_%d.npy", s, ++n);
		}
	} while (clash);
	free(s);
	f->tensor = xreallocarray(f->tensor, f->n + 1, sizeof *f->tensor);
	f->file = xreallocarray(f->file, f->n + 1, sizeof *f->file);
	f->tensor[f->n] = xstrdup(name);
	f->file[f->n] = cand;
	return f->file[f->n++];
}

static void
file_names_free(struct file_names *f)
{
	size_t i;

	for (i = 0; i < f->n; i++) {
		free(f->tensor[i]);
		free(f->file[i]);
	}
	free(f->tensor);
	free(f->file);
}

static enum qr_status
write_tensor(const char *outdir, struct file_names *names,
	     const char *name, const struct qr_tensor *t, struct qr_diag *d)
{
	char *path = qr_path_join(outdir, file_for(names, name));
	struct qr_tensor *f = NULL;
	enum qr_status st = QR_OK;
	size_t i;

	/* .npy has no bfloat16: its values are written as float32, exactly */
	if (t->dtype == QR_DT_BFLOAT16 &&
	    (st = qr_tensor_new(QR_DT_FLOAT, t->ndim, t->dims, &f, d)) ==
	    QR_OK) {
		for (i = 0; i < t->n_elem; i++)
			((float *)f->data)[i] =
				qr_bf16_to_f32(((const uint16_t *)t->data)[i]);
		qr_warnf(d, "'%s' is bfloat16: written as float32 to '%s' "
			 "(.npy has no bfloat16)", name, path);
	}
	if (st == QR_OK)
		st = qr_npy_write(path, f != NULL ? f : t, d);
	qr_tensor_free(f);
	free(path);
	return st;
}

static int
dump_hook(const struct qr_node *node, struct qr_tensor *const *outs,
	  size_t n, void *user)
{
	struct dump_ctx *ctx = user;
	enum qr_status st;
	size_t j;

	for (j = 0; j < n; j++) {
		if (node->out[j][0] == '\0')
			continue;
		st = write_tensor(ctx->outdir, ctx->names, node->out[j],
				  outs[j], &ctx->d);
		if (st != QR_OK)
			return (int)st;
	}
	return 0;
}

static enum qr_status
set_input(const struct qr_cli_opt *e, void *opts, const char *val,
	  struct qr_diag *d)
{
	struct run_opts *o = opts;

	if (o->n_in == MAX_INPUTS)
		return qr_errorf(d, QR_EUSAGE, "at most %d --input",
				 MAX_INPUTS);
	o->in_spec[o->n_in++] = val;
	return QR_OK;
}

/* --threads N (1..256) or --repeat N (1..1000000) into the int at
 * e->off. */
static enum qr_status
set_count(const struct qr_cli_opt *e, void *opts, const char *val,
	  struct qr_diag *d)
{
	long hi = strcmp(e->name, "threads") == 0 ? 256 : 1000000;
	char *end;
	long v = strtol(val, &end, 10);

	if (*val == '\0' || *end != '\0' || v < 1 || v > hi)
		return qr_errorf(d, QR_EUSAGE, "--%s '%s': expected a positive "
				 "count", e->name, val);
	*(int *)((char *)opts + e->off) = (int)v;
	return QR_OK;
}

/* Every option of `qreport run`, in --help order. */
static const struct qr_cli_opt run_table[] = {
	{ .name = "input", .short_flag = 'i', .arg = "NAME=FILE",
	  .set = set_input,
	  .help =
		"a graph input from a .npy or .pb (TensorProto)\n"
		"file; repeat for each input. NAME= may be left\n"
		"out when the model has a single input" },
	{ .name = "output", .short_flag = 'o', .arg = "DIR",
	  .set = qr_cli_set_arg, .off = offsetof(struct run_opts, outdir),
	  .help =
		"output folder (created if needed)" },
	{ .name = "dump-all",
	  .set = qr_cli_set_flag, .off = offsetof(struct run_opts, dump_all),
	  .help =
		"also write every intermediate tensor" },
	{ .name = "profile",
	  .set = qr_cli_set_flag, .off = offsetof(struct run_opts, profile),
	  .help =
		"print time per op type to stderr" },
	{ .name = "threads", .arg = "N",
	  .set = set_count, .off = offsetof(struct run_opts, threads),
	  .help =
		"threads the kernels split work over (default:\n"
		"the number of online CPUs; OpenBLAS itself\n"
		"runs single-threaded inside them)" },
	{ .name = "ort-cpu", .arg = "CPU",
	  .set = qr_cli_set_ort_cpu,
	  .help =
		"reproduce ONNX Runtime as it runs on CPU (see\n"
		"qreport --help; default: native)" },
	{ .name = "repeat", .arg = "N",
	  .set = set_count, .off = offsetof(struct run_opts, repeat),
	  .help =
		"after 2 warm-up runs, time N runs and print\n"
		"\"MEDIAN_MS MIN_MS\" to stderr (with --profile,\n"
		"the profile covers the N timed runs)" },
	{ .name = "help", .short_flag = 'h', .flags = QR_CLI_HELP,
	  .help =
		"show this help and exit" },
};

static const struct qr_cli_cmd run_cmd = {
	run_table, sizeof run_table / sizeof run_table[0],
	"usage: qreport run MODEL.onnx --input NAME=FILE ... -o DIR [options]\n"
	"\n"
	"Run MODEL.onnx on the given inputs and write each graph output as\n"
	"DIR/<name>.npy (characters outside [A-Za-z0-9._-] in names become '_').\n"
	"\n"
	"Options:\n",
	"\n"
	"Exit codes: 0 ok, 1 usage error, 2 bad input (model, input file or\n"
	"shapes; a one-line reason names the file, node or tensor).\n",
	"",
};

/* Parse argv (argv[0] is "run") into o; *help when --help was printed. */
static enum qr_status
parse_run_args(int argc, char **argv, struct run_opts *o, int *help,
	       struct qr_diag *d)
{
	struct qr_cli_parsed p;
	enum qr_status st;
	int i;

	st = qr_cli_parse(&run_cmd, argc, argv, o, &p, d);
	*help = p.stop;
	if (st != QR_OK || p.stop)
		return st;
	i = p.next;
	if (i < argc)
		o->model = argv[i++];
	if (i < argc)
		return qr_errorf(d, QR_EUSAGE, "unexpected argument '%s'",
				 argv[i]);
	if (o->model == NULL)
		return qr_errorf(d, QR_EUSAGE, "missing MODEL.onnx (see "
				 "qreport run --help)");
	if (o->outdir == NULL)
		return qr_errorf(d, QR_EUSAGE, "missing -o DIR (see qreport "
				 "run --help)");
	return QR_OK;
}

/* Load every --input into ins[] (names borrowed from the model). */
static enum qr_status
load_inputs(const struct run_opts *o, const struct qr_exec *e,
	    struct qr_tensor **ins, struct qr_diag *d)
{
	const char *const *names;
	size_t n_names, i, k;
	enum qr_status st = QR_OK;

	names = qr_exec_inputs(e, &n_names);
	for (i = 0; i < o->n_in; i++) {
		const char *spec = o->in_spec[i], *eq = strchr(spec, '=');
		const char *file = eq ? eq + 1 : spec, *name = NULL;
		size_t nlen = eq ? (size_t)(eq - spec) : 0;

		if (eq == NULL) {
			if (n_names != 1)
				return qr_errorf(d, QR_EUSAGE, "--input '%s': "
						 "the model has %zu inputs, "
						 "write NAME=FILE", spec,
						 n_names);
			name = names[0];
		}
		for (k = 0; name == NULL && k < n_names; k++)
			if (strlen(names[k]) == nlen &&
			    strncmp(names[k], spec, nlen) == 0)
				name = names[k];
		if (name == NULL)
			return qr_errorf(d, QR_EUSAGE, "--input '%s': the model "
					 "has no input named '%.*s'", spec,
					 (int)nlen, spec);
		if (is_ext(file, ".pb"))
			st = qr_pb_read(file, name, &ins[i], d);
		else if (is_ext(file, ".npy"))
			st = qr_npy_read(file, name, &ins[i], d);
		else
			st = qr_errorf(d, QR_EUSAGE, "--input '%s': expected a "
				       ".npy or .pb file", spec);
		if (st != QR_OK)
			return st;
	}
	return QR_OK;
}

/* Time per op type, per run, over the runs the profile covers. */
static void
print_profile(struct qr_exec *e, int runs)
{
	const struct qr_exec_prof *p;
	struct qr_exec_mem mem;
	double total = 0, r = runs > 0 ? runs : 1;
	size_t n, i;

	p = qr_exec_profile(e, &n);
	for (i = 0; i < n; i++)
		total += p[i].nested ? 0 : p[i].seconds;
	fprintf(stderr, "%-24s %8s %12s %7s %12s\n", "op type", "calls/run",
		"ms/run", "share", "mean us");
	for (i = 0; i < n; i++)
		fprintf(stderr, "%-24s %8.0f %12.3f %6.1f%% %12.1f\n",
			p[i].op_type, (double)p[i].calls / r,
			p[i].seconds * 1e3 / r,
			total > 0 ? 100 * p[i].seconds / total : 0.0,
			p[i].calls ? p[i].seconds * 1e6 / (double)p[i].calls :
			0.0);
	fprintf(stderr, "%-24s %8s %12.3f\n", "total", "", total * 1e3 / r);
	qr_exec_mem(e, &mem);
	fprintf(stderr, "peak activation memory: %.2f MiB\n",
		(double)mem.peak_bytes / (1024.0 * 1024.0));
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * --repeat: one more warm-up run (the first, plain run was the other),
 * then o->repeat timed runs without a hook; prints "MEDIAN_MS MIN_MS" to
 * stderr. The profile, if any, is reset so it covers the timed runs.
 */
static enum qr_status
time_runs(const struct run_opts *o, struct qr_exec *e,
	  struct qr_tensor *const *ins, struct qr_diag *d)
{
	double *ms = xcalloc((size_t)o->repeat, sizeof *ms);
	enum qr_status st;
	int i;

	st = qr_exec_run(e, ins, o->n_in, NULL, NULL, d);
	if (st != QR_OK)
		goto out;
	qr_exec_profile_reset(e);
	for (i = 0; i < o->repeat; i++) {
		double t0 = qr_now();

		st = qr_exec_run(e, ins, o->n_in, NULL, NULL, d);
		if (st != QR_OK)
			goto out;
		ms[i] = (qr_now() - t0) * 1e3;
	}
	qsort(ms, (size_t)o->repeat, sizeof *ms, cmp_double);
	fprintf(stderr, "%.3f %.3f\n", ms[o->repeat / 2], ms[0]);
out:
	free(ms);
	return st;
}

static enum qr_status
run_main(const struct run_opts *o, struct qr_diag *d)
{
	struct qr_model *m = NULL;
	struct qr_exec *e = NULL;
	struct qr_exec_opts eo = {0};
	struct qr_tensor *ins[MAX_INPUTS] = {0};
	struct qr_tensor *const *outs;
	struct file_names names = {0};
	struct dump_ctx ctx = {0};
	const struct qr_graph_data *gd;
	enum qr_status st;
	size_t i, n_out;
	int made = 0; /* run created o->outdir */

	st = qr_onnx_load(o->model, &m, d);
	if (st != QR_OK)
		goto out;
	eo.profile = o->profile;
	eo.trim_folds = !o->dump_all; /* --dump-all writes them all */
	eo.views = !o->dump_all;
	eo.n_threads = o->threads;
	if (eo.n_threads < 1) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		eo.n_threads = n > 0 && n <= 256 ? (int)n : 1;
	}
	/* the kernels' pool splits every conv GEMM into single-threaded
	 * sgemm calls; OpenBLAS threads of its own would spin on the same
	 * cores between nodes */
	qr_kernels_set_blas_threads(1);
	st = qr_exec_new(m, &eo, &e, d);
	if (st != QR_OK)
		goto out;
	st = load_inputs(o, e, ins, d);
	if (st != QR_OK)
		goto out;
	made = access(o->outdir, F_OK) != 0;
	st = qr_mkdirs(o->outdir, d);
	if (st != QR_OK)
		goto out;
	ctx.outdir = o->outdir;
	ctx.names = &names;
	st = qr_exec_run(e, ins, o->n_in, o->dump_all ? dump_hook : NULL,
			 &ctx, d);
	if (st != QR_OK) {
		if (ctx.d.status != QR_OK)
			st = qr_errorf(d, ctx.d.status, "%s", ctx.d.msg);
		goto out;
	}
	if (o->repeat > 0 && (st = time_runs(o, e, ins, d)) != QR_OK)
		goto out;
	gd = &m->graph;
	outs = qr_exec_outputs(e, &n_out);
	for (i = 0; i < n_out; i++) {
		st = write_tensor(o->outdir, &names, gd->outputs[i].name,
				  outs[i], d);
		if (st != QR_OK)
			goto out;
	}
	if (o->profile)
		print_profile(e, o->repeat > 0 ? o->repeat : 1);
out:
	/* a failed run leaves no folder of half its outputs behind */
	if (st != QR_OK && made)
		qr_remove_tree(o->outdir);
	for (i = 0; i < o->n_in; i++)
		qr_tensor_free(ins[i]);
	qr_diag_clear(&ctx.d);
	file_names_free(&names);
	qr_exec_free(e);
	qr_onnx_free(m);
	return st;
}

int
qr_cli_run(int argc, char **argv)
{
	struct run_opts o = {0};
	struct qr_diag d = {0};
	enum qr_status st;
	int help = 0, rc;
	size_t i;

	/* Accept a full argv ("qreport run ...") as well as ("run ..."). */
	if (argc > 1 && strcmp(argv[0], "run") != 0 &&
	    strcmp(argv[1], "run") == 0) {
		argc--;
		argv++;
	}
	st = parse_run_args(argc, argv, &o, &help, &d);
	if (st == QR_OK && help)
		return RUN_EXIT_OK;
	if (st == QR_OK)
		st = run_main(&o, &d);
	for (i = 0; i < d.n_warnings; i++)
		qr_diag_print(stderr, "qreport run: warning: ",
			      d.warnings[i].msg);
	if (st != QR_OK)
		qr_diag_print(stderr, "qreport run: error: ", d.msg);
	rc = st == QR_OK ? RUN_EXIT_OK : st == QR_EUSAGE ? RUN_EXIT_USAGE :
		RUN_EXIT_INPUT;
	qr_diag_clear(&d);
	return rc;
}
