/*
 * dataset: the representative data, one sample at a time. See dataset.h.
 *
 * Each graph input (initializers excluded, in graph order) is a slot fed
 * by one source. Opening lists the files of every source, probes them in
 * order until enough samples are known to be readable (warning about, and
 * dropping, those that are not) and keeps only paths; qr_dataset_next
 * reads and decodes one sample's files into tensors the dataset owns.
 *
 * Decisions:
 *   - A sample is a block of B rows along dim 0, where B is the input's
 *     dim 0 (fixed, or from --input); a dynamic dim 0 is 1. So an .npy of
 *     shape [N, ...] gives N/B samples (N must be a multiple of B), and one
 *     without the batch dim gives one sample when B is 1. An image input
 *     with B > 1 takes B consecutive images per sample (label -1).
 *   - .npy and .pb data is fed as stored: no scaling or normalisation.
 *     Integer data feeding a float input is cast by value (uint8 255 ->
 *     255.0); float data cannot feed an integer input; integers out of
 *     the input type's range make the file unreadable.
 *   - Images: decoded (image.c), converted to the input's channels (RGB to
 *     gray by luma, gray to RGB by replication), resized to the input's
 *     H x W (--input-size for dynamic dims; an image keeps its own size
 *     when neither gives one), then x = (p * scale - mean[c]) / std[c] in
 *     float arithmetic, with mean and std in the model's channel order.
 *     An integer (uint8/int8) input takes round(x) saturated, with scale
 *     1 by default (raw pixels). Layout AUTO is NHWC when the input's last
 *     dim is 1 or 3 and its channel dim (dim 1) is not.
 *   - Files are sorted by name (strcmp, locale-free). Class subfolders are
 *     the labels, sorted likewise; images at the top level of a folder
 *     with classes have label -1. Dot-files are ignored silently; other
 *     non-image files are skipped with a warning.
 *   - Random data: N(0, 1) for float inputs. An integer input that
 *     indexes a table (a Gather's indices, an EmbedLayerNormalization's
 *     word or segment ids, reached through Cast/Reshape/Unsqueeze-like
 *     ops; the table may sit behind a DequantizeLinear) is uniform over
 *     the table's rows, so token ids are real token ids; an attention
 *     mask (a com.microsoft mask input, or a rank >= 2 input whose name
 *     holds "mask") is ones, so every position attends. Other integers:
 *     uniform 0..255 (uint8) or -128..127 (int8), 0/1 for bool, zeros
 *     (with a warning) for wider ones. Sample i of input k depends only
 *     on (seed, i, k). A dynamic dim 0 is 1; any other dynamic dim is 1
 *     with a warning.
 *   - A pb source without an input name feeds every input its
 *     input_<i>.pb files name (by TensorProto name, else by index), so a
 *     test_data_set folder serves a model with several inputs.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/dataset.h"
#include "run/run.h"

#define DEFAULT_SAMPLES 20

enum src_kind { SRC_RANDOM = 0, SRC_IMAGES, SRC_NPY, SRC_PB };

static const char *const kind_names[] = {"random", "images", "npy", "pb"};

/* One file (images, npy) or test_data_set folder (pb). */
struct item {
	char *path;              /* file or folder (heap) */
	char *name;              /* display name, relative to the source */
	int label;               /* class index, -1 when none */
	size_t rows;             /* npy: samples the file holds */
	char **files;            /* pb: .pb path per slot or NULL (heap) */
};

