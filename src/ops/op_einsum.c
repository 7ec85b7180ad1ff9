/*
 * op_einsum: Einsum (opset 12), Einstein summation over any number of
 * operands of one numeric dtype.
 *
 * The equation names each operand's axes with letters (a-z, A-Z) and at
 * most one "..." standing for the axes the letters leave over (right
 * aligned and broadcast across operands, as numpy does). After "->" come
 * the output's axes; without it, the output is "..." then every letter
 * used once, in alphabetical order. A letter twice in one operand reads
 * its diagonal; a letter absent from the output is summed over.
 *
 * Every output element is a sum over the summed letters' index space of
 * the operands' products, in float for float inputs (in that index
 * order, so the last bits may differ from ONNX Runtime's, which reorders
 * the operands into matrix products), in double then converted for the
 * others. An equation whose index space holds more than 2^32 products
 * is refused (a real attention's holds 1e7 to 1e9).
 */
#include <stdlib.h>
#include <string.h>

#include "ops/op-int.h"

#define N_LETTERS 52
#define MAX_LABELS (N_LETTERS + QR_TENSOR_MAX_DIMS)
#define MAX_WORK ((size_t)1 << 32) /* products summed in one call */

/* The parsed equation against the actual operands. */
struct eq {
	size_t n_ops;
	int n_ell;                           /* axes "..." stands for */
	int rank[QR_TENSOR_MAX_DIMS];        /* per operand (n_ops <= 16) */
	int label[QR_TENSOR_MAX_DIMS][QR_TENSOR_MAX_DIMS]; /* per axis */
	int out_rank;
	int out_label[QR_TENSOR_MAX_DIMS];
	int64_t size[MAX_LABELS];            /* -1: not seen yet */
	int in_out[MAX_LABELS];              /* label is an output axis */
	int used[MAX_LABELS];
};

static int
letter_id(char ch)
{
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a';
	if (ch >= 'A' && ch <= 'Z')
		return 26 + ch - 'A';
	return -1;
}

/*
 * The labels of one term s[0..len) for an operand of rank r (r < 0: the
 * output, whose "..." spans e->n_ell axes) into lab; their count. -1 on
 * a malformed term.
 */
static int
term_labels(const char *s, size_t len, int r, int n_ell, int *lab)
{
	int n = 0, letters = 0, ell = -1, k;
	size_t i;

	for (i = 0; i < len; i++) {
		if (s[i] == ' ')
			continue;
		if (s[i] == '.') {
			if (ell >= 0 || i + 2 >= len || s[i + 1] != '.' ||
			    s[i + 2] != '.')
				return -1;
			ell = letters;
			i += 2;
			continue;
		}
		if (letter_id(s[i]) < 0)
			return -1;
		letters++;
	}
	if (r < 0)
		r = letters + (ell >= 0 ? n_ell : 0);
	if (letters > r || (ell < 0 && letters != r) || r > QR_TENSOR_MAX_DIMS)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] == ' ')
			continue;
		if (s[i] == '.') {
			/* the last n_ell ellipsis labels fit this operand's
			 * r - letters axes, right aligned */
			for (k = n_ell - (r - letters); k < n_ell; k++)
				lab[n++] = N_LETTERS + k;
			i += 2;
			continue;
		}
		lab[n++] = letter_id(s[i]);
	}
	return n;
}

