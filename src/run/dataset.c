/*
 * dataset: the representative data, one sample at a time. See dataset.h;
 * data-int.h maps the files.
 *
 * Each graph input (initializers excluded, in graph order) is a slot fed
 * by one source. Opening lists the files of every source, probes them in
 * order until enough samples are known to be readable (warning about, and
 * dropping, those that are not) and keeps only paths; qr_dataset_next
 * reads and decodes one sample's files into tensors the dataset owns.
 * An input given no data gets a random source (data_random.c).
 *
 * Decisions:
 *   - A path holds the first kind in `kinds` whose detect takes it: pb (a
 *     .pb file, or a folder with input_<i>.pb files or test_data_set_*
 *     folders), then npy (a .npy file, or a folder of .npy files with
 *     neither images nor subfolders), else images.
 *   - .npy and .pb data is fed as stored: no scaling or normalisation.
 *     Integer data feeding a float input is cast by value (uint8 255 ->
 *     255.0); float data cannot feed an integer input; integers out of
 *     the input type's range make the file unreadable.
 *   - Files are sorted by name (strcmp, locale-free). Dot-files are
 *     ignored silently; in a folder of images or .npy files, other files
 *     are skipped with a warning.
 *   - The first source names the report's dataset.source and gives the
 *     labels (the first with classes); a sample's display name joins
 *     those of its files, or is "random #i" when every input is random.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/data-int.h"
#include "run/dataset.h"

#define DEFAULT_SAMPLES 20

/* Every kind of source; a path holds the first whose detect takes it. */
static const struct qr_data_kind *const kinds[] = {
	&qr_data_pb, &qr_data_npy, &qr_data_images, &qr_data_random,
};

#define N_KINDS (sizeof kinds / sizeof kinds[0])

/* ---- small helpers ---- */

static int
name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Sorted names of dir, dot-files left out: a heap array of heap strings. */
enum qr_status
qr_data_list_dir(const char *dir, char ***out, size_t *n, struct qr_diag *d)
{
	struct dirent **ents;
	char **names;
	int i, k;

	*out = NULL;
	*n = 0;
	k = scandir(dir, &ents, NULL, name_cmp);
	if (k < 0)
		return qr_errorf(d, QR_EIO, "data '%s': %s", dir,
				 strerror(errno));
	names = xcalloc((size_t)k + 1, sizeof *names);
	for (i = 0; i < k; i++) {
		if (ents[i]->d_name[0] != '.')
			names[(*n)++] = xstrdup(ents[i]->d_name);
		free(ents[i]);
	}
	free(ents);
	*out = names;
	return QR_OK;
}

