/*
 * report: the template language, a small subset of mustache.
 *
 *   {{name}}        the value of name, HTML-escaped (qr_html_escape).
 *                   Strings as they are, numbers with %.6g (integers
 *                   whole), true/false as words, null as nothing.
 *   {{{name}}}      the value unescaped. Only for HTML fragments qreport
 *                   builds itself (charts with their <map>), never for a
 *                   model string. {{&name}} is the same.
 *   {{a.b}}         member b of a.
 *   {{.}}           the current item (inside a section over strings).
 *   {{#name}}...{{/name}}
 *                   a section: an array renders its body once per item
 *                   with the item pushed on the context stack; an object
 *                   renders once with itself pushed; true, a non-empty
 *                   string or a non-zero number render once; false, null,
 *                   0, "" and [] render nothing.
 *   {{^name}}...{{/name}}
 *                   inverted: renders once exactly when the section above
 *                   would render nothing.
 *   {{>name}}       a partial: the template _name.html, with the same
 *                   context.
 *   {{! text}}      a comment.
 *
 * Names are looked up from the innermost context outwards. A name found
 * nowhere is an error (QR_EFORMAT naming the template, line and name), so
 * a typo fails loudly instead of rendering as nothing; report data that
 * may be absent is therefore present as null. Unbalanced or mismatched
 * sections and unterminated tags are QR_EFORMAT when the template is
 * parsed, before anything renders.
 *
 * The context is a cJSON tree: the one report.c builds for the pages.
 */
#include "report/report.h"
#include "report/report-int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64   /* nested sections and partials, together */
#define MAX_PARTIALS 8 /* partials within partials */

enum tok_kind {
	T_TEXT,     /* literal text */
	T_VAR,      /* {{name}} */
	T_RAW,      /* {{{name}}} or {{&name}} */
	T_SECTION,  /* {{#name}} */
	T_INVERTED, /* {{^name}} */
	T_END,      /* {{/name}} */
	T_PARTIAL,  /* {{>name}} */
};

struct tok {
	enum tok_kind kind;
	const char *text; /* T_TEXT: start in the template text */
	size_t len;       /* T_TEXT: bytes; else length of name */
	char *name;       /* tag name (heap), NULL for T_TEXT */
	int line;         /* 1-based line of the tag */
	size_t end;       /* sections: index of the matching T_END */
};

struct tpl {
	const char *name; /* for messages */
	struct tok *toks;
	size_t n, cap;
};

struct render {
	const char *dir;          /* template source, NULL: embedded */
	const cJSON *stack[MAX_DEPTH];
	size_t depth;             /* entries used in stack */
	int partials;             /* partial nesting */
	struct qr_buf *out;
	struct qr_diag *d;
};

static void
tpl_free(struct tpl *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->toks[i].name);
	free(t->toks);
}

static struct tok *
tpl_push(struct tpl *t, enum tok_kind kind, int line)
{
	struct tok *k;

	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->toks = xreallocarray(t->toks, t->cap, sizeof *t->toks);
	}
	k = &t->toks[t->n++];
	memset(k, 0, sizeof *k);
	k->kind = kind;
	k->line = line;
	return k;
}

static int
valid_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0)
		return 0;
	if (n == 1 && s[0] == '.')
		return 1;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      (c == '.' && i > 0 && i + 1 < n && s[i + 1] != '.')))
			return 0;
	}
	return 1;
}

static int
count_lines(const char *from, const char *to)
{
	int n = 0;

	for (; from < to; from++)
		n += *from == '\n';
	return n;
}

/* Split text into tokens and match sections. */
static enum qr_status
tpl_parse(struct tpl *t, const char *name, const char *text,
	  struct qr_diag *d)
{
	size_t open[MAX_DEPTH];
	size_t n_open = 0;
	const char *p = text;
	int line = 1;

