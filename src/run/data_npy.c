/*
 * data_npy: .npy files (one, or a folder of them) as the source of one
 * input. See data-int.h; npy.c parses the format.
 *
 * A sample is a block of B rows along dim 0, where B is the input's dim 0
 * (fixed, or from --input); a dynamic dim 0 is 1. So an .npy of shape
 * [N, ...] gives N/B samples (N must be a multiple of B), and one without
 * the batch dim gives one sample when B is 1. The data is fed as stored
 * (see qr_data_convert).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/data-int.h"
#include "run/run.h"

/* The file an npy source is serving (its s->state). */
struct npy_feed {
	struct qr_tensor *file;  /* the file being served, owned */
	size_t next_row;         /* next row block of the file */
};

/*
 * How .npy tensor t feeds sl: *rows samples of shape (*ndim, dims), a
 * block of B rows along dim 0 each (B = the input's dim 0, 1 if dynamic),
 * or the whole of t with a batch dim of 1 added when t lacks it.
 */
static enum qr_status
npy_fit(const struct qr_data_slot *sl, const struct qr_tensor *t,
	const char *what, size_t *rows, int *ndim, int64_t *dims,
	struct qr_diag *d)
{
	char want[128], got[128];
	int64_t bsz;
	int k, add;

	if (!qr_data_convertible(t->dtype, qr_data_slot_dtype(sl)))
		return qr_errorf(d, QR_EUNSUPPORTED, "file '%s': %s data "
				 "cannot feed input '%s' (%s)", what,
				 qr_dtype_name(t->dtype), sl->vi->name,
				 qr_dtype_name(qr_data_slot_dtype(sl)));
	if (sl->ndim < 0) {
		*rows = 1;
		*ndim = t->ndim;
		memcpy(dims, t->dims, sizeof *dims * (size_t)t->ndim);
		return QR_OK;
	}
	bsz = sl->ndim > 0 && sl->dims[0] > 0 ? sl->dims[0] : 1;
	add = t->ndim + 1 == sl->ndim && bsz == 1;
	if (t->ndim != sl->ndim && !add)
		goto bad;
	for (k = add ? 0 : 1; k < t->ndim; k++)
		if (sl->dims[k + add] >= 0 && t->dims[k] != sl->dims[k + add])
			goto bad;
	*ndim = sl->ndim;
	if (sl->ndim == 0) {
		*rows = 1;
		return QR_OK;
	}
	if (add) {
		*rows = 1;
		dims[0] = 1;
		memcpy(dims + 1, t->dims, sizeof *dims * (size_t)t->ndim);
		return QR_OK;
	}
	if (t->dims[0] == 0 || t->dims[0] % bsz != 0)
		return qr_errorf(d, QR_ESHAPE, "file '%s': %lld rows along dim "
				 "0 are not a whole number of samples of %lld "
				 "for input '%s'", what, (long long)t->dims[0],
				 (long long)bsz, sl->vi->name);
	*rows = (size_t)(t->dims[0] / bsz);
	memcpy(dims, t->dims, sizeof *dims * (size_t)t->ndim);
	dims[0] = bsz;
	return QR_OK;
bad:
	return qr_errorf(d, QR_ESHAPE, "file '%s': shape %s does not fit "
			 "input '%s' %s", what,
			 qr_shape_str(t, got, sizeof got),
			 sl->vi->name,
			 qr_data_slot_shape(sl, want, sizeof want));
}

static void
npy_drop_file(struct qr_data_src *s)
{
	struct npy_feed *f = s->state;

	qr_tensor_free(f->file);
	f->file = NULL;
	f->next_row = 0;
	s->next_item++;
}

static enum qr_status
npy_next(struct qr_dataset *ds, struct qr_data_src *s, int *label, int *end,
	 struct qr_diag *d)
{
	struct qr_data_slot *sl = &ds->slots[s->slot];
	struct npy_feed *f = s->state;
	struct qr_diag scratch = {0};
	int64_t dims[QR_MAX_DIMS];
	size_t rows, per;
	struct qr_data_item *it;
	char *nm;
	int ndim;

