/* report: where templates and assets come from (embedded or a folder). */
#include "report/report.h"
#include "report/report-int.h"

#include <stdlib.h>
#include <string.h>

enum qr_status
qr_report_source_read(const char *dir, const char *name, char **out,
		      size_t *len, struct qr_diag *d)
{
	enum qr_status st;
	const struct qr_embedded *e;
	char *path;

	*out = NULL;
	if (len != NULL)
		*len = 0;
	if (dir == NULL) {
		for (e = qr_embedded_files; e->name != NULL; e++) {
			if (strcmp(e->name, name) != 0)
				continue;
			*out = xmalloc(e->len + 1);
			memcpy(*out, e->data, e->len);
			(*out)[e->len] = '\0';
			if (len != NULL)
				*len = e->len;
			return QR_OK;
		}
		return qr_errorf(d, QR_EIO, "no embedded file '%s'", name);
	}
	if (strncmp(name, "templates/", 10) == 0)
		path = qr_path_join(dir, name + 10);
	else
		path = qr_path_join(dir, name);
	st = qr_read_file(path, out, len, d);
	if (st != QR_OK)
		qr_errorf(d, st, "templates folder '%s': cannot read '%s'",
			  dir, path);
	free(path);
	return st;
}

/*
 * Write every embedded template and asset into dir (created when needed)
 * in the layout opts->templates_dir expects: templates at the top, assets
 * under assets/. Existing files are overwritten. QR_EIO names the path.
 */
enum qr_status
qr_report_export_templates(const char *dir, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	const struct qr_embedded *e;
	char *assets = qr_path_join(dir, "assets");

	if ((st = qr_mkdirs(assets, d)) != QR_OK)
		goto out;
	for (e = qr_embedded_files; e->name != NULL && st == QR_OK; e++) {
		const char *rel = strncmp(e->name, "templates/", 10) == 0
					  ? e->name + 10 : e->name;
		char *path = qr_path_join(dir, rel);

		st = qr_write_file(path, e->data, e->len, d);
		free(path);
	}
out:
	free(assets);
	return st;
}
