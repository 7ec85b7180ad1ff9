/*
 * op_index: indexing and selection: Gather, GatherElements, GatherND,
 * Scatter, ScatterElements, ScatterND, Where, Compress, NonZero, Trilu,
 * TopK, OneHot.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op-move-int.h"

/* ---- Gather ---- */

static enum qr_status
gather_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_move_check_in1(c, d, 2, 2, QR_DTM_INDEX);
}

static enum qr_status
gather_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int axis, i, r = 0;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0,
			&axis);
	if (st != QR_OK)
		return st;
	if (x->ndim - 1 + ix->ndim > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_ESHAPE, "output rank is too high");
	for (i = 0; i < axis; i++)
		dims[r++] = x->dims[i];
	for (i = 0; i < ix->ndim; i++)
		dims[r++] = ix->dims[i];
	for (i = axis + 1; i < x->ndim; i++)
		dims[r++] = x->dims[i];
	return qr_tensor_set_shape(c->out[0], x->dtype, r, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
gather_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	size_t es = qr_dtype_size(x->dtype), outer, inner, o, k;
	char *y = c->out[0]->data;
	int64_t len;
	int axis;

	qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0, &axis);
	outer = qr_op_dims_prod(x->dims, 0, axis);
	inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim) * es;
	len = x->dims[axis];
	if (c->out[0]->n_elem == 0)	/* y may be NULL: nothing to copy */
		inner = 0;
	for (k = 0; k < ix->n_elem; k++) {
		int64_t v = qr_op_get_i64(ix, k);

		if (v < -len || v >= len)
			return qr_op_errorf(c, d, QR_ESHAPE, "index %lld is out "
					    "of range for axis %d of size %lld",
					    (long long)v, axis, (long long)len);
	}
	for (o = 0; o < outer; o++) {
		for (k = 0; k < ix->n_elem; k++) {
			int64_t v = qr_op_get_i64(ix, k);

			if (v < 0)
				v += len;
			if (inner == 0)
				continue;
			memcpy(y, (const char *)x->data +
			       (o * (size_t)len + (size_t)v) * inner, inner);
			y += inner;
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_gather = {
	.domain = "", .name = "Gather", .since = 1,
	.check = gather_check, .infer = gather_infer, .run = gather_run,
};

/* ---- GatherElements ---- */

static enum qr_status
gather_elements_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	enum qr_status st;
	int axis;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0,
			&axis);
	if (st != QR_OK)
		return st;
	if (ix->ndim != x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "indices have rank %d, "
				    "data rank %d", ix->ndim, x->ndim);
	return qr_tensor_set_shape(c->out[0], x->dtype, ix->ndim, ix->dims,
				   qr_op_out_name(c, 0), d);
}

/*
 * *off, the offset in x (elements, dense strides xs) that index v of
 * GatherElements or ScatterElements addresses, read at position idx of
 * indices of x's rank: idx with v (negative counts from the end) on
 * axis. QR_ESHAPE naming the node when v is out of range or idx is
 * outside x.
 */
static enum qr_status
elem_offset(const struct qr_op_call *c, struct qr_diag *d,
	    const struct qr_tensor *x, const int64_t *xs, int axis, int64_t v,
	    const int64_t *idx, int64_t *off)
{
	int i;

	if (v < -x->dims[axis] || v >= x->dims[axis])
		return qr_op_errorf(c, d, QR_ESHAPE, "index %lld is out of "
				    "range for axis %d of size %lld",
				    (long long)v, axis,
				    (long long)x->dims[axis]);
	if (v < 0)
		v += x->dims[axis];
	*off = 0;
	for (i = 0; i < x->ndim; i++) {
		int64_t p = i == axis ? v : idx[i];

		if (i != axis && p >= x->dims[i])
			return qr_op_errorf(c, d, QR_ESHAPE, "indices exceed "
					    "data on axis %d", i);
		*off += p * xs[i];
	}
	return QR_OK;
}

