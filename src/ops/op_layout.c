/*
 * op_layout: operators that rearrange elements: Transpose, Concat, Split,
 * Slice, Pad, Tile, DepthToSpace, SpaceToDepth.
 */
#include <string.h>

#include "ops/op-move-int.h"

/* ---- Transpose ---- */

static enum qr_status
transpose_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_move_check(c, d, 1, 1, 1, 1);
}

/* The permutation: the attribute, or reversed axes. */
static enum qr_status
transpose_perm(const struct qr_op_call *c, struct qr_diag *d, int rank,
	       int *perm)
{
	const int64_t *p;
	int seen[QR_TENSOR_MAX_DIMS] = {0}, i;
	size_t n;

	p = qr_op_attr_ints(c, "perm", &n);
	if (p == NULL) {
		for (i = 0; i < rank; i++)
			perm[i] = rank - 1 - i;
		return QR_OK;
	}
	if ((int)n != rank)
		return qr_op_errorf(c, d, QR_ESHAPE, "perm has %zu entries for "
				    "rank %d", n, rank);
	for (i = 0; i < rank; i++) {
		if (p[i] < 0 || p[i] >= rank || seen[p[i]])
			return qr_op_errorf(c, d, QR_EGRAPH, "perm is not a "
					    "permutation of 0..%d", rank - 1);
		seen[p[i]] = 1;
		perm[i] = (int)p[i];
	}
	return QR_OK;
}

static enum qr_status
transpose_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	int perm[QR_TENSOR_MAX_DIMS], i;
	enum qr_status st;

	if ((st = transpose_perm(c, d, x->ndim, perm)) != QR_OK)
		return st;
	for (i = 0; i < x->ndim; i++)
		dims[i] = x->dims[perm[i]];
	return qr_tensor_set_shape(c->out[0], x->dtype, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
transpose_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t st_in[QR_TENSOR_MAX_DIMS], st[QR_TENSOR_MAX_DIMS];
	int perm[QR_TENSOR_MAX_DIMS], i;

	transpose_perm(c, d, x->ndim, perm);
	qr_op_dense_strides(x->ndim, x->dims, st_in);
	for (i = 0; i < x->ndim; i++)
		st[i] = st_in[perm[i]];
	qr_op_strided_copy(c->out[0]->data, x->data, qr_dtype_size(x->dtype),
			   x->ndim, c->out[0]->dims, 0, st);
	return QR_OK;
}

const struct qr_op_desc qr_op_transpose = {
	.domain = "", .name = "Transpose", .since = 1,
	.check = transpose_check, .infer = transpose_infer,
	.run = transpose_run,
};

/* ---- Concat ---- */

static enum qr_status
concat_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = qr_op_move_check(c, d, 1, 4096, 1, 1);
	size_t i;

	for (i = 1; st == QR_OK && i < c->n_in; i++) {
		if (!qr_op_has_in(c, i))
			return qr_op_errorf(c, d, QR_EGRAPH, "input %zu is "
					    "empty", i);
		st = qr_op_same_dtype(c, d, 0, i);
	}
	if (st == QR_OK && c->opset >= 4 && !qr_op_has_attr(c, "axis"))
		return qr_op_errorf(c, d, QR_EGRAPH, "attribute axis is "
				    "required");
	return st;
}

