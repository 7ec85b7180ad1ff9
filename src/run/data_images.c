/*
 * data_images: a folder of PNG, JPEG and BMP images (or one image file)
 * as the source of an image input. See data-int.h; image.c decodes.
 *
 * Images are decoded (image.c), converted to the input's channels (RGB
 * to gray by luma, gray to RGB by replication), resized to the input's
 * H x W (--input-size for dynamic dims; an image keeps its own size when
 * neither gives one), then x = (p * scale - mean[c]) / std[c] in float
 * arithmetic, with mean and std in the model's channel order. An integer
 * (uint8/int8) input takes round(x) saturated, with scale 1 by default
 * (raw pixels). Layout AUTO is NHWC when the input's last dim is 1 or 3
 * and its channel dim (dim 1) is not. An input with a batch B > 1 takes
 * B consecutive images per sample (label -1).
 *
 * Class subfolders are the labels, sorted by name; images at the top
 * level of a folder with classes have label -1. Non-image files are
 * skipped with a warning.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/data-int.h"

/* An image source's geometry and preprocessing (its s->state). */
struct images {
	enum qr_layout layout;   /* NCHW or NHWC (resolved) */
	int rank;                /* 4, or 3 without a batch dim */
	int batch;               /* images per sample */
	int ch;                  /* channels, 1 or 3 */
	int h, w;                /* target size; 0: the image's own */
	float scale;             /* pixel multiplier (resolved) */
	float mean[3], std[3];   /* per model channel (resolved) */
	float *fbuf;             /* resize output (heap) */
	size_t fbuf_n;           /* floats fbuf holds */
};

/* Image file names: .png, .jpg, .jpeg, .bmp (any case). */
int
qr_data_is_image_name(const char *name)
{
	return qr_data_has_ext(name, ".png") ||
	       qr_data_has_ext(name, ".jpg") ||
	       qr_data_has_ext(name, ".jpeg") ||
	       qr_data_has_ext(name, ".bmp");
}

static enum qr_status
image_load(const char *path, struct qr_image *im, struct qr_diag *d)
{
	struct qr_map m;
	enum qr_status st;

	memset(im, 0, sizeof *im);
	if ((st = qr_map_file(path, &m, d)) != QR_OK)
		return st;
	st = qr_image_decode(m.data, m.size, path, im, d);
	qr_unmap(&m);
	return st;
}

/* List the images of folder s->root: its own image files (label -1), then
 * those of each class subfolder (label = the class's index). */
static enum qr_status
images_list(struct qr_data_src *s, struct qr_diag *d)
{
	char **names = NULL, **sub = NULL, *path, *dir;
	size_t n = 0, n_sub = 0, i, j, cap = 0, cls_cap = 0;
	enum qr_status st;

	if ((st = qr_data_list_dir(s->root, &names, &n, d)) != QR_OK)
		return st;
	for (i = 0; i < n; i++) {
		path = qr_path_join(s->root, names[i]);
		if (qr_data_path_kind(path) == 1) {
			if (s->n_classes == cls_cap) {
				cls_cap = cls_cap ? 2 * cls_cap : 16;
				s->classes = xreallocarray(s->classes, cls_cap,
							   sizeof *s->classes);
			}
			s->classes[s->n_classes++] = xstrdup(names[i]);
		} else if (qr_data_is_image_name(names[i])) {
			qr_data_item_add(s, &cap, path, names[i], -1);
		} else {
			qr_warnf(d, "data '%s': '%s' is not an image (.png, "
				 ".jpg, .jpeg, .bmp) (skipped)", s->root,
				 names[i]);
		}
		free(path);
	}
	for (i = 0; i < s->n_classes && st == QR_OK; i++) {
		dir = qr_path_join(s->root, s->classes[i]);
		st = qr_data_list_dir(dir, &sub, &n_sub, d);
		for (j = 0; j < n_sub; j++) {
			char *rel = xasprintf("%s/%s", s->classes[i], sub[j]);

			path = qr_path_join(dir, sub[j]);
			if (qr_data_path_kind(path) == 0 &&
			    qr_data_is_image_name(sub[j]))
				qr_data_item_add(s, &cap, path, rel, (int)i);
			else
				qr_warnf(d, "data '%s': '%s' is not an image "
					 "(.png, .jpg, .jpeg, .bmp) (skipped)",
					 s->root, rel);
			free(path);
			free(rel);
		}
		qr_data_free_names(sub, n_sub);
		sub = NULL;
		free(dir);
	}
	qr_data_free_names(names, n);
	return st;
}