static enum qr_status
gather_elements_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	int64_t xs[QR_TENSOR_MAX_DIMS], idx[QR_TENSOR_MAX_DIMS] = {0}, off;
	size_t es = qr_dtype_size(x->dtype), k;
	char *y = c->out[0]->data;
	enum qr_status st;
	int axis;

	qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0, &axis);
	qr_op_dense_strides(x->ndim, x->dims, xs);
	for (k = 0; k < ix->n_elem; k++) {
		if ((st = elem_offset(c, d, x, xs, axis, qr_op_get_i64(ix, k),
				      idx, &off)) != QR_OK)
			return st;
		qr_op_copy_elem(y + k * es, (const char *)x->data +
				off * (int64_t)es, es);
		qr_op_next_index(ix->ndim, ix->dims, idx);
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_gather_elements = {
	.domain = "", .name = "GatherElements", .since = 11,
	.check = gather_check, .infer = gather_elements_infer,
	.run = gather_elements_run,
};

/* ---- GatherND ---- */

static enum qr_status
gathernd_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_move_check_in1(c, d, 2, 2, QR_DTM(QR_DT_INT64));
}

static enum qr_status
gathernd_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	int64_t b = qr_op_attr_int(c, "batch_dims", 0), last, dims[32];
	int i, r = 0;

	if (ix->ndim < 1 || b < 0 || b >= ix->ndim || b >= x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "bad indices rank %d or "
				    "batch_dims %lld", ix->ndim, (long long)b);
	last = ix->dims[ix->ndim - 1];
	if (last < 1 || last > x->ndim - b)
		return qr_op_errorf(c, d, QR_ESHAPE, "index tuples of %lld "
				    "for data of rank %d", (long long)last,
				    x->ndim);
	for (i = 0; i < b; i++)
		if (x->dims[i] != ix->dims[i])
			return qr_op_errorf(c, d, QR_ESHAPE, "batch dims of data "
					    "and indices differ");
	for (i = 0; i < ix->ndim - 1; i++)
		dims[r++] = ix->dims[i];
	for (i = (int)(b + last); i < x->ndim; i++)
		dims[r++] = x->dims[i];
	if (r > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_ESHAPE, "output rank too high");
	return qr_tensor_set_shape(c->out[0], x->dtype, r, dims,
				   qr_op_out_name(c, 0), d);
}

/*
 * Add to *off the offset in x (elements, dense strides xs) of index
 * tuple t of GatherND's or ScatterND's indices ix (as many values as ix's
 * last dim, for x's axes from `first` on; negative counts from the end).
 * QR_ESHAPE naming the node when a value is out of range.
 */
static enum qr_status
tuple_offset(const struct qr_op_call *c, struct qr_diag *d,
	     const struct qr_tensor *x, const int64_t *xs,
	     const struct qr_tensor *ix, size_t t, int first, int64_t *off)
{
	int64_t last = ix->dims[ix->ndim - 1];
	int i;

	for (i = 0; i < last; i++) {
		int64_t v = qr_op_get_i64(ix, t * (size_t)last + (size_t)i);
		int64_t dim = x->dims[first + i];

		if (v < -dim || v >= dim)
			return qr_op_errorf(c, d, QR_ESHAPE, "index %lld out of "
					    "range for dim %lld", (long long)v,
					    (long long)dim);
		*off += (v < 0 ? v + dim : v) * xs[first + i];
	}
	return QR_OK;
}

