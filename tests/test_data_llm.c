/*
 * test_data_llm: a decoder's inputs derived from its token ids
 * (src/run/data_llm.c) on a model made of graph inputs alone, named as
 * onnxruntime-genai's builder names them: the attention mask over past +
 * S, position_ids past..past+S-1, seqlens_k = total - 1 (int32),
 * total_sequence_length (int32 scalar), an empty KV cache by default and
 * a given past length with --input; the mask given as data drives the
 * rest (left padding).
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/dataset.h"
#include "tap.h"
#include "util/util.h"

/* A model of graph inputs only. */
struct fake {
	struct qr_model m;
	struct qr_value_info vi[8];
	struct qr_dim dims[8][8];
};

/* Add input name; dims < 0 are symbolic, named by params[k]. */
static void
fake_input(struct fake *f, const char *name, int dtype, int ndim,
	   const int64_t *dims, const char *const *params)
{
	size_t i = f->m.graph.n_input++;
	int k;

	f->vi[i].name = name;
	f->vi[i].dtype = dtype;
	f->vi[i].ndim = ndim;
	for (k = 0; k < ndim; k++) {
		f->dims[i][k].value = dims[k];
		f->dims[i][k].param = dims[k] < 0 ? params[k] : NULL;
	}
	f->vi[i].dims = f->dims[i];
	f->m.graph.inputs = f->vi;
}

/* The decoder: input_ids [B,S], attention_mask [B,T], position_ids
 * [B,S], seqlens_k [B], total_sequence_length [], past [B,2,P,4]. */
static void
fake_decoder(struct fake *f)
{
	static const char *const bs[] = {"batch_size", "sequence_length"};
	static const char *const bt[] = {"batch_size",
					 "total_sequence_length"};
	static const char *const past[] = {"batch_size", NULL,
					   "past_sequence_length", NULL};
	int64_t d2[2] = {-1, -1}, d1[1] = {-1}, d4[4] = {-1, 2, -1, 4};

	memset(f, 0, sizeof *f);
	fake_input(f, "input_ids", QR_DT_INT64, 2, d2, bs);
	fake_input(f, "attention_mask", QR_DT_INT64, 2, d2, bt);
	fake_input(f, "position_ids", QR_DT_INT64, 2, d2, bs);
	fake_input(f, "seqlens_k", QR_DT_INT32, 1, d1, bs);
	fake_input(f, "total_sequence_length", QR_DT_INT32, 0, d1, bs);
	fake_input(f, "past_key_values.0.key", QR_DT_FLOAT, 4, d4, past);
}

static const struct qr_tensor *
named(struct qr_tensor *const *in, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(in[i]->name, name) == 0)
			return in[i];
	return NULL;
}

/* The int64 or int32 elements of t as a string "a,b,c" in buf. */
static const char *
ints(const struct qr_tensor *t, char *buf, size_t n)
{
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; t != NULL && i < t->n_elem && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%lld",
					i ? "," : "",
					t->dtype == QR_DT_INT32
					? (long long)((int32_t *)t->data)[i]
					: (long long)((int64_t *)t->data)[i]);
	return buf;
}

static const char *
dims_of(const struct qr_tensor *t, char *buf, size_t n)
{
	return t != NULL ? qr_shape_str(t, buf, n) : "(missing)";
}

