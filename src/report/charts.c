/* report: charts queued while the view is built, drawn together on
 * several threads, then shown as <img> plus a <map>. See report-int.h. */
#include "report/report.h"
#include "report/report-int.h"
#include "chart/chart.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Above this many points a <map> costs more page than it helps. */
#define MAX_AREAS 2048
/* Threads drawing charts (cairo and libpng work per surface). */
#define MAX_CHART_THREADS 8

struct qr_chart_pending {
	struct qr_chart_spec *spec; /* deep copy */
	char *file;                 /* name under charts/ */
	char *path;                 /* chartdir/file */
	char *alt;                  /* image alt text */
	size_t n_links;             /* entries in hrefs/titles */
	char **hrefs;               /* per x index, or NULL */
	char **titles;              /* per x index, or NULL */
	cJSON *o;                   /* where the HTML goes (borrowed) */
	char *key;                  /* under this key */
};

static char **
copy_strv(char *const *v, size_t n)
{
	char **c;
	size_t i;

	if (v == NULL)
		return NULL;
	c = xcalloc(n ? n : 1, sizeof *c);
	for (i = 0; i < n; i++)
		c[i] = v[i] != NULL ? xstrdup(v[i]) : NULL;
	return c;
}

static void
free_strv(char **v, size_t n)
{
	size_t i;

	for (i = 0; v != NULL && i < n; i++)
		free(v[i]);
	free(v);
}

void
qr_report_chart_queue(struct qr_chart_queue *q, cJSON *o, const char *key,
		      const char *file, const struct qr_chart_spec *spec,
		      const char *alt, char *const *hrefs,
		      char *const *titles)
{
	struct qr_chart_pending *p;
	size_t n = spec->n_series > 0 ? spec->series[0].n : 0;

	q->v = xreallocarray(q->v, q->n + 1, sizeof *q->v);
	p = &q->v[q->n++];
	p->spec = qr_chart_spec_copy(spec);
	p->file = xstrdup(file);
	p->path = qr_path_join(q->chartdir, file);
	p->alt = xstrdup(alt != NULL ? alt : "");
	p->n_links = n;
	p->hrefs = copy_strv(hrefs, n);
	p->titles = copy_strv(titles, n);
	p->o = o;
	p->key = xstrdup(key);
}

/* The <figure> for a drawn chart. */
static char *
chart_html(const struct qr_chart_pending *p, const struct qr_area *areas,
	   size_t n_areas)
{
	struct qr_buf b = {0};
	size_t i;

	if (n_areas > MAX_AREAS)
		n_areas = 0;
	qr_buf_puts(&b, "<figure class=\"chart\"><img src=\"charts/");
	qr_html_escape(&b, p->file);
	qr_buf_printf(&b, "\" width=\"%d\" height=\"%d\" alt=\"",
		      p->spec->width, p->spec->height);
	qr_html_escape(&b, p->alt);
	qr_buf_puts(&b, "\" loading=\"lazy\"");
	if (n_areas == 0) {
		qr_buf_puts(&b, "></figure>");
		return qr_buf_take(&b);
	}
	qr_buf_puts(&b, " usemap=\"#map-");
	qr_html_escape(&b, p->file);
	qr_buf_puts(&b, "\"><map name=\"map-");
	qr_html_escape(&b, p->file);
	qr_buf_puts(&b, "\">");
	for (i = 0; i < n_areas; i++) {
		const struct qr_area *r = &areas[i];

		if (r->index >= p->n_links)
			continue;
		qr_buf_printf(&b, "<area shape=\"rect\" coords=\"%d,%d,%d,%d\"",
			      r->x0, r->y0, r->x1, r->y1);
		if (p->hrefs != NULL && p->hrefs[r->index] != NULL) {
			qr_buf_puts(&b, " href=\"");
			qr_html_escape(&b, p->hrefs[r->index]);
			qr_buf_putc(&b, '"');
		}
		if (p->titles != NULL && p->titles[r->index] != NULL) {
			qr_buf_puts(&b, " title=\"");
			qr_html_escape(&b, p->titles[r->index]);
			qr_buf_puts(&b, "\" alt=\"");
			qr_html_escape(&b, p->titles[r->index]);
			qr_buf_putc(&b, '"');
		} else {
			qr_buf_puts(&b, " alt=\"\"");
		}
		qr_buf_putc(&b, '>');
	}
	qr_buf_puts(&b, "</map></figure>");
	return qr_buf_take(&b);
}

static int
chart_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	return n > MAX_CHART_THREADS ? MAX_CHART_THREADS : (int)n;
}

enum qr_status
qr_report_chart_flush(struct qr_chart_queue *q, struct qr_diag *d)
{
	struct qr_chart_job *jobs;
	enum qr_status st;
	size_t i;

	if (q->n == 0)
		return QR_OK;
	jobs = xcalloc(q->n, sizeof *jobs);
	for (i = 0; i < q->n; i++) {
		jobs[i].spec = q->v[i].spec;
		jobs[i].path = q->v[i].path;
		jobs[i].want_areas = q->v[i].hrefs != NULL ||
				     q->v[i].titles != NULL;
	}
	st = qr_chart_draw_jobs(jobs, q->n, chart_threads(), d);
	for (i = 0; i < q->n; i++) {
		if (st == QR_OK) {
			char *html = chart_html(&q->v[i], jobs[i].areas,
						jobs[i].n_areas);

			cJSON_AddStringToObject(q->v[i].o, q->v[i].key, html);
			free(html);
		}
		free(jobs[i].areas);
	}
	free(jobs);
	return st;
}

void
qr_report_chart_queue_free(struct qr_chart_queue *q)
{
	size_t i;

	for (i = 0; i < q->n; i++) {
		struct qr_chart_pending *p = &q->v[i];

		qr_chart_spec_free(p->spec);
		free(p->file);
		free(p->path);
		free(p->alt);
		free_strv(p->hrefs, p->n_links);
		free_strv(p->titles, p->n_links);
		free(p->key);
	}
	free(q->v);
	q->v = NULL;
	q->n = 0;
}
