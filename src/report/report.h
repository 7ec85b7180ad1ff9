/*
 * report: turn an analysis into the report folder.
 *
 *   report/index.html, model.html, layers.html, ...  (templates/ filled in)
 *   report/assets/                                     (CSS, small JS)
 *   report/charts/NAME.png                             (via chart/)
 *   report/report.json                                 (cJSON; DESIGN.md)
 *   report/summary.md
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

struct qr_report_opts {
	const char *templates_dir; /* NULL: use the embedded templates; else a
				      folder with every template at its top
				      and the assets in its assets/ */
	const char *command_line;  /* shown in the report */
	const char *version;       /* qreport version string */
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

#endif