static enum qr_status
concat_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	char a[128], b[128];
	int axis, i;
	size_t k;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 1), x->ndim, 0,
			&axis);
	if (st != QR_OK)
		return st;
	memcpy(dims, x->dims, sizeof dims);
	for (k = 1; k < c->n_in; k++) {
		const struct qr_tensor *t = c->in[k];
		int bad = t->ndim != x->ndim;

		for (i = 0; !bad && i < x->ndim; i++)
			if (i != axis && t->dims[i] != x->dims[i])
				bad = 1;
		if (bad)
			return qr_op_errorf(c, d, QR_ESHAPE, "input '%s' %s "
					    "does not concatenate with input "
					    "'%s' %s on axis %d",
					    qr_op_in_name(c, k),
					    qr_shape_str(t, a, sizeof a),
					    qr_op_in_name(c, 0),
					    qr_shape_str(x, b, sizeof b), axis);
		dims[axis] += t->dims[axis];
	}
	return qr_tensor_set_shape(c->out[0], x->dtype, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
concat_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor *y = c->out[0];
	size_t es = qr_dtype_size(y->dtype), outer, off = 0, row, k, o;
	int axis;

	qr_op_axis(c, d, qr_op_attr_int(c, "axis", 1), y->ndim, 0, &axis);
	outer = qr_op_dims_prod(y->dims, 0, axis);
	row = qr_op_dims_prod(y->dims, axis, y->ndim) * es;
	for (k = 0; k < c->n_in; k++) {
		const struct qr_tensor *t = c->in[k];
		size_t chunk = qr_op_dims_prod(t->dims, axis, t->ndim) * es;

		for (o = 0; chunk > 0 && o < outer; o++)
			memcpy((char *)y->data + o * row + off,
			       (const char *)t->data + o * chunk, chunk);
		off += chunk;
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_concat = {
	.domain = "", .name = "Concat", .since = 4,
	.check = concat_check, .infer = concat_infer, .run = concat_run,
};

/* ---- Split ---- */

static enum qr_status
split_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = qr_op_move_check(c, d, 1, c->opset >= 13 ? 2 : 1, 1,
					     4096);

	if (st == QR_OK)
		st = qr_op_want_index(c, d, 1);
	if (st == QR_OK && c->opset >= 18 && qr_op_has_attr(c, "num_outputs")
	    && qr_op_attr_int(c, "num_outputs", 0) != (int64_t)c->n_out)
		return qr_op_errorf(c, d, QR_EGRAPH, "num_outputs %lld but "
				    "%zu outputs", (long long)qr_op_attr_int(
				    c, "num_outputs", 0), c->n_out);
	return st;
}

/* Sizes of the parts along the axis of length len. */
static enum qr_status
split_sizes(const struct qr_op_call *c, struct qr_diag *d, int64_t len,
	    int64_t *sizes)
{
	int64_t tmp[4096];
	const int64_t *s = NULL;
	size_t n = 0, k;
	int64_t sum = 0;
	enum qr_status st;

	if (c->opset >= 13 && qr_op_has_in(c, 1)) {
		st = qr_op_read_ints(c, d, c->in[1], "split", tmp, 4096, &n);
		if (st != QR_OK)
			return st;
		s = tmp;
	} else if (c->opset < 13) {
		s = qr_op_attr_ints(c, "split", &n);
	}
	if (s != NULL) {
		if (n != c->n_out)
			return qr_op_errorf(c, d, QR_ESHAPE, "split has %zu "
					    "sizes for %zu outputs", n,
					    c->n_out);
		for (k = 0; k < n; k++) {
			if (s[k] < 0)
				return qr_op_errorf(c, d, QR_ESHAPE, "split "
						    "size %lld is negative",
						    (long long)s[k]);
			sizes[k] = s[k];
			sum += s[k];
		}
		if (sum != len)
			return qr_op_errorf(c, d, QR_ESHAPE, "split sizes add "
					    "up to %lld, the axis has %lld",
					    (long long)sum, (long long)len);
		return QR_OK;
	}
	/* Equal parts; from opset 18 the last may be smaller. */
	n = c->n_out;
	if (len % (int64_t)n != 0 && c->opset < 18)
		return qr_op_errorf(c, d, QR_ESHAPE, "axis of %lld does not "
				    "split into %zu equal parts",
				    (long long)len, n);
	{
		int64_t part = (len + (int64_t)n - 1) / (int64_t)n;

		for (k = 0; k < n; k++) {
			int64_t left = len - sum;

			sizes[k] = left < part ? left : part;
			sum += sizes[k];
		}
	}
	return QR_OK;
}

static enum qr_status
split_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t sizes[4096], dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int axis;
	size_t k;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0,
			&axis);
	if (st == QR_OK)
		st = split_sizes(c, d, x->dims[axis], sizes);
	for (k = 0; st == QR_OK && k < c->n_out; k++) {
		memcpy(dims, x->dims, sizeof dims);
		dims[axis] = sizes[k];
		st = qr_tensor_set_shape(c->out[k], x->dtype, x->ndim, dims,
					 qr_op_out_name(c, k), d);
	}
	return st;
}