/* One sample of the decoder with the given overrides and sources. */
static void
one(const char *what, struct qr_dims_override *ov, size_t n_ov,
    struct qr_data_source *src, size_t n_src, const char *want_mask,
    const char *want_pos, const char *want_seqlens, const char *want_total,
    const char *want_past)
{
	struct fake f;
	struct qr_dataset_opts o;
	struct qr_dataset *ds = NULL;
	struct qr_diag d = {0};
	struct qr_tensor *const *in;
	const char *name;
	char a[256], b[256];
	size_t n = 0;
	int label;

	fake_decoder(&f);
	memset(&o, 0, sizeof o);
	o.overrides = ov;
	o.n_overrides = n_ov;
	o.sources = src;
	o.n_sources = n_src;
	o.samples = 1;
	if (qr_dataset_open(&f.m, &o, &ds, &d) != QR_OK ||
	    qr_dataset_next(ds, &in, &n, &label, &name, &d) != QR_OK ||
	    n != 6) {
		ok(0, "%s: a sample (%s)", what, d.msg);
		goto out;
	}
	ok(strcmp(ints(named(in, n, "attention_mask"), a, sizeof a),
		  want_mask) == 0, "%s: attention_mask %s (want %s)", what, a,
	   want_mask);
	ok(strcmp(ints(named(in, n, "position_ids"), a, sizeof a),
		  want_pos) == 0, "%s: position_ids %s (want %s)", what, a,
	   want_pos);
	ok(strcmp(ints(named(in, n, "seqlens_k"), a, sizeof a),
		  want_seqlens) == 0 &&
	   named(in, n, "seqlens_k")->dtype == QR_DT_INT32,
	   "%s: seqlens_k int32 %s (want %s)", what, a, want_seqlens);
	ok(strcmp(ints(named(in, n, "total_sequence_length"), a, sizeof a),
		  want_total) == 0 &&
	   named(in, n, "total_sequence_length")->ndim == 0,
	   "%s: total_sequence_length an int32 scalar %s (want %s)", what, a,
	   want_total);
	ok(strcmp(dims_of(named(in, n, "past_key_values.0.key"), b,
			  sizeof b), want_past) == 0,
	   "%s: past %s (want %s)", what, b, want_past);
	ok(strstr(qr_dataset_describe(ds), "derived from input_ids") != NULL,
	   "%s: the description names the derived inputs", what);
out:
	qr_dataset_free(ds);
	qr_diag_clear(&d);
}

static void
test_derived(void)
{
	struct qr_dims_override ov[2] = {
		{"input_ids", 2, {1, 5}},
		{"past_key_values.0.key", 4, {1, 2, 3, 4}},
	};

	one("prefill", ov, 1, NULL, 0, "1,1,1,1,1", "0,1,2,3,4", "4", "5",
	    "[1,2,0,4]");
	one("past 3", ov, 2, NULL, 0, "1,1,1,1,1,1,1,1", "3,4,5,6,7", "7",
	    "8", "[1,2,3,4]");
}

/* A mask given as data with left padding: positions count the attended
 * tokens (padding gets 1), seqlens_k the attended length - 1. */
static void
test_mask_data(void)
{
	char dir[] = "/tmp/qr-datallm-XXXXXX", *path = NULL;
	struct qr_dims_override ov[1] = {{"input_ids", 2, {1, 4}}};
	struct qr_data_source src[1];
	static const unsigned char head[] =
		"\x93NUMPY\x01\x00\x76\x00{'descr': '<i8', 'fortran_order': "
		"False, 'shape': (1, 4), }";
	int64_t mask[4] = {0, 0, 1, 1};
	FILE *fp;
	size_t hl = sizeof head - 1;

	if (mkdtemp(dir) == NULL) {
		ok(0, "a temporary folder");
		return;
	}
	path = xasprintf("%s/mask.npy", dir);
	fp = fopen(path, "wb");
	if (fp != NULL) {
		fwrite(head, 1, hl, fp);
		while (hl++ < 10 + 0x76 - 1)
			fputc(' ', fp);
		fputc('\n', fp);
		fwrite(mask, sizeof mask[0], 4, fp);
		fclose(fp);
	}
	src[0].input = "attention_mask";
	src[0].path = path;
	one("left-padded mask", ov, 1, src, 1, "0,0,1,1", "1,1,0,1", "1",
	    "4", "[1,2,0,4]");
	remove(path);
	rmdir(dir);
	free(path);
}

int
main(void)
{
	plan_no_plan();
	RUN(test_derived);
	RUN(test_mask_data);
	return done();
}