	t->name = name;
	while (*p != '\0') {
		const char *tag = strstr(p, "{{"), *body, *close, *b, *e;
		enum tok_kind kind;
		struct tok *k;

		if (tag == NULL)
			tag = p + strlen(p);
		if (tag > p) {
			k = tpl_push(t, T_TEXT, line);
			k->text = p;
			k->len = (size_t)(tag - p);
			line += count_lines(p, tag);
		}
		if (*tag == '\0')
			break;
		if (tag[2] == '{') {
			body = tag + 3;
			close = strstr(body, "}}}");
			kind = T_RAW;
		} else {
			body = tag + 2;
			close = strstr(body, "}}");
			switch (*body) {
			case '#': kind = T_SECTION; body++; break;
			case '^': kind = T_INVERTED; body++; break;
			case '/': kind = T_END; body++; break;
			case '>': kind = T_PARTIAL; body++; break;
			case '&': kind = T_RAW; body++; break;
			case '!': kind = T_TEXT; break; /* comment */
			default: kind = T_VAR; break;
			}
		}
		if (close == NULL)
			return qr_errorf(d, QR_EFORMAT,
					 "template '%s' line %d: unterminated tag",
					 name, line);
		p = close + (kind == T_RAW && tag[2] == '{' ? 3 : 2);
		if (kind == T_TEXT) { /* comment: drop it */
			line += count_lines(tag, p);
			continue;
		}
		for (b = body; *b == ' '; b++)
			;
		for (e = close; e > b && e[-1] == ' '; e--)
			;
		if (!valid_name(b, (size_t)(e - b)))
			return qr_errorf(d, QR_EFORMAT,
					 "template '%s' line %d: bad tag '%.*s'",
					 name, line, (int)(close - body), body);
		k = tpl_push(t, kind, line);
		k->name = xstrndup(b, (size_t)(e - b));
		k->len = (size_t)(e - b);
		if (kind == T_SECTION || kind == T_INVERTED) {
			if (n_open == MAX_DEPTH)
				return qr_errorf(d, QR_EFORMAT,
						 "template '%s' line %d: sections nested too deep",
						 name, line);
			open[n_open++] = t->n - 1;
		} else if (kind == T_END) {
			struct tok *o;

			if (n_open == 0)
				return qr_errorf(d, QR_EFORMAT,
						 "template '%s' line %d: {{/%s}} closes no section",
						 name, line, k->name);
			o = &t->toks[open[--n_open]];
			if (strcmp(o->name, k->name) != 0)
				return qr_errorf(d, QR_EFORMAT,
						 "template '%s' line %d: {{/%s}} closes section '%s' opened on line %d",
						 name, line, k->name, o->name, o->line);
			o->end = t->n - 1;
		}
		line += count_lines(tag, p);
	}
	if (n_open > 0) {
		struct tok *o = &t->toks[open[n_open - 1]];

		return qr_errorf(d, QR_EFORMAT,
				 "template '%s' line %d: section '%s' is never closed",
				 name, o->line, o->name);
	}
	return QR_OK;
}

/* Find name on the context stack; NULL when it is nowhere. */
static const cJSON *
lookup(const struct render *r, const char *name)
{
	const cJSON *v = NULL;
	const char *dot;
	size_t i;
	char *head;

	if (strcmp(name, ".") == 0)
		return r->depth > 0 ? r->stack[r->depth - 1] : NULL;
	dot = strchr(name, '.');
	head = dot ? xstrndup(name, (size_t)(dot - name)) : xstrdup(name);
	for (i = r->depth; i-- > 0;) {
		if (cJSON_IsObject(r->stack[i]) &&
		    (v = cJSON_GetObjectItemCaseSensitive(r->stack[i], head)))
			break;
	}
	free(head);
	while (v != NULL && dot != NULL) {
		const char *next = strchr(dot + 1, '.');
		char *part = next ? xstrndup(dot + 1, (size_t)(next - dot - 1))
				  : xstrdup(dot + 1);

		v = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, part)
				      : NULL;
		free(part);
		dot = next;
	}
	return v;
}

static int
truthy(const cJSON *v)
{
	if (cJSON_IsArray(v))
		return cJSON_GetArraySize(v) > 0;
	if (cJSON_IsString(v))
		return v->valuestring[0] != '\0';
	if (cJSON_IsNumber(v))
		return v->valuedouble != 0;
	return cJSON_IsTrue(v) || cJSON_IsObject(v);
}

static enum qr_status render_range(struct render *r, const struct tpl *t,
				   size_t from, size_t to);

static enum qr_status
render_partial(struct render *r, const struct tpl *t, const struct tok *k)
{
	enum qr_status st;
	struct tpl sub = {0};
	char *file = xasprintf("_%s.html", k->name);
	char *path = xasprintf("templates/%s", file);
	char *text = NULL;

	if (r->partials >= MAX_PARTIALS) {
		st = qr_errorf(r->d, QR_EFORMAT,
			       "template '%s' line %d: partials nested too deep at '%s'",
			       t->name, k->line, k->name);
		goto out;
	}
	st = qr_report_source_read(r->dir, path, &text, NULL, r->d);
	if (st != QR_OK)
		goto out;
	st = tpl_parse(&sub, file, text, r->d);
	if (st != QR_OK)
		goto out;
	r->partials++;
	st = render_range(r, &sub, 0, sub.n);
	r->partials--;
out:
	tpl_free(&sub);
	free(text);
	free(path);
	free(file);
	return st;
}

