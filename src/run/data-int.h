/*
 * data-int.h: what the dataset's files share.
 *
 *   dataset.c      qr_dataset_*: inputs (slots), --input overrides, which
 *                  source feeds which input, sample assembly, the
 *                  description; the helpers below (folders, element
 *                  conversion, listing and probing items)
 *   data_random.c  random data shaped from the model's inputs
 *   data_images.c  a folder of images (class subfolders give labels)
 *   data_npy.c     .npy files, one sample or one batch array per file
 *   data_pb.c      ONNX test_data_set_* folders of input_<i>.pb files
 *   data_llm.c     a decoder LLM's inputs that follow from its token ids
 *                  (attention mask, positions, sequence lengths) and its
 *                  empty KV cache by default
 *   image.c        the image decoders and the resize (dataset.h)
 *
 * Every kind of source is a struct qr_data_kind (name, detect, open,
 * next, describe, free), the way ops are descriptors; dataset.c lists
 * them in one table. Each graph input (a slot) is fed by one source; a
 * source feeds one slot, or several (a pb source without an input name).
 */
#ifndef QR_DATA_INT_H
#define QR_DATA_INT_H

#include <stddef.h>
#include <stdint.h>

#include "graph/tensor.h"
#include "run/dataset.h"
#include "util/util.h"

struct qr_value_info;
struct qr_data_src;
struct qr_data_slot;

/* One kind of source, as data. */
struct qr_data_kind {
	const char *name;        /* "images", ...: report.json dataset.source */
	int named_inputs;        /* its files name the inputs they feed, so
				  * one source may feed every input */
	/* 1 when path (a folder when is_dir) holds data of this kind; NULL:
	 * never taken for a path (random feeds inputs given no data) */
	int (*detect)(const char *path, int is_dir);
	/* List s->root, probe the items in order until ds->samples samples
	 * are known readable (dropping, with a warning, those that are not)
	 * and set s->n_samples; s->slot is the input fed. */
	enum qr_status (*open)(struct qr_dataset *ds, struct qr_data_src *s,
			       const struct qr_dataset_opts *o,
			       struct qr_diag *d);
	/* The next sample into the tensors of the slots s feeds, its name
	 * added to ds->name; *label its class when s has classes; *end set
	 * when s runs dry. Unreadable files are skipped with a warning. */
	enum qr_status (*next)(struct qr_dataset *ds, struct qr_data_src *s,
			       int *label, int *end, struct qr_diag *d);
	/* One clause of qr_dataset_describe for slot sl; NULL: "<name> as
	 * stored (no preprocessing)". */
	void (*describe)(const struct qr_dataset *ds,
			 const struct qr_data_src *s,
			 const struct qr_data_slot *sl, struct qr_buf *b);
	/* Free s->state; NULL when the kind keeps none. */
	void (*free)(struct qr_data_src *s);
};

extern const struct qr_data_kind qr_data_random;
extern const struct qr_data_kind qr_data_images;
extern const struct qr_data_kind qr_data_npy;
extern const struct qr_data_kind qr_data_pb;
extern const struct qr_data_kind qr_data_llm;

/* One file (images, npy) or test_data_set folder (pb). */
struct qr_data_item {
	char *path;              /* file or folder (heap) */
	char *name;              /* display name, relative to the source */
	int label;               /* class index, -1 when none */
	size_t rows;             /* npy: samples the file holds */
	char **files;            /* pb: .pb path per slot or NULL (heap) */
};

struct qr_data_src {
	const struct qr_data_kind *kind; /* NULL until detected */
	char *root;              /* path as given (heap); NULL: random */
	int is_dir;              /* root is a folder */
	struct qr_data_item *items; /* usable items, in order */
	size_t n_items;          /* entries in items */
	size_t n_samples;        /* samples this source gives (while
				  * probing: samples known so far) */
	size_t next_item;        /* next item to read */
	char **classes;          /* class subfolder names (heap) */
	size_t n_classes;        /* entries in classes */
	size_t slot;             /* input fed (all but an unnamed pb) */
	int all_slots;           /* pb without a name: every input it has */
	void *state;             /* the kind's own, freed by kind->free */
};

struct qr_data_slot {
	const struct qr_value_info *vi; /* graph input, borrowed */
	int ndim;                /* rank, -1 when unknown */
	int64_t dims[QR_MAX_DIMS]; /* declared or --input dims, -1 dynamic */
	struct qr_data_src *src; /* feeding source; NULL until one is set */
	struct qr_tensor *t;     /* this sample's tensor, owned */
	int random_kind;         /* data_random.c's fill; -1 while taken */
	int64_t rows;            /* random indices: values are 0..rows-1 */
	const char *lookup;      /* random indices/ones: node that reads it */
	int past_default;        /* a KV cache input whose symbolic past
				  * length was set to 0 (data_llm.c) */
};