static enum qr_status
gathernd_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	int64_t b = qr_op_attr_int(c, "batch_dims", 0);
	int64_t last = ix->dims[ix->ndim - 1], xs[QR_TENSOR_MAX_DIMS];
	size_t es = qr_dtype_size(x->dtype), n_tuples, per_batch, slice, t;
	size_t batch_stride;
	char *y = c->out[0]->data;
	enum qr_status st;

	qr_op_dense_strides(x->ndim, x->dims, xs);
	n_tuples = last ? ix->n_elem / (size_t)last : 0;
	per_batch = n_tuples / (qr_op_dims_prod(ix->dims, 0, (int)b) ?
				qr_op_dims_prod(ix->dims, 0, (int)b) : 1);
	slice = qr_op_dims_prod(x->dims, (int)(b + last), x->ndim) * es;
	batch_stride = b > 0 ? (size_t)xs[b - 1] : 0;
	for (t = 0; t < n_tuples; t++) {
		int64_t off = (int64_t)((t / (per_batch ? per_batch : 1)) *
					batch_stride);

		if ((st = tuple_offset(c, d, x, xs, ix, t, (int)b, &off)) !=
		    QR_OK)
			return st;
		if (slice > 0) { /* else y may be NULL: no output at all */
			memcpy(y, (const char *)x->data + off * (int64_t)es,
			       slice);
			y += slice;
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_gathernd = {
	.domain = "", .name = "GatherND", .since = 11,
	.check = gathernd_check, .infer = gathernd_infer,
	.run = gathernd_run,
};

/* ---- ScatterElements, Scatter (opset 9-10), ScatterND ---- */

enum scatter_red { SC_NONE, SC_ADD, SC_MUL, SC_MAX, SC_MIN };

static enum qr_status
scatter_red(const struct qr_op_call *c, struct qr_diag *d,
	    enum scatter_red *r)
{
	const char *s = qr_op_attr_str(c, "reduction", "none");

	*r = strcmp(s, "none") == 0 ? SC_NONE : strcmp(s, "add") == 0 ?
		SC_ADD : strcmp(s, "mul") == 0 ? SC_MUL : strcmp(s, "max") ==
		0 ? SC_MAX : strcmp(s, "min") == 0 ? SC_MIN : (enum scatter_red)-1;
	if ((int)*r < 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "reduction '%s' is "
				    "not supported", s);
	return QR_OK;
}

static enum qr_status
scatter_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum scatter_red r;
	enum qr_status st = qr_op_move_check_in1(c, d, 3, 3, QR_DTM_INDEX);

	if (st == QR_OK)
		st = qr_op_same_dtype(c, d, 0, 2);
	if (st == QR_OK)
		st = scatter_red(c, d, &r);
	if (st == QR_OK && r != SC_NONE && qr_op_dtype(c, 0) != QR_DT_UNDEFINED
	    && !(QR_DTM_NUMERIC & QR_DTM(qr_op_dtype(c, 0))))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "reduction on %s",
				    qr_dtype_name(qr_op_dtype(c, 0)));
	return st;
}

/* y[dst] = update (combined with y[dst] by the reduction). */
static void
scatter_put(struct qr_tensor *y, size_t dst, const struct qr_tensor *u,
	    size_t src, enum scatter_red r)
{
	size_t es = qr_dtype_size(y->dtype);
	double a, b;

	if (r == SC_NONE) {
		qr_op_copy_elem((char *)y->data + dst * es,
				(const char *)u->data + src * es, es);
		return;
	}
	a = qr_op_get(y, dst);
	b = qr_op_get(u, src);
	qr_op_set(y, dst, r == SC_ADD ? a + b : r == SC_MUL ? a * b :
		  r == SC_MAX ? fmax(a, b) : fmin(a, b));
}