/* Geometry and preprocessing of the input sl for images. */
static enum qr_status
images_setup(struct images *g, const struct qr_data_slot *sl,
	     const struct qr_dataset_opts *o, struct qr_diag *d)
{
	int dt = qr_data_slot_dtype(sl), off, c_ax, h_ax, k;
	int64_t c, h, w, first, last;
	char sh[128];

	if (dt != QR_DT_FLOAT && dt != QR_DT_DOUBLE && dt != QR_DT_UINT8 &&
	    dt != QR_DT_INT8)
		return qr_errorf(d, QR_EUNSUPPORTED, "input '%s' is %s: images "
				 "can feed float, double, uint8 or int8 inputs",
				 sl->vi->name, qr_dtype_name(dt));
	if (sl->ndim != 3 && sl->ndim != 4)
		return qr_errorf(d, QR_ESHAPE, "input '%s' %s cannot take "
				 "images: it needs rank 4 (NCHW or NHWC)",
				 sl->vi->name,
				 qr_data_slot_shape(sl, sh, sizeof sh));
	g->rank = sl->ndim;
	off = sl->ndim == 4 ? 1 : 0;
	g->layout = o->layout;
	if (g->layout == QR_LAYOUT_AUTO) {
		first = sl->dims[off];
		last = sl->dims[sl->ndim - 1];
		g->layout = (last == 1 || last == 3) && first != 1 &&
			    first != 3 ? QR_LAYOUT_NHWC : QR_LAYOUT_NCHW;
	}
	c_ax = g->layout == QR_LAYOUT_NCHW ? off : sl->ndim - 1;
	h_ax = g->layout == QR_LAYOUT_NCHW ? off + 1 : off;
	c = sl->dims[c_ax] >= 0 ? sl->dims[c_ax] : 3;
	if (c != 1 && c != 3)
		return qr_errorf(d, QR_ESHAPE, "input '%s' %s has %lld "
				 "channels in %s layout; images give 1 or 3",
				 sl->vi->name,
				 qr_data_slot_shape(sl, sh, sizeof sh),
				 (long long)c, g->layout == QR_LAYOUT_NCHW ?
				 "NCHW" : "NHWC");
	h = sl->dims[h_ax];
	w = sl->dims[h_ax + 1];
	if (o->input_h > 0 || o->input_w > 0) {
		if ((o->input_h > 0 && h >= 0 && h != o->input_h) ||
		    (o->input_w > 0 && w >= 0 && w != o->input_w))
			return qr_errorf(d, QR_ESHAPE, "--input-size %dx%d "
					 "(HxW) disagrees with input '%s' %s",
					 o->input_h, o->input_w, sl->vi->name,
					 qr_data_slot_shape(sl, sh, sizeof sh));
		if (o->input_h > 0)
			h = o->input_h;
		if (o->input_w > 0)
			w = o->input_w;
	}
	if (h > QR_IMAGE_MAX_SIDE || w > QR_IMAGE_MAX_SIDE || h == 0 || w == 0)
		return qr_errorf(d, QR_ESHAPE, "input '%s' %s: an image size "
				 "of %lldx%lld is not supported", sl->vi->name,
				 qr_data_slot_shape(sl, sh, sizeof sh),
				 (long long)h, (long long)w);
	g->h = h > 0 ? (int)h : 0;
	g->w = w > 0 ? (int)w : 0;
	g->ch = (int)c;
	g->batch = sl->ndim == 4 && sl->dims[0] > 0 ? (int)sl->dims[0] : 1;
	g->scale = o->scale != 0.0f ? o->scale :
		   qr_data_dt_is_int(dt) ? 1.0f : 1.0f / 255.0f;
	for (k = 0; k < 3; k++) {
		g->mean[k] = o->mean[k];
		g->std[k] = o->std[k] != 0.0f ? o->std[k] : 1.0f;
	}
	return QR_OK;
}