struct source {
	enum src_kind kind;      /* never SRC_RANDOM */
	char *root;              /* path as given (heap) */
	int is_dir;              /* root is a folder */
	struct item *items;      /* usable items, in order */
	size_t n_items;          /* entries in items */
	size_t n_samples;        /* samples this source gives */
	size_t next_item;        /* next item to read */
	size_t next_row;         /* npy: next row block of the file */
	struct qr_tensor *file;  /* npy: the file being served, owned */
	char **classes;          /* class subfolder names (heap) */
	size_t n_classes;        /* entries in classes */
	size_t slot;             /* input fed (images, npy, named pb) */
	int all_slots;           /* pb without a name: every input it has */
	/* images: geometry of the input tensor */
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

struct slot {
	const struct qr_value_info *vi; /* graph input, borrowed */
	int ndim;                /* rank, -1 when unknown */
	int64_t dims[QR_MAX_DIMS]; /* declared or --input dims, -1 dynamic */
	struct source *src;      /* NULL: random */
	struct qr_tensor *t;     /* this sample's tensor, owned */
	int random_kind;         /* enum rnd_kind; -1 while being taken */
	int64_t rows;            /* RND_INDEX: values are 0..rows-1 */
	const char *lookup;      /* RND_INDEX/RND_ONES: node that reads it */
};

struct qr_dataset {
	const struct qr_model *m;   /* borrowed */
	size_t samples;             /* requested */
	uint64_t seed;              /* random seed */
	enum qr_channel_order order; /* channel order the model expects */
	struct slot *slots;         /* one per graph input (heap) */
	size_t n_slots;
	struct source *srcs[QR_DATASET_MAX_INPUTS]; /* owned */
	size_t n_srcs;
	struct qr_tensor **tv;      /* slot tensors handed out (heap) */
	size_t count;               /* samples it will produce */
	size_t produced;            /* samples produced so far */
	char *describe;             /* heap */
	struct qr_buf name;         /* display name of the last sample */
};

/* ---- small helpers ---- */

static int
name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Sorted names of dir, dot-files left out: a heap array of heap strings. */
static enum qr_status
list_dir(const char *dir, char ***out, size_t *n, struct qr_diag *d)
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

static void
free_names(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* 1 folder, 0 regular file (or other), -1 missing (errno set). */
static int
path_kind(const char *path)
{
	struct stat sb;

	if (stat(path, &sb) != 0)
		return -1;
	return S_ISDIR(sb.st_mode) ? 1 : 0;
}

static int
has_ext(const char *name, const char *ext)
{
	size_t n = strlen(name), e = strlen(ext);

	return n > e && strcasecmp(name + n - e, ext) == 0;
}

static int
is_image_name(const char *name)
{
	return has_ext(name, ".png") || has_ext(name, ".jpg") ||
	       has_ext(name, ".jpeg") || has_ext(name, ".bmp");
}

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

/* A declared shape as "[batch,3,224,224]" into buf. */
static const char *
slot_shape(const struct slot *sl, char *buf, size_t n)
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
static void
warn_skip(struct qr_diag *d, struct qr_diag *scratch)
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

static int
dt_is_int(int dt)
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
static int
convertible(int from, int to)
{
	if (from == to)
		return qr_dtype_size(to) > 0;
	if (dt_is_float(to))
		return dt_is_float(from) || dt_is_int(from);
	return dt_is_int(to) && dt_is_int(from);
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

static void
elem_set(void *p, int dt, size_t i, double v)
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
static enum qr_status
convert(struct qr_tensor *dst, const void *src, int from, size_t off,
	size_t n, const char *what, struct qr_diag *d)
{
	size_t i, es = qr_dtype_size(from);
	double lo, hi, v;

	if (from == dst->dtype) {
		if (n > 0)
			memcpy(dst->data, (const char *)src + off * es, n * es);
		return QR_OK;
	}
	if (dt_is_int(dst->dtype)) {
		int_range(dst->dtype, &lo, &hi);
		for (i = 0; i < n; i++) {
			v = elem_get(src, from, off + i);
			if (v < lo || v > hi)
				return qr_errorf(d, QR_EFORMAT, "file '%s': "
						 "value %.17g does not fit "
						 "input '%s' (%s)", what, v,
						 dst->name,
						 qr_dtype_name(dst->dtype));
			elem_set(dst->data, dst->dtype, i, v);
		}
		return QR_OK;
	}
	for (i = 0; i < n; i++)
		elem_set(dst->data, dst->dtype, i,
			 elem_get(src, from, off + i));
	return QR_OK;
}

/* Element type an input is fed with: the declared one, float if absent. */
static int
slot_dtype(const struct slot *sl)
{
	return sl->vi->dtype == QR_DT_UNDEFINED ? QR_DT_FLOAT : sl->vi->dtype;
}

/* Give sl's tensor this shape (dtype of the input) and room for it. */
static enum qr_status
slot_shape_set(struct slot *sl, int ndim, const int64_t *dims,
	       struct qr_diag *d)
{
	enum qr_status st;

	st = qr_tensor_set_shape(sl->t, slot_dtype(sl), ndim, dims,
				 sl->vi->name, d);
	if (st == QR_OK)
		qr_tensor_alloc(sl->t);
	return st;
}

/* ---- random ---- */

/* splitmix64 (Steele, Lea & Flood, 2014). */
static uint64_t
splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* How a random input is filled (see "Random data" above). */
enum rnd_kind {
	RND_NORMAL, RND_U8, RND_I8, RND_BOOL, RND_ZEROS, RND_INDEX, RND_ONES
};

/* Ops an index or mask keeps its values through. */
static int
keeps_values(const struct qr_node *n)
{
	static const char *const ops[] = {
		"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten",
		"Identity", "Expand", NULL};
	int k;

	if (n->domain[0] != '\0' && strcmp(n->domain, "ai.onnx") != 0)
		return 0;
	for (k = 0; ops[k] != NULL; k++)
		if (strcmp(n->op_type, ops[k]) == 0)
			return 1;
	return 0;
}

/* Initializer name, or the initializer a DequantizeLinear of name reads
 * (a quantized embedding table); NULL when neither. */
static const struct qr_tensor_data *
table_of(const struct qr_graph_data *g, const char *name)
{
	size_t i;

	for (i = 0; i < g->n_init; i++)
		if (strcmp(g->inits[i].name, name) == 0)
			return &g->inits[i];
	for (i = 0; i < g->n_node; i++) {
		const struct qr_node *n = &g->nodes[i];

		if (n->n_out > 0 && strcmp(n->out[0], name) == 0)
			return strcmp(n->op_type, "DequantizeLinear") == 0 &&
			       n->n_in > 0 ? table_of(g, n->in[0]) : NULL;
	}
	return NULL;
}

/*
 * What the values of tensor name select, found by following its readers
 * (through ops that keep values, depth 8): RND_INDEX with *rows the rows
 * of the table a Gather or EmbedLayerNormalization looks up, RND_ONES for
 * a com.microsoft attention mask, RND_ZEROS when neither. *via is the
 * node that reads it.
 */
static enum rnd_kind
int_use(const struct qr_graph_data *g, const char *name, int depth,
	int64_t *rows, const char **via)
{
	const struct qr_tensor_data *tab;
	enum rnd_kind k;
	size_t i, j;

	for (i = 0; i < g->n_node; i++) {
		const struct qr_node *n = &g->nodes[i];
		int ms = strcmp(n->domain, "com.microsoft") == 0;

		for (j = 0; j < n->n_in; j++) {
			const char *tname = NULL;
			int64_t axis = 0;

			if (strcmp(n->in[j], name) != 0)
				continue;
			if (strcmp(n->op_type, "Gather") == 0 && !ms &&
			    j == 1) {
				tname = n->in[0];
				axis = qr_node_attr_int(n, "axis", 0);
			} else if (ms && strcmp(n->op_type,
					"EmbedLayerNormalization") == 0 &&
				   j <= 1 && n->n_in > 2 + 2 * j) {
				tname = n->in[2 + 2 * j];
			} else if (ms && ((j == 7 && strcmp(n->op_type,
					"EmbedLayerNormalization") == 0) ||
					  (j == 3 && strcmp(n->op_type,
					"Attention") == 0))) {
				*via = n->name;
				return RND_ONES;
			} else if (depth < 8 && keeps_values(n) && n->n_out) {
				k = int_use(g, n->out[0], depth + 1, rows,
					    via);
				if (k != RND_ZEROS)
					return k;
				continue;
			}
			if (tname == NULL || (tab = table_of(g, tname)) ==
			    NULL)
				continue;
			if (axis < 0)
				axis += tab->ndim;
			if (axis < 0 || axis >= tab->ndim ||
			    tab->dims[axis] < 1)
				continue;
			*rows = tab->dims[axis];
			*via = n->name;
			return RND_INDEX;
		}
	}
	return RND_ZEROS;
}

/* Whether name holds "mask", any case. */
static int
names_mask(const char *name)
{
	for (; *name != '\0'; name++)
		if (strncasecmp(name, "mask", 4) == 0)
			return 1;
	return 0;
}

/* Largest value an integer dtype holds, as int64 (saturated). */
static int64_t
int_max(int dt)
{
	switch (dt) {
	case QR_DT_UINT8: return 255;
	case QR_DT_INT8: return 127;
	case QR_DT_UINT16: return 65535;
	case QR_DT_INT16: return 32767;
	case QR_DT_INT32: return INT32_MAX;
	case QR_DT_UINT32: return UINT32_MAX;
	default: return INT64_MAX;
	}
}

/*
 * Fill kind of an integer input: indices into the table it looks up,
 * ones for an attention mask (a com.microsoft mask input, or a name with
 * "mask" in it, rank 2 or more), else by dtype as before.
 */
static enum rnd_kind
int_kind(const struct qr_dataset *ds, struct slot *sl, int dt)
{
	enum rnd_kind k;

	if (dt == QR_DT_BOOL)
		return RND_BOOL;
	k = int_use(&ds->m->graph, sl->vi->name, 0, &sl->rows, &sl->lookup);
	if (k == RND_INDEX) {
		if (sl->rows - 1 > int_max(dt))
			sl->rows = int_max(dt) + 1;
		return k;
	}
	if (k == RND_ONES || (names_mask(sl->vi->name) && sl->ndim >= 2)) {
		if (k != RND_ONES)
			sl->lookup = NULL;
		return RND_ONES;
	}
	return dt == QR_DT_UINT8 ? RND_U8 : dt == QR_DT_INT8 ? RND_I8 :
	       RND_ZEROS;
}

/* Open-time set-up of a random slot: fixed shape, fill kind. */
static enum qr_status
random_setup(const struct qr_dataset *ds, struct slot *sl, struct qr_diag *d)
{
	int64_t dims[QR_MAX_DIMS];
	char sh[128];
	int k, dt = slot_dtype(sl);

	if (sl->ndim < 0)
		return qr_errorf(d, QR_ESHAPE, "input '%s' has no declared "
				 "shape: give --input %s:DIMS or --data",
				 sl->vi->name, sl->vi->name);
	for (k = 0; k < sl->ndim; k++)
		dims[k] = sl->dims[k] >= 0 ? sl->dims[k] : 1;
	for (k = 1; k < sl->ndim; k++)
		if (sl->dims[k] < 0)
			qr_warnf(d, "input '%s' %s: dynamic dim %d set to 1 "
				 "for random data (give --input %s:DIMS)",
				 sl->vi->name, slot_shape(sl, sh, sizeof sh),
				 k, sl->vi->name);
	if (dt == QR_DT_FLOAT || dt == QR_DT_DOUBLE)
		sl->random_kind = RND_NORMAL;
	else if (dt_is_int(dt)) {
		sl->random_kind = int_kind(ds, sl, dt);
		if (sl->random_kind == RND_ZEROS)
			qr_warnf(d, "input '%s' is %s and looks up no table: "
				 "random data fills it with zeros (give "
				 "--data %s=file.npy)", sl->vi->name,
				 qr_dtype_name(dt), sl->vi->name);
	} else {
		return qr_errorf(d, QR_EUNSUPPORTED, "input '%s': random data "
				 "for %s inputs is not supported",
				 sl->vi->name, qr_dtype_name(dt));
	}
	return slot_shape_set(sl, sl->ndim, dims, d);
}

static void
random_fill(struct slot *sl, uint64_t seed, size_t sample, size_t k)
{
	uint64_t s = seed ^ (0x9e3779b97f4a7c15ull * (sample + 1)) ^
		     (0xd1b54a32d192ed03ull * (k + 1));
	struct qr_tensor *t = sl->t;
	size_t i;

	for (i = 0; i < t->n_elem; i++) {
		uint64_t r = splitmix(&s);

		switch (sl->random_kind) {
		case RND_NORMAL: {
			/* Box-Muller; u1 in (0, 1] */
			double u1 = ((r >> 11) + 1) * 0x1p-53;
			double u2 = (splitmix(&s) >> 11) * 0x1p-53;
			double rad = sqrt(-2.0 * log(u1));

			elem_set(t->data, t->dtype, i,
				 rad * cos(2 * M_PI * u2));
			if (++i < t->n_elem)
				elem_set(t->data, t->dtype, i,
					 rad * sin(2 * M_PI * u2));
			break;
		}
		case RND_U8: ((uint8_t *)t->data)[i] = (uint8_t)(r >> 56);
			break;
		case RND_I8: ((int8_t *)t->data)[i] =
			     (int8_t)((int)(r >> 56) - 128);
			break;
		case RND_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)(r >> 63);
			break;
		case RND_INDEX:
			elem_set(t->data, t->dtype, i,
				 (double)(r % (uint64_t)sl->rows));
			break;
		case RND_ONES: elem_set(t->data, t->dtype, i, 1.0); break;
		default: memset(t->data, 0, t->nbytes); return;
		}
	}
}

/* ---- items ---- */

static struct item *
item_add(struct source *s, size_t *cap, const char *path, const char *name,
	 int label)
{
	struct item *it;

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
item_clear(struct item *it, size_t n_slots)
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
items_compact(struct source *s, const unsigned char *keep, size_t n_probed,
	      size_t n_slots)
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

/* ---- images ---- */

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
images_list(struct source *s, struct qr_diag *d)
{
	char **names = NULL, **sub = NULL, *path, *dir;
	size_t n = 0, n_sub = 0, i, j, cap = 0, cls_cap = 0;
	enum qr_status st;

	if ((st = list_dir(s->root, &names, &n, d)) != QR_OK)
		return st;
	for (i = 0; i < n; i++) {
		path = qr_path_join(s->root, names[i]);
		if (path_kind(path) == 1) {
			if (s->n_classes == cls_cap) {
				cls_cap = cls_cap ? 2 * cls_cap : 16;
				s->classes = xreallocarray(s->classes, cls_cap,
							   sizeof *s->classes);
			}
			s->classes[s->n_classes++] = xstrdup(names[i]);
		} else if (is_image_name(names[i])) {
			item_add(s, &cap, path, names[i], -1);
		} else {
			qr_warnf(d, "data '%s': '%s' is not an image (.png, "
				 ".jpg, .jpeg, .bmp) (skipped)", s->root,
				 names[i]);
		}
		free(path);
	}
	for (i = 0; i < s->n_classes && st == QR_OK; i++) {
		dir = qr_path_join(s->root, s->classes[i]);
		st = list_dir(dir, &sub, &n_sub, d);
		for (j = 0; j < n_sub; j++) {
			char *rel = xasprintf("%s/%s", s->classes[i], sub[j]);

			path = qr_path_join(dir, sub[j]);
			if (path_kind(path) == 0 && is_image_name(sub[j]))
				item_add(s, &cap, path, rel, (int)i);
			else
				qr_warnf(d, "data '%s': '%s' is not an image "
					 "(.png, .jpg, .jpeg, .bmp) (skipped)",
					 s->root, rel);
			free(path);
			free(rel);
		}
		free_names(sub, n_sub);
		sub = NULL;
		free(dir);
	}
	free_names(names, n);
	return st;
}

/* Geometry and preprocessing of the input sl for images. */
static enum qr_status
images_setup(struct source *s, const struct slot *sl,
	     const struct qr_dataset_opts *o, struct qr_diag *d)
{
	int dt = slot_dtype(sl), off, c_ax, h_ax, k;
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
				 sl->vi->name, slot_shape(sl, sh, sizeof sh));
	s->rank = sl->ndim;
	off = sl->ndim == 4 ? 1 : 0;
	s->layout = o->layout;
	if (s->layout == QR_LAYOUT_AUTO) {
		first = sl->dims[off];
		last = sl->dims[sl->ndim - 1];
		s->layout = (last == 1 || last == 3) && first != 1 &&
			    first != 3 ? QR_LAYOUT_NHWC : QR_LAYOUT_NCHW;
	}
	c_ax = s->layout == QR_LAYOUT_NCHW ? off : sl->ndim - 1;
	h_ax = s->layout == QR_LAYOUT_NCHW ? off + 1 : off;
	c = sl->dims[c_ax] >= 0 ? sl->dims[c_ax] : 3;
	if (c != 1 && c != 3)
		return qr_errorf(d, QR_ESHAPE, "input '%s' %s has %lld "
				 "channels in %s layout; images give 1 or 3",
				 sl->vi->name, slot_shape(sl, sh, sizeof sh),
				 (long long)c, s->layout == QR_LAYOUT_NCHW ?
				 "NCHW" : "NHWC");
	h = sl->dims[h_ax];
	w = sl->dims[h_ax + 1];
	if (o->input_h > 0 || o->input_w > 0) {
		if ((o->input_h > 0 && h >= 0 && h != o->input_h) ||
		    (o->input_w > 0 && w >= 0 && w != o->input_w))
			return qr_errorf(d, QR_ESHAPE, "--input-size %dx%d "
					 "(HxW) disagrees with input '%s' %s",
					 o->input_h, o->input_w, sl->vi->name,
					 slot_shape(sl, sh, sizeof sh));
		if (o->input_h > 0)
			h = o->input_h;
		if (o->input_w > 0)
			w = o->input_w;
	}
	if (h > QR_IMAGE_MAX_SIDE || w > QR_IMAGE_MAX_SIDE || h == 0 || w == 0)
		return qr_errorf(d, QR_ESHAPE, "input '%s' %s: an image size "
				 "of %lldx%lld is not supported", sl->vi->name,
				 slot_shape(sl, sh, sizeof sh), (long long)h,
				 (long long)w);
	s->h = h > 0 ? (int)h : 0;
	s->w = w > 0 ? (int)w : 0;
	s->ch = (int)c;
	s->batch = sl->ndim == 4 && sl->dims[0] > 0 ? (int)sl->dims[0] : 1;
	s->scale = o->scale != 0.0f ? o->scale :
		   dt_is_int(dt) ? 1.0f : 1.0f / 255.0f;
	for (k = 0; k < 3; k++) {
		s->mean[k] = o->mean[k];
		s->std[k] = o->std[k] != 0.0f ? o->std[k] : 1.0f;
	}
	return QR_OK;
}

/* Probe the listed images in order until `need` decode; drop the rest. */
static enum qr_status
images_probe(struct source *s, size_t need, size_t n_slots,
	     struct qr_diag *d)
{
	struct qr_diag scratch = {0};
	struct qr_image im;
	unsigned char *keep = xcalloc(s->n_items + 1, 1);
	size_t i, good = 0, listed = s->n_items;
	enum qr_status st = QR_OK;

	for (i = 0; i < s->n_items && good < need; i++) {
		st = image_load(s->items[i].path, &im, &scratch);
		if (st == QR_OK) {
			keep[i] = 1;
			good++;
			qr_image_free(&im);
		} else if (!s->is_dir) {
			qr_errorf(d, st, "%s", scratch.msg);
			break;
		} else {
			warn_skip(d, &scratch);
			st = QR_OK;
		}
	}
	qr_diag_clear(&scratch);
	items_compact(s, keep, i, n_slots);
	free(keep);
	if (st != QR_OK)
		return st;
	if (listed == 0)
		return qr_errorf(d, QR_EFORMAT, "folder '%s' holds no images",
				 s->root);
	if (good == 0)
		return qr_errorf(d, QR_EFORMAT, "folder '%s': none of its %zu "
				 "images can be read", s->root, listed);
	s->n_samples = good / (size_t)s->batch;
	if (s->n_samples == 0)
		return qr_errorf(d, QR_ESHAPE, "folder '%s': %zu readable "
				 "images, fewer than the input's batch of %d",
				 s->root, good, s->batch);
	return QR_OK;
}

/* Pixels (s->fbuf, h*w*ch, 0..255) -> batch row b of t:
 * x = (p * scale - mean[c]) / std[c] in the model's channel order. */
static void
normalize(const struct source *s, enum qr_channel_order order,
	  struct qr_tensor *t, int b, int h, int w)
{
	size_t plane = (size_t)h * (size_t)w, p, idx;
	size_t base = (size_t)b * plane * (size_t)s->ch;
	int c, ic;

	for (c = 0; c < s->ch; c++) {
		ic = s->ch == 3 && order == QR_ORDER_BGR ? 2 - c : c;
		for (p = 0; p < plane; p++) {
			/* volatile: no fused multiply-add, so the result is
			 * numpy's float32 (p * scale - mean) / std, bit for
			 * bit, on every target */
			volatile float x = s->fbuf[p * s->ch + ic] * s->scale;
			float v = (x - s->mean[c]) / s->std[c];

			idx = base + (s->layout == QR_LAYOUT_NCHW ?
				      (size_t)c * plane + p : p * s->ch + c);
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

static void
name_add(struct qr_buf *b, const char *s)
{
	if (b->len > 0)
		qr_buf_puts(b, ", ");
	qr_buf_puts(b, s);
}

/* The next sample's images into sl's tensor; *end at the end of data. */
static enum qr_status
images_next(struct qr_dataset *ds, struct source *s, struct slot *sl,
	    int *label, int *end, struct qr_diag *d)
{
	struct qr_diag scratch = {0};
	struct qr_image im;
	enum qr_status st = QR_OK;
	int64_t dims[4];
	int b = 0, h = s->h, w = s->w;
	struct item *it;

	*label = -1;
	while (b < s->batch) {
		if (s->next_item >= s->n_items) {
			*end = 1;
			break;
		}
		it = &s->items[s->next_item++];
		if (image_load(it->path, &im, &scratch) != QR_OK) {
			warn_skip(d, &scratch);
			continue;
		}
		if (b == 0) {
			size_t need;

			h = h ? h : im.h;
			w = w ? w : im.w;
			dims[0] = s->batch;
			if (s->layout == QR_LAYOUT_NCHW) {
				dims[1] = s->ch, dims[2] = h, dims[3] = w;
			} else {
				dims[1] = h, dims[2] = w, dims[3] = s->ch;
			}
			st = slot_shape_set(sl, s->rank, dims + 4 - s->rank, d);
			need = (size_t)h * (size_t)w * (size_t)s->ch;
			if (st == QR_OK && need > s->fbuf_n) {
				free(s->fbuf);
				s->fbuf = xreallocarray(NULL, need,
							sizeof *s->fbuf);
				s->fbuf_n = need;
			}
		}
		if (st == QR_OK) {
			qr_image_resize(&im, w, h, s->ch, s->fbuf);
			normalize(s, ds->order, sl->t, b, h, w);
			name_add(&ds->name, it->name);
			if (s->batch == 1)
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

/* ---- npy ---- */

/*
 * How .npy tensor t feeds sl: *rows samples of shape (*ndim, dims), a
 * block of B rows along dim 0 each (B = the input's dim 0, 1 if dynamic),
 * or the whole of t with a batch dim of 1 added when t lacks it.
 */
static enum qr_status
npy_fit(const struct slot *sl, const struct qr_tensor *t, const char *what,
	size_t *rows, int *ndim, int64_t *dims, struct qr_diag *d)
{
	char want[128], got[128];
	int64_t bsz;
	int k, add;

	if (!convertible(t->dtype, slot_dtype(sl)))
		return qr_errorf(d, QR_EUNSUPPORTED, "file '%s': %s data "
				 "cannot feed input '%s' (%s)", what,
				 qr_dtype_name(t->dtype), sl->vi->name,
				 qr_dtype_name(slot_dtype(sl)));
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
			 sl->vi->name, slot_shape(sl, want, sizeof want));
}

/* List s->root (a .npy file, or a folder of them) and probe the files in
 * order until `need` samples are known. */
static enum qr_status
npy_list_probe(struct source *s, const struct slot *sl, size_t need,
	       size_t n_slots, struct qr_diag *d)
{
	struct qr_diag scratch = {0};
	struct qr_tensor *t = NULL;
	char **names = NULL, *path;
	unsigned char *keep;
	size_t n = 0, i, cap = 0, rows, total = 0, listed;
	int64_t dims[QR_MAX_DIMS];
	enum qr_status st = QR_OK;
	int ndim;

	if (!s->is_dir) {
		item_add(s, &cap, s->root, qr_path_basename(s->root), -1);
	} else {
		if ((st = list_dir(s->root, &names, &n, d)) != QR_OK)
			return st;
		for (i = 0; i < n; i++) {
			path = qr_path_join(s->root, names[i]);
			if (has_ext(names[i], ".npy") && path_kind(path) == 0)
				item_add(s, &cap, path, names[i], -1);
			else
				qr_warnf(d, "data '%s': '%s' is not a .npy "
					 "file (skipped)", s->root, names[i]);
			free(path);
		}
		free_names(names, n);
	}
	listed = s->n_items;
	keep = xcalloc(listed + 1, 1);
	for (i = 0; i < s->n_items && total < need; i++) {
		st = qr_npy_read_head(s->items[i].path, &t, &scratch);
		if (st == QR_OK)
			st = npy_fit(sl, t, s->items[i].path, &rows, &ndim,
				     dims, &scratch);
		qr_tensor_free(t);
		t = NULL;
		if (st == QR_OK) {
			keep[i] = 1;
			s->items[i].rows = rows;
			total += rows;
		} else if (!s->is_dir) {
			qr_errorf(d, st, "%s", scratch.msg);
			break;
		} else {
			warn_skip(d, &scratch);
			st = QR_OK;
		}
	}
	qr_diag_clear(&scratch);
	items_compact(s, keep, i, n_slots);
	free(keep);
	if (st != QR_OK)
		return st;
	if (listed == 0)
		return qr_errorf(d, QR_EFORMAT, "folder '%s' holds no .npy "
				 "files", s->root);
	if (total == 0)
		return qr_errorf(d, QR_EFORMAT, "folder '%s': none of its %zu "
				 ".npy files can be used", s->root, listed);
	s->n_samples = total;
	return QR_OK;
}

static void
npy_drop_file(struct source *s)
{
	qr_tensor_free(s->file);
	s->file = NULL;
	s->next_row = 0;
	s->next_item++;
}

static enum qr_status
npy_next(struct qr_dataset *ds, struct source *s, struct slot *sl, int *end,
	 struct qr_diag *d)
{
	struct qr_diag scratch = {0};
	int64_t dims[QR_MAX_DIMS];
	size_t rows, per;
	struct item *it;
	char *nm;
	int ndim;

	for (;;) {
		if (s->next_item >= s->n_items) {
			*end = 1;
			break;
		}
		it = &s->items[s->next_item];
		if ((s->file == NULL && qr_npy_read(it->path, NULL, &s->file,
						    &scratch) != QR_OK) ||
		    npy_fit(sl, s->file, it->path, &rows, &ndim, dims,
			    &scratch) != QR_OK ||
		    slot_shape_set(sl, ndim, dims, &scratch) != QR_OK ||
		    s->next_row >= rows) {
			if (scratch.status != QR_OK)
				warn_skip(d, &scratch);
			npy_drop_file(s);
			continue;
		}
		per = sl->t->n_elem;
		if (convert(sl->t, s->file->data, s->file->dtype,
			    s->next_row * per, per, it->path,
			    &scratch) != QR_OK) {
			warn_skip(d, &scratch);
			npy_drop_file(s);
			continue;
		}
		nm = rows > 1 ? xasprintf("%s[%zu]", it->name, s->next_row) :
				xstrdup(it->name);
		name_add(&ds->name, nm);
		free(nm);
		if (++s->next_row >= rows)
			npy_drop_file(s);
		break;
	}
	qr_diag_clear(&scratch);
	return QR_OK;
}

/* ---- pb ---- */

/* Header facts of a .pb TensorProto: its name (heap, "" when unnamed),
 * dtype and shape. */
static enum qr_status
pb_probe(const char *path, char **tname, int *dtype, int *ndim,
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
pb_item(struct qr_dataset *ds, struct source *s, struct item *it,
	struct qr_diag *d)
{
	char **names = NULL, *path = NULL, *tname = NULL, want[128];
	size_t n = 0, i, j, n_pb = 0;
	int64_t dims[QR_MAX_DIMS];
	int dtype = 0, ndim = 0, k, sl_i, only;
	enum qr_status st = QR_OK;

	it->files = xcalloc(ds->n_slots, sizeof *it->files);
	if (path_kind(it->path) == 0) {
		names = xcalloc(1, sizeof *names);
		names[n++] = xstrdup(it->path);
	} else if ((st = list_dir(it->path, &names, &n, d)) != QR_OK) {
		return st;
	}
	for (i = 0; i < n; i++)
		n_pb += path_kind(it->path) == 0 || pb_index(names[i]) >= 0;
	only = n_pb == 1 && !s->all_slots;
	for (i = 0; i < n && st == QR_OK; i++) {
		int idx = path_kind(it->path) == 0 ? 0 : pb_index(names[i]);

		if (idx < 0)
			continue;
		path = path_kind(it->path) == 0 ? xstrdup(it->path) :
		       qr_path_join(it->path, names[i]);
		st = pb_probe(path, &tname, &dtype, &ndim, dims, d);
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
			struct slot *sl = &ds->slots[sl_i];
			int fits = sl->ndim < 0 || sl->ndim == ndim;

			for (k = 0; fits && sl->ndim >= 0 && k < ndim; k++)
				fits = sl->dims[k] < 0 ||
				       sl->dims[k] == dims[k];
			if (!convertible(dtype, slot_dtype(sl)))
				st = qr_errorf(d, QR_EUNSUPPORTED, "file '%s': "
					       "%s data cannot feed input '%s' "
					       "(%s)", path,
					       qr_dtype_name(dtype),
					       sl->vi->name,
					       qr_dtype_name(slot_dtype(sl)));
			else if (!fits)
				st = qr_errorf(d, QR_ESHAPE, "file '%s': rank "
					       "%d tensor does not fit input "
					       "'%s' %s", path, ndim,
					       sl->vi->name,
					       slot_shape(sl, want,
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
	free_names(names, n);
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

/* List the test_data_set folders (or the one folder or file) of a pb
 * source and probe them until `need` are usable. */
static enum qr_status
pb_list_probe(struct qr_dataset *ds, struct source *s, size_t need,
	      struct qr_diag *d)
{
	struct qr_diag scratch = {0};
	char **names = NULL, *path;
	unsigned char *keep;
	size_t n = 0, i, j, cap = 0, good = 0, listed;
	int nested = 0, any;
	enum qr_status st = QR_OK;

	if (s->is_dir) {
		if ((st = list_dir(s->root, &names, &n, d)) != QR_OK)
			return st;
		for (i = 0; i < n; i++)
			if (pb_index(names[i]) >= 0)
				break;
		nested = i == n;
	}
	if (!nested) {
		item_add(s, &cap, s->root, qr_path_basename(s->root), -1);
	} else {
		for (i = 0; i < n; i++) {
			path = qr_path_join(s->root, names[i]);
			if (strncmp(names[i], "test_data_set_", 14) == 0 &&
			    path_kind(path) == 1)
				item_add(s, &cap, path, names[i], -1);
			free(path);
		}
	}
	free_names(names, n);
	listed = s->n_items;
	keep = xcalloc(listed + 1, 1);
	for (i = 0; i < s->n_items && good < need; i++) {
		st = pb_item(ds, s, &s->items[i], &scratch);
		if (st == QR_OK) {
			keep[i] = 1;
			good++;
			if (s->all_slots && good == 1) {
				for (j = 0, any = 0; j < ds->n_slots; j++)
					if (s->items[i].files[j] != NULL) {
						ds->slots[j].src = s;
						any = 1;
					}
				if (!any) {
					keep[i] = 0;
					good--;
					qr_errorf(&scratch, QR_EFORMAT, "data "
						  "'%s': no input_<i>.pb file "
						  "names a model input",
						  s->items[i].path);
					warn_skip(d, &scratch);
				}
			}
		} else if (listed == 1) {
			qr_errorf(d, st, "%s", scratch.msg);
			break;
		} else {
			warn_skip(d, &scratch);
			st = QR_OK;
		}
	}
	qr_diag_clear(&scratch);
	items_compact(s, keep, i, ds->n_slots);
	free(keep);
	if (st != QR_OK)
		return st;
	if (listed == 0)
		return qr_errorf(d, QR_EFORMAT, "folder '%s' holds no "
				 "test_data_set_* folders", s->root);
	if (good == 0)
		return qr_errorf(d, QR_EFORMAT, "folder '%s': none of its %zu "
				 "test data sets can be used", s->root, listed);
	s->n_samples = good;
	return QR_OK;
}

static enum qr_status
pb_next(struct qr_dataset *ds, struct source *s, int *end,
	struct qr_diag *d)
{
	struct qr_diag scratch = {0};
	struct qr_tensor *t = NULL;
	struct item *it;
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
			struct slot *sl = &ds->slots[j];

			if (sl->src != s)
				continue;
			bad = qr_pb_read(it->files[j], NULL, &t, &scratch) ||
			      !convertible(t->dtype, slot_dtype(sl)) ||
			      slot_shape_set(sl, t->ndim, t->dims, &scratch) ||
			      convert(sl->t, t->data, t->dtype, 0, t->n_elem,
				      it->files[j], &scratch);
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
			warn_skip(d, &scratch);
			continue;
		}
		name_add(&ds->name, it->name);
		break;
	}
	qr_diag_clear(&scratch);
	return QR_OK;
}

/* ---- the dataset ---- */

/* Which kind of data path holds; -1 with errno set when it is missing. */
static int
detect_kind(const char *path, int *is_dir)
{
	char **names = NULL, *sub;
	size_t n = 0, i, n_npy = 0, n_other = 0;
	int pk = path_kind(path), kind = SRC_IMAGES;

	*is_dir = pk == 1;
	if (pk < 0)
		return -1;
	if (pk == 0)
		return has_ext(path, ".npy") ? SRC_NPY :
		       has_ext(path, ".pb") ? SRC_PB : SRC_IMAGES;
	if (list_dir(path, &names, &n, NULL) != QR_OK)
		return SRC_IMAGES; /* images_list reports the error */
	for (i = 0; i < n && kind == SRC_IMAGES; i++) {
		sub = qr_path_join(path, names[i]);
		if (pb_index(names[i]) >= 0 ||
		    (strncmp(names[i], "test_data_set_", 14) == 0 &&
		     path_kind(sub) == 1))
			kind = SRC_PB;
		else if (has_ext(names[i], ".npy"))
			n_npy++;
		else if (is_image_name(names[i]) || path_kind(sub) == 1)
			n_other++;
		free(sub);
	}
	free_names(names, n);
	if (kind == SRC_IMAGES && n_npy > 0 && n_other == 0)
		kind = SRC_NPY;
	return kind;
}

static void
source_free(struct source *s, size_t n_slots)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n_items; i++)
		item_clear(&s->items[i], n_slots);
	free(s->items);
	free_names(s->classes, s->n_classes);
	qr_tensor_free(s->file);
	free(s->fbuf);
	free(s->root);
	free(s);
}

/* Open the source at path for slot (or every slot it names: all). */
static enum qr_status
source_open(struct qr_dataset *ds, const struct qr_dataset_opts *o,
	    const char *path, size_t slot, int all, struct qr_diag *d)
{
	struct source *s = xcalloc(1, sizeof *s);
	struct slot *sl = &ds->slots[slot];
	enum qr_status st;
	int kind;

	ds->srcs[ds->n_srcs++] = s;
	s->root = xstrdup(path);
	s->slot = slot;
	kind = detect_kind(path, &s->is_dir);
	if (kind < 0)
		return qr_errorf(d, QR_EIO, "data '%s': %s", path,
				 strerror(errno));
	s->kind = (enum src_kind)kind;
	if (all && s->kind != SRC_PB) {
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
		sl->src = s;
	switch (s->kind) {
	case SRC_IMAGES:
		st = images_setup(s, sl, o, d);
		if (st == QR_OK && s->is_dir)
			st = images_list(s, d);
		else if (st == QR_OK) {
			size_t cap = 0;

			item_add(s, &cap, path, qr_path_basename(path), -1);
		}
		if (st == QR_OK)
			st = images_probe(s, ds->samples * (size_t)s->batch,
					  ds->n_slots, d);
		return st;
	case SRC_NPY:
		return npy_list_probe(s, sl, ds->samples, ds->n_slots, d);
	default:
		return pb_list_probe(ds, s, ds->samples, d);
	}
}

static void
print_floats(struct qr_buf *b, const float *v, int n)
{
	int k;

	for (k = 0; k < n; k++)
		qr_buf_printf(b, "%s%g", k ? "," : "", v[k]);
}

/* One line saying how slot j is fed (see qr_dataset_describe). */
static void
describe_slot(const struct qr_dataset *ds, const struct slot *sl,
	      struct qr_buf *b)
{
	const struct source *s = sl->src;
	static const char *const rnd[] = {
		"N(0,1)", "uniform 0..255", "uniform -128..127",
		"uniform 0/1", "zeros"};
	const char *dt = qr_dtype_name(slot_dtype(sl));

	if (s == NULL && sl->random_kind == RND_ONES) {
		qr_buf_printf(b, "ones %s (an attention mask", dt);
		if (sl->lookup != NULL)
			qr_buf_printf(b, " of '%s'", sl->lookup);
		qr_buf_puts(b, ": every position attends)");
		return;
	}
	if (s == NULL && sl->random_kind == RND_INDEX) {
		qr_buf_printf(b, "random uniform 0..%lld %s (rows looked up "
			      "by '%s'), seed %llu", (long long)sl->rows - 1,
			      dt, sl->lookup, (unsigned long long)ds->seed);
		return;
	}
	if (s == NULL) {
		qr_buf_printf(b, "random %s %s, seed %llu",
			      rnd[sl->random_kind], dt,
			      (unsigned long long)ds->seed);
		return;
	}
	if (s->kind != SRC_IMAGES) {
		qr_buf_printf(b, "%s as stored (no preprocessing)",
			      kind_names[s->kind]);
		return;
	}
	if (s->h && s->w)
		qr_buf_printf(b, "resize %dx%d bilinear (half-pixel centres, "
			      "antialiased when shrinking)", s->h, s->w);
	else
		qr_buf_puts(b, "no resize (dynamic input size)");
	qr_buf_puts(b, s->ch == 1 ?
		    ", gray (RGB by luma 0.299/0.587/0.114)" :
		    ", RGB (gray replicated)");
	qr_buf_puts(b, ", alpha on black, scale ");
	if (s->scale == 1.0f / 255.0f)
		qr_buf_puts(b, "1/255");
	else
		qr_buf_printf(b, "%g", s->scale);
	qr_buf_puts(b, ", mean ");
	print_floats(b, s->mean, s->ch);
	qr_buf_puts(b, ", std ");
	print_floats(b, s->std, s->ch);
	qr_buf_puts(b, s->layout == QR_LAYOUT_NCHW ? ", NCHW" : ", NHWC");
	if (s->ch == 3)
		qr_buf_puts(b, ds->order == QR_ORDER_BGR ? ", BGR" : ", RGB");
	if (slot_dtype(sl) == QR_DT_UINT8 || slot_dtype(sl) == QR_DT_INT8)
		qr_buf_printf(b, ", rounded to %s",
			      qr_dtype_name(slot_dtype(sl)));
	if (s->batch > 1)
		qr_buf_printf(b, ", %d images per sample", s->batch);
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

static struct slot *
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
	struct slot *sl;
	char sh[128];
	size_t i;
	int k;

	for (i = 0; i < o->n_overrides && i < QR_DATASET_MAX_INPUTS; i++) {
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
					 slot_shape(sl, sh, sizeof sh),
					 sl->ndim);
		for (k = 0; k < ov->ndim; k++) {
			if (ov->dims[k] <= 0)
				return qr_errorf(d, QR_EUSAGE, "--input '%s': "
						 "dim %d must be positive",
						 ov->input, k);
			if (sl->ndim >= 0 && sl->dims[k] >= 0 &&
			    sl->dims[k] != ov->dims[k])
				return qr_errorf(d, QR_ESHAPE, "--input '%s': "
						 "dim %d is %lld, the model "
						 "fixes it at %lld (%s)",
						 ov->input, k,
						 (long long)ov->dims[k],
						 (long long)sl->dims[k],
						 slot_shape(sl, sh, sizeof sh));
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
	struct slot *sl;
	size_t i, n = o->n_sources;

	if (n > QR_DATASET_MAX_INPUTS)
		n = QR_DATASET_MAX_INPUTS;
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
		struct slot *sl;

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
	if ((st = apply_overrides(ds, o, d)) != QR_OK ||
	    (st = open_sources(ds, o, d)) != QR_OK)
		goto out;
	ds->count = ds->samples;
	for (i = 0; i < ds->n_srcs; i++)
		if (ds->srcs[i]->n_samples < ds->count)
			ds->count = ds->srcs[i]->n_samples;
	for (j = 0; j < ds->n_slots; j++) {
		struct slot *sl = &ds->slots[j];

		if (sl->src == NULL && (st = random_setup(ds, sl, d)) != QR_OK)
			goto out;
		if (ds->n_slots > 1)
			qr_buf_printf(&desc, "%s%s: ", j ? "; " : "",
				      sl->vi->name);
		describe_slot(ds, sl, &desc);
	}
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
	size_t i, j;

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
		struct source *s = ds->srcs[i];

		switch (s->kind) {
		case SRC_IMAGES:
			st = images_next(ds, s, &ds->slots[s->slot], &lab,
					 &end, d);
			if (!have_label && s->n_classes > 0) {
				*label = lab;
				have_label = 1;
			}
			break;
		case SRC_NPY:
			st = npy_next(ds, s, &ds->slots[s->slot], &end, d);
			break;
		default:
			st = pb_next(ds, s, &end, d);
		}
	}
	if (st != QR_OK || end) {
		ds->produced = ds->count;
		*label = -1;
		return st;
	}
	for (j = 0; j < ds->n_slots; j++)
		if (ds->slots[j].src == NULL)
			random_fill(&ds->slots[j], ds->seed, ds->produced, j);
	if (ds->n_srcs == 0)
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
	return kind_names[ds->n_srcs > 0 ? ds->srcs[0]->kind : SRC_RANDOM];
}

/* min(samples, what every source holds after probing); random: samples. */
size_t
qr_dataset_count(const struct qr_dataset *ds)
{
	return ds->count;
}

/* Class names of the first image source with class subfolders. Borrowed. */
const char *const *
qr_dataset_classes(const struct qr_dataset *ds, size_t *n)
{
	size_t i;

	for (i = 0; i < ds->n_srcs; i++)
		if (ds->srcs[i]->kind == SRC_IMAGES &&
		    ds->srcs[i]->n_classes > 0) {
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