static enum qr_status
render_value(struct render *r, const struct tpl *t, const struct tok *k,
	     const cJSON *v)
{
	char num[64];

	if (cJSON_IsString(v)) {
		if (k->kind == T_RAW)
			qr_buf_puts(r->out, v->valuestring);
		else
			qr_html_escape(r->out, v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		double x = v->valuedouble;

		if (x == floor(x) && fabs(x) < 1e15)
			snprintf(num, sizeof num, "%.0f", x);
		else
			snprintf(num, sizeof num, "%.6g", x);
		qr_buf_puts(r->out, num);
	} else if (cJSON_IsBool(v)) {
		qr_buf_puts(r->out, cJSON_IsTrue(v) ? "true" : "false");
	} else if (!cJSON_IsNull(v)) {
		return qr_errorf(r->d, QR_EFORMAT,
				 "template '%s' line %d: '%s' is a %s, not a value",
				 t->name, k->line, k->name,
				 cJSON_IsArray(v) ? "list" : "object");
	}
	return QR_OK;
}

static enum qr_status
push(struct render *r, const struct tpl *t, const struct tok *k,
     const cJSON *v)
{
	if (r->depth == MAX_DEPTH)
		return qr_errorf(r->d, QR_EFORMAT,
				 "template '%s' line %d: sections nested too deep",
				 t->name, k->line);
	r->stack[r->depth++] = v;
	return QR_OK;
}

static enum qr_status
render_range(struct render *r, const struct tpl *t, size_t from, size_t to)
{
	enum qr_status st = QR_OK;
	size_t i;

	for (i = from; i < to && st == QR_OK; i++) {
		const struct tok *k = &t->toks[i];
		const cJSON *v, *item;

		if (k->kind == T_TEXT) {
			qr_buf_append(r->out, k->text, k->len);
			continue;
		}
		if (k->kind == T_PARTIAL) {
			st = render_partial(r, t, k);
			continue;
		}
		v = lookup(r, k->name);
		if (v == NULL) {
			st = qr_errorf(r->d, QR_EFORMAT,
				       "template '%s' line %d: unknown variable '%s'",
				       t->name, k->line, k->name);
			break;
		}
		switch (k->kind) {
		case T_VAR:
		case T_RAW:
			st = render_value(r, t, k, v);
			break;
		case T_INVERTED:
			if (!truthy(v))
				st = render_range(r, t, i + 1, k->end);
			i = k->end;
			break;
		case T_SECTION:
			if (cJSON_IsArray(v)) {
				cJSON_ArrayForEach(item, v) {
					if ((st = push(r, t, k, item)) != QR_OK)
						break;
					st = render_range(r, t, i + 1, k->end);
					r->depth--;
					if (st != QR_OK)
						break;
				}
			} else if (truthy(v)) {
				if ((st = push(r, t, k, v)) == QR_OK) {
					st = render_range(r, t, i + 1, k->end);
					r->depth--;
				}
			}
			i = k->end;
			break;
		default:
			QR_ASSERT(!"stray section end");
		}
	}
	return st;
}

enum qr_status
qr_tpl_render(const char *dir, const char *name, const char *text,
	      const cJSON *ctx, struct qr_buf *out, struct qr_diag *d)
{
	enum qr_status st;
	struct tpl t = {0};
	struct render r = {0};

	st = tpl_parse(&t, name, text, d);
	if (st != QR_OK)
		goto out;
	r.dir = dir;
	r.out = out;
	r.d = d;
	r.stack[r.depth++] = ctx;
	st = render_range(&r, &t, 0, t.n);
out:
	tpl_free(&t);
	return st;
}

enum qr_status
qr_tpl_render_file(const char *dir, const char *name, const cJSON *ctx,
		   struct qr_buf *out, struct qr_diag *d)
{
	enum qr_status st;
	char *path = xasprintf("templates/%s", name);
	char *text = NULL;

	st = qr_report_source_read(dir, path, &text, NULL, d);
	if (st == QR_OK)
		st = qr_tpl_render(dir, name, text, ctx, out, d);
	free(text);
	free(path);
	return st;
}
