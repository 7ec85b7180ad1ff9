/*
 * main: qreport's entry point. Hands `qreport run` to run_cmd.c, reads the
 * report's options (report_options.c), drives the pipeline load -> weight
 * analysis -> representative data through the float model and every
 * candidate -> report, and is the only place that prints the report's
 * errors (and the progress bar) and maps statuses to exit codes.
 */
#include <errno.h>
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

/* Exit codes; keep --help, qreport.1 and README.md's table in step. */
enum {
	EXIT_REPORT = 0,   /* report written */
	EXIT_USAGE = 1,    /* usage error */
	EXIT_INPUT = 2,    /* bad input (file, model or dataset) */
	EXIT_GATE = 3,     /* a --fail-if threshold was crossed */
	EXIT_PARTIAL = 4,  /* partial report */
};

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
	case QR_ENOMEM:
		break;
	}
	return EXIT_INPUT;
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
		if (errno || end == p || v < 0 || o->ndim == 8)
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

/* The data options from the command line, with what they borrow. */
struct data_spec {
	struct qr_dataset_opts dopts;
	char **names;            /* --data NAME= parts (heap) */
	char **dnames;           /* --input NAME: parts (heap) */
};

static void
data_spec_free(const struct qr_cli_args *o, struct data_spec *s)
{
	size_t i;

	for (i = 0; i < o->n_data; i++)
		free(s->names[i]);
	for (i = 0; i < o->n_dims; i++)
		free(s->dnames[i]);
	free(s->names);
	free(s->dnames);
	free(s->dopts.sources);
	free(s->dopts.overrides);
}

/* Open the data for the float model: samples of them. */
static enum qr_status
data_open(const struct qr_cli_args *o, const struct qr_model *fmodel,
	  size_t samples, struct qr_dataset **ds, struct qr_diag *d)
{
	struct data_spec sp;
	struct qr_dataset_opts *dopts = &sp.dopts;
	struct qr_data_source *srcs = xcalloc(o->n_data + 1, sizeof *srcs);
	struct qr_dims_override *ovs = xcalloc(o->n_dims + 1, sizeof *ovs);
	enum qr_status st = QR_OK;
	size_t i;

	memset(&sp, 0, sizeof sp);
	sp.names = xcalloc(o->n_data + 1, sizeof *sp.names);
	sp.dnames = xcalloc(o->n_dims + 1, sizeof *sp.dnames);
	dopts->sources = srcs;
	dopts->overrides = ovs;
	for (i = 0; i < o->n_data; i++) {
		const char *v = o->data[i], *eq = strchr(v, '=');

		if (eq != NULL && eq != v &&
		    memchr(v, '/', (size_t)(eq - v)) == NULL) {
			sp.names[i] = xstrndup(v, (size_t)(eq - v));
			srcs[i].input = sp.names[i];
			srcs[i].path = eq + 1;
		} else {
			srcs[i].path = v;
		}
	}
	dopts->n_sources = o->n_data;
	for (i = 0; i < o->n_dims && st == QR_OK; i++)
		st = parse_dims(o->dims[i], &ovs[i], &sp.dnames[i], d);
	if (st != QR_OK)
		goto out;
	dopts->n_overrides = o->n_dims;
	dopts->samples = samples;
	dopts->seed = o->seed;
	dopts->input_h = o->input_h;
	dopts->input_w = o->input_w;
	for (i = 0; i < 3; i++) {
		dopts->mean[i] = o->n_mean ? o->mean[i] : 0.0f;
		dopts->std[i] = o->n_std ? o->std[i] : 1.0f;
	}
	dopts->scale = o->scale;
	dopts->layout = o->layout;
	dopts->order = o->order < 0 ? QR_ORDER_RGB
				    : (enum qr_channel_order)o->order;
	st = qr_dataset_open(fmodel, dopts, ds, d);
out:
	data_spec_free(o, &sp);
	return st;
}

static size_t
n_samples(const struct qr_cli_args *o)
{
	return o->samples > 0 ? (size_t)o->samples : 20;
}

/* Open the data for the float model and run it through every model.
 * QR_EPARTIAL when some model could not run (the report says why). */
