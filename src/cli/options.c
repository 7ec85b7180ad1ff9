/*
 * options: what a command's option table (struct qr_cli_opt rows, see
 * cli.h) drives: getopt_long over argv, the --config JSON reader, --help
 * and the man page's option list; and the setters several tables share.
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "kernels/kernels.h"
#include "util/util.h"

/* --help: the column help text starts at, and its width */
#define HELP_COL 24
#define HELP_WIDTH 55

/* ---- argv ---- */

/* The row getopt_long's c stands for: its short flag, or 256 + its index
 * for a long-only option. NULL for '?' (unknown). */
static const struct qr_cli_opt *
opt_of(const struct qr_cli_cmd *cmd, int c)
{
	size_t i;

	if (c >= 256 && (size_t)(c - 256) < cmd->n_opts)
		return &cmd->opts[c - 256];
	for (i = 0; i < cmd->n_opts; i++)
		if (cmd->opts[i].short_flag != 0 &&
		    cmd->opts[i].short_flag == c)
			return &cmd->opts[i];
	return NULL;
}

/* See cli.h. */
enum qr_status
qr_cli_parse(const struct qr_cli_cmd *cmd, int argc, char **argv, void *opts,
	     struct qr_cli_parsed *p, struct qr_diag *d)
{
	struct option longopts[QR_CLI_MAX_OPTS + 1];
	char shortopts[2 + 2 * QR_CLI_MAX_OPTS];
	const struct qr_cli_opt *e;
	enum qr_status st = QR_OK;
	size_t i, k = 0;
	int c;

	QR_ASSERT(cmd->n_opts <= QR_CLI_MAX_OPTS);
	memset(p, 0, sizeof *p);
	shortopts[k++] = ':';
	for (i = 0; i < cmd->n_opts; i++) {
		e = &cmd->opts[i];
		longopts[i].name = e->name;
		longopts[i].has_arg = e->arg ? required_argument : no_argument;
		longopts[i].flag = NULL;
		longopts[i].val = e->short_flag ? e->short_flag : 256 + (int)i;
		if (e->short_flag) {
			shortopts[k++] = (char)e->short_flag;
			if (e->arg)
				shortopts[k++] = ':';
		}
	}
	memset(&longopts[i], 0, sizeof longopts[i]);
	shortopts[k] = '\0';
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == ':') {
			st = qr_errorf(d, QR_EUSAGE, "option '%s' needs a "
				       "value%s", argv[optind - 1], cmd->see);
			break;
		}
		if ((e = opt_of(cmd, c)) == NULL) {
			st = qr_errorf(d, QR_EUSAGE, "unknown option '%s'%s",
				       argv[optind - 1], cmd->see);
			break;
		}
		p->given |= (uint64_t)1 << (e - cmd->opts);
		if (e->flags & QR_CLI_HELP)
			qr_cli_help(cmd, stdout);
		else if (e->flags & QR_CLI_MAN)
			qr_cli_man(cmd, stdout);
		else if ((st = e->set(e, opts, optarg, d)) != QR_OK)
			break;
		if (e->flags & (QR_CLI_STOP | QR_CLI_HELP | QR_CLI_MAN)) {
			p->stop = 1;
			break;
		}
	}
	p->next = optind;
	return st;
}

/* See cli.h. */
enum qr_status
qr_cli_set_flag(const struct qr_cli_opt *e, void *opts, const char *val,
		struct qr_diag *d)
{
	*(int *)((char *)opts + e->off) = 1;
	return QR_OK;
}

/* See cli.h. */
enum qr_status
qr_cli_set_arg(const struct qr_cli_opt *e, void *opts, const char *val,
	       struct qr_diag *d)
{
	*(const char **)((char *)opts + e->off) = val;
	return QR_OK;
}

/* See cli.h. */
enum qr_status
qr_cli_set_ort_cpu(const struct qr_cli_opt *e, void *opts, const char *val,
		   struct qr_diag *d)
{
	if (!qr_kernels_set_ort_cpu(val))
		return qr_errorf(d, QR_EUSAGE, "--ort-cpu '%s': expected "
				 "native, avx512vnni, avx512, avx2vnni or avx2",
				 val);
	return QR_OK;
}

/* ---- --config ---- */

/* 1 when the JSON key k names the option e (its long name, '_' for '-'). */
static int
key_is(const struct qr_cli_opt *e, const char *k)
{
	const char *n = e->name;

	for (; *n != '\0'; n++, k++)
		if (*k != (*n == '-' ? '_' : *n))
			return 0;
	return *k == '\0';
}

