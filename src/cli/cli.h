/*
 * cli: qreport's command line. main.c dispatches on argv[1].
 *
 * - main.c: the report pipeline (load, weight analysis, data run, report),
 *   errors and exit codes.
 * - options.c: option tables (struct qr_cli_opt, one row per option)
 *   driving getopt_long, --help, the man page's OPTIONS and --config.
 * - report_options.c: the report's option table and its values
 *   (struct qr_cli_args).
 * - run_cmd.c: `qreport run` and its option table.
 */
#ifndef QR_CLI_H
#define QR_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/report.h"
#include "run/dataset.h"
#include "util/util.h"

struct cJSON;
struct qr_cli_conf;
struct qr_cli_opt;

/* ---- option tables (options.c) ---- */

/*
 * Apply an option's command-line value val (NULL for one that takes
 * none; borrowed from argv) to the command's options opts. QR_EUSAGE with
 * a message naming the option and the value.
 */
typedef enum qr_status (*qr_cli_set_fn)(const struct qr_cli_opt *e,
					void *opts, const char *val,
					struct qr_diag *d);
/*
 * Apply v, the value of the option's --config key, to opts, unless an
 * earlier same key set it. c says where the file is. QR_EUSAGE with a
 * message.
 */
typedef enum qr_status (*qr_cli_conf_fn)(const struct qr_cli_opt *e,
					 void *opts, const struct cJSON *v,
					 const struct qr_cli_conf *c,
					 struct qr_diag *d);

/* struct qr_cli_opt.flags */
enum {
	QR_CLI_STOP = 1 << 0,  /* after its setter, parsing ends: exit 0 */
	QR_CLI_HELP = 1 << 1,  /* prints the command's --help, then stops */
	QR_CLI_MAN = 1 << 2,   /* prints the man page's option list, stops */
	QR_CLI_KEYS = 1 << 3,  /* its help and man text end with the list of
				* --config keys */
};

/* struct qr_cli_opt.json: the JSON types a --config key takes */
enum {
	QR_CLI_JSTR = 1 << 0,
	QR_CLI_JNUM = 1 << 1,
	QR_CLI_JBOOL = 1 << 2,
	QR_CLI_JARR = 1 << 3,
};

/*
 * One option of a command, described once: getopt_long, --help, the man
 * page and --config are all driven from its row. Its --config key is
 * its long name with '_' for '-'.
 */
struct qr_cli_opt {
	const char *name;        /* long name, without "--" */
	int short_flag;          /* one-letter alias, 0: none */
	const char *arg;         /* the value's placeholder ("FILE"; "a|b":
				  * literal choices); NULL: takes none */
	int flags;               /* QR_CLI_* */
	qr_cli_set_fn set;       /* applies a command-line value */
	size_t off;              /* for the generic setters: the field's
				  * offsetof in the command's options */
	int json;                /* QR_CLI_J* a --config key takes; 0: it
				  * is no key */
	qr_cli_conf_fn conf;     /* applies a --config value */
	const char *heading;     /* --help: a section title before it */
	const char *help;        /* --help text, lines of at most 55
				  * columns; NULL: hidden */
	const char *man;         /* the man page's paragraph (roff); NULL:
				  * not in it */
};

/* A command: its option table and the help around it. */
struct qr_cli_cmd {
	const struct qr_cli_opt *opts; /* the table, in --help order */
	size_t n_opts;           /* at most QR_CLI_MAX_OPTS */
	const char *usage;       /* --help before the options */
	const char *tail;        /* --help after them */
	const char *see;         /* ends usage errors, e.g.
				  * " (see qreport --help)" */
};

#define QR_CLI_MAX_OPTS 64

/* What qr_cli_parse saw besides the options' values. */
struct qr_cli_parsed {
	uint64_t given;          /* bit i: cmd->opts[i] was on the line */
	int stop;                /* --help or the like ran: exit 0 */
	int next;                /* argv index of the first operand */
};

/*
 * Parse argv's options (getopt_long, argv[0] skipped, operands moved to
 * the end) with cmd's table into opts. Stops at the first failing value
 * (QR_EUSAGE, its message in d), a missing value or an unknown option
 * (QR_EUSAGE), or an option flagged QR_CLI_STOP, QR_CLI_HELP or
 * QR_CLI_MAN (QR_OK, p->stop set).
 */
