/* report: a chart as a PNG plus the HTML that shows it with a <map>. */
#include "report/report.h"
#include "report/report-int.h"
#include "chart/chart.h"

#include <stdlib.h>
#include <string.h>

/* Above this many points a <map> costs more page than it helps. */
#define MAX_AREAS 2048

enum qr_status
qr_report_chart(const char *chartdir, const char *file,
		const struct qr_chart_spec *spec, const char *alt,
		char *const *hrefs, char *const *titles, char **html,
		struct qr_diag *d)
{
	enum qr_status st;
	struct qr_area *areas = NULL;
	struct qr_buf b = {0};
	size_t n_areas = 0, i;
	char *path = qr_path_join(chartdir, file);
	int want_map = hrefs != NULL || titles != NULL;

	*html = NULL;
	st = qr_chart_draw(spec, path, want_map ? &areas : NULL,
			   want_map ? &n_areas : NULL, d);
	if (st != QR_OK)
		goto out;
	if (n_areas > MAX_AREAS)
		n_areas = 0;
	qr_buf_puts(&b, "<figure class=\"chart\"><img src=\"charts/");
	qr_html_escape(&b, file);
	qr_buf_printf(&b, "\" width=\"%d\" height=\"%d\" alt=\"",
		      spec->width, spec->height);
	qr_html_escape(&b, alt);
	qr_buf_puts(&b, "\" loading=\"lazy\"");
	if (n_areas > 0) {
		qr_buf_puts(&b, " usemap=\"#map-");
		qr_html_escape(&b, file);
		qr_buf_puts(&b, "\"><map name=\"map-");
		qr_html_escape(&b, file);
		qr_buf_puts(&b, "\">");
		for (i = 0; i < n_areas; i++) {
			const struct qr_area *r = &areas[i];

			if (r->index >= spec->series[0].n)
				continue;

			qr_buf_printf(&b, "<area shape=\"rect\" coords=\"%d,%d,%d,%d\"",
				      r->x0, r->y0, r->x1, r->y1);
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
		qr_buf_puts(&b, "</map>");
	} else {
		qr_buf_putc(&b, '>');
	}
	qr_buf_puts(&b, "</figure>");
	*html = qr_buf_take(&b);
out:
	free(areas);
	free(path);
	return st;
}