/* One image of the list: it decodes. */
static enum qr_status
images_probe_item(struct qr_dataset *ds, struct qr_data_src *s,
		  struct qr_data_item *it, size_t *n, struct qr_diag *d)
{
	struct qr_image im;
	enum qr_status st;

	*n = 1;
	st = image_load(it->path, &im, d);
	if (st == QR_OK)
		qr_image_free(&im);
	return st;
}

/* Probe the listed images in order until `need` decode; drop the rest. */
static enum qr_status
images_probe(struct qr_dataset *ds, struct qr_data_src *s, size_t need,
	     struct qr_diag *d)
{
	const struct images *g = s->state;
	enum qr_status st;
	size_t good;

	st = qr_data_items_probe(ds, s, need, !s->is_dir, images_probe_item,
				 "images", "images can be read", d);
	if (st != QR_OK)
		return st;
	good = s->n_samples;
	s->n_samples = good / (size_t)g->batch;
	if (s->n_samples == 0)
		return qr_errorf(d, QR_ESHAPE, "folder '%s': %zu readable "
				 "images, fewer than the input's batch of %d",
				 s->root, good, g->batch);
	return QR_OK;
}

/* Pixels (g->fbuf, h*w*ch, 0..255) -> batch row b of t:
 * x = (p * scale - mean[c]) / std[c] in the model's channel order. */
static void
normalize(const struct images *g, enum qr_channel_order order,
	  struct qr_tensor *t, int b, int h, int w)
{
	size_t plane = (size_t)h * (size_t)w, p, idx;
	size_t base = (size_t)b * plane * (size_t)g->ch;
	int c, ic;

	for (c = 0; c < g->ch; c++) {
		ic = g->ch == 3 && order == QR_ORDER_BGR ? 2 - c : c;
		for (p = 0; p < plane; p++) {
			/* volatile: no fused multiply-add, so the result is
			 * numpy's float32 (p * scale - mean) / std, bit for
			 * bit, on every target */
			volatile float x = g->fbuf[p * g->ch + ic] * g->scale;
			float v = (x - g->mean[c]) / g->std[c];

			idx = base + (g->layout == QR_LAYOUT_NCHW ?
				      (size_t)c * plane + p : p * g->ch + c);
			switch (t->dtype) {
			case QR_DT_FLOAT:
				((float *)t->data)[idx] = v;
				break;
			case QR_DT_DOUBLE:
				((double *)t->data)[idx] = v;
				break;
			case QR_DT_UINT8:
				v = nearbyintf(v);
				((uint8_t *)t->data)[idx] = (uint8_t)(
					v < 0 ? 0 : v > 255 ? 255 : v);
				break;
			default:
				v = nearbyintf(v);
				((int8_t *)t->data)[idx] = (int8_t)(
					v < -128 ? -128 : v > 127 ? 127 : v);
			}
		}
	}
}

/* The next sample's images into the slot's tensor; *end at the end of
 * data. */
