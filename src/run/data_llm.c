/*
 * data_llm: the inputs of a decoder LLM that follow from its token ids,
 * named as onnxruntime-genai's model builder names them. See data-int.h.
 *
 * A model with an `input_ids` input is a decoder when it also takes a
 * KV cache (`past_key_values.*`). Then, unless --data feeds them:
 *   - a symbolic past length (a dim of a past_key_values input whose
 *     name holds "past" or "seq", or dim 2 of a rank-4 one without a
 *     name) is 0: the prompt is run with an empty cache ("prefill"),
 *     unless --input gives it;
 *   - attention_mask is ones over the total length T = P + S (P the
 *     past length, S the tokens of the sample), [B, T] (also for a
 *     model without a cache whose mask length is symbolic);
 *   - position_ids [B, S] count the attended positions: cumsum of the
 *     mask along T, minus 1, masked positions 1 (Hugging Face's
 *     convention), its last S columns; with a mask of ones P..P+S-1;
 *   - seqlens_k [B] (int32) is each row's attended length minus 1;
 *   - total_sequence_length (int32 scalar) is T.
 * The token ids and the mask (when data feeds it) are read from their
 * slots at each sample, so derived inputs follow whatever feeds them.
 */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/data-int.h"

#define IDS "input_ids"
#define MASK "attention_mask"

/* What a derived slot holds (its source's state). */
enum llm_derived { LLM_MASK = 1, LLM_POSITIONS, LLM_SEQLENS, LLM_TOTAL };

static struct qr_data_slot *
slot_named(const struct qr_dataset *ds, const char *name)
{
	size_t j;

	for (j = 0; j < ds->n_slots; j++)
		if (strcmp(ds->slots[j].vi->name, name) == 0)
			return &ds->slots[j];
	return NULL;
}

/* See data-int.h. */
int
qr_data_llm_is_past(const char *name)
{
	return strncmp(name, "past_key_values", 15) == 0;
}

/* Whether ds's model is a decoder taking a KV cache. */
static int
has_past(const struct qr_dataset *ds)
{
	size_t j;

	for (j = 0; j < ds->n_slots; j++)
		if (qr_data_llm_is_past(ds->slots[j].vi->name))
			return 1;
	return 0;
}

/* Whether s holds w, any case. */
static int
holds(const char *s, const char *w)
{
	size_t n = strlen(w);

	for (; *s != '\0'; s++)
		if (strncasecmp(s, w, n) == 0)
			return 1;
	return 0;
}

/* Whether dim k of past input sl is its past length. */
static int
past_axis(const struct qr_data_slot *sl, int k)
{
	const char *p = sl->vi->dims[k].param;

	if (p != NULL && p[0] != '\0')
		return holds(p, "past") || holds(p, "seq");
	return sl->ndim == 4 && k == 2;
}

/* See data-int.h. */
void
qr_data_llm_defaults(struct qr_dataset *ds)
{
	size_t j;
	int k;

	if (slot_named(ds, IDS) == NULL)
		return;
	for (j = 0; j < ds->n_slots; j++) {
		struct qr_data_slot *sl = &ds->slots[j];

		if (!qr_data_llm_is_past(sl->vi->name))
			continue;
		for (k = 0; k < sl->ndim; k++)
			if (sl->dims[k] < 0 && past_axis(sl, k)) {
				sl->dims[k] = 0;
				sl->past_default = 1;
			}
	}
}

/* See data-int.h. */
int
qr_data_llm_derives(const struct qr_dataset *ds,
		    const struct qr_data_slot *sl)
{
	const char *nm = sl->vi->name;

	if (slot_named(ds, IDS) == NULL)
		return 0;
	if (strcmp(nm, MASK) == 0)
		return sl->ndim == 2 && (has_past(ds) || sl->dims[1] < 0);
	return strcmp(nm, "position_ids") == 0 ||
	       strcmp(nm, "seqlens_k") == 0 ||
	       strcmp(nm, "total_sequence_length") == 0;
}

static enum qr_status
llm_open(struct qr_dataset *ds, struct qr_data_src *s,
	 const struct qr_dataset_opts *o, struct qr_diag *d)
{
	const char *nm = ds->slots[s->slot].vi->name;
	static const struct { const char *name; int what; } names[] = {
		{MASK, LLM_MASK}, {"position_ids", LLM_POSITIONS},
		{"seqlens_k", LLM_SEQLENS},
		{"total_sequence_length", LLM_TOTAL}};
	size_t i;

	s->n_samples = ds->samples;
	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(nm, names[i].name) == 0)
			s->state = (void *)(intptr_t)names[i].what;
	QR_ASSERT(s->state != NULL && "qr_data_llm_derives took it");
	return QR_OK;
}

/* Element i of t as an integer (t an integer or float tensor). */
static int64_t
elem_int(const struct qr_tensor *t, size_t i)
{
	switch (t->dtype) {
	case QR_DT_INT64: return ((const int64_t *)t->data)[i];
	case QR_DT_INT32: return ((const int32_t *)t->data)[i];
	case QR_DT_UINT8: case QR_DT_BOOL:
		return ((const uint8_t *)t->data)[i];
	case QR_DT_INT8: return ((const int8_t *)t->data)[i];
	case QR_DT_FLOAT: return (int64_t)((const float *)t->data)[i];
	default: return 1;
	}
}