static enum qr_status
scatter_elements_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1], *u = c->in[2];
	int64_t xs[QR_TENSOR_MAX_DIMS], idx[QR_TENSOR_MAX_DIMS] = {0}, off;
	enum scatter_red r;
	enum qr_status st;
	size_t k;
	int axis;

	if ((st = scatter_red(c, d, &r)) != QR_OK ||
	    (st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0,
			     &axis)) != QR_OK)
		return st;
	if (!qr_op_same_shape(u, ix->ndim, ix->dims) || ix->ndim != x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "indices and updates must "
				    "share a shape of data's rank");
	qr_op_copy_run(c, d);
	qr_op_dense_strides(x->ndim, x->dims, xs);
	for (k = 0; k < ix->n_elem; k++) {
		if ((st = elem_offset(c, d, x, xs, axis, qr_op_get_i64(ix, k),
				      idx, &off)) != QR_OK)
			return st;
		scatter_put(c->out[0], (size_t)off, u, k, r);
		qr_op_next_index(ix->ndim, ix->dims, idx);
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_scatter_elements = {
	.domain = "", .name = "ScatterElements", .since = 11,
	.check = scatter_check, .infer = qr_op_same_infer,
	.run = scatter_elements_run,
};
const struct qr_op_desc qr_op_scatter = {
	.domain = "", .name = "Scatter", .since = 9,
	.check = scatter_check, .infer = qr_op_same_infer,
	.run = scatter_elements_run,
};

static enum qr_status
scatternd_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1], *u = c->in[2];
	int64_t xs[QR_TENSOR_MAX_DIMS], last;
	enum scatter_red r;
	enum qr_status st;
	size_t n_tuples, slice, t, j;

	scatter_red(c, d, &r);
	if (ix->ndim < 1 || ix->dims[ix->ndim - 1] > x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "bad indices shape");
	last = ix->dims[ix->ndim - 1];
	n_tuples = last ? ix->n_elem / (size_t)last : 0;
	slice = qr_op_dims_prod(x->dims, (int)last, x->ndim);
	if (u->n_elem != n_tuples * slice)
		return qr_op_errorf(c, d, QR_ESHAPE, "updates hold %zu values, "
				    "indices need %zu", u->n_elem,
				    n_tuples * slice);
	qr_op_copy_run(c, d);
	qr_op_dense_strides(x->ndim, x->dims, xs);
	for (t = 0; t < n_tuples; t++) {
		int64_t off = 0;

		if ((st = tuple_offset(c, d, x, xs, ix, t, 0, &off)) != QR_OK)
			return st;
		for (j = 0; j < slice; j++)
			scatter_put(c->out[0], (size_t)off + j, u,
				    t * slice + j, r);
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_scatternd = {
	.domain = "", .name = "ScatterND", .since = 11,
	.check = scatter_check, .infer = qr_op_same_infer, .run = scatternd_run,
};

/* ---- Where ---- */

static enum qr_status
where_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 3, 3, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM(QR_DT_BOOL))) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_ANY)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 1, 2)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 1);
	return QR_OK;
}

static enum qr_status
where_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int ndim;

	st = qr_op_broadcast_shape(c, d, c->in, 3, &ndim, dims);
	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], c->in[1]->dtype, ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
where_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor *y = c->out[0];
	size_t es = qr_dtype_size(y->dtype), i;
	const uint8_t *cond = c->in[0]->data;
	const char *a = c->in[1]->data, *b = c->in[2]->data;
	char *dst = y->data;
	struct qr_bcast it;

	qr_bcast_init(&it, y->ndim, y->dims, c->in, 3);
	do {
		for (i = 0; i < it.inner; i++) {
			size_t o = it.out_off + i;

			if (cond[it.off[0] + i * it.step[0]])
				qr_op_copy_elem(dst + o * es, a + (it.off[1] +
						i * it.step[1]) * es, es);
			else
				qr_op_copy_elem(dst + o * es, b + (it.off[2] +
						i * it.step[2]) * es, es);
		}
	} while (qr_bcast_next(&it));
	return QR_OK;
}

const struct qr_op_desc qr_op_where = {
	.domain = "", .name = "Where", .since = 9,
	.check = where_check, .infer = where_infer, .run = where_run,
};

/* ---- Compress ---- */

static enum qr_status
compress_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_move_check_in1(c, d, 2, 2, QR_DTM(QR_DT_BOOL));
}

/* Selected count; *axis is -1 when the input is flattened. */
static enum qr_status
compress_geom(struct qr_op_call *c, struct qr_diag *d, int *axis,
	      size_t *sel)
{
	const struct qr_tensor *x = c->in[0], *cond = c->in[1];
	const uint8_t *cd = cond->data;
	size_t len, i;
	enum qr_status st;

	*axis = -1;
	len = x->n_elem;
	if (qr_op_has_attr(c, "axis")) {
		st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim,
				0, axis);
		if (st != QR_OK)
			return st;
		len = (size_t)x->dims[*axis];
	}
	if (cond->ndim != 1 || cond->n_elem > len)
		return qr_op_errorf(c, d, QR_ESHAPE, "condition must be 1-D and "
				    "at most %zu long", len);
	*sel = 0;
	for (i = 0; i < cond->n_elem; i++)
		*sel += cd[i] != 0;
	return QR_OK;
}