static int
json_fits(const cJSON *v, int types)
{
	return ((types & QR_CLI_JSTR) && cJSON_IsString(v)) ||
	       ((types & QR_CLI_JNUM) && cJSON_IsNumber(v)) ||
	       ((types & QR_CLI_JBOOL) && cJSON_IsBool(v)) ||
	       ((types & QR_CLI_JARR) && cJSON_IsArray(v));
}

/* See cli.h. */
char *
qr_cli_conf_path(const struct qr_cli_conf *c, const char *p)
{
	if (p[0] == '/' || strcmp(c->dir, ".") == 0)
		return xstrdup(p);
	return qr_path_join(c->dir, p);
}

/* See cli.h. */
enum qr_status
qr_cli_config(const struct qr_cli_cmd *cmd, const char *path, void *opts,
	      uint64_t given, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	struct qr_cli_conf c = { path, NULL };
	char *text = NULL, *dir = NULL;
	cJSON *root = NULL, *it;
	size_t len, i;

	/* a file that cannot be read is bad input (exit 2), as a model */
	if ((st = qr_read_file(path, &text, &len, d)) != QR_OK)
		return qr_errorf(d, st, "config: %s", d->msg);
	root = cJSON_ParseWithLength(text, len);
	if (root == NULL || !cJSON_IsObject(root)) {
		st = qr_errorf(d, QR_EUSAGE,
			       "config '%s': not a JSON object (near byte %ld)",
			       path, root ? 0L :
			       (long)(cJSON_GetErrorPtr() - text));
		goto out;
	}
	c.dir = dir = qr_path_dirname(path);
	cJSON_ArrayForEach(it, root) {
		const struct qr_cli_opt *e = NULL;

		for (i = 0; i < cmd->n_opts && e == NULL; i++)
			if (cmd->opts[i].json != 0 &&
			    key_is(&cmd->opts[i], it->string) &&
			    json_fits(it, cmd->opts[i].json))
				e = &cmd->opts[i];
		if (e == NULL) {
			st = qr_errorf(d, QR_EUSAGE,
				       "config '%s': unknown or mistyped key \"%s\"",
				       path, it->string);
			goto out;
		}
		/* the command line wins */
		if (given & (uint64_t)1 << (e - cmd->opts))
			continue;
		if ((st = e->conf(e, opts, it, &c, d)) != QR_OK)
			goto out;
	}
out:
	cJSON_Delete(root);
	free(text);
	free(dir);
	return st;
}

/* The --config keys of cmd after a space, each with " (string or array)"
 * (or number) when it takes an array too, separated by commas and ended
 * by a full stop; for roff, one .BR line a key. */
static void
put_keys(struct qr_buf *b, const struct qr_cli_cmd *cmd, int roff)
{
	const struct qr_cli_opt *e;
	const char *p, *type, *end;
	size_t i, n = 0, k = 0;

	for (i = 0; i < cmd->n_opts; i++)
		n += cmd->opts[i].json != 0;
	for (i = 0; i < cmd->n_opts; i++) {
		e = &cmd->opts[i];
		if (e->json == 0)
			continue;
		qr_buf_puts(b, roff ? "\n.BR " : k > 0 ? ", " : " ");
		for (p = e->name; *p != '\0'; p++)
			qr_buf_putc(b, *p == '-' ? '_' : *p);
		end = ++k == n ? "." : roff ? "," : "";
		type = e->json & QR_CLI_JNUM ? "number" : "string";
		if (!(e->json & QR_CLI_JARR))
			qr_buf_printf(b, roff ? " %s" : "%s", end);
		else if (roff)
			qr_buf_printf(b, " \" (%s or array)%s\"", type, end);
		else
			qr_buf_printf(b, " (%s or array)%s", type, end);
	}
}

/* ---- --help ---- */

/* text with each line longer than width broken at its last spaces. */
static char *
wrap(const char *text, size_t width)
{
	struct qr_buf b = {0};
	const char *p = text;
	size_t n, cut;

	while (*p != '\0') {
		n = strcspn(p, "\n");
		while (n > width) {
			for (cut = width; cut > 0 && p[cut] != ' '; cut--)
				;
			if (cut == 0)
				break;
			qr_buf_printf(&b, "%.*s\n", (int)cut, p);
			p += cut + 1;
			n -= cut + 1;
		}
		qr_buf_printf(&b, "%.*s", (int)n, p);
		p += n;
		if (*p == '\n')
			qr_buf_putc(&b, *p++);
	}
	return qr_buf_take(&b);
}

/*
 * "  -f, --float FILE" then the help text from column HELP_COL: two
 * spaces after a longer name, or from the next line when its first line
 * would pass column 79.
 */
