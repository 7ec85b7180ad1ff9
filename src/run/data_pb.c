/*
 * data_pb: ONNX test data as a source: a test_data_set_* folder of
 * input_<i>.pb TensorProto files, a folder of such folders, or one .pb
 * file. See data-int.h; npy.c reads the .pb files.
 *
 * The data is fed as stored (see qr_data_convert). A pb source without
 * an input name feeds every input its input_<i>.pb files name (by
 * TensorProto name, else by index), so a test_data_set folder serves a
 * model with several inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/data-int.h"
#include "run/run.h"

/* "input_<i>.pb" -> i, or -1. */
static int
pb_index(const char *name)
{
	int i = 0, digits = 0;

	if (strncmp(name, "input_", 6) != 0)
		return -1;
	for (name += 6; *name >= '0' && *name <= '9' && i < 100000; name++) {
		i = i * 10 + (*name - '0');
		digits++;
	}
	return digits > 0 && strcmp(name, ".pb") == 0 ? i : -1;
}

/* Header facts of a .pb TensorProto: its name (heap, "" when unnamed),
 * dtype and shape. */
static enum qr_status
pb_head(const char *path, char **tname, int *dtype, int *ndim,
	int64_t *dims, struct qr_diag *d)
{
	struct qr_arena a = {0};
	struct qr_tensor_data td;
	struct qr_map m;
	enum qr_status st;

	*tname = NULL;
	if ((st = qr_map_file(path, &m, d)) != QR_OK)
		return st;
	memset(&td, 0, sizeof td);
	st = qr_onnx_load_tensor_pb(m.data, m.size, path, &a, &td, d);
	if (st == QR_OK) {
		*tname = xstrdup(td.name != NULL ? td.name : "");
		*dtype = td.dtype;
		*ndim = td.ndim;
		memcpy(dims, td.dims, sizeof *dims * (size_t)td.ndim);
	}
	qr_arena_free(&a);
	qr_unmap(&m);
	return st;
}

/* The slot a .pb file of a test_data_set feeds, or -1 for none: by its
 * TensorProto name, else input_<i>.pb is the i-th input. */
static int
pb_slot(const struct qr_dataset *ds, const char *tname, int idx)
{
	size_t j;

	for (j = 0; j < ds->n_slots; j++)
		if (tname[0] != '\0' &&
		    strcmp(tname, ds->slots[j].vi->name) == 0)
			return (int)j;
	return idx >= 0 && (size_t)idx < ds->n_slots ? idx : -1;
}

/*
 * Map the .pb files of item `it` (a test_data_set folder or one .pb file)
 * to the slots this source feeds, checking dtypes and shapes. A source
 * with all_slots claims, with its first item, every unclaimed slot a file
 * names; later items must give exactly those.
 */
static enum qr_status
pb_item(struct qr_dataset *ds, struct qr_data_src *s, struct qr_data_item *it,
	struct qr_diag *d)
{
	char **names = NULL, *path = NULL, *tname = NULL, want[128];
	size_t n = 0, i, j, n_pb = 0;
	int64_t dims[QR_MAX_DIMS];
	int dtype = 0, ndim = 0, k, sl_i, only;
	enum qr_status st = QR_OK;

	it->files = xcalloc(ds->n_slots, sizeof *it->files);
	if (qr_data_path_kind(it->path) == 0) {
		names = xcalloc(1, sizeof *names);
		names[n++] = xstrdup(it->path);
	} else if ((st = qr_data_list_dir(it->path, &names, &n, d)) != QR_OK) {
		return st;
	}
	for (i = 0; i < n; i++)
		n_pb += qr_data_path_kind(it->path) == 0 ||
			pb_index(names[i]) >= 0;
	only = n_pb == 1 && !s->all_slots;
	for (i = 0; i < n && st == QR_OK; i++) {
		int idx = qr_data_path_kind(it->path) == 0 ? 0 :
			  pb_index(names[i]);

		if (idx < 0)
			continue;
		path = qr_data_path_kind(it->path) == 0 ? xstrdup(it->path) :
		       qr_path_join(it->path, names[i]);
		st = pb_head(path, &tname, &dtype, &ndim, dims, d);
		if (st != QR_OK)
			break;
		sl_i = only ? (int)s->slot : pb_slot(ds, tname, idx);
		if (sl_i < 0 || (!s->all_slots && (size_t)sl_i != s->slot) ||
		    (s->all_slots && ds->slots[sl_i].src != NULL &&
		     ds->slots[sl_i].src != s)) {
			free(path);
			free(tname);
			path = tname = NULL;
			continue;
		}
		{
			struct qr_data_slot *sl = &ds->slots[sl_i];
			int fits = sl->ndim < 0 || sl->ndim == ndim;
			int to = qr_data_slot_dtype(sl);

			for (k = 0; fits && sl->ndim >= 0 && k < ndim; k++)
				fits = sl->dims[k] < 0 ||
				       sl->dims[k] == dims[k];
			if (!qr_data_convertible(dtype, to))
				st = qr_errorf(d, QR_EUNSUPPORTED, "file '%s': "
					       "%s data cannot feed input '%s' "
					       "(%s)", path,
					       qr_dtype_name(dtype),
					       sl->vi->name,
					       qr_dtype_name(to));
			else if (!fits)
				st = qr_errorf(d, QR_ESHAPE, "file '%s': rank "
					       "%d tensor does not fit input "
					       "'%s' %s", path, ndim,
					       sl->vi->name,
					       qr_data_slot_shape(sl, want,
								  sizeof want));
		}
		free(it->files[sl_i]);
		it->files[sl_i] = path;
		path = NULL;
		free(tname);
		tname = NULL;
	}
	free(path);
	free(tname);
	qr_data_free_names(names, n);
	if (st != QR_OK)
		return st;
	for (j = 0; j < ds->n_slots; j++) {
		int claimed = ds->slots[j].src == s;
		int want_it = s->all_slots ? claimed : j == s->slot;

		if (s->all_slots && ds->slots[j].src == NULL && it->files[j])
			continue; /* claimed by the caller on the first item */
		if (want_it && it->files[j] == NULL)
			return qr_errorf(d, QR_EFORMAT, "data '%s': no .pb "
					 "file for input '%s'", it->path,
					 ds->slots[j].vi->name);
		if (!want_it && it->files[j] != NULL) {
			free(it->files[j]);
			it->files[j] = NULL;
		}
	}
	return QR_OK;
}