static enum qr_status
parse(const struct qr_op_call *c, struct qr_diag *d, struct eq *e)
{
	const char *eqn = qr_op_attr_str(c, "equation", NULL);
	const char *arrow, *p, *lhs_end;
	size_t k;
	int i, j, count[MAX_LABELS] = {0};

	memset(e, 0, sizeof *e);
	for (i = 0; i < MAX_LABELS; i++)
		e->size[i] = -1;
	if (eqn == NULL)
		return qr_op_errorf(c, d, QR_EGRAPH, "attribute equation is "
				    "required");
	if (c->n_in > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%zu operands (at "
				    "most %d)", c->n_in, QR_TENSOR_MAX_DIMS);
	e->n_ops = c->n_in;
	arrow = strstr(eqn, "->");
	lhs_end = arrow ? arrow : eqn + strlen(eqn);
	/* the widest "..." first: every operand's extra axes */
	for (p = eqn, k = 0; k < e->n_ops; k++) {
		const char *end = memchr(p, ',', (size_t)(lhs_end - p));
		size_t len = end ? (size_t)(end - p) : (size_t)(lhs_end - p);
		int letters = 0, has_ell = 0;
		size_t m;

		if (end == NULL && k + 1 < e->n_ops)
			goto bad;
		for (m = 0; m < len; m++)
			letters += letter_id(p[m]) >= 0;
		has_ell = memchr(p, '.', len) != NULL;
		if (has_ell && c->in[k]->ndim - letters > e->n_ell)
			e->n_ell = c->in[k]->ndim - letters;
		p = end ? end + 1 : lhs_end;
	}
	if (p != lhs_end)
		goto bad;
	for (p = eqn, k = 0; k < e->n_ops; k++) {
		const char *end = memchr(p, ',', (size_t)(lhs_end - p));
		size_t len = end ? (size_t)(end - p) : (size_t)(lhs_end - p);
		const struct qr_tensor *t = c->in[k];

		e->rank[k] = term_labels(p, len, t->ndim, e->n_ell,
					 e->label[k]);
		if (e->rank[k] != t->ndim)
			goto bad;
		for (i = 0; i < t->ndim; i++) {
			int l = e->label[k][i];

			count[l]++;
			e->used[l] = 1;
			/* a 1 broadcasts within "..." */
			if (e->size[l] < 0 || (l >= N_LETTERS && e->size[l] == 1))
				e->size[l] = t->dims[i];
			else if (e->size[l] != t->dims[i] &&
				 !(l >= N_LETTERS && t->dims[i] == 1))
				return qr_op_errorf(c, d, QR_ESHAPE, "equation "
						    "'%s': operand %zu axis %d "
						    "has %lld, not %lld", eqn, k,
						    i, (long long)t->dims[i],
						    (long long)e->size[l]);
		}
		p = end ? end + 1 : lhs_end;
	}
	if (arrow) {
		e->out_rank = term_labels(arrow + 2, strlen(arrow + 2), -1,
					  e->n_ell, e->out_label);
		if (e->out_rank < 0)
			goto bad;
		for (i = 0; i < e->out_rank; i++) {
			int l = e->out_label[i];

			for (j = 0; j < i; j++)
				if (e->out_label[j] == l)
					goto bad;
			if (!e->used[l] && l < N_LETTERS)
				goto bad;
		}
	} else {
		for (i = 0; i < e->n_ell; i++)
			e->out_label[e->out_rank++] = N_LETTERS + i;
		for (i = 0; i < N_LETTERS; i++)
			if (count[i] == 1)
				e->out_label[e->out_rank++] = i;
	}
	for (i = 0; i < e->out_rank; i++) {
		e->in_out[e->out_label[i]] = 1;
		if (e->size[e->out_label[i]] < 0)
			e->size[e->out_label[i]] = 1;
	}
	return QR_OK;
bad:
	return qr_op_errorf(c, d, QR_EGRAPH, "equation '%s' does not fit "
			    "the %zu operand(s)", eqn, e->n_ops);
}

static enum qr_status
einsum_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;
	size_t i;

	if ((st = qr_op_arity(c, d, 1, QR_TENSOR_MAX_DIMS, 1, 1)) != QR_OK)
		return st;
	if (qr_op_attr_str(c, "equation", NULL) == NULL)
		return qr_op_errorf(c, d, QR_EGRAPH, "attribute equation is "
				    "required");
	for (i = 0; i < c->n_in; i++)
		if ((st = qr_op_want_dtype(c, d, i, QR_DTM_NUMERIC)) != QR_OK ||
		    (st = qr_op_same_dtype(c, d, 0, i)) != QR_OK)
			return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
einsum_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct eq e;
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	size_t work = 1;
	int i;

	if ((st = parse(c, d, &e)) != QR_OK)
		return st;
	/* every product is summed one by one: refuse what would take
	 * minutes */
	for (i = 0; i < MAX_LABELS; i++)
		if ((e.used[i] || e.in_out[i]) &&
		    qr_mul_overflow(work, (size_t)e.size[i], &work) != 0)
			work = SIZE_MAX;
	if (work > MAX_WORK)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "equation '%s' "
				    "takes more than %zu products, one by one",
				    qr_op_attr_str(c, "equation", ""),
				    MAX_WORK);
	for (i = 0; i < e.out_rank; i++)
		dims[i] = e.size[e.out_label[i]];
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, e.out_rank,
				   dims, qr_op_out_name(c, 0), d);
}

