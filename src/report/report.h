/*
 * report: turn an analysis into the report folder.
 *
 *   report/index.html, model.html, layers.html, ...  (templates/ filled in)
 *   report/assets/                                     (CSS, small JS)
 *   report/charts/NAME.png                             (via chart/)
 *   report/report.json                                 (doc/report-json.md)
 *   report/summary.md
 *   report/layers/L<i>-<name>.html                     (one page per layer)
 *   report/graph.html, graph.svg                       (Graphviz layout)
 *   report/graph-q<k>.svg                              (candidate k >= 2)
 *   report/compare.html                                (--compare-to)
 *
 * Templates and assets are embedded in the binary at build time;
 * opts->templates_dir overrides them. Every model-derived string is escaped
 * for the context it lands in (HTML, JSON, markdown).
 *
 * The report is built in a temporary folder beside the target and renamed
 * into place; an existing report is replaced only when it is a qreport
 * report (or an empty folder), and a failed run leaves it untouched.
 */
#ifndef QR_REPORT_H
#define QR_REPORT_H

#include "util/util.h"

struct qr_analysis;
struct qr_model;
struct qr_gate;
struct qr_compare;

struct qr_report_opts {
	const char *templates_dir; /* NULL: use the embedded templates; else a
				      folder with every template at its top
				      and the assets in its assets/ */
	const char *command_line;  /* shown in the report */
	const char *version;       /* qreport version string */
	const char *ort_cpu;       /* whose ONNX Runtime kernels the runs
				      reproduced (qr_kernels_ort_cpu), or
				      NULL */
	const struct qr_model *float_model; /* borrowed; NULL: no graph view
					       and layers only from the
					       analysis */
	struct qr_gate *gate;      /* --fail-if checks, or NULL; their
				      outcome is filled in (see below) */
	const struct qr_compare *compare; /* --compare-to, or NULL */
};

/* Write the report for a into outdir. Errors: QR_EIO naming the path
 * (outdir is a file, not writable, or holds something that is not a
 * report), QR_EFORMAT for a broken template naming it. */
enum qr_status qr_report_write(const struct qr_analysis *a,
			       const struct qr_report_opts *opts,
			       const char *outdir, struct qr_diag *d);

/* Escape s for HTML text and attribute values into b (&<>"' and control
 * characters; invalid UTF-8 becomes U+FFFD). Strings longer than 1000
 * characters are cut with an ellipsis: this is for display only. s may be
 * NULL (nothing is appended). */
void qr_html_escape(struct qr_buf *b, const char *s);

/* Write the embedded templates and assets into dir (created if needed),
 * laid out as opts->templates_dir expects: the templates (index.html,
 * _head.html, ...) at the top and the assets under dir/assets/. A starting
 * point for custom templates. Errors: QR_EIO naming the path. */
enum qr_status qr_report_export_templates(const char *dir,
					  struct qr_diag *d);

/* ---- --fail-if: CI checks on the results (gate.c) ----
 *
 *   EXPR    = SUBJECT "." METRIC OP NUMBER     (spaces allowed around OP)
 *   SUBJECT = output | layer | weight | quant_weight
 *   OP      = < | <= | > | >=
 *
 * A check reads the report.json array of its subject (outputs[],
 * activations[], weights[], quant_weights[]) and fails when any item's
 * METRIC (a numeric key of that array, or an alias such as cosine for
 * cosine_mean) satisfies OP NUMBER. doc/report-json.md lists the metrics.
 */
struct qr_gate_check {
	char *expr;           /* as given (trimmed) */
	int subject;          /* index into the subject table of gate.c */
	const char *metric;   /* the report.json key (static string) */
	int op;               /* 0 <, 1 <=, 2 >, 3 >= */
	double value;         /* the NUMBER */
	/* filled by qr_report_write: */
	size_t n_items;       /* items the check looked at */
	size_t n_fail;        /* items that matched (0: the check passed) */
	char *worst;          /* the worst matching item, one line, or NULL */
};

struct qr_gate {
	size_t n;                     /* checks */
	struct qr_gate_check *checks; /* in the order given */
	size_t n_failed;              /* checks that failed (after the run) */
};

/* Parse expr and append it to g (zero-initialised by the caller).
 * QR_EUSAGE with a one-line message naming expr and what is wrong. */
enum qr_status qr_gate_add(struct qr_gate *g, const char *expr,
			   struct qr_diag *d);
/* Free what g holds (g itself is caller storage). */
void qr_gate_clear(struct qr_gate *g);
/* Check i of g after qr_report_write as one line (a new string), e.g.
 * "layer.sqnr_db < 20: 3 of 18 layers match; worst: conv3 (candidate 1)
 * sqnr_db = 12.3", or "...: passed (18 layers checked)". */
char *qr_gate_line(const struct qr_gate *g, size_t i);

/* ---- --compare-to: changes against a previous report (compare.c) ---- */

/* Read a previous report.json. *out is new (free with qr_compare_free).
 * QR_EIO when it cannot be read, QR_EFORMAT when it is not a qreport
 * report.json; both name path. */
enum qr_status qr_compare_load(const char *path, struct qr_compare **out,
			       struct qr_diag *d);
void qr_compare_free(struct qr_compare *c);

#endif