static enum qr_status
split_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	size_t es = qr_dtype_size(x->dtype), outer, row, off = 0, k, o;
	int axis;

	qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0, &axis);
	outer = qr_op_dims_prod(x->dims, 0, axis);
	row = qr_op_dims_prod(x->dims, axis, x->ndim) * es;
	for (k = 0; k < c->n_out; k++) {
		struct qr_tensor *y = c->out[k];
		size_t chunk = qr_op_dims_prod(y->dims, axis, y->ndim) * es;

		for (o = 0; chunk > 0 && o < outer; o++)
			memcpy((char *)y->data + o * chunk,
			       (const char *)x->data + o * row + off, chunk);
		off += chunk;
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_split = {
	.domain = "", .name = "Split", .since = 2,
	.check = split_check, .infer = split_infer, .run = split_run,
};

/* ---- Slice ---- */

/* A resolved slice: per axis start, step and count. */
struct slice {
	int64_t start[QR_TENSOR_MAX_DIMS];
	int64_t step[QR_TENSOR_MAX_DIMS];
	int64_t count[QR_TENSOR_MAX_DIMS];
};

static enum qr_status
slice_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;
	size_t i;

	st = qr_op_move_check(c, d, c->opset >= 10 ? 3 : 1,
			      c->opset >= 10 ? 5 : 1, 1, 1);
	for (i = 1; st == QR_OK && i < c->n_in; i++)
		st = qr_op_want_index(c, d, i);
	return st;
}

/*
 * Resolve starts/ends/axes/steps against x's shape, as numpy does:
 * negative indices count from the end, then starts and ends are clamped
 * to [0, dim] for positive steps and [-1, dim - 1] for negative ones.
 */
static enum qr_status
slice_resolve(const struct qr_op_call *c, struct qr_diag *d,
	      const struct qr_tensor *x, struct slice *s)
{
	int64_t starts[QR_TENSOR_MAX_DIMS], ends[QR_TENSOR_MAX_DIMS];
	int64_t axes[QR_TENSOR_MAX_DIMS], steps[QR_TENSOR_MAX_DIMS];
	size_t n, ne, na, ns, k;
	int seen[QR_TENSOR_MAX_DIMS] = {0}, i, ax;
	enum qr_status st = QR_OK;

	if (c->opset >= 10) {
		if ((st = qr_op_read_ints(c, d, c->in[1], "starts", starts,
					  QR_TENSOR_MAX_DIMS, &n)) ||
		    (st = qr_op_read_ints(c, d, c->in[2], "ends", ends,
					  QR_TENSOR_MAX_DIMS, &ne)))
			return st;
		na = ns = n;
		if (qr_op_has_in(c, 3) &&
		    (st = qr_op_read_ints(c, d, c->in[3], "axes", axes,
					  QR_TENSOR_MAX_DIMS, &na)))
			return st;
		else if (!qr_op_has_in(c, 3))
			for (k = 0; k < n; k++)
				axes[k] = (int64_t)k;
		if (qr_op_has_in(c, 4) &&
		    (st = qr_op_read_ints(c, d, c->in[4], "steps", steps,
					  QR_TENSOR_MAX_DIMS, &ns)))
			return st;
		else if (!qr_op_has_in(c, 4))
			for (k = 0; k < n; k++)
				steps[k] = 1;
	} else {
		const int64_t *a;

		a = qr_op_attr_ints(c, "starts", &n);
		if (n > QR_TENSOR_MAX_DIMS)
			return qr_op_errorf(c, d, QR_ESHAPE, "too many starts");
		if (n > 0)	/* a may be NULL when n == 0 */
			memcpy(starts, a, n * sizeof *a);
		a = qr_op_attr_ints(c, "ends", &ne);
		if (ne == n && n > 0)
			memcpy(ends, a, n * sizeof *a);
		a = qr_op_attr_ints(c, "axes", &na);
		if (a == NULL) {
			na = n;
			for (k = 0; k < n; k++)
				axes[k] = (int64_t)k;
		} else if (na == n && n > 0) {
			memcpy(axes, a, n * sizeof *a);
		}
		ns = n;
		for (k = 0; k < n; k++)
			steps[k] = 1;
	}
	if (ne != n || na != n || ns != n)
		return qr_op_errorf(c, d, QR_ESHAPE, "starts, ends, axes and "
				    "steps differ in length (%zu, %zu, %zu, "
				    "%zu)", n, ne, na, ns);
	for (i = 0; i < x->ndim; i++) {
		s->start[i] = 0;
		s->step[i] = 1;
		s->count[i] = x->dims[i];
	}
	for (k = 0; k < n; k++) {
		int64_t dim, lo, hi, b, e;

		if ((st = qr_op_axis(c, d, axes[k], x->ndim, 0, &ax)))
			return st;
		if (seen[ax])
			return qr_op_errorf(c, d, QR_EGRAPH, "axis %d is "
					    "repeated", ax);
		seen[ax] = 1;
		if (steps[k] == 0)
			return qr_op_errorf(c, d, QR_EGRAPH, "step is 0 on "
					    "axis %d", ax);
		dim = x->dims[ax];
		b = starts[k];
		e = ends[k];
		if (b < 0)
			b += dim;
		if (e < 0)
			e += dim;
		if (steps[k] > 0) {
			lo = 0;
			hi = dim;
		} else {
			lo = -1;
			hi = dim - 1;
		}
		b = b < lo ? lo : b > hi ? hi : b;
		e = e < lo ? lo : e > hi ? hi : e;
		s->start[ax] = b;
		s->step[ax] = steps[k];
		if (steps[k] > 0)
			s->count[ax] = e > b ? (e - b + steps[k] - 1) /
				steps[k] : 0;
		else
			s->count[ax] = b > e ? (b - e - steps[k] - 1) /
				-steps[k] : 0;
	}
	return QR_OK;
}