static enum qr_status
einsum_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct eq e;
	int lab[MAX_LABELS], n_lab = 0, i, l;
	int64_t idx[MAX_LABELS] = {0};
	size_t stride[QR_TENSOR_MAX_DIMS][MAX_LABELS], off[QR_TENSOR_MAX_DIMS];
	size_t k, o, n_out = c->out[0]->n_elem, n_inner = 1;
	int is_float = c->in[0]->dtype == QR_DT_FLOAT;
	enum qr_status st;

	if ((st = parse(c, d, &e)) != QR_OK)
		return st;
	/* the output's labels, then the summed ones */
	for (i = 0; i < e.out_rank; i++)
		lab[n_lab++] = e.out_label[i];
	for (l = 0; l < MAX_LABELS; l++)
		if (e.used[l] && !e.in_out[l]) {
			lab[n_lab++] = l;
			n_inner *= (size_t)e.size[l];
		}
	/* each operand's step per label: a repeated label steps every axis
	 * it names (the diagonal); a broadcast axis does not step */
	memset(stride, 0, sizeof stride);
	for (k = 0; k < e.n_ops; k++) {
		const struct qr_tensor *t = c->in[k];
		size_t s = 1;

		for (i = t->ndim - 1; i >= 0; i--) {
			if (t->dims[i] != 1 || e.size[e.label[k][i]] == 1)
				stride[k][e.label[k][i]] += s;
			s *= (size_t)t->dims[i];
		}
	}
	if (n_out == 0)
		return QR_OK;
	for (o = 0; o < n_out; o++) {
		double acc = 0.0;
		float accf = 0.0f;
		size_t in;

		/* offsets of this output element (summed labels at 0) */
		for (k = 0; k < e.n_ops; k++) {
			off[k] = 0;
			for (i = 0; i < e.out_rank; i++)
				off[k] += (size_t)idx[lab[i]] *
					  stride[k][lab[i]];
		}
		for (in = 0; in < n_inner; in++) {
			if (is_float) {
				float v = ((const float *)c->in[0]->data)
					[off[0]];

				for (k = 1; k < e.n_ops; k++)
					v *= ((const float *)c->in[k]->data)
						[off[k]];
				accf += v;
			} else {
				double v = qr_op_get(c->in[0], off[0]);

				for (k = 1; k < e.n_ops; k++)
					v *= qr_op_get(c->in[k], off[k]);
				acc += v;
			}
			/* next summed index (last label fastest) */
			for (i = n_lab - 1; i >= e.out_rank; i--) {
				int li = lab[i];

				for (k = 0; k < e.n_ops; k++)
					off[k] += stride[k][li];
				if (++idx[li] < e.size[li])
					break;
				for (k = 0; k < e.n_ops; k++)
					off[k] -= (size_t)e.size[li] *
						  stride[k][li];
				idx[li] = 0;
			}
		}
		if (is_float)
			((float *)c->out[0]->data)[o] = accf;
		else
			qr_op_set(c->out[0], o, acc);
		/* next output index */
		for (i = e.out_rank - 1; i >= 0; i--) {
			if (++idx[lab[i]] < e.size[lab[i]])
				break;
			idx[lab[i]] = 0;
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_einsum = {
	.domain = "", .name = "Einsum", .since = 12,
	.check = einsum_check, .infer = einsum_infer, .run = einsum_run,
};