static enum qr_status
compress_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	size_t sel;
	int axis;

	if ((st = compress_geom(c, d, &axis, &sel)) != QR_OK)
		return st;
	if (axis < 0) {
		dims[0] = (int64_t)sel;
		return qr_tensor_set_shape(c->out[0], x->dtype, 1, dims,
					   qr_op_out_name(c, 0), d);
	}
	memcpy(dims, x->dims, sizeof dims);
	dims[axis] = (int64_t)sel;
	return qr_tensor_set_shape(c->out[0], x->dtype, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
compress_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	const uint8_t *cd = c->in[1]->data;
	size_t es = qr_dtype_size(x->dtype), sel, outer, len, inner, o, k;
	char *y = c->out[0]->data;
	int axis;

	compress_geom(c, d, &axis, &sel);
	if (axis < 0) {
		outer = 1;
		len = x->n_elem;
		inner = es;
	} else {
		outer = qr_op_dims_prod(x->dims, 0, axis);
		len = (size_t)x->dims[axis];
		inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim) * es;
	}
	for (o = 0; o < outer; o++)
		for (k = 0; k < c->in[1]->n_elem; k++)
			if (cd[k] && inner > 0) {
				memcpy(y, (const char *)x->data +
				       (o * len + k) * inner, inner);
				y += inner;
			}
	return QR_OK;
}

const struct qr_op_desc qr_op_compress = {
	.domain = "", .name = "Compress", .since = 9,
	.check = compress_check, .infer = compress_infer,
	.run = compress_run,
};

/* ---- NonZero ---- */

static enum qr_status
nonzero_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = qr_op_move_check(c, d, 1, 1, 1, 1);

	c->out_dtype[0] = QR_DT_INT64;
	return st;
}

static size_t
count_nonzero(const struct qr_tensor *x)
{
	size_t i, n = 0;

	for (i = 0; i < x->n_elem; i++)
		n += qr_op_get(x, i) != 0;
	return n;
}

static enum qr_status
nonzero_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[2];

	dims[0] = c->in[0]->ndim;
	dims[1] = (int64_t)count_nonzero(c->in[0]);
	return qr_tensor_set_shape(c->out[0], QR_DT_INT64, 2, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
nonzero_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t *y = c->out[0]->data, idx[QR_TENSOR_MAX_DIMS] = {0};
	size_t nnz = (size_t)c->out[0]->dims[1], col = 0, k;
	int i;

	for (k = 0; k < x->n_elem; k++) {
		if (qr_op_get(x, k) != 0) {
			for (i = 0; i < x->ndim; i++)
				y[(size_t)i * nnz + col] = idx[i];
			col++;
		}
		qr_op_next_index(x->ndim, x->dims, idx);
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_nonzero = {
	.domain = "", .name = "NonZero", .since = 9,
	.check = nonzero_check, .infer = nonzero_infer, .run = nonzero_run,
};

/* ---- Trilu ---- */

static enum qr_status
trilu_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_move_check_in1(c, d, 1, 2, QR_DTM(QR_DT_INT64));
}

static enum qr_status
trilu_infer(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->in[0]->ndim < 2)
		return qr_op_errorf(c, d, QR_ESHAPE, "input must have rank >= "
				    "2, not %d", c->in[0]->ndim);
	if (qr_op_has_in(c, 1) && c->in[1]->n_elem != 1)
		return qr_op_errorf(c, d, QR_ESHAPE, "k must hold one value");
	return qr_op_same_infer(c, d);
}

/* Keep element (i, j) of each matrix when j - i >= k (upper) or
 * j - i <= k (lower); zero the rest. */
static enum qr_status
trilu_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor *y = c->out[0];
	int upper = (int)qr_op_attr_int(c, "upper", 1);
	int64_t k = qr_op_has_in(c, 1) ? qr_op_get_i64(c->in[1], 0) : 0;
	int64_t rows = x->dims[x->ndim - 2], cols = x->dims[x->ndim - 1];
	size_t es = qr_dtype_size(x->dtype), n = rows * cols, b, nb;
	int64_t i, j;

	nb = n ? x->n_elem / n : 0;
	qr_op_copy_run(c, d);
	for (b = 0; b < nb; b++)
		for (i = 0; i < rows; i++)
			for (j = 0; j < cols; j++)
				if (upper ? j - i < k : j - i > k)
					memset((char *)y->data + (b * n +
					       (size_t)(i * cols + j)) * es, 0,
					       es);
	return QR_OK;
}