struct qr_dataset {
	const struct qr_model *m;   /* borrowed */
	size_t samples;             /* requested */
	uint64_t seed;              /* random seed */
	enum qr_channel_order order; /* channel order the model expects */
	struct qr_data_slot *slots; /* one per graph input (heap) */
	size_t n_slots;
	struct qr_data_src **srcs;  /* file sources, then one random source
				     * per input without data (heap, owned) */
	size_t n_srcs;
	struct qr_tensor **tv;      /* slot tensors handed out (heap) */
	size_t count;               /* samples it will produce */
	size_t produced;            /* samples produced so far */
	char *describe;             /* heap */
	struct qr_buf name;         /* display name of the last sample */
};

/* ---- folders and files (dataset.c) ---- */

/* Sorted names of dir, dot-files left out: a heap array of heap strings
 * (free with qr_data_free_names). QR_EIO naming dir when unreadable. */
enum qr_status qr_data_list_dir(const char *dir, char ***out, size_t *n,
				struct qr_diag *d);
void qr_data_free_names(char **names, size_t n);
/* 1 folder, 0 regular file (or other), -1 missing (errno set). */
int qr_data_path_kind(const char *path);
/* 1 when entry name of folder dir is a folder. */
int qr_data_is_subdir(const char *dir, const char *name);
/* 1 when name ends in ext (any case) and has more before it. */
int qr_data_has_ext(const char *name, const char *ext);
/* Record the error in scratch as a warning on d and clear scratch. */
void qr_data_warn_skip(struct qr_diag *d, struct qr_diag *scratch);
/* Add s to the display name being built, after ", " when not first. */
void qr_data_name_add(struct qr_buf *b, const char *s);

/* ---- slots and element conversion (dataset.c) ---- */

/* A declared shape as "[batch,3,224,224]" into buf. */
const char *qr_data_slot_shape(const struct qr_data_slot *sl, char *buf,
			       size_t n);
/* Element type an input is fed with: the declared one, float if absent. */
int qr_data_slot_dtype(const struct qr_data_slot *sl);
/* Give sl's tensor this shape (dtype of the input) and room for it. */
enum qr_status qr_data_slot_shape_set(struct qr_data_slot *sl, int ndim,
				      const int64_t *dims, struct qr_diag *d);
/* 1 for the integer dtypes (bool included). */
int qr_data_dt_is_int(int dt);
/* 1 when data of dtype `from` can feed an input of dtype `to`. */
int qr_data_convertible(int from, int to);
/* Element i of p (dtype dt) = v, converted by C's rules. */
void qr_data_elem_set(void *p, int dt, size_t i, double v);
/* Copy n elements of src (dtype from, from element off) into dst;
 * QR_EFORMAT naming `what` for an integer out of dst's range. */
enum qr_status qr_data_convert(struct qr_tensor *dst, const void *src,
			       int from, size_t off, size_t n,
			       const char *what, struct qr_diag *d);

/* ---- items (dataset.c) ---- */

/* Append an item (copies of path and name) to s; *cap is s->items'
 * room, 0 at first. */
struct qr_data_item *qr_data_item_add(struct qr_data_src *s, size_t *cap,
				      const char *path, const char *name,
				      int label);

/* Probe one item: QR_OK with *n the samples it gives, or an error on d.
 * QR_OK with *n == 0 drops the item with the warning left on d. */
typedef enum qr_status (*qr_data_probe_fn)(struct qr_dataset *ds,
					   struct qr_data_src *s,
					   struct qr_data_item *it,
					   size_t *n, struct qr_diag *d);

/*
 * Probe s's items in order until `need` samples are known, keeping those
 * that serve and freeing the others and those never probed. A failing
 * item is skipped with a warning, unless `fatal` (the source is that one
 * item): then its error is returned. s->n_samples counts the samples
 * found. QR_EFORMAT "folder '...' holds no <none>" when s lists no items,
 * "none of its N <unusable>" when none serves.
 */
enum qr_status qr_data_items_probe(struct qr_dataset *ds,
				   struct qr_data_src *s, size_t need,
				   int fatal, qr_data_probe_fn probe,
				   const char *none, const char *unusable,
				   struct qr_diag *d);

/* ---- kinds' helpers ---- */

/* Image file names: .png, .jpg, .jpeg, .bmp (data_images.c). */
int qr_data_is_image_name(const char *name);

/* data_llm.c: 1 when name is a KV cache input (past_key_values.*). */
int qr_data_llm_is_past(const char *name);
/* Set the symbolic past length of a decoder's KV cache inputs left
 * unbound by --input to 0 (an empty cache); nothing for other models. */
void qr_data_llm_defaults(struct qr_dataset *ds);
/* 1 when slot sl, given no data, is derived from the token ids
 * (qr_data_llm feeds it). */
int qr_data_llm_derives(const struct qr_dataset *ds,
			const struct qr_data_slot *sl);

#endif