static enum qr_status
run_data(const struct qr_cli_args *o, const struct qr_model *fmodel,
	 struct qr_model *const *qmodels, struct qr_analysis *an,
	 struct qr_diag *d)
{
	struct qr_act_opts aopts = {0};
	struct qr_dataset *ds = NULL;
	struct progress prog = {0};
	enum qr_status st = QR_OK;
	size_t warn_first = d->n_warnings, n_classes = 0;
	long nproc = sysconf(_SC_NPROCESSORS_ONLN);

	if ((st = data_open(o, fmodel, n_samples(o), &ds, d)) != QR_OK)
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
	return st;
}

/* What to change: the hybrid runs on the first --sensitivity-samples
 * samples, read afresh. Their warnings (the data's, again) are dropped. */
static enum qr_status
run_sensitivity(const struct qr_cli_args *o, const struct qr_model *fmodel,
		struct qr_model *const *qmodels, struct qr_analysis *an,
		struct qr_diag *d)
{
	struct qr_sens_opts so = {0};
	struct qr_dataset *ds = NULL;
	struct qr_diag sd = {0};
	enum qr_status st = QR_OK;
	long nproc = sysconf(_SC_NPROCESSORS_ONLN);

	so.mode = o->sensitivity < 0 ? QR_SENS_QUICK
				     : (enum qr_sens_mode)o->sensitivity;
	so.samples = o->sens_samples > 0 ? (size_t)o->sens_samples
					 : QR_SENS_SAMPLES;
	if (so.samples > n_samples(o))
		so.samples = n_samples(o);
	so.target.metric = QR_SENS_COSINE;
	so.target.value = o->cos_threshold;
	if (o->target != NULL &&
	    (st = qr_sens_target_parse(o->target, &so.target, d)) != QR_OK)
		return st;
	so.n_threads = nproc > 0 ? (int)nproc : 1;
	if (so.mode != QR_SENS_NONE && o->n_quant > 0 && !o->weights_only) {
		if ((st = data_open(o, fmodel, so.samples, &ds, &sd)) ==
		    QR_OK) {
			so.next = feed_next;
			so.user = ds;
		} else {
			so.mode = QR_SENS_NONE;
			qr_warnf(d, "what to change not measured: %s", sd.msg);
		}
	} else {
		so.mode = QR_SENS_NONE;
	}
	st = qr_analysis_sensitivity(an, fmodel,
				     (const struct qr_model *const *)qmodels,
				     o->n_quant, &so, &sd);
	if (st != QR_OK)
		st = qr_errorf(d, st, "%s", sd.msg);
	qr_dataset_free(ds);
	qr_diag_clear(&sd);
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
 * error (*jst, message in jd), if any, becomes d's and is returned. The
 * job writes *jst and jd: they are read only once it has been joined. */
static enum qr_status
job_end(struct job *j, struct qr_diag *d, struct qr_diag *jd,
	const enum qr_status *jst)
{
	enum qr_status st;

	if (j->threaded)
		pthread_join(j->th, NULL);
	st = *jst;
	qr_diag_take_warnings(d, j->at, jd);
	if (st != QR_OK)
		st = qr_errorf(d, st, "%s", jd->msg);
	qr_diag_clear(jd);
	return st;
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

/* QR_EIO when the output folder holds an input, or an input holds it:
 * replacing an earlier report that keeps the run's models or data would
 * delete them, and a report written inside a data folder would be read
 * as data by the next run. */
static enum qr_status
check_out_vs_inputs(const struct qr_cli_args *o, struct qr_diag *d)
{
	const char **in = xcalloc(QR_CLI_MAX_QUANT + 2 * o->n_data + 4,
				  sizeof *in);
	enum qr_status st = QR_OK;
	size_t n = 0, i;

	in[n++] = o->float_path;
	for (i = 0; i < o->n_quant; i++)
		in[n++] = o->quant_paths[i];
	for (i = 0; i < o->n_data; i++) {
		const char *eq = strchr(o->data[i], '=');

		in[n++] = o->data[i];
		if (eq != NULL) /* NAME=PATH */
			in[n++] = eq + 1;
	}
	in[n++] = o->config;
	in[n++] = o->templates;
	in[n++] = o->compare_to;
	for (i = 0; i < n && st == QR_OK; i++)
		if (in[i] != NULL && qr_path_overlap(o->outdir, in[i]))
			st = qr_errorf(d, QR_EIO, "output '%s' and the input "
				       "'%s' hold one another: the report "
				       "would replace or mix with it; choose "
				       "another -o", o->outdir, in[i]);
	free(in);
	return st;
}

static enum qr_status
run_report(const struct qr_cli_args *o, const char *cmdline,
	   struct qr_diag *d)
{
	struct qr_model *fmodel = NULL;
	struct qr_model *qmodels[QR_CLI_MAX_QUANT] = {0};
	struct qr_analysis *an = NULL;
	struct qr_analysis_opts aopts = {0};
	struct qr_report_opts ropts = {0};
	struct qr_compare *old = NULL;
	enum qr_status st;
	double t0 = qr_now();
	size_t i;
	int partial = 0;

	if ((st = check_out_vs_inputs(o, d)) != QR_OK)
		goto out;
	if (o->max_memory > 0)
		qr_mem_set_budget(o->max_memory);
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
		fst = job_end(&j, d, &fj.d, &fj.st);
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
		st = job_end(&j, d, &job.d, &job.st);
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
	if ((st = run_sensitivity(o, fmodel, qmodels, an, d)) != QR_OK)
		goto out;
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
	if (o->write_fallback != NULL && o->n_quant > 0 &&
	    (st = qr_analysis_write_fallback(an, 0, fmodel, qmodels[0],
					     o->write_fallback, d)) != QR_OK)
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
		if (why == NULL && an->data.n_skipped > 0)
			st = qr_errorf(d, QR_EPARTIAL, "%zu of %zu samples "
				       "skipped (the float model cannot take "
				       "them; see the warnings)",
				       an->data.n_skipped, an->data.n_skipped +
				       an->data.samples);
		else
			st = qr_errorf(d, QR_EPARTIAL, "activations not "
				       "compared: %s", why ? why
				       : "a model could not run");
	}
	/* the gate: one line per check on stderr; a failed check wins over
	 * a partial report (exit 3, not 4) */
	for (i = 0; i < o->gate.n; i++) {
		char *line = qr_gate_line(&o->gate, i);

		if (o->gate.checks[i].n_fail > 0)
			qr_diag_print(stderr, "qreport: check failed: ", line);
		else if (o->gate.checks[i].n_items == 0)
			fprintf(stderr, "qreport: warning: check '%s' had "
				"nothing to check (no such items in this "
				"report)\n", o->gate.checks[i].expr);
		else if (!o->quiet)
			qr_diag_print(stderr, "qreport: check passed: ", line);
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
	struct qr_cli_args o;
	struct qr_diag d = {0};
	enum qr_status st;
	char *cmdline;
	int exit_now, rc;
	size_t i;

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
#ifdef M_ARENA_MAX
	/*
	 * One arena for every thread: the what-to-change runs free on one
	 * thread what another allocated (a model's values, one variant
	 * after another on two lanes, a store filled beside a variant),
	 * and an arena per thread keeps the pages its thread freed for
	 * that thread alone (resnet18's report with them: peak RSS 288 MB
	 * down to 266 MB, the time the same: executors allocate their
	 * buffers once, not per op).
	 */
	mallopt(M_ARENA_MAX, 1);
#endif
	/* the kernels' pool owns the cores (see src/kernels/parallel.c):
	 * OpenBLAS's idle threads go before they spin through loading */
	qr_kernels_set_blas_threads(1);

	/* interrupted runs remove the folders they were building */
	qr_cleanup_start();
	if (argc > 1 && strcmp(argv[1], "run") == 0)
		return qr_cli_run(argc - 1, argv + 1);
	cmdline = join_argv(argc, argv);
	st = qr_cli_args_parse(argc, argv, &o, &exit_now, &d);
	if (st == QR_OK && !exit_now)
		st = run_report(&o, cmdline, &d);
	if (!o.quiet)
		for (i = 0; i < d.n_warnings; i++)
			qr_diag_print(stderr, "qreport: warning: ",
				      d.warnings[i].msg);
	if (st == QR_EPARTIAL)
		qr_diag_print(stderr, "qreport: partial report: ", d.msg);
	else if (st == QR_ETHRESHOLD)
		qr_diag_print(stderr, "qreport: ", d.msg);
	else if (st != QR_OK)
		qr_diag_print(stderr, "qreport: error: ", d.msg);
	rc = exit_code(st);
	qr_diag_clear(&d);
	qr_cli_args_free(&o);
	free(cmdline);
	return rc;
}