static enum qr_status
images_next(struct qr_dataset *ds, struct qr_data_src *s, int *label,
	    int *end, struct qr_diag *d)
{
	struct qr_data_slot *sl = &ds->slots[s->slot];
	struct images *g = s->state;
	struct qr_diag scratch = {0};
	struct qr_image im;
	enum qr_status st = QR_OK;
	int64_t dims[4];
	int b = 0, h = g->h, w = g->w;
	struct qr_data_item *it;

	*label = -1;
	while (b < g->batch) {
		if (s->next_item >= s->n_items) {
			*end = 1;
			break;
		}
		it = &s->items[s->next_item++];
		if (image_load(it->path, &im, &scratch) != QR_OK) {
			qr_data_warn_skip(d, &scratch);
			continue;
		}
		if (b == 0) {
			size_t need;

			h = h ? h : im.h;
			w = w ? w : im.w;
			dims[0] = g->batch;
			if (g->layout == QR_LAYOUT_NCHW) {
				dims[1] = g->ch, dims[2] = h, dims[3] = w;
			} else {
				dims[1] = h, dims[2] = w, dims[3] = g->ch;
			}
			st = qr_data_slot_shape_set(sl, g->rank,
						    dims + 4 - g->rank, d);
			need = (size_t)h * (size_t)w * (size_t)g->ch;
			if (st == QR_OK && need > g->fbuf_n) {
				free(g->fbuf);
				g->fbuf = xreallocarray(NULL, need,
							sizeof *g->fbuf);
				g->fbuf_n = need;
			}
		}
		if (st == QR_OK) {
			qr_image_resize(&im, w, h, g->ch, g->fbuf);
			normalize(g, ds->order, sl->t, b, h, w);
			qr_data_name_add(&ds->name, it->name);
			if (g->batch == 1)
				*label = it->label;
		}
		qr_image_free(&im);
		if (st != QR_OK)
			break;
		b++;
	}
	qr_diag_clear(&scratch);
	return st;
}

static int
images_detect(const char *path, int is_dir)
{
	return 1; /* what holds neither pb nor npy data */
}

static enum qr_status
images_open(struct qr_dataset *ds, struct qr_data_src *s,
	    const struct qr_dataset_opts *o, struct qr_diag *d)
{
	struct images *g = xcalloc(1, sizeof *g);
	enum qr_status st;

	s->state = g;
	st = images_setup(g, &ds->slots[s->slot], o, d);
	if (st == QR_OK && s->is_dir)
		st = images_list(s, d);
	else if (st == QR_OK) {
		size_t cap = 0;

		qr_data_item_add(s, &cap, s->root, qr_path_basename(s->root),
				 -1);
	}
	if (st == QR_OK)
		st = images_probe(ds, s, ds->samples * (size_t)g->batch, d);
	return st;
}

static void
print_floats(struct qr_buf *b, const float *v, int n)
{
	int k;

	for (k = 0; k < n; k++)
		qr_buf_printf(b, "%s%g", k ? "," : "", v[k]);
}

static void
images_describe(const struct qr_dataset *ds, const struct qr_data_src *s,
		const struct qr_data_slot *sl, struct qr_buf *b)
{
	const struct images *g = s->state;

	if (g->h && g->w)
		qr_buf_printf(b, "resize %dx%d bilinear (half-pixel centres, "
			      "antialiased when shrinking)", g->h, g->w);
	else
		qr_buf_puts(b, "no resize (dynamic input size)");
	qr_buf_puts(b, g->ch == 1 ?
		    ", gray (RGB by luma 0.299/0.587/0.114)" :
		    ", RGB (gray replicated)");
	qr_buf_puts(b, ", alpha on black, scale ");
	if (g->scale == 1.0f / 255.0f)
		qr_buf_puts(b, "1/255");
	else
		qr_buf_printf(b, "%g", g->scale);
	qr_buf_puts(b, ", mean ");
	print_floats(b, g->mean, g->ch);
	qr_buf_puts(b, ", std ");
	print_floats(b, g->std, g->ch);
	qr_buf_puts(b, g->layout == QR_LAYOUT_NCHW ? ", NCHW" : ", NHWC");
	if (g->ch == 3)
		qr_buf_puts(b, ds->order == QR_ORDER_BGR ? ", BGR" : ", RGB");
	if (qr_data_slot_dtype(sl) == QR_DT_UINT8 ||
	    qr_data_slot_dtype(sl) == QR_DT_INT8)
		qr_buf_printf(b, ", rounded to %s",
			      qr_dtype_name(qr_data_slot_dtype(sl)));
	if (g->batch > 1)
		qr_buf_printf(b, ", %d images per sample", g->batch);
}

static void
images_free(struct qr_data_src *s)
{
	struct images *g = s->state;

	if (g != NULL)
		free(g->fbuf);
	free(g);
}

const struct qr_data_kind qr_data_images = {
	.name = "images",
	.detect = images_detect, .open = images_open, .next = images_next,
	.describe = images_describe, .free = images_free,
};