const struct qr_op_desc qr_op_trilu = {
	.domain = "", .name = "Trilu", .since = 14,
	.check = trilu_check, .infer = trilu_infer, .run = trilu_run,
};

/* ---- TopK ---- */

static enum qr_status
topk_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, c->opset >= 10 ? 2 : 1,
			      c->opset >= 10 ? 2 : 1, 2, 2)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_NUMERIC)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM(QR_DT_INT64))) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	c->out_dtype[1] = QR_DT_INT64;
	return QR_OK;
}

static enum qr_status
topk_geom(struct qr_op_call *c, struct qr_diag *d, int *axis, int64_t *k)
{
	const struct qr_tensor *x = c->in[0];
	enum qr_status st;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", -1), x->ndim, 0,
			axis);
	if (st != QR_OK)
		return st;
	if (c->opset >= 10) {
		if (c->in[1]->n_elem != 1)
			return qr_op_errorf(c, d, QR_ESHAPE, "K must hold one "
					    "value");
		*k = qr_op_get_i64(c->in[1], 0);
	} else {
		*k = qr_op_attr_int(c, "k", -1);
	}
	if (*k < 0 || *k > x->dims[*axis])
		return qr_op_errorf(c, d, QR_ESHAPE, "K %lld is outside 0..%lld",
				    (long long)*k, (long long)x->dims[*axis]);
	return QR_OK;
}

static enum qr_status
topk_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS], k;
	enum qr_status st;
	int axis;

	if ((st = topk_geom(c, d, &axis, &k)) != QR_OK)
		return st;
	memcpy(dims, c->in[0]->dims, sizeof dims);
	dims[axis] = k;
	st = qr_tensor_set_shape(c->out[0], c->in[0]->dtype, c->in[0]->ndim,
				 dims, qr_op_out_name(c, 0), d);
	if (st == QR_OK)
		st = qr_tensor_set_shape(c->out[1], QR_DT_INT64,
					 c->in[0]->ndim, dims,
					 qr_op_out_name(c, 1), d);
	return st;
}

struct topk_item {
	double key;  /* the value, negated when the largest come first */
	int64_t idx; /* position along the axis; ties keep lower first */
};

/* Whether x ranks before y: the smaller key, then the lower index; a NaN
 * ranks before every number (ONNX Runtime puts a NaN first, largest or
 * not, though the order of the rest of its row then breaks). */
static int
topk_before(const struct topk_item *x, const struct topk_item *y)
{
	int xn = isnan(x->key), yn = isnan(y->key);

	if (xn || yn)
		return xn && yn ? x->idx < y->idx : xn;
	if (x->key != y->key)
		return x->key < y->key;
	return x->idx < y->idx;
}

static int
topk_cmp(const void *a, const void *b)
{
	return topk_before(a, b) ? -1 : topk_before(b, a) ? 1 : 0;
}

/* Restore the heap h of n items (the last-ranked at the root) below i. */
static void
topk_sift(struct topk_item *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, w = i;
		struct topk_item t;

		if (l < n && topk_before(&h[w], &h[l]))
			w = l;
		if (r < n && topk_before(&h[w], &h[r]))
			w = r;
		if (w == i)
			return;
		t = h[i], h[i] = h[w], h[w] = t;
		i = w;
	}
}

/* The k first-ranked of items[0..len) into items[0..k), in rank order:
 * a heap of the best k seen, its worst at the root, so each other item
 * costs one comparison (retinanet's TopK takes 1000 of 100,000s). */
static void
topk_select(struct topk_item *items, size_t len, size_t k)
{
	size_t q, i;

	if (k == 0)
		return;
	if (k * 4 >= len) {
		qsort(items, len, sizeof *items, topk_cmp);
		return;
	}
	for (i = k / 2 + 1; i-- > 0;)
		topk_sift(items, k, i);
	for (q = k; q < len; q++)
		if (topk_before(&items[q], &items[0])) {
			items[0] = items[q];
			topk_sift(items, k, 0);
		}
	qsort(items, k, sizeof *items, topk_cmp);
}