static enum qr_status
slice_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct slice s;
	enum qr_status st = slice_resolve(c, d, c->in[0], &s);

	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype,
				   c->in[0]->ndim, s.count,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
slice_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dst[QR_TENSOR_MAX_DIMS], st[QR_TENSOR_MAX_DIMS], off = 0;
	struct slice s;
	int i;

	slice_resolve(c, d, x, &s);
	qr_op_dense_strides(x->ndim, x->dims, dst);
	for (i = 0; i < x->ndim; i++) {
		off += s.start[i] * dst[i];
		st[i] = s.step[i] * dst[i];
	}
	qr_op_strided_copy(c->out[0]->data, x->data, qr_dtype_size(x->dtype),
			   x->ndim, s.count, off, st);
	return QR_OK;
}

const struct qr_op_desc qr_op_slice = {
	.domain = "", .name = "Slice", .since = 1,
	.check = slice_check, .infer = slice_infer, .run = slice_run,
};

/* ---- Pad ---- */

enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };

static enum qr_status
pad_check(const struct qr_op_call *c, struct qr_diag *d)
{
	const char *mode = qr_op_attr_str(c, "mode", "constant");
	enum qr_status st;

	st = qr_op_move_check(c, d, c->opset >= 11 ? 2 : 1,
			      c->opset >= 18 ? 4 : c->opset >= 11 ? 3 : 1, 1,
			      1);
	if (st == QR_OK)
		st = qr_op_want_index(c, d, 1);
	if (st == QR_OK && c->opset >= 18)
		st = qr_op_want_index(c, d, 3);
	if (st == QR_OK && qr_op_has_in(c, 2))
		st = qr_op_same_dtype(c, d, 0, 2);
	if (st != QR_OK)
		return st;
	if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 &&
	    strcmp(mode, "edge") != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "mode '%s' is not "
				    "supported", mode);
	return QR_OK;
}

/* Pads as [begin_0.., end_0..] over all of x's axes. */
static enum qr_status
pad_resolve(const struct qr_op_call *c, struct qr_diag *d,
	    const struct qr_tensor *x, int64_t *pads)
{
	int64_t p[2 * QR_TENSOR_MAX_DIMS], axes[QR_TENSOR_MAX_DIMS];
	size_t n, na, k;
	enum qr_status st;
	int r = x->ndim, ax;

	if (c->opset >= 11) {
		st = qr_op_read_ints(c, d, c->in[1], "pads", p,
				     2 * QR_TENSOR_MAX_DIMS, &n);
		if (st != QR_OK)
			return st;
	} else {
		const int64_t *a = qr_op_attr_ints(c, "pads", &n);

		if (n > 2 * QR_TENSOR_MAX_DIMS)
			return qr_op_errorf(c, d, QR_ESHAPE, "too many pads");
		if (n > 0)
			memcpy(p, a, n * sizeof *a);
	}
	na = (size_t)r;
	for (k = 0; k < na; k++)
		axes[k] = (int64_t)k;
	if (c->opset >= 18 && qr_op_has_in(c, 3)) {
		st = qr_op_read_ints(c, d, c->in[3], "axes", axes,
				     QR_TENSOR_MAX_DIMS, &na);
		if (st != QR_OK)
			return st;
	}
	if (n != 2 * na)
		return qr_op_errorf(c, d, QR_ESHAPE, "%zu pads for %zu axes",
				    n, na);
	memset(pads, 0, 2 * (size_t)r * sizeof *pads);
	for (k = 0; k < na; k++) {
		if ((st = qr_op_axis(c, d, axes[k], r, 0, &ax)) != QR_OK)
			return st;
		pads[ax] = p[k];
		pads[r + ax] = p[na + k];
	}
	return QR_OK;
}