enum qr_status qr_cli_parse(const struct qr_cli_cmd *cmd, int argc,
			    char **argv, void *opts, struct qr_cli_parsed *p,
			    struct qr_diag *d);

/*
 * Fill the options the command line left unset (given, as from
 * qr_cli_parse) from the JSON object in the file path: each key of a
 * type its row takes is applied by the row's conf; a relative path in
 * it is relative to the file's folder. QR_EUSAGE for an unreadable file,
 * one that is no JSON object, an unknown or mistyped key, or a bad value.
 */
enum qr_status qr_cli_config(const struct qr_cli_cmd *cmd, const char *path,
			     void *opts, uint64_t given, struct qr_diag *d);

/* Print cmd's --help to f. */
void qr_cli_help(const struct qr_cli_cmd *cmd, FILE *f);

/* Print the man page's option list (roff, the body of .SH OPTIONS) from
 * cmd's table to f. */
void qr_cli_man(const struct qr_cli_cmd *cmd, FILE *f);

/* Generic setters: an int at e->off set to 1; a const char * at e->off
 * pointing at the value (borrowed from argv). */
enum qr_status qr_cli_set_flag(const struct qr_cli_opt *e, void *opts,
			       const char *val, struct qr_diag *d);
enum qr_status qr_cli_set_arg(const struct qr_cli_opt *e, void *opts,
			      const char *val, struct qr_diag *d);
/* --ort-cpu CPU: the kernels reproduce ONNX Runtime on CPU. */
enum qr_status qr_cli_set_ort_cpu(const struct qr_cli_opt *e, void *opts,
				  const char *val, struct qr_diag *d);

/* Where a --config file is, for its conf functions. */
struct qr_cli_conf {
	const char *path;        /* the file, as given */
	const char *dir;         /* its folder */
};

/* A path from a --config file, made relative to its folder (a new
 * string). */
char *qr_cli_conf_path(const struct qr_cli_conf *c, const char *p);

/* ---- the report's options (report_options.c) ---- */

#define QR_CLI_MAX_QUANT 16                   /* --quant models */

/* What the command line and --config ask of the report. */
struct qr_cli_args {
	char *float_path;           /* --float */
	char *quant_paths[QR_CLI_MAX_QUANT]; /* --quant, in order */
	size_t n_quant;
	char *outdir;               /* -o */
	const char *config;         /* --config, borrowed from argv */
	char *templates;            /* --templates */
	int bits;                   /* --bits */
	int quiet;                  /* --quiet */
	int weights_only;           /* --weights-only: no data run */
	int exact;                  /* --exact: every run in ORT's order */
	char **data;                /* --data [NAME=]PATH, as given (heap,
				     * n_data entries: one per input of a
				     * model with any number of them) */
	size_t n_data;
	char **dims;                /* --input NAME:DIMS, as given (heap) */
	size_t n_dims;
	long samples;               /* --samples; 0: unset (20) */
	size_t max_memory;          /* --max-memory, bytes; 0: unset */
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
	int sensitivity;            /* --sensitivity: enum qr_sens_mode;
				     * -1: unset (quick) */
	long sens_samples;          /* --sensitivity-samples; 0: unset (8) */
	char *target;               /* --target, as given; NULL: unset
				     * (output.cosine>=--cos-threshold) */
	char *write_fallback;       /* --write-fallback FILE.onnx */
};

/*
 * Parse argv, then the --config file, into o (caller storage, set here;
 * free it with qr_cli_args_free even on failure). --help and --version
 * print and set *exit_now. QR_EUSAGE with a message.
 */
enum qr_status qr_cli_args_parse(int argc, char **argv, struct qr_cli_args *o,
				 int *exit_now, struct qr_diag *d);

/* Free what o holds (o itself is caller storage). */
void qr_cli_args_free(struct qr_cli_args *o);

/* ---- qreport run (run_cmd.c) ---- */

/*
 * `qreport run MODEL.onnx --input NAME=FILE ... -o DIR [--dump-all]
 * [--profile]`: run a model on .npy/.pb inputs and write its outputs as
 * .npy. argv[0] is "run" (call it as qr_cli_run(argc - 1, argv + 1); a
 * full argv whose argv[1] is "run" is accepted too). Prints its own errors
 * and returns the exit code: 0 ok, 1 usage, 2 bad input.
 */
int qr_cli_run(int argc, char **argv);

#endif