static enum qr_status
pb_next(struct qr_dataset *ds, struct qr_data_src *s, int *label, int *end,
	struct qr_diag *d)
{
	struct qr_diag scratch = {0};
	struct qr_tensor *t = NULL;
	struct qr_data_item *it;
	size_t j;
	int bad;

	for (;;) {
		if (s->next_item >= s->n_items) {
			*end = 1;
			break;
		}
		it = &s->items[s->next_item++];
		bad = 0;
		for (j = 0; j < ds->n_slots && !bad; j++) {
			struct qr_data_slot *sl = &ds->slots[j];

			if (sl->src != s)
				continue;
			bad = qr_pb_read(it->files[j], NULL, &t, &scratch) ||
			      !qr_data_convertible(t->dtype,
						   qr_data_slot_dtype(sl)) ||
			      qr_data_slot_shape_set(sl, t->ndim, t->dims,
						     &scratch) ||
			      qr_data_convert(sl->t, t->data, t->dtype, 0,
					      t->n_elem, it->files[j],
					      &scratch);
			if (bad && scratch.status == QR_OK)
				qr_errorf(&scratch, QR_EUNSUPPORTED, "file "
					  "'%s': %s data cannot feed input "
					  "'%s'", it->files[j],
					  qr_dtype_name(t->dtype),
					  sl->vi->name);
			qr_tensor_free(t);
			t = NULL;
		}
		if (bad) {
			qr_data_warn_skip(d, &scratch);
			continue;
		}
		qr_data_name_add(&ds->name, it->name);
		break;
	}
	qr_diag_clear(&scratch);
	return QR_OK;
}

static int
pb_detect(const char *path, int is_dir)
{
	char **names = NULL;
	size_t n = 0, i;
	int found = 0;

	if (!is_dir)
		return qr_data_has_ext(path, ".pb");
	if (qr_data_list_dir(path, &names, &n, NULL) != QR_OK)
		return 0; /* images_list reports the error */
	for (i = 0; i < n && !found; i++)
		found = pb_index(names[i]) >= 0 ||
			(strncmp(names[i], "test_data_set_", 14) == 0 &&
			 qr_data_is_subdir(path, names[i]));
	qr_data_free_names(names, n);
	return found;
}

/*
 * One listed test data set: pb_item. The first usable one of a source
 * with all_slots claims every input a file of it names; one naming none
 * is dropped with a warning.
 */
static enum qr_status
pb_probe_item(struct qr_dataset *ds, struct qr_data_src *s,
	      struct qr_data_item *it, size_t *n, struct qr_diag *d)
{
	enum qr_status st;
	size_t j;
	int any;

	st = pb_item(ds, s, it, d);
	if (st != QR_OK)
		return st;
	*n = 1;
	if (s->all_slots && s->n_samples == 0) {
		for (j = 0, any = 0; j < ds->n_slots; j++)
			if (it->files[j] != NULL) {
				ds->slots[j].src = s;
				any = 1;
			}
		if (!any) {
			*n = 0;
			qr_errorf(d, QR_EFORMAT, "data '%s': no input_<i>.pb "
				  "file names a model input", it->path);
		}
	}
	return QR_OK;
}

/* List the test_data_set folders (or the one folder or file) of a pb
 * source and probe them until ds->samples are usable. */
static enum qr_status
pb_open(struct qr_dataset *ds, struct qr_data_src *s,
	const struct qr_dataset_opts *o, struct qr_diag *d)
{
	char **names = NULL, *path;
	size_t n = 0, i, cap = 0;
	int nested = 0;
	enum qr_status st;

	if (s->is_dir) {
		if ((st = qr_data_list_dir(s->root, &names, &n, d)) != QR_OK)
			return st;
		for (i = 0; i < n; i++)
			if (pb_index(names[i]) >= 0)
				break;
		nested = i == n;
	}
	if (!nested) {
		qr_data_item_add(s, &cap, s->root, qr_path_basename(s->root),
				 -1);
	} else {
		for (i = 0; i < n; i++) {
			path = qr_path_join(s->root, names[i]);
			if (strncmp(names[i], "test_data_set_", 14) == 0 &&
			    qr_data_path_kind(path) == 1)
				qr_data_item_add(s, &cap, path, names[i], -1);
			free(path);
		}
	}
	qr_data_free_names(names, n);
	return qr_data_items_probe(ds, s, ds->samples, s->n_items == 1,
				   pb_probe_item, "test_data_set_* folders",
				   "test data sets can be used", d);
}

const struct qr_data_kind qr_data_pb = {
	.name = "pb", .named_inputs = 1,
	.detect = pb_detect, .open = pb_open, .next = pb_next,
};