static enum qr_status
pad_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t pads[2 * QR_TENSOR_MAX_DIMS], dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st = pad_resolve(c, d, x, pads);
	int i;

	if (st != QR_OK)
		return st;
	for (i = 0; i < x->ndim; i++) {
		dims[i] = x->dims[i] + pads[i] + pads[x->ndim + i];
		if (dims[i] < 0)
			return qr_op_errorf(c, d, QR_ESHAPE, "pads make axis %d "
					    "negative", i);
	}
	if (strcmp(qr_op_attr_str(c, "mode", "constant"), "constant") != 0)
		for (i = 0; i < x->ndim; i++)
			if (x->dims[i] == 0 && dims[i] > 0)
				return qr_op_errorf(c, d, QR_ESHAPE, "cannot "
						    "pad an empty axis %d in "
						    "mode %s", i,
						    qr_op_attr_str(c, "mode",
								   ""));
	return qr_tensor_set_shape(c->out[0], x->dtype, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

/* Source index for out-of-range i on an axis of length n, or -1 for the
 * constant. */
static int64_t
pad_index(int64_t i, int64_t n, enum pad_mode mode)
{
	if (i >= 0 && i < n)
		return i;
	if (mode == PAD_CONSTANT)
		return -1;
	if (mode == PAD_EDGE || n == 1)
		return i < 0 ? 0 : n - 1;
	/* reflect, period 2n - 2 */
	{
		int64_t p = 2 * n - 2;

		i %= p;
		if (i < 0)
			i += p;
		return i < n ? i : p - i;
	}
}

static enum qr_status
pad_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor *y = c->out[0];
	const char *ms = qr_op_attr_str(c, "mode", "constant");
	enum pad_mode mode = strcmp(ms, "reflect") == 0 ? PAD_REFLECT :
		strcmp(ms, "edge") == 0 ? PAD_EDGE : PAD_CONSTANT;
	int64_t pads[2 * QR_TENSOR_MAX_DIMS], xs[QR_TENSOR_MAX_DIMS];
	int64_t idx[QR_TENSOR_MAX_DIMS] = {0};
	size_t es = qr_dtype_size(x->dtype), k;
	uint8_t value[16] = {0};
	char *dst = y->data;
	int64_t last, mid_lo, mid_hi;
	int r = x->ndim, i;

	pad_resolve(c, d, x, pads);
	qr_op_dense_strides(r, x->dims, xs);
	if (c->opset >= 11 && qr_op_has_in(c, 2) && c->in[2]->n_elem > 0)
		memcpy(value, c->in[2]->data, es);
	else if (c->opset < 11 && x->dtype == QR_DT_FLOAT) {
		float v = qr_op_attr_float(c, "value", 0);

		memcpy(value, &v, sizeof v);
	} else if (c->opset < 11) {
		struct qr_tensor tmp = *y;

		tmp.data = value;
		qr_op_set(&tmp, 0, qr_op_attr_float(c, "value", 0));
	}
	if (r == 0) {
		qr_op_copy_elem(dst, x->data, es);
		return QR_OK;
	}
	/* row by row along the last axis: the part inside x in one copy,
	 * the padding on either side value by value */
	last = y->dims[r - 1];
	mid_lo = pads[r - 1] < 0 ? 0 : pads[r - 1];
	mid_hi = pads[r - 1] + x->dims[r - 1];
	mid_hi = mid_hi > last ? last : mid_hi;
	for (k = 0; last > 0 && k < y->n_elem; k += (size_t)last) {
		char *row = dst + k * es;
		int64_t off = 0, j;

		for (i = 0; i + 1 < r; i++) {
			int64_t s = pad_index(idx[i] - pads[i], x->dims[i],
					      mode);

			if (s < 0) {
				off = -1;
				break;
			}
			off += s * xs[i];
		}
		for (j = 0; j < last; j++) {
			int64_t s;

			if (off >= 0 && j == mid_lo && mid_lo < mid_hi) {
				memcpy(row + j * (int64_t)es, (const char *)
				       x->data + (off + j - pads[r - 1]) *
				       (int64_t)es, (size_t)(mid_hi - mid_lo) *
				       es);
				j = mid_hi - 1;
				continue;
			}
			s = off < 0 ? -1 : pad_index(j - pads[r - 1],
						     x->dims[r - 1], mode);
			qr_op_copy_elem(row + j * (int64_t)es, s < 0 ?
					(const void *)value :
					(const char *)x->data +
					(off + s) * (int64_t)es, es);
		}
		qr_op_next_index(r - 1, y->dims, idx);
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_pad = {
	.domain = "", .name = "Pad", .since = 2,
	.check = pad_check, .infer = pad_infer, .run = pad_run,
};

/* ---- Tile ---- */

static enum qr_status
tile_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_move_check_in1(c, d, 2, 2, QR_DTM(QR_DT_INT64));
}

static enum qr_status
tile_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t rep[QR_TENSOR_MAX_DIMS], dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	size_t n, m;
	int i;

	st = qr_op_read_ints(c, d, c->in[1], "repeats", rep,
			     QR_TENSOR_MAX_DIMS, &n);
	if (st != QR_OK)
		return st;
	if ((int)n != x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "%zu repeats for rank %d",
				    n, x->ndim);
	for (i = 0; i < x->ndim; i++) {
		if (rep[i] < 0)
			return qr_op_errorf(c, d, QR_ESHAPE, "repeat %lld is "
					    "negative", (long long)rep[i]);
		if (qr_mul_overflow((size_t)x->dims[i], (size_t)rep[i], &m) ||
		    m > INT64_MAX)
			return qr_op_errorf(c, d, QR_ESHAPE, "dim %lld times "
					    "repeat %lld overflows",
					    (long long)x->dims[i],
					    (long long)rep[i]);
		dims[i] = (int64_t)m;
	}
	return qr_tensor_set_shape(c->out[0], x->dtype, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
tile_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor *y = c->out[0];
	int64_t ys[QR_TENSOR_MAX_DIMS], idx[QR_TENSOR_MAX_DIMS];
	size_t es = qr_dtype_size(x->dtype), row, nrows, k;
	char *yd = y->data;
	const char *xd = x->data;
	int i, j, n = x->ndim;

	(void)d;
	if (y->n_elem == 0)
		return QR_OK;
	if (n == 0) {
		memcpy(yd, xd, es);
		return QR_OK;
	}
	/*
	 * Block copies, innermost axis first: each row of x goes to its
	 * place in y (its index along every other axis as in x) repeated
	 * along the last axis; then, from the second-to-last axis out, the
	 * filled block along axis i (contiguous, as every inner axis is
	 * whole by then) is copied repeats[i] - 1 times after itself.
	 */
	qr_op_dense_strides(n, y->dims, ys);
	row = (size_t)x->dims[n - 1] * es;
	nrows = x->n_elem / (size_t)x->dims[n - 1];
	memset(idx, 0, sizeof idx);
	for (k = 0; k < nrows; k++) {
		char *dst = yd;
		size_t r;

		for (j = 0; j < n - 1; j++)
			dst += (size_t)(idx[j] * ys[j]) * es;
		for (r = 0; r < (size_t)(y->dims[n - 1] / x->dims[n - 1]); r++)
			memcpy(dst + r * row, xd + k * row, row);
		qr_op_next_index(n - 1, x->dims, idx);
	}
	for (i = n - 2; i >= 0; i--) {
		size_t block = (size_t)(x->dims[i] * ys[i]) * es;
		size_t reps = (size_t)(y->dims[i] / x->dims[i]), outer = 1, r;

		for (j = 0; j < i; j++)
			outer *= (size_t)x->dims[j];
		memset(idx, 0, sizeof idx);
		for (k = 0; k < outer; k++) {
			char *base = yd;

			for (j = 0; j < i; j++)
				base += (size_t)(idx[j] * ys[j]) * es;
			for (r = 1; r < reps; r++)
				memcpy(base + r * block, base, block);
			qr_op_next_index(i, x->dims, idx);
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_tile = {
	.domain = "", .name = "Tile", .since = 6,
	.check = tile_check, .infer = tile_infer, .run = tile_run,
};

/* ---- DepthToSpace, SpaceToDepth ---- */

static enum qr_status
d2s_check(const struct qr_op_call *c, struct qr_diag *d)
{
	const char *mode = qr_op_attr_str(c, "mode", "DCR");
	enum qr_status st = qr_op_move_check(c, d, 1, 1, 1, 1);

	if (st != QR_OK)
		return st;
	if (qr_op_attr_int(c, "blocksize", 0) < 1)
		return qr_op_errorf(c, d, QR_EGRAPH, "blocksize must be >= 1");
	if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "mode '%s' is not "
				    "supported", mode);
	return QR_OK;
}

static enum qr_status
d2s_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t b = qr_op_attr_int(c, "blocksize", 1), dims[4];
	int to_space = strcmp(c->node->op_type, "DepthToSpace") == 0;
	char buf[128];

	if (x->ndim != 4 || (to_space ? x->dims[1] % (b * b) != 0 :
			     x->dims[2] % b != 0 || x->dims[3] % b != 0))
		return qr_op_errorf(c, d, QR_ESHAPE, "input %s does not fit "
				    "blocksize %lld",
				    qr_shape_str(x, buf, sizeof buf),
				    (long long)b);
	dims[0] = x->dims[0];
	if (to_space) {
		dims[1] = x->dims[1] / (b * b);
		dims[2] = x->dims[2] * b;
		dims[3] = x->dims[3] * b;
	} else {
		dims[1] = x->dims[1] * b * b;
		dims[2] = x->dims[2] / b;
		dims[3] = x->dims[3] / b;
	}
	return qr_tensor_set_shape(c->out[0], x->dtype, 4, dims,
				   qr_op_out_name(c, 0), d);
}

/*
 * Both are one strided copy over a 6-D view of the output.
 * DepthToSpace, output [N][C'][H][b1][W][b2] from input channel
 * (b1*b + b2)*C' + c' (DCR) or c'*b*b + b1*b + b2 (CRD).
 * SpaceToDepth, output [N][b1][b2][C][H'][W'] from x[n][c][h'*b+b1][w'*b+b2].
 */
static enum qr_status
d2s_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t b = qr_op_attr_int(c, "blocksize", 1);
	int64_t n = x->dims[0], ch = x->dims[1], h = x->dims[2];
	int64_t w = x->dims[3], dims[6], st[6];

	if (strcmp(c->node->op_type, "DepthToSpace") == 0) {
		int64_t co = ch / (b * b);
		int crd = strcmp(qr_op_attr_str(c, "mode", "DCR"), "CRD") == 0;
		int64_t v[6] = {n, co, h, b, w, b};
		int64_t s[6] = {ch * h * w, crd ? b * b * h * w : h * w, w,
				crd ? b * h * w : b * co * h * w, 1,
				crd ? h * w : co * h * w};

		memcpy(dims, v, sizeof v);
		memcpy(st, s, sizeof s);
	} else {
		int64_t v[6] = {n, b, b, ch, h / b, w / b};
		int64_t s[6] = {ch * h * w, w, 1, h * w, b * w, b};

		memcpy(dims, v, sizeof v);
		memcpy(st, s, sizeof s);
	}
	qr_op_strided_copy(c->out[0]->data, x->data, qr_dtype_size(x->dtype), 6,
			   dims, 0, st);
	return QR_OK;
}

const struct qr_op_desc qr_op_depth_to_space = {
	.domain = "", .name = "DepthToSpace", .since = 1,
	.check = d2s_check, .infer = d2s_infer, .run = d2s_run,
};
const struct qr_op_desc qr_op_space_to_depth = {
	.domain = "", .name = "SpaceToDepth", .since = 1,
	.check = d2s_check, .infer = d2s_infer, .run = d2s_run,
};
