/* report: escaping for every context a model string can land in. */
#include "report/report.h"
#include "report/report-int.h"

#include <stdint.h>
#include <string.h>

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one
 * (overlong forms, surrogates and code points above U+10FFFF included). */
static size_t
utf8_len(const unsigned char *s)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * Escape s for HTML text and attribute values into b: & < > " ' become
 * entities, control characters become U+FFFD (tab, CR and LF become a
 * space), invalid UTF-8 becomes U+FFFD, and strings longer than
 * QR_HTML_MAX_CHARS characters are cut there with an ellipsis (display
 * only: report.json keeps them whole). s may be NULL (nothing appended).
 */
void
qr_html_escape(struct qr_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t chars = 0, n;

	if (s == NULL)
		return;
	while (*p != '\0') {
		const unsigned char *q = p;

		/* a run of plain ASCII goes in one append (chart maps hold
		 * megabytes of it) */
		while (*q >= 0x20 && *q < 0x7f && *q != '&' && *q != '<' &&
		       *q != '>' && *q != '"' && *q != '\'' &&
		       chars + (size_t)(q - p) < QR_HTML_MAX_CHARS)
			q++;
		if (q > p) {
			qr_buf_append(b, p, (size_t)(q - p));
			chars += (size_t)(q - p);
			p = q;
			continue;
		}
		if (chars++ == QR_HTML_MAX_CHARS) {
			qr_buf_puts(b, "\xe2\x80\xa6"); /* … */
			break;
		}
		switch (*p) {
		case '&': qr_buf_puts(b, "&amp;"); p++; continue;
		case '<': qr_buf_puts(b, "&lt;"); p++; continue;
		case '>': qr_buf_puts(b, "&gt;"); p++; continue;
		case '"': qr_buf_puts(b, "&quot;"); p++; continue;
		case '\'': qr_buf_puts(b, "&#39;"); p++; continue;
		case '\t': case '\n': case '\r':
			qr_buf_putc(b, ' '); p++; continue;
		default:
			break;
		}
		if (*p < 0x20 || *p == 0x7f) {
			qr_buf_puts(b, REPLACEMENT);
			p++;
			continue;
		}
		n = utf8_len(p);
		if (n == 0) {
			qr_buf_puts(b, REPLACEMENT);
			p++;
			continue;
		}
		qr_buf_append(b, p, n);
		p += n;
	}
}

void
qr_md_escape(struct qr_buf *b, const char *s)
{
	/* Inline text only (never at a line start, where # - + also need
	 * care): these are the characters that can start markup or HTML
	 * mid-line in CommonMark and GFM. */
	static const char punct[] = "\\`*_[]|&~";
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	if (s == NULL)
		return;
	while (*p != '\0') {
		if (*p < 0x20 || *p == 0x7f) {
			qr_buf_putc(b, ' ');
			p++;
		} else if (*p == '<' || *p == '>') {
			/* entities, not "\\<": no raw tag text at all, even
			 * for a reader that ignores markdown escapes */
			qr_buf_puts(b, *p == '<' ? "&lt;" : "&gt;");
			p++;
		} else if (*p < 0x80) {
			if (strchr(punct, *p) != NULL)
				qr_buf_putc(b, '\\');
			qr_buf_putc(b, (char)*p++);
		} else if ((n = utf8_len(p)) == 0) {
			qr_buf_puts(b, REPLACEMENT);
			p++;
		} else {
			qr_buf_append(b, p, n);
			p += n;
		}
	}
}

void
qr_safe_name(struct qr_buf *b, const char *prefix, size_t index,
	     const char *name)
{
	const char *p;
	size_t kept = 0;

	qr_buf_printf(b, "%s%zu-", prefix, index);
	for (p = name != NULL ? name : ""; *p != '\0' && kept < 48; p++, kept++) {
		char c = *p;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')
			qr_buf_putc(b, c);
		else
			qr_buf_putc(b, '_');
	}
	if (kept == 0)
		qr_buf_puts(b, "layer");
}

char *
qr_utf8_dup(const char *s)
{
	struct qr_buf b = {0};
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	if (s == NULL)
		return NULL;
	while (*p != '\0') {
		if ((n = utf8_len(p)) == 0) {
			qr_buf_puts(&b, REPLACEMENT);
			p++;
		} else {
			qr_buf_append(&b, p, n);
			p += n;
		}
	}
	return qr_buf_take(&b);
}
