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
 * Two float operands whose letters each appear once per operand, none
 * summed within one operand alone and none broadcast, are a batch of
 * matrix products (as ONNX Runtime computes them): each operand is
 * gathered into [batch][rows][k] and [batch][k][columns], multiplied with
 * qr_sgemm and scattered into the output's order. Anything else sums
 * every output element over the summed letters' index space one product
 * at a time, in float for float inputs (so the last bits may differ from
 * ORT's), in double then converted for the others; such a sum of more
 * than 2^32 products is refused, naming the node, as it would run for
 * minutes.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
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

/* The labels of each role in a two-operand product; 0 when the equation
 * is not one (see the top of the file). */
struct gemm_form {
	int batch[MAX_LABELS], m[MAX_LABELS], n[MAX_LABELS], k[MAX_LABELS];
	int nb, nm, nn, nk;
};

static int
gemm_form(const struct qr_op_call *c, const struct eq *e,
	  struct gemm_form *g)
{
	int in_a[MAX_LABELS] = {0}, in_b[MAX_LABELS] = {0}, i, l;
	size_t k;

	if (e->n_ops != 2 || c->in[0]->dtype != QR_DT_FLOAT)
		return 0;
	for (k = 0; k < 2; k++)
		for (i = 0; i < e->rank[k]; i++) {
			int *in = k == 0 ? in_a : in_b;

			l = e->label[k][i];
			if (in[l]++ > 0 || c->in[k]->dims[i] != e->size[l])
				return 0; /* a diagonal, or a broadcast */
		}
	memset(g, 0, sizeof *g);
	for (l = 0; l < MAX_LABELS; l++) {
		if (!e->used[l] && !e->in_out[l])
			continue;
		if (in_a[l] && in_b[l] && e->in_out[l])
			g->batch[g->nb++] = l;
		else if (in_a[l] && in_b[l])
			g->k[g->nk++] = l;
		else if (in_a[l] && e->in_out[l])
			g->m[g->nm++] = l;
		else if (in_b[l] && e->in_out[l])
			g->n[g->nn++] = l;
		else
			return 0; /* summed within one operand, or neither */
	}
	return 1;
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
		if (!qr_op_has_in(c, i))
			return qr_op_errorf(c, d, QR_EGRAPH, "operand %zu is "
					    "missing", i);
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
	struct gemm_form gf;
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
	if (work > MAX_WORK && !gemm_form(c, &e, &gf))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "equation '%s' "
				    "takes more than %zu products, one by one",
				    qr_op_attr_str(c, "equation", ""),
				    MAX_WORK);
	for (i = 0; i < e.out_rank; i++)
		dims[i] = e.size[e.out_label[i]];
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, e.out_rank,
				   dims, qr_op_out_name(c, 0), d);
}

/* Copy the n_lab-label walk of src (a step per label, the last label
 * fastest) into dst, in that order, contiguous. */
static void
gather(const float *src, const size_t *step, const int64_t *size, int n_lab,
       float *dst)
{
	int64_t idx[MAX_LABELS] = {0};
	size_t off = 0;
	int i;

	for (;;) {
		*dst++ = src[off];
		for (i = n_lab - 1; i >= 0; i--) {
			off += step[i];
			if (++idx[i] < size[i])
				break;
			off -= (size_t)size[i] * step[i];
			idx[i] = 0;
		}
		if (i < 0)
			return;
	}
}

/* Operand k's step along each of the n labels in lab. */
static void
steps_of(size_t stride[][MAX_LABELS], size_t k, const int *lab, int n,
	 size_t *step, int64_t *size, const struct eq *e)
{
	int i;

	for (i = 0; i < n; i++) {
		step[i] = stride[k][lab[i]];
		size[i] = e->size[lab[i]];
	}
}

/* The product of the labels' sizes. */
static size_t
labels_size(const struct eq *e, const int *lab, int n)
{
	size_t p = 1;
	int i;

	for (i = 0; i < n; i++)
		p *= (size_t)e->size[lab[i]];
	return p;
}

/* The two-operand product as batched GEMMs (gemm_form holds). */
static void
einsum_gemm(struct qr_op_call *c, const struct eq *e,
	    const struct gemm_form *g, size_t stride[][MAX_LABELS])
{
	size_t nb = labels_size(e, g->batch, g->nb);
	size_t m = labels_size(e, g->m, g->nm), n = labels_size(e, g->n, g->nn);
	size_t kk = labels_size(e, g->k, g->nk), out_step[MAX_LABELS], b;
	int lab[MAX_LABELS], nl, i, j;
	size_t step[MAX_LABELS];
	int64_t size[MAX_LABELS];
	float *a = xmalloc(nb * m * kk * sizeof *a);
	float *bm = xmalloc(nb * kk * n * sizeof *bm);
	float *cm = xmalloc(nb * m * n * sizeof *cm);
	float *ws = xmalloc(qr_sgemm_workspace());
	struct qr_sgemm_plan pl;

	/* A as [batch][m][k], B as [batch][k][n] */
	nl = 0;
	for (i = 0; i < g->nb; i++)
		lab[nl++] = g->batch[i];
	for (i = 0; i < g->nm; i++)
		lab[nl++] = g->m[i];
	for (i = 0; i < g->nk; i++)
		lab[nl++] = g->k[i];
	steps_of(stride, 0, lab, nl, step, size, e);
	if (nb * m * kk > 0)
		gather(c->in[0]->data, step, size, nl, a);
	nl = g->nb;
	for (i = 0; i < g->nk; i++)
		lab[nl++] = g->k[i];
	for (i = 0; i < g->nn; i++)
		lab[nl++] = g->n[i];
	steps_of(stride, 1, lab, nl, step, size, e);
	if (nb * kk * n > 0)
		gather(c->in[1]->data, step, size, nl, bm);
	qr_sgemm_plan(m, n, kk, 0, n, n, &pl);
	for (b = 0; b < nb; b++)
		qr_sgemm(&pl, m, n, kk, a + b * m * kk, kk, bm + b * kk * n, n,
			 0, cm + b * m * n, n, 0, ws);
	/* C [batch][m][n] into the output's axis order */
	for (i = 0; i < MAX_LABELS; i++)
		out_step[i] = 0;
	for (i = e->out_rank - 1, b = 1; i >= 0; i--) {
		out_step[e->out_label[i]] = b;
		b *= (size_t)e->size[e->out_label[i]];
	}
	nl = 0;
	for (i = 0; i < g->nb; i++)
		lab[nl++] = g->batch[i];
	for (i = 0; i < g->nm; i++)
		lab[nl++] = g->m[i];
	for (i = 0; i < g->nn; i++)
		lab[nl++] = g->n[i];
	if (nb * m * n > 0) {
		int64_t idx[MAX_LABELS] = {0};
		float *y = c->out[0]->data;
		size_t off = 0, at;

		for (at = 0; at < nb * m * n; at++) {
			y[off] = cm[at];
			for (j = nl - 1; j >= 0; j--) {
				off += out_step[lab[j]];
				if (++idx[j] < e->size[lab[j]])
					break;
				off -= (size_t)e->size[lab[j]] *
				       out_step[lab[j]];
				idx[j] = 0;
			}
		}
	}
	free(a);
	free(bm);
	free(cm);
	free(ws);
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
	struct gemm_form gf;
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
	if (gemm_form(c, &e, &gf)) {
		einsum_gemm(c, &e, &gf, stride);
		return QR_OK;
	}
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