static enum qr_status
topk_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int largest = (int)qr_op_attr_int(c, "largest", 1);
	size_t outer, len, inner, o, j, q;
	struct topk_item *items;
	int64_t k;
	int axis;

	topk_geom(c, d, &axis, &k);
	outer = qr_op_dims_prod(x->dims, 0, axis);
	len = (size_t)x->dims[axis];
	inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim);
	items = xreallocarray(NULL, len + 1, sizeof *items);
	for (o = 0; o < outer; o++) {
		for (j = 0; j < inner; j++) {
			for (q = 0; q < len; q++) {
				double v = qr_op_get(x, (o * len + q) * inner +
						     j);

				items[q].key = largest ? -v : v;
				items[q].idx = (int64_t)q;
			}
			topk_select(items, len, (size_t)k);
			for (q = 0; q < (size_t)k; q++) {
				size_t p = (o * (size_t)k + q) * inner + j;

				qr_op_set(c->out[0], p, qr_op_get(x, (o * len +
					  (size_t)items[q].idx) * inner + j));
				((int64_t *)c->out[1]->data)[p] = items[q].idx;
			}
		}
	}
	free(items);
	return QR_OK;
}

const struct qr_op_desc qr_op_topk = {
	.domain = "", .name = "TopK", .since = 1,
	.check = topk_check, .infer = topk_infer, .run = topk_run,
};

/* ---- OneHot ---- */

static enum qr_status
onehot_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 3, 3, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_NUMERIC)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_NUMERIC)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 2, QR_DTM_ANY)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 2);
	return QR_OK;
}

static enum qr_status
onehot_geom(struct qr_op_call *c, struct qr_diag *d, int *axis,
	    int64_t *depth)
{
	const struct qr_tensor *ix = c->in[0];

	if (c->in[1]->n_elem != 1 || c->in[2]->n_elem != 2)
		return qr_op_errorf(c, d, QR_ESHAPE, "depth must hold one "
				    "value and values two");
	*depth = (int64_t)qr_op_get(c->in[1], 0);
	if (*depth < 1)
		return qr_op_errorf(c, d, QR_ESHAPE, "depth %lld is below 1",
				    (long long)*depth);
	if (ix->ndim + 1 > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_ESHAPE, "rank too high");
	return qr_op_axis(c, d, qr_op_attr_int(c, "axis", -1), ix->ndim + 1,
			  0, axis);
}

static enum qr_status
onehot_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *ix = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS], depth;
	enum qr_status st;
	int axis, i, r = 0;

	if ((st = onehot_geom(c, d, &axis, &depth)) != QR_OK)
		return st;
	for (i = 0; i <= ix->ndim; i++)
		dims[i] = i == axis ? depth : ix->dims[r++];
	return qr_tensor_set_shape(c->out[0], c->in[2]->dtype, ix->ndim + 1,
				   dims, qr_op_out_name(c, 0), d);
}

static enum qr_status
onehot_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *ix = c->in[0], *vals = c->in[2];
	struct qr_tensor *y = c->out[0];
	size_t es = qr_dtype_size(y->dtype), outer, inner, o, j, k;
	const char *off_v = vals->data, *on_v = off_v + es;
	int64_t depth;
	int axis;

	onehot_geom(c, d, &axis, &depth);
	outer = qr_op_dims_prod(ix->dims, 0, axis);
	inner = qr_op_dims_prod(ix->dims, axis, ix->ndim);
	for (o = 0; o < outer; o++)
		for (k = 0; k < (size_t)depth; k++)
			for (j = 0; j < inner; j++) {
				int64_t v = (int64_t)qr_op_get(ix,
							       o * inner + j);

				if (v < 0)
					v += depth;
				qr_op_copy_elem((char *)y->data +
						((o * (size_t)depth + k) *
						 inner + j) * es,
						v == (int64_t)k ? on_v : off_v,
						es);
			}
	return QR_OK;
}

const struct qr_op_desc qr_op_onehot = {
	.domain = "", .name = "OneHot", .since = 9,
	.check = onehot_check, .infer = onehot_infer, .run = onehot_run,
};