/* The sample's batch B, tokens S, past P and total T, and the mask
 * (NULL: ones over T) when data or random ones feed it. */
struct llm_shape {
	int64_t b, s, p, t;
	const struct qr_tensor *mask;
};

static enum qr_status
llm_shape(const struct qr_dataset *ds, struct llm_shape *sh,
	  struct qr_diag *d)
{
	const struct qr_data_slot *ids = slot_named(ds, IDS), *m;
	const struct qr_tensor *it = ids->t;
	size_t j;

	memset(sh, 0, sizeof *sh);
	sh->b = it->ndim >= 2 ? it->dims[0] : 1;
	sh->s = it->ndim >= 1 ? it->dims[it->ndim - 1] : 1;
	for (j = 0; j < ds->n_slots; j++) {
		const struct qr_tensor *pt = ds->slots[j].t;

		if (qr_data_llm_is_past(ds->slots[j].vi->name) &&
		    pt->ndim == 4) {
			sh->p = pt->dims[2];
			break;
		}
	}
	sh->t = sh->p + sh->s;
	m = slot_named(ds, MASK);
	if (m != NULL && m->src != NULL && m->src->kind != &qr_data_llm) {
		if (m->t->ndim != 2 || m->t->dims[0] != sh->b)
			return qr_errorf(d, QR_ESHAPE, "input '%s': a [%lld, "
					 "T] mask is needed to derive the "
					 "positions of '%s'", MASK,
					 (long long)sh->b, IDS);
		sh->mask = m->t;
		sh->t = m->t->dims[1];
	}
	if (sh->t < sh->s)
		return qr_errorf(d, QR_ESHAPE, "input '%s': %lld positions "
				 "for %lld tokens", MASK, (long long)sh->t,
				 (long long)sh->s);
	return QR_OK;
}

static int64_t
mask_at(const struct llm_shape *sh, int64_t b, int64_t t)
{
	return sh->mask != NULL ? elem_int(sh->mask, (size_t)(b * sh->t + t))
				: 1;
}

static enum qr_status
llm_next(struct qr_dataset *ds, struct qr_data_src *s, int *label, int *end,
	 struct qr_diag *d)
{
	struct qr_data_slot *sl = &ds->slots[s->slot];
	int what = (int)(intptr_t)s->state;
	struct llm_shape sh;
	int64_t dims[2], b, t, sum;
	enum qr_status st;
	int ndim;

	if ((st = llm_shape(ds, &sh, d)) != QR_OK)
		return st;
	switch (what) {
	case LLM_MASK:
		dims[0] = sh.b;
		dims[1] = sh.t;
		ndim = 2;
		break;
	case LLM_POSITIONS:
		dims[0] = sh.b;
		dims[1] = sh.s;
		ndim = sl->ndim == 1 ? 1 : 2;
		if (ndim == 1)
			dims[0] = sh.s;
		break;
	case LLM_SEQLENS:
		dims[0] = sh.b;
		ndim = 1;
		break;
	default:
		dims[0] = 1;
		ndim = sl->ndim == 1 ? 1 : 0;
	}
	if ((st = qr_data_slot_shape_set(sl, ndim, dims, d)) != QR_OK)
		return st;
	switch (what) {
	case LLM_MASK:
		for (b = 0; b < sh.b * sh.t; b++)
			qr_data_elem_set(sl->t->data, sl->t->dtype, (size_t)b,
					 1.0);
		break;
	case LLM_POSITIONS:
		for (b = 0; b < (ndim == 1 ? 1 : sh.b); b++)
			for (t = 0, sum = 0; t < sh.t; t++) {
				int64_t on = mask_at(&sh, b, t) != 0;

				sum += on;
				if (t >= sh.t - sh.s)
					qr_data_elem_set(
						sl->t->data, sl->t->dtype,
						(size_t)(b * sh.s + t -
							 (sh.t - sh.s)),
						on ? (double)(sum - 1) : 1.0);
			}
		break;
	case LLM_SEQLENS:
		for (b = 0; b < sh.b; b++) {
			for (t = 0, sum = 0; t < sh.t; t++)
				sum += mask_at(&sh, b, t) != 0;
			qr_data_elem_set(sl->t->data, sl->t->dtype, (size_t)b,
					 (double)(sum - 1));
		}
		break;
	default:
		qr_data_elem_set(sl->t->data, sl->t->dtype, 0, (double)sh.t);
	}
	return QR_OK;
}

static void
llm_describe(const struct qr_dataset *ds, const struct qr_data_src *s,
	     const struct qr_data_slot *sl, struct qr_buf *b)
{
	static const char *const what[] = {
		"", "ones over the past and the tokens",
		"the tokens' positions, from the attention mask (past..past+S-1)",
		"attended length - 1 per row, from the attention mask",
		"past + tokens, from the attention mask"};

	qr_buf_printf(b, "%s %s (derived from %s)",
		      what[(int)(intptr_t)s->state],
		      qr_dtype_name(qr_data_slot_dtype(sl)), IDS);
}

const struct qr_data_kind qr_data_llm = {
	.name = "derived",
	.open = llm_open, .next = llm_next,
	.describe = llm_describe,
};