static void
help_opt(struct qr_buf *b, const struct qr_cli_cmd *cmd,
	 const struct qr_cli_opt *e)
{
	struct qr_buf t = {0};
	size_t start = b->len, col, first;
	char *text;
	const char *p;

	qr_buf_puts(&t, e->help);
	if (e->flags & QR_CLI_KEYS)
		put_keys(&t, cmd, 0);
	text = wrap(t.data, HELP_WIDTH);
	qr_buf_free(&t);
	if (e->short_flag)
		qr_buf_printf(b, "  -%c, --%s", e->short_flag, e->name);
	else
		qr_buf_printf(b, "      --%s", e->name);
	if (e->arg)
		qr_buf_printf(b, " %s", e->arg);
	col = b->len - start;
	first = strcspn(text, "\n");
	if (col + 2 <= HELP_COL)
		qr_buf_printf(b, "%*s", (int)(HELP_COL - col), "");
	else if (col + 2 + first < 80)
		qr_buf_puts(b, "  ");
	else
		qr_buf_printf(b, "\n%*s", HELP_COL, "");
	for (p = text; *p != '\0'; p++) {
		qr_buf_putc(b, *p);
		if (*p == '\n')
			qr_buf_printf(b, "%*s", HELP_COL, "");
	}
	qr_buf_putc(b, '\n');
	free(text);
}

/* See cli.h. */
void
qr_cli_help(const struct qr_cli_cmd *cmd, FILE *f)
{
	struct qr_buf b = {0};
	size_t i;

	qr_buf_puts(&b, cmd->usage);
	for (i = 0; i < cmd->n_opts; i++) {
		if (cmd->opts[i].help == NULL)
			continue;
		if (cmd->opts[i].heading != NULL)
			qr_buf_printf(&b, "\n%s\n", cmd->opts[i].heading);
		help_opt(&b, cmd, &cmd->opts[i]);
	}
	qr_buf_puts(&b, cmd->tail);
	fwrite(b.data, 1, b.len, f);
	qr_buf_free(&b);
}

/* ---- the man page ---- */

/* s with '-' as roff's "\-" (and with bar, '|' as " | "). */
static void
put_roff(struct qr_buf *b, const char *s, int bar)
{
	for (; *s != '\0'; s++)
		if (*s == '-')
			qr_buf_puts(b, "\\-");
		else if (*s == '|' && bar)
			qr_buf_puts(b, " | ");
		else
			qr_buf_putc(b, *s);
}

/*
 * The .TP tag: the names in bold, a placeholder in italics, literal
 * choices ("nchw|nhwc") in bold:
 *   .BR \-f ", " \-\-float " " \fIFILE\fR
 *   .BI \-\-bits " N"
 *   .BR \-\-layout " " nchw | nhwc
 *   .B \-\-quiet
 */
static void
man_tag(struct qr_buf *b, const struct qr_cli_opt *e)
{
	const char *bar = e->arg ? strchr(e->arg, '|') : NULL;

	if (e->short_flag)
		qr_buf_printf(b, ".BR \\-%c \", \" \\-\\-", e->short_flag);
	else
		qr_buf_puts(b, bar ? ".BR \\-\\-" : e->arg ? ".BI \\-\\-" :
			    ".B \\-\\-");
	put_roff(b, e->name, 0);
	if (e->arg != NULL && e->short_flag) {
		qr_buf_puts(b, " \" \" \\fI");
		put_roff(b, e->arg, 0);
		qr_buf_puts(b, "\\fR");
	} else if (bar) {
		qr_buf_puts(b, " \" \" ");
		put_roff(b, e->arg, 1);
	} else if (e->arg != NULL) {
		qr_buf_puts(b, " \" ");
		put_roff(b, e->arg, 0);
		qr_buf_putc(b, '"');
	}
	qr_buf_putc(b, '\n');
}

/* See cli.h. */
void
qr_cli_man(const struct qr_cli_cmd *cmd, FILE *f)
{
	struct qr_buf b = {0};
	size_t i;

	for (i = 0; i < cmd->n_opts; i++) {
		if (cmd->opts[i].man == NULL)
			continue;
		qr_buf_puts(&b, ".TP\n");
		man_tag(&b, &cmd->opts[i]);
		qr_buf_puts(&b, cmd->opts[i].man);
		if (cmd->opts[i].flags & QR_CLI_KEYS)
			put_keys(&b, cmd, 1);
		qr_buf_putc(&b, '\n');
	}
	fwrite(b.data, 1, b.len, f);
	qr_buf_free(&b);
}