/* Free a qr_data_list_dir array of n names. */
void
qr_data_free_names(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* 1 folder, 0 regular file (or other), -1 missing (errno set). */
int
qr_data_path_kind(const char *path)
{
	struct stat sb;

	if (stat(path, &sb) != 0)
		return -1;
	return S_ISDIR(sb.st_mode) ? 1 : 0;
}

/* 1 when entry name of folder dir is a folder. */
int
qr_data_is_subdir(const char *dir, const char *name)
{
	char *path = qr_path_join(dir, name);
	int is_dir = qr_data_path_kind(path) == 1;

	free(path);
	return is_dir;
}

/* 1 when name ends in ext (any case) and has more before it. */
int
qr_data_has_ext(const char *name, const char *ext)
{
	size_t n = strlen(name), e = strlen(ext);

	return n > e && strcasecmp(name + n - e, ext) == 0;
}

/* A declared shape as "[batch,3,224,224]" into buf. */
const char *
qr_data_slot_shape(const struct qr_data_slot *sl, char *buf, size_t n)
{
	size_t len;
	int k;

	if (sl->ndim < 0) {
		snprintf(buf, n, "[?]");
		return buf;
	}
	len = (size_t)snprintf(buf, n, "[");
	for (k = 0; k < sl->ndim && len < n; k++) {
		const struct qr_dim *dm = &sl->vi->dims[k];

		if (sl->dims[k] >= 0)
			len += (size_t)snprintf(buf + len, n - len, "%s%lld",
						k ? "," : "",
						(long long)sl->dims[k]);
		else
			len += (size_t)snprintf(buf + len, n - len, "%s%s",
						k ? "," : "",
						dm->param ? dm->param : "?");
	}
	if (len < n)
		snprintf(buf + len, n - len, "]");
	return buf;
}

/* Record the error in scratch as a warning on d and clear scratch. */
void
qr_data_warn_skip(struct qr_diag *d, struct qr_diag *scratch)
{
	qr_warnf(d, "%s (skipped)", scratch->msg);
	qr_diag_clear(scratch);
	memset(scratch, 0, sizeof *scratch);
}

/* ---- element conversion ---- */

static int
dt_is_float(int dt)
{
	return dt == QR_DT_FLOAT || dt == QR_DT_DOUBLE;
}

/* 1 for the integer dtypes, bool included. */
int
qr_data_dt_is_int(int dt)
{
	switch (dt) {
	case QR_DT_UINT8: case QR_DT_INT8: case QR_DT_UINT16:
	case QR_DT_INT16: case QR_DT_INT32: case QR_DT_INT64:
	case QR_DT_UINT32: case QR_DT_UINT64: case QR_DT_BOOL:
		return 1;
	default:
		return 0;
	}
}

/* 1 when data of dtype `from` can feed an input of dtype `to`. */
int
qr_data_convertible(int from, int to)
{
	if (from == to)
		return qr_dtype_size(to) > 0;
	if (dt_is_float(to))
		return dt_is_float(from) || qr_data_dt_is_int(from);
	return qr_data_dt_is_int(to) && qr_data_dt_is_int(from);
}

static double
elem_get(const void *p, int dt, size_t i)
{
	switch (dt) {
	case QR_DT_FLOAT: return ((const float *)p)[i];
	case QR_DT_DOUBLE: return ((const double *)p)[i];
	case QR_DT_UINT8: case QR_DT_BOOL: return ((const uint8_t *)p)[i];
	case QR_DT_INT8: return ((const int8_t *)p)[i];
	case QR_DT_UINT16: return ((const uint16_t *)p)[i];
	case QR_DT_INT16: return ((const int16_t *)p)[i];
	case QR_DT_INT32: return ((const int32_t *)p)[i];
	case QR_DT_INT64: return (double)((const int64_t *)p)[i];
	case QR_DT_UINT32: return ((const uint32_t *)p)[i];
	case QR_DT_UINT64: return (double)((const uint64_t *)p)[i];
	default: QR_ASSERT(0 && "dtype checked by convertible");
	}
	return 0;
}

/* Range of an integer dtype. */
static void
int_range(int dt, double *lo, double *hi)
{
	switch (dt) {
	case QR_DT_UINT8: *lo = 0; *hi = 255; break;
	case QR_DT_BOOL: *lo = 0; *hi = 1; break;
	case QR_DT_INT8: *lo = -128; *hi = 127; break;
	case QR_DT_UINT16: *lo = 0; *hi = 65535; break;
	case QR_DT_INT16: *lo = -32768; *hi = 32767; break;
	case QR_DT_INT32: *lo = -2147483648.0; *hi = 2147483647.0; break;
	case QR_DT_UINT32: *lo = 0; *hi = 4294967295.0; break;
	case QR_DT_UINT64: *lo = 0; *hi = 18446744073709549568.0; break;
	default: *lo = -9223372036854775808.0; *hi = 9223372036854774784.0;
	}
}

/* Element i of p (dtype dt) = v, converted by C's rules. */
void
qr_data_elem_set(void *p, int dt, size_t i, double v)
{
	switch (dt) {
	case QR_DT_FLOAT: ((float *)p)[i] = (float)v; break;
	case QR_DT_DOUBLE: ((double *)p)[i] = v; break;
	case QR_DT_UINT8: case QR_DT_BOOL:
		((uint8_t *)p)[i] = (uint8_t)v;
		break;
	case QR_DT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
	case QR_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
	case QR_DT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
	case QR_DT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
	case QR_DT_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
	case QR_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case QR_DT_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
	default: QR_ASSERT(0 && "dtype checked by convertible");
	}
}

/* Copy n elements of src (dtype from, from element off) into dst. */
enum qr_status
qr_data_convert(struct qr_tensor *dst, const void *src, int from,
		size_t off, size_t n, const char *what, struct qr_diag *d)
{
	size_t i, es = qr_dtype_size(from);
	double lo, hi, v;

	if (from == dst->dtype) {
		if (n > 0)
			memcpy(dst->data, (const char *)src + off * es, n * es);
		return QR_OK;
	}
	if (qr_data_dt_is_int(dst->dtype)) {
		int_range(dst->dtype, &lo, &hi);
		for (i = 0; i < n; i++) {
			v = elem_get(src, from, off + i);
			if (v < lo || v > hi)
				return qr_errorf(d, QR_EFORMAT, "file '%s': "
						 "value %.17g does not fit "
						 "input '%s' (%s)", what, v,
						 dst->name,
						 qr_dtype_name(dst->dtype));
			qr_data_elem_set(dst->data, dst->dtype, i, v);
		}
		return QR_OK;
	}
	for (i = 0; i < n; i++)
		qr_data_elem_set(dst->data, dst->dtype, i,
				 elem_get(src, from, off + i));
	return QR_OK;
}

/* Element type an input is fed with: the declared one, float if absent. */
int
qr_data_slot_dtype(const struct qr_data_slot *sl)
{
	return sl->vi->dtype == QR_DT_UNDEFINED ? QR_DT_FLOAT : sl->vi->dtype;
}

/* Give sl's tensor this shape (dtype of the input) and room for it. */
enum qr_status
qr_data_slot_shape_set(struct qr_data_slot *sl, int ndim,
		       const int64_t *dims, struct qr_diag *d)
{
	enum qr_status st;

	st = qr_tensor_set_shape(sl->t, qr_data_slot_dtype(sl), ndim, dims,
				 sl->vi->name, d);
	if (st == QR_OK)
		qr_tensor_alloc(sl->t);
	return st;
}
/* ---- items ---- */

/* Append an item to s (see data-int.h). */
struct qr_data_item *
qr_data_item_add(struct qr_data_src *s, size_t *cap, const char *path,
		 const char *name, int label)
{
	struct qr_data_item *it;

	if (s->n_items == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		s->items = xreallocarray(s->items, *cap, sizeof *s->items);
	}
	it = &s->items[s->n_items++];
	memset(it, 0, sizeof *it);
	it->path = xstrdup(path);
	it->name = xstrdup(name);
	it->label = label;
	return it;
}

static void
item_clear(struct qr_data_item *it, size_t n_slots)
{
	size_t j;

	free(it->path);
	free(it->name);
	if (it->files != NULL)
		for (j = 0; j < n_slots; j++)
			free(it->files[j]);
	free(it->files);
}

/*
 * Keep the items for which keep[i] is set, in order; free the others and
 * everything from index n_probed on (never probed, not needed).
 */
static void
items_compact(struct qr_data_src *s, const unsigned char *keep,
	      size_t n_probed, size_t n_slots)
{
	size_t i, n = 0;

	for (i = 0; i < s->n_items; i++) {
		if (i < n_probed && keep[i])
			s->items[n++] = s->items[i];
		else
			item_clear(&s->items[i], n_slots);
	}
	s->n_items = n;
}

/*
 * Probe s's items in order until `need` samples are known (see
 * data-int.h). Errors are caught in a scratch diag, to become warnings or,
 * when fatal, the source's error.
 */
enum qr_status
qr_data_items_probe(struct qr_dataset *ds, struct qr_data_src *s,
		    size_t need, int fatal, qr_data_probe_fn probe,
		    const char *none, const char *unusable, struct qr_diag *d)
{
	struct qr_diag scratch = {0};
	unsigned char *keep = xcalloc(s->n_items + 1, 1);
	size_t i, n, listed = s->n_items;
	enum qr_status st = QR_OK;

	s->n_samples = 0;
	for (i = 0; i < s->n_items && s->n_samples < need; i++) {
		n = 0;
		st = probe(ds, s, &s->items[i], &n, &scratch);
		if (st == QR_OK && n > 0) {
			keep[i] = 1;
			s->n_samples += n;
		} else if (st != QR_OK && fatal) {
			qr_errorf(d, st, "%s", scratch.msg);
			break;
		} else {
			qr_data_warn_skip(d, &scratch);
			st = QR_OK;
		}
	}
	qr_diag_clear(&scratch);
	items_compact(s, keep, i, ds->n_slots);
	free(keep);
	if (st != QR_OK)
		return st;
	if (listed == 0)
		return qr_errorf(d, QR_EFORMAT, "folder '%s' holds no %s",
				 s->root, none);
	if (s->n_samples == 0)
		return qr_errorf(d, QR_EFORMAT, "folder '%s': none of its %zu "
				 "%s", s->root, listed, unusable);
	return QR_OK;
}

/* Add s to a sample's display name (see data-int.h). */
void
qr_data_name_add(struct qr_buf *b, const char *s)
{
	if (b->len > 0)
		qr_buf_puts(b, ", ");
	qr_buf_puts(b, s);
}

/* ---- the dataset ---- */

static void
source_free(struct qr_data_src *s, size_t n_slots)
{
	size_t i;

	if (s == NULL)
		return;
	if (s->kind != NULL && s->kind->free != NULL)
		s->kind->free(s);
	for (i = 0; i < s->n_items; i++)
		item_clear(&s->items[i], n_slots);
	free(s->items);
	qr_data_free_names(s->classes, s->n_classes);
	free(s->root);
	free(s);
}

/* A new source for slot (path NULL: random), added to ds->srcs. */
static struct qr_data_src *
source_new(struct qr_dataset *ds, const char *path, size_t slot)
{
	struct qr_data_src *s = xcalloc(1, sizeof *s);

	ds->srcs[ds->n_srcs++] = s;
	s->root = path != NULL ? xstrdup(path) : NULL;
	s->slot = slot;
	return s;
}

/* Open the source at path for slot (or every slot it names: all). */
static enum qr_status
source_open(struct qr_dataset *ds, const struct qr_dataset_opts *o,
	    const char *path, size_t slot, int all, struct qr_diag *d)
{
	struct qr_data_src *s = source_new(ds, path, slot);
	size_t k;
	int pk;

	if ((pk = qr_data_path_kind(path)) < 0)
		return qr_errorf(d, QR_EIO, "data '%s': %s", path,
				 strerror(errno));
	s->is_dir = pk == 1;
	for (k = 0; k < N_KINDS && s->kind == NULL; k++)
		if (kinds[k]->detect != NULL &&
		    kinds[k]->detect(path, s->is_dir))
			s->kind = kinds[k];
	QR_ASSERT(s->kind != NULL && "images takes any path");
	if (all && !s->kind->named_inputs) {
		char names[512];
		size_t j, len = 0;

		names[0] = '\0';
		for (j = 0; j < ds->n_slots && len < sizeof names; j++)
			len += (size_t)snprintf(names + len, sizeof names - len,
						"%s'%s'", j ? ", " : "",
						ds->slots[j].vi->name);
		return qr_errorf(d, QR_EUSAGE, "data '%s': the model has %zu "
				 "inputs (%s); say which this feeds with "
				 "NAME=path", path, ds->n_slots, names);
	}
	s->all_slots = all;
	if (!all)
		ds->slots[slot].src = s;
	return s->kind->open(ds, s, o, d);
}

/* One line saying how slot sl is fed (see qr_dataset_describe). */
static void
describe_slot(const struct qr_dataset *ds, const struct qr_data_slot *sl,
	      struct qr_buf *b)
{
	const struct qr_data_src *s = sl->src;

	if (s->kind->describe != NULL)
		s->kind->describe(ds, s, sl, b);
	else
		qr_buf_printf(b, "%s as stored (no preprocessing)",
			      s->kind->name);
}

/* One clause per slot, "NAME: ..." when there are several; a run of a
 * decoder's KV cache inputs described alike is one clause ("FIRST ..
 * LAST (N inputs): ..."), so 64 of them make no wall of text. */
static void
describe_all(const struct qr_dataset *ds, struct qr_buf *b)
{
	struct qr_buf cur = {0}, next = {0};
	size_t j, k;

	for (j = 0; j < ds->n_slots; j = k) {
		const struct qr_data_slot *sl = &ds->slots[j];

		cur.len = 0;
		describe_slot(ds, sl, &cur);
		for (k = j + 1; k < ds->n_slots &&
		     qr_data_llm_is_past(sl->vi->name) &&
		     qr_data_llm_is_past(ds->slots[k].vi->name); k++) {
			next.len = 0;
			describe_slot(ds, &ds->slots[k], &next);
			if (strcmp(cur.data, next.data) != 0)
				break;
		}
		if (j > 0)
			qr_buf_puts(b, "; ");
		if (k > j + 1)
			qr_buf_printf(b, "%s .. %s (%zu inputs): ",
				      sl->vi->name, ds->slots[k - 1].vi->name,
				      k - j);
		else if (ds->n_slots > 1)
			qr_buf_printf(b, "%s: ", sl->vi->name);
		qr_buf_puts(b, cur.data);
	}
	qr_buf_free(&cur);
	qr_buf_free(&next);
}

static int
is_initializer(const struct qr_graph_data *g, const char *name)
{
	size_t i;

	for (i = 0; i < g->n_init; i++)
		if (strcmp(g->inits[i].name, name) == 0)
			return 1;
	return 0;
}

static struct qr_data_slot *
find_slot(struct qr_dataset *ds, const char *name)
{
	size_t j;

	for (j = 0; j < ds->n_slots; j++)
		if (strcmp(ds->slots[j].vi->name, name) == 0)
			return &ds->slots[j];
	return NULL;
}

/* Apply --input NAME:DIMS overrides to the slots. */
static enum qr_status
apply_overrides(struct qr_dataset *ds, const struct qr_dataset_opts *o,
		struct qr_diag *d)
{
	const struct qr_dims_override *ov;
	struct qr_data_slot *sl;
	char sh[128];
	size_t i;
	int k;

	for (i = 0; i < o->n_overrides; i++) {
		ov = &o->overrides[i];
		sl = ov->input != NULL ? find_slot(ds, ov->input) : NULL;
		if (sl == NULL)
			return qr_errorf(d, QR_EUSAGE, "--input '%s': the "
					 "model has no input of that name",
					 ov->input ? ov->input : "");
		if (ov->ndim < 0 || ov->ndim > 8 ||
		    (sl->ndim >= 0 && ov->ndim != sl->ndim))
			return qr_errorf(d, QR_ESHAPE, "--input '%s': %d dims "
					 "given, the input %s has %d",
					 ov->input, ov->ndim,
					 qr_data_slot_shape(sl, sh, sizeof sh),
					 sl->ndim);
		for (k = 0; k < ov->ndim; k++) {
			if (ov->dims[k] < 0)
				return qr_errorf(d, QR_EUSAGE, "--input '%s': "
						 "dim %d is negative",
						 ov->input, k);
			if (sl->ndim >= 0 && sl->dims[k] >= 0 &&
			    sl->dims[k] != ov->dims[k])
				return qr_errorf(d, QR_ESHAPE, "--input '%s': "
						 "dim %d is %lld, the model "
						 "fixes it at %lld (%s)",
						 ov->input, k,
						 (long long)ov->dims[k],
						 (long long)sl->dims[k],
						 qr_data_slot_shape(sl, sh,
								    sizeof sh));
		}
		sl->ndim = ov->ndim;
		for (k = 0; k < ov->ndim; k++)
			sl->dims[k] = ov->dims[k];
	}
	return QR_OK;
}

/* Open the sources: named ones first, then the unnamed one. */
static enum qr_status
open_sources(struct qr_dataset *ds, const struct qr_dataset_opts *o,
	     struct qr_diag *d)
{
	const struct qr_data_source *src;
	const char *unnamed = NULL;
	enum qr_status st;
	struct qr_data_slot *sl;
	size_t i, n = o->n_sources;

	for (i = 0; i < n; i++) {
		src = &o->sources[i];
		if (src->input == NULL) {
			if (unnamed != NULL)
				return qr_errorf(d, QR_EUSAGE, "--data given "
						 "twice without an input name "
						 "('%s', '%s')", unnamed,
						 src->path ? src->path :
						 "random");
			unnamed = src->path ? src->path : "";
			continue;
		}
		if ((sl = find_slot(ds, src->input)) == NULL)
			return qr_errorf(d, QR_EUSAGE, "--data '%s=%s': the "
					 "model has no input of that name",
					 src->input, src->path ? src->path :
					 "");
		if (sl->src != NULL || sl->random_kind < 0)
			return qr_errorf(d, QR_EUSAGE, "--data: input '%s' is "
					 "given twice", src->input);
		sl->random_kind = -1; /* taken; reset below */
		if (src->path == NULL)
			continue;
		st = source_open(ds, o, src->path, (size_t)(sl - ds->slots),
				 0, d);
		if (st != QR_OK)
			return st;
	}
	for (i = 0; i < ds->n_slots; i++)
		ds->slots[i].random_kind = 0;
	if (unnamed == NULL || unnamed[0] == '\0')
		return QR_OK;
	if (ds->n_slots == 1) {
		if (ds->slots[0].src != NULL)
			return qr_errorf(d, QR_EUSAGE, "--data: input '%s' is "
					 "given twice", ds->slots[0].vi->name);
		return source_open(ds, o, unnamed, 0, 0, d);
	}
	if (ds->n_slots == 0)
		return qr_errorf(d, QR_EUSAGE, "data '%s': the model has no "
				 "inputs to feed", unnamed);
	return source_open(ds, o, unnamed, 0, 1, d);
}

/*
 * Open the dataset for m; see dataset.h. On error *out is NULL and the
 * message names the path, input or file at fault.
 */
enum qr_status
qr_dataset_open(const struct qr_model *m, const struct qr_dataset_opts *o,
		struct qr_dataset **out, struct qr_diag *d)
{
	const struct qr_graph_data *g = &m->graph;
	struct qr_dataset *ds = xcalloc(1, sizeof *ds);
	struct qr_buf desc = {0};
	enum qr_status st = QR_OK;
	size_t i, j;
	int k;

	*out = NULL;
	ds->m = m;
	ds->samples = o->samples ? o->samples : DEFAULT_SAMPLES;
	ds->seed = o->seed;
	ds->order = o->order;
	ds->slots = xcalloc(g->n_input + 1, sizeof *ds->slots);
	for (i = 0; i < g->n_input; i++) {
		const struct qr_value_info *vi = &g->inputs[i];
		struct qr_data_slot *sl;

		if (is_initializer(g, vi->name))
			continue;
		if (vi->ndim > QR_MAX_DIMS) {
			st = qr_errorf(d, QR_ESHAPE, "input '%s': rank %d is "
				       "not supported", vi->name, vi->ndim);
			goto out;
		}
		sl = &ds->slots[ds->n_slots++];
		sl->vi = vi;
		sl->ndim = vi->ndim;
		for (k = 0; k < vi->ndim; k++)
			sl->dims[k] = vi->dims[k].value >= 0 ?
				      vi->dims[k].value : -1;
		sl->t = xcalloc(1, sizeof *sl->t);
		sl->t->owned = 1;
		sl->t->name = vi->name;
	}
	ds->tv = xcalloc(ds->n_slots + 1, sizeof *ds->tv);
	for (j = 0; j < ds->n_slots; j++)
		ds->tv[j] = ds->slots[j].t;
	/* at most one source per --data, then one per input left random */
	ds->srcs = xcalloc(o->n_sources + ds->n_slots + 1, sizeof *ds->srcs);
	if ((st = apply_overrides(ds, o, d)) != QR_OK)
		goto out;
	qr_data_llm_defaults(ds);
	if ((st = open_sources(ds, o, d)) != QR_OK)
		goto out;
	ds->count = ds->samples;
	for (i = 0; i < ds->n_srcs; i++)
		if (ds->srcs[i]->n_samples < ds->count)
			ds->count = ds->srcs[i]->n_samples;
	/* random sources, then those derived from them (data_llm.c) */
	for (i = 0; i < 2; i++)
		for (j = 0; j < ds->n_slots; j++) {
			struct qr_data_slot *sl = &ds->slots[j];
			int derived;

			if (sl->src != NULL)
				continue;
			derived = qr_data_llm_derives(ds, sl);
			if (derived != (int)i)
				continue;
			sl->src = source_new(ds, NULL, j);
			sl->src->kind = derived ? &qr_data_llm
						: &qr_data_random;
			if ((st = sl->src->kind->open(ds, sl->src, o, d)) !=
			    QR_OK)
				goto out;
		}
	describe_all(ds, &desc);
	ds->describe = qr_buf_take(&desc);
out:
	qr_buf_free(&desc);
	if (st != QR_OK)
		qr_dataset_free(ds);
	else
		*out = ds;
	return st;
}

/* Free ds, its sources and the tensors it handed out; NULL does nothing. */
void
qr_dataset_free(struct qr_dataset *ds)
{
	size_t i;

	if (ds == NULL)
		return;
	for (i = 0; i < ds->n_srcs; i++)
		source_free(ds->srcs[i], ds->n_slots);
	for (i = 0; i < ds->n_slots; i++)
		qr_tensor_free(ds->slots[i].t);
	free(ds->srcs);
	free(ds->slots);
	free(ds->tv);
	free(ds->describe);
	qr_buf_free(&ds->name);
	free(ds);
}

/*
 * The next sample (see dataset.h). Unreadable files met on the way are
 * skipped with a warning on d; a source running dry ends the dataset.
 */
enum qr_status
qr_dataset_next(struct qr_dataset *ds, struct qr_tensor *const **inputs,
		size_t *n_inputs, int *label, const char **name,
		struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	int end = 0, lab, have_label = 0;
	size_t i;

	*inputs = ds->tv;
	*n_inputs = 0;
	*label = -1;
	*name = NULL;
	if (ds->produced >= ds->count)
		return QR_OK;
	ds->name.len = 0;
	if (ds->name.data != NULL)
		ds->name.data[0] = '\0';
	for (i = 0; i < ds->n_srcs && st == QR_OK && !end; i++) {
		struct qr_data_src *s = ds->srcs[i];

		lab = -1;
		st = s->kind->next(ds, s, &lab, &end, d);
		if (!have_label && s->n_classes > 0) {
			*label = lab;
			have_label = 1;
		}
	}
	if (st != QR_OK || end) {
		ds->produced = ds->count;
		*label = -1;
		return st;
	}
	if (ds->n_srcs == 0 || ds->srcs[0]->kind == &qr_data_random)
		qr_buf_printf(&ds->name, "random #%zu", ds->produced);
	ds->produced++;
	*n_inputs = ds->n_slots;
	*name = ds->name.data != NULL ? ds->name.data : "";
	return QR_OK;
}

/* The kind of the first source ("random" when every input is random). */
const char *
qr_dataset_source(const struct qr_dataset *ds)
{
	return ds->n_srcs > 0 ? ds->srcs[0]->kind->name : qr_data_random.name;
}

/* min(samples, what every source holds after probing); random: samples. */
size_t
qr_dataset_count(const struct qr_dataset *ds)
{
	return ds->count;
}

/* Class names of the first source with classes (an image source's
 * subfolders). Borrowed. */
const char *const *
qr_dataset_classes(const struct qr_dataset *ds, size_t *n)
{
	size_t i;

	for (i = 0; i < ds->n_srcs; i++)
		if (ds->srcs[i]->n_classes > 0) {
			*n = ds->srcs[i]->n_classes;
			return (const char *const *)ds->srcs[i]->classes;
		}
	*n = 0;
	return NULL;
}

/* Built at open, one clause per input ("NAME: ...; ..." for several).
 * Borrowed. */
const char *
qr_dataset_describe(const struct qr_dataset *ds)
{
	return ds->describe;
}