	for (;;) {
		if (s->next_item >= s->n_items) {
			*end = 1;
			break;
		}
		it = &s->items[s->next_item];
		if ((f->file == NULL && qr_npy_read(it->path, NULL, &f->file,
						    &scratch) != QR_OK) ||
		    npy_fit(sl, f->file, it->path, &rows, &ndim, dims,
			    &scratch) != QR_OK ||
		    qr_data_slot_shape_set(sl, ndim, dims,
					   &scratch) != QR_OK ||
		    f->next_row >= rows) {
			if (scratch.status != QR_OK)
				qr_data_warn_skip(d, &scratch);
			npy_drop_file(s);
			continue;
		}
		per = sl->t->n_elem;
		if (qr_data_convert(sl->t, f->file->data, f->file->dtype,
				    f->next_row * per, per, it->path,
				    &scratch) != QR_OK) {
			qr_data_warn_skip(d, &scratch);
			npy_drop_file(s);
			continue;
		}
		nm = rows > 1 ? xasprintf("%s[%zu]", it->name, f->next_row) :
				xstrdup(it->name);
		qr_data_name_add(&ds->name, nm);
		free(nm);
		if (++f->next_row >= rows)
			npy_drop_file(s);
		break;
	}
	qr_diag_clear(&scratch);
	return QR_OK;
}

static int
npy_detect(const char *path, int is_dir)
{
	char **names = NULL;
	size_t n = 0, i, n_npy = 0, n_other = 0;

	if (!is_dir)
		return qr_data_has_ext(path, ".npy");
	if (qr_data_list_dir(path, &names, &n, NULL) != QR_OK)
		return 0; /* images_list reports the error */
	for (i = 0; i < n; i++) {
		if (qr_data_has_ext(names[i], ".npy"))
			n_npy++;
		else if (qr_data_is_image_name(names[i]) ||
			 qr_data_is_subdir(path, names[i]))
			n_other++;
	}
	qr_data_free_names(names, n);
	return n_npy > 0 && n_other == 0;
}

/* One listed .npy file: its header fits the input; *n its samples. */
static enum qr_status
npy_probe_item(struct qr_dataset *ds, struct qr_data_src *s,
	       struct qr_data_item *it, size_t *n, struct qr_diag *d)
{
	struct qr_tensor *t = NULL;
	int64_t dims[QR_MAX_DIMS];
	enum qr_status st;
	size_t rows;
	int ndim;

	st = qr_npy_read_head(it->path, &t, d);
	if (st == QR_OK)
		st = npy_fit(&ds->slots[s->slot], t, it->path, &rows, &ndim,
			     dims, d);
	qr_tensor_free(t);
	if (st == QR_OK) {
		it->rows = rows;
		*n = rows;
	}
	return st;
}

/* List s->root (a .npy file, or a folder of them) and probe the files in
 * order until ds->samples samples are known. */
static enum qr_status
npy_open(struct qr_dataset *ds, struct qr_data_src *s,
	 const struct qr_dataset_opts *o, struct qr_diag *d)
{
	struct npy_feed *f = xcalloc(1, sizeof *f);
	char **names = NULL, *path;
	size_t n = 0, i, cap = 0;
	enum qr_status st;

	s->state = f;
	if (!s->is_dir) {
		qr_data_item_add(s, &cap, s->root, qr_path_basename(s->root),
				 -1);
	} else {
		if ((st = qr_data_list_dir(s->root, &names, &n, d)) != QR_OK)
			return st;
		for (i = 0; i < n; i++) {
			path = qr_path_join(s->root, names[i]);
			if (qr_data_has_ext(names[i], ".npy") &&
			    qr_data_path_kind(path) == 0)
				qr_data_item_add(s, &cap, path, names[i], -1);
			else
				qr_warnf(d, "data '%s': '%s' is not a .npy "
					 "file (skipped)", s->root, names[i]);
			free(path);
		}
		qr_data_free_names(names, n);
	}
	return qr_data_items_probe(ds, s, ds->samples, !s->is_dir,
				   npy_probe_item, ".npy files",
				   ".npy files can be used", d);
}

static void
npy_free(struct qr_data_src *s)
{
	struct npy_feed *f = s->state;

	if (f != NULL)
		qr_tensor_free(f->file);
	free(f);
}

const struct qr_data_kind qr_data_npy = {
	.name = "npy",
	.detect = npy_detect, .open = npy_open, .next = npy_next,
	.free = npy_free,
};
