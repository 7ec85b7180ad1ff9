/*
 * dataset: the representative data fed to the float and quantized models,
 * one sample at a time (never the whole dataset in memory).
 *
 * Sources (struct qr_dataset_opts):
 *   images  a folder of PNG (libpng: palette, gray, 16-bit, alpha), JPEG
 *           and BMP (stb_image) files, resized and normalised to the
 *           model's input; class subfolders (data/cat/x.jpg) give labels
 *   npy     .npy files, one sample per file or one batch array per file
 *           (float32, uint8 or int64)
 *   pb      an ONNX test_data_set_* folder of input_<i>.pb files (or a
 *           folder of such folders)
 *   random  seeded normal data shaped from the model's inputs; the
 *           default when no data is given
 * A model with several inputs takes one source per input ("NAME=path");
 * dynamic dims are bound by --input NAME:DIMS (dims_override) or by the
 * data itself.
 *
 * Unreadable files are skipped with a warning in the qr_diag (the report
 * lists them) unless every file fails, which is an error.
 *
 * Ownership: qr_dataset_open returns a dataset the caller frees with
 * qr_dataset_free; it borrows the model. Tensors returned by
 * qr_dataset_next are owned by the dataset and valid until the next call.
 *
 * Files: dataset.c (the qr_dataset_* calls: inputs, sample assembly),
 * one data_*.c per source kind (random, images, npy, pb; data-int.h maps
 * them), image.c (the qr_image_* decoders and resize below).
 */
#ifndef QR_DATASET_H
#define QR_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

struct qr_model;
struct qr_tensor;
struct qr_dataset;

enum qr_layout { QR_LAYOUT_AUTO = 0, QR_LAYOUT_NCHW, QR_LAYOUT_NHWC };
enum qr_channel_order { QR_ORDER_RGB = 0, QR_ORDER_BGR };

/* Where one input's data comes from. */
struct qr_data_source {
	const char *input;       /* graph input name; NULL: the only input */
	const char *path;        /* folder or file; NULL: random */
};

/* An explicit shape for an input with dynamic dims (--input NAME:DIMS). */
struct qr_dims_override {
	const char *input;       /* graph input name */
	int ndim;                /* dims given */
	int64_t dims[8];         /* values, all >= 0 (0: an empty past) */
};

struct qr_dataset_opts {
	size_t n_sources;        /* 0: random for every input */
	struct qr_data_source *sources; /* n_sources, borrowed */
	size_t n_overrides;
	struct qr_dims_override *overrides; /* n_overrides, borrowed */
	size_t samples;          /* samples to produce (default 20) */
	uint64_t seed;           /* random source seed (default 0) */
	/* image preprocessing: x = (pixel * scale - mean[c]) / std[c] */
	int input_h, input_w;    /* resize target; 0: from the model */
	float mean[3];           /* per channel, after scale */
	float std[3];            /* per channel (0 means 1) */
	float scale;             /* pixel multiplier (0 means 1/255) */
	enum qr_layout layout;   /* AUTO: from the model's input shape */
	enum qr_channel_order order; /* channel order the model expects */
};

/* Open the dataset for model m (its graph inputs give names, dtypes and
 * shapes). Errors: QR_EIO for a missing path, QR_EUSAGE for an input
 * name the model lacks or a source for a model with several inputs
 * without a name, QR_EFORMAT when no file of a source can be read (naming
 * the folder), QR_ESHAPE when the data cannot fit the input. */
enum qr_status qr_dataset_open(const struct qr_model *m,
			       const struct qr_dataset_opts *o,
			       struct qr_dataset **out, struct qr_diag *d);
void qr_dataset_free(struct qr_dataset *ds);

/* The next sample: *inputs gets *n_inputs tensors (named after the graph
 * inputs, batch 1 unless a .npy batch file or a dims override says
 * otherwise), *label the class index or -1, *name a display name (file
 * name, "random #3"). Returns QR_OK with *n_inputs == 0 at the end. */
enum qr_status qr_dataset_next(struct qr_dataset *ds,
			       struct qr_tensor *const **inputs,
			       size_t *n_inputs, int *label,
			       const char **name, struct qr_diag *d);

/* "random", "images", "npy" or "pb" (report.json dataset.source). */
const char *qr_dataset_source(const struct qr_dataset *ds);
/* Samples the dataset will produce (after skipping unreadable files). */
size_t qr_dataset_count(const struct qr_dataset *ds);
/* Class names from subfolders, in label order; *n gets the count (0 when
 * the data has no labels). Borrowed. */
const char *const *qr_dataset_classes(const struct qr_dataset *ds,
				      size_t *n);
/* A one-line description of the preprocessing applied, for the report,
 * e.g. "resize 224x224 bilinear, scale 1/255, mean 0.485,0.456,0.406, std
 * ..., NCHW, RGB". Borrowed. */
const char *qr_dataset_describe(const struct qr_dataset *ds);

/* ---- image decoding (exported for tests and fuzzing) ---- */

/* A decoded image: 8-bit channels, interleaved. */
struct qr_image {
	int w, h;                /* pixels */
	int channels;            /* 1 (gray) or 3 (RGB) */
	uint8_t *px;             /* w*h*channels bytes, owned (free()) */
};
/* Memory bound: larger images are refused from their header. */
#define QR_IMAGE_MAX_SIDE 16384               /* pixels, either side */
#define QR_IMAGE_MAX_BYTES (256u << 20)       /* decoded bytes, alpha incl. */

/* Decode a PNG (libpng), JPEG or BMP (stb_image) from memory into RGB or
 * gray (alpha composited on black; 16-bit scaled to 8). what names it in
 * messages. QR_EFORMAT for corrupt, truncated or 0x0 images;
 * QR_EUNSUPPORTED for images over QR_IMAGE_MAX_SIDE or QR_IMAGE_MAX_BYTES. */
enum qr_status qr_image_decode(const void *buf, size_t len, const char *what,
			       struct qr_image *out, struct qr_diag *d);
/* Free im's pixels and zero it; NULL does nothing. */
void qr_image_free(struct qr_image *im);
/* Resize im to w x h into dst (caller's, h*w*channels floats, interleaved,
 * values 0..255) with a triangle filter and half-pixel centres: plain
 * bilinear (align_corners=0) when upscaling, antialiased when downscaling
 * (PIL's BILINEAR). channels (1 or 3) converts on the way: RGB to gray by
 * luma 0.299R + 0.587G + 0.114B, gray to RGB by replication. */
void qr_image_resize(const struct qr_image *im, int w, int h, int channels,
		     float *dst);

#endif
