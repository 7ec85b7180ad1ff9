/*
 * data_random: random data shaped from the model's inputs, the source of
 * every input given no data. See data-int.h.
 *
 * Random data: N(0, 1) for float inputs. An integer input that indexes a
 * table (a Gather's indices, an EmbedLayerNormalization's word or segment
 * ids, reached through Cast/Reshape/Unsqueeze-like ops; the table may sit
 * behind a DequantizeLinear) is uniform over the table's rows, so token
 * ids are real token ids; an attention mask (a com.microsoft mask input,
 * or a rank >= 2 input whose name holds "mask") is ones, so every
 * position attends. Other integers: uniform 0..255 (uint8) or -128..127
 * (int8), 0/1 for bool, zeros (with a warning) for wider ones. Sample i
 * of input k depends only on (seed, i, k). A dynamic dim 0 is 1; any
 * other dynamic dim is 1 with a warning (a decoder's past length is 0
 * before this: data_llm.c).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/data-int.h"

/* splitmix64 (Steele, Lea & Flood, 2014). */
static uint64_t
splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* How a random input is filled (see "Random data" at the top). */
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
int_kind(const struct qr_dataset *ds, struct qr_data_slot *sl, int dt)
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
random_open(struct qr_dataset *ds, struct qr_data_src *s,
	    const struct qr_dataset_opts *o, struct qr_diag *d)
{
	struct qr_data_slot *sl = &ds->slots[s->slot];
	int64_t dims[QR_MAX_DIMS];
	char sh[128];
	int k, dt = qr_data_slot_dtype(sl);

	s->n_samples = ds->samples;
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
				 sl->vi->name,
				 qr_data_slot_shape(sl, sh, sizeof sh), k,
				 sl->vi->name);
	if (dt == QR_DT_FLOAT || dt == QR_DT_DOUBLE)
		sl->random_kind = RND_NORMAL;
	else if (qr_data_dt_is_int(dt)) {
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
	return qr_data_slot_shape_set(sl, sl->ndim, dims, d);
}

static void
random_fill(struct qr_data_slot *sl, uint64_t seed, size_t sample, size_t k)
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

			qr_data_elem_set(t->data, t->dtype, i,
					 rad * cos(2 * M_PI * u2));
			if (++i < t->n_elem)
				qr_data_elem_set(t->data, t->dtype, i,
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
			qr_data_elem_set(t->data, t->dtype, i,
					 (double)(r % (uint64_t)sl->rows));
			break;
		case RND_ONES:
			qr_data_elem_set(t->data, t->dtype, i, 1.0);
			break;
		default: memset(t->data, 0, t->nbytes); return;
		}
	}
}

static enum qr_status
random_next(struct qr_dataset *ds, struct qr_data_src *s, int *label,
	    int *end, struct qr_diag *d)
{
	random_fill(&ds->slots[s->slot], ds->seed, ds->produced, s->slot);
	return QR_OK;
}

static void
random_describe(const struct qr_dataset *ds, const struct qr_data_src *s,
		const struct qr_data_slot *sl, struct qr_buf *b)
{
	static const char *const rnd[] = {
		"N(0,1)", "uniform 0..255", "uniform -128..127",
		"uniform 0/1", "zeros"};
	const char *dt = qr_dtype_name(qr_data_slot_dtype(sl));

	if (sl->past_default && sl->t->n_elem == 0) {
		qr_buf_printf(b, "empty %s: past length 0 by default (an "
			      "empty KV cache, the prompt run as prefill; "
			      "--input NAME:DIMS gives another)", dt);
		return;
	}
	if (sl->random_kind == RND_ONES) {
		qr_buf_printf(b, "ones %s (an attention mask", dt);
		if (sl->lookup != NULL)
			qr_buf_printf(b, " of '%s'", sl->lookup);
		qr_buf_puts(b, ": every position attends)");
		return;
	}
	if (sl->random_kind == RND_INDEX) {
		qr_buf_printf(b, "random uniform 0..%lld %s (rows looked up "
			      "by '%s'), seed %llu", (long long)sl->rows - 1,
			      dt, sl->lookup, (unsigned long long)ds->seed);
		return;
	}
	qr_buf_printf(b, "random %s %s, seed %llu", rnd[sl->random_kind], dt,
		      (unsigned long long)ds->seed);
}

const struct qr_data_kind qr_data_random = {
	.name = "random",
	.open = random_open, .next = random_next,
	.describe = random_describe,
};
