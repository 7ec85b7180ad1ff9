/* report: charts queued while the view is built and drawn meanwhile on
 * the other cores, then shown as <img> plus a <map>. See report-int.h. */
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
	struct qr_chart_job job;    /* what the pool draws */
	struct qr_chart_spec *spec; /* deep copy, or NULL for a heatmap */
	struct qr_heatmap_spec heat; /* the heatmap, when spec is NULL */
	char *file;                 /* name under charts/ */
	char *path;                 /* chartdir/file */
	char *alt;                  /* image alt text */
	size_t n_links;             /* entries in hrefs/titles */
	char **hrefs;               /* per x index, or NULL */
	char **titles;              /* per x index, or NULL */
	cJSON *o;                   /* where the HTML goes (borrowed), or
				       NULL (a heatmap's HTML is set when
				       it is queued) */
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

static int
chart_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	return n > MAX_CHART_THREADS ? MAX_CHART_THREADS : (int)n;
}

/* A new entry at the end of q, and the pool started on the first one. */
static struct qr_chart_pending *
pending_new(struct qr_chart_queue *q, const char *file)
{
	struct qr_chart_pending *p = xcalloc(1, sizeof *p);

	q->v = xreallocarray(q->v, q->n + 1, sizeof *q->v);
	q->v[q->n++] = p;
	p->file = xstrdup(file);
	p->path = qr_path_join(q->chartdir, file);
	p->job.path = p->path;
	if (q->pool == NULL)
		q->pool = qr_chart_pool_new(chart_threads());
	return p;
}

void
qr_report_chart_queue(struct qr_chart_queue *q, cJSON *o, const char *key,
		      const char *file, const struct qr_chart_spec *spec,
		      const char *alt, char *const *hrefs,
		      char *const *titles)
{
	struct qr_chart_pending *p = pending_new(q, file);
	size_t n = spec->n_series > 0 ? spec->series[0].n : 0;

	p->spec = qr_chart_spec_copy(spec);
	p->alt = xstrdup(alt != NULL ? alt : "");
	p->n_links = n;
	p->hrefs = copy_strv(hrefs, n);
	p->titles = copy_strv(titles, n);
	p->o = o;
	p->key = xstrdup(key);
	p->job.spec = p->spec;
	p->job.want_areas = hrefs != NULL || titles != NULL;
	qr_chart_pool_add(q->pool, &p->job);
}

void
qr_report_heatmap_queue(struct qr_chart_queue *q, const char *file,
			const float *v, size_t rows, size_t cols, int cell,
			float vmin, float vmax)
{
	struct qr_chart_pending *p = pending_new(q, file);

	p->heat = (struct qr_heatmap_spec){ v, rows, cols, cell, vmin,
					    vmax };
	p->job.heat = &p->heat;
	qr_chart_pool_add(q->pool, &p->job);
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

enum qr_status
qr_report_chart_flush(struct qr_chart_queue *q, struct qr_diag *d)
{
	enum qr_status st;
	size_t i;

	st = qr_chart_pool_finish(q->pool, d);
	q->pool = NULL;
	for (i = 0; i < q->n; i++) {
		struct qr_chart_pending *p = q->v[i];

		if (st == QR_OK && p->o != NULL) {
			char *html = chart_html(p, p->job.areas,
						p->job.n_areas);

			cJSON_AddStringToObject(p->o, p->key, html);
			free(html);
		}
		free(p->job.areas);
		p->job.areas = NULL;
	}
	return st;
}

void
qr_report_chart_queue_free(struct qr_chart_queue *q)
{
	size_t i;

	/* after a failure before the flush: the pool still reads v */
	qr_chart_pool_finish(q->pool, NULL);
	q->pool = NULL;
	for (i = 0; i < q->n; i++) {
		struct qr_chart_pending *p = q->v[i];

		qr_chart_spec_free(p->spec);
		free(p->job.areas);
		free(p->file);
		free(p->path);
		free(p->alt);
		free_strv(p->hrefs, p->n_links);
		free_strv(p->titles, p->n_links);
		free(p->key);
		free(p);
	}
	free(q->v);
	q->v = NULL;
	q->n = 0;
}
