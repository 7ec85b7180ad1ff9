/*
 * report: report.json read back. The --fail-if checks (gate.c) read this
 * run's tree, --compare-to (compare.c) reads a previous run's beside it,
 * and the CI pages (view_ci.c) read the "gate" and "compare" objects
 * those wrote: all through these, so a key means the same to each of
 * them (doc/report-json.md).
 */
#include "report/report.h"
#include "report/report-int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

double
qr_report_item_num(const cJSON *item, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, key);
	size_t n = strlen(key);

	if (cJSON_IsNumber(v))
		return v->valuedouble;
	if (cJSON_IsNull(v) && n > 3 && strcmp(key + n - 3, "_db") == 0)
		return INFINITY;
	return NAN;
}

const char *
qr_report_item_str(const cJSON *item, const char *key, const char *absent)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, key);

	return cJSON_IsString(v) ? v->valuestring : absent;
}

long
qr_report_item_quant(const cJSON *item)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, "quant");

	return cJSON_IsNumber(v) ? v->valueint : -1;
}

int
qr_report_is_noise(const cJSON *item)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(item, "flags"))
		if (cJSON_IsString(f) &&
		    (strcmp(f->valuestring, "cancellation") == 0 ||
		     strcmp(f->valuestring, "suspect_pairing") == 0))
			return 1;
	return 0;
}
