/* report: charts and heatmaps queued while the view is built and drawn
 * meanwhile on the other cores; each chart's <img> plus <map> is known
 * at once (its layout is measured when it is queued), so the pages are
 * written while the images are still being drawn. See report-int.h. */
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
	struct qr_chart_job job;     /* what the pool draws */
	struct qr_chart_spec *spec;  /* deep copy, or NULL for a heatmap */
	struct qr_heatmap_spec heat; /* the heatmap, when spec is NULL */
	char *path;                  /* chartdir/file */
};

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
	p->path = qr_path_join(q->chartdir, file);
	p->job.path = p->path;
	if (q->pool == NULL)
		q->pool = qr_chart_pool_new(chart_threads());
	return p;
}

/* See report-int.h. */
enum qr_status
qr_report_png_write(const struct qr_chart_queue *q, const char *file,
		    const uint8_t *rgb, int w, int h, struct qr_diag *d)
{
	size_t n = (size_t)w * (size_t)h, i;
	uint8_t *rgba = xmalloc(4 * (n ? n : 1));
	char *path = qr_path_join(q->chartdir, file);
	enum qr_status st;

	for (i = 0; i < n; i++) {
		memcpy(rgba + 4 * i, rgb + 3 * i, 3);
		rgba[4 * i + 3] = 255;
	}
	st = qr_png_write_rgba(path, rgba, w, h, 4 * w, d);
	free(path);
	free(rgba);
	return st;
}

/* Append v in decimal: a chart's <map> has thousands of coordinates. */
static void
put_int(struct qr_buf *b, int v)
{
	char tmp[16];
	size_t n = sizeof tmp;
	unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;

	do
		tmp[--n] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		tmp[--n] = '-';
	qr_buf_append(b, tmp + n, sizeof tmp - n);
}

/* The <figure> of chart file (spec) with a <map> of its areas. */
static char *
chart_html(const char *file, const struct qr_chart_spec *spec,
	   const char *alt, char *const *hrefs, char *const *titles,
	   const struct qr_area *areas, size_t n_areas)
{
	struct qr_buf b = {0};
	size_t i, n_links = spec->series[0].n;

	qr_buf_puts(&b, "<figure class=\"chart\"><img src=\"charts/");
	qr_html_escape(&b, file);
	qr_buf_printf(&b, "\" width=\"%d\" height=\"%d\" alt=\"",
		      spec->width, spec->height);
	qr_html_escape(&b, alt != NULL ? alt : "");
	qr_buf_puts(&b, "\" loading=\"lazy\"");
	if (n_areas == 0) {
		qr_buf_puts(&b, "></figure>");
		return qr_buf_take(&b);
	}
	qr_buf_puts(&b, " usemap=\"#map-");
	qr_html_escape(&b, file);
	qr_buf_puts(&b, "\"><map name=\"map-");
	qr_html_escape(&b, file);
	qr_buf_puts(&b, "\">");
	for (i = 0; i < n_areas; i++) {
		const struct qr_area *r = &areas[i];

		if (r->index >= n_links)
			continue;
		qr_buf_puts(&b, "<area shape=\"rect\" coords=\"");
		put_int(&b, r->x0);
		qr_buf_putc(&b, ',');
		put_int(&b, r->y0);
		qr_buf_putc(&b, ',');
		put_int(&b, r->x1);
		qr_buf_putc(&b, ',');
		put_int(&b, r->y1);
		qr_buf_putc(&b, '"');
		if (hrefs != NULL && hrefs[r->index] != NULL) {
			qr_buf_puts(&b, " href=\"");
			qr_html_escape(&b, hrefs[r->index]);
			qr_buf_putc(&b, '"');
		}
		if (titles != NULL && titles[r->index] != NULL) {
			qr_buf_puts(&b, " title=\"");
			qr_html_escape(&b, titles[r->index]);
			qr_buf_puts(&b, "\" alt=\"");
			qr_html_escape(&b, titles[r->index]);
			qr_buf_putc(&b, '"');
		} else {
			qr_buf_puts(&b, " alt=\"\"");
		}
		qr_buf_putc(&b, '>');
	}
	qr_buf_puts(&b, "</map></figure>");
	return qr_buf_take(&b);
}

/* Lay the chart out for its <map> now, store its HTML, then hand a copy
 * of spec to the pool. */
enum qr_status
qr_report_chart_queue(struct qr_chart_queue *q, cJSON *o, const char *key,
		      const char *file, const struct qr_chart_spec *spec,
		      const char *alt, char *const *hrefs,
		      char *const *titles, struct qr_diag *d)
{
	struct qr_chart_pending *p;
	struct qr_area *areas = NULL;
	size_t n_areas = 0;
	enum qr_status st;
	char *html;

	if ((hrefs != NULL || titles != NULL) && spec->n_series > 0 &&
	    spec->series != NULL && spec->series[0].n <= MAX_AREAS) {
		if ((st = qr_chart_areas(spec, file, &areas, &n_areas, d)) !=
		    QR_OK)
			return st;
	} else if (spec->n_series == 0 || spec->series == NULL) {
		return qr_errorf(d, QR_EUSAGE, "chart '%s': no series", file);
	}
	html = chart_html(file, spec, alt, hrefs, titles, areas, n_areas);
	cJSON_AddStringToObject(o, key, html);
	free(html);
	free(areas);
	p = pending_new(q, file);
	p->spec = qr_chart_spec_copy(spec);
	p->job.spec = p->spec;
	qr_chart_pool_add(q->pool, &p->job);
	return QR_OK;
}

/* Hand the heatmap to the pool; its values stay the caller's. */
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

/* Draw what is left here too and wait for the rest. */
enum qr_status
qr_report_chart_flush(struct qr_chart_queue *q, struct qr_diag *d)
{
	enum qr_status st = qr_chart_pool_finish(q->pool, d);

	q->pool = NULL;
	return st;
}

/* Wait for the pool if it still runs, then free every entry. */
void
qr_report_chart_queue_free(struct qr_chart_queue *q)
{
	size_t i;

	/* after a failure before the flush: the pool still reads v */
	qr_chart_pool_finish(q->pool, NULL);
	q->pool = NULL;
	for (i = 0; i < q->n; i++) {
		qr_chart_spec_free(q->v[i]->spec);
		free(q->v[i]->path);
		free(q->v[i]);
	}
	free(q->v);
	q->v = NULL;
	q->n = 0;
}
