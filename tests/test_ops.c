/*
 * test_ops: the op framework on literal arrays.
 *
 *   - ops.def and the descriptors agree; qr_op_find picks by opset
 *   - numpy broadcasting (shapes, merged iteration, int types, errors)
 *   - Slice with negative steps and clamped bounds
 *   - Softmax axis semantics before and from opset 13
 *   - .npy round trip and malformed headers
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "ops/op-int.h"
#include "ops/ops.h"
#include "run/run.h"
#include "tap.h"

/* ---- calling one op on literal tensors ---- */

static struct qr_tensor *
mk(int dtype, int ndim, const int64_t *dims, const void *data)
{
	struct qr_tensor *t;
	struct qr_diag d = {0};

	if (qr_tensor_new(dtype, ndim, dims, &t, &d) != QR_OK)
		qr_fatal("mk: %s", d.msg);
	if (t->nbytes > 0)
		memcpy(t->data, data, t->nbytes);
	return t;
}

static struct qr_tensor *
mkf(int ndim, const int64_t *dims, const float *v)
{
	return mk(QR_DT_FLOAT, ndim, dims, v);
}

static struct qr_tensor *
mki(int ndim, const int64_t *dims, const int64_t *v)
{
	return mk(QR_DT_INT64, ndim, dims, v);
}

/*
 * Run op_type at opset on in[0..n_in) (NULL = absent) into one output,
 * through check (with every input given, as a run-time recheck does),
 * infer and run. Returns the status; *out gets the output.
 */
static enum qr_status
call1(const char *op_type, int opset, const struct qr_attr *attrs,
      size_t n_attr, struct qr_tensor **in, size_t n_in,
      struct qr_tensor **out, struct qr_diag *d)
{
	static const char *names[] = {"a", "b", "c", "d", "e"};
	const char *in_names[8];
	const char *out_names[1] = {"y"};
	struct qr_node node = {0};
	struct qr_op_call c = {0};
	const struct qr_op_desc *desc;
	struct qr_tensor *y = xcalloc(1, sizeof *y);
	int in_dt[8], out_dt[1] = {0};
	enum qr_status st;
	size_t i;

	*out = NULL;
	for (i = 0; i < n_in; i++) {
		in_names[i] = in[i] ? names[i] : "";
		in_dt[i] = in[i] ? in[i]->dtype : QR_DT_UNDEFINED;
	}
	node.name = "n0";
	node.op_type = op_type;
	node.domain = "";
	node.n_in = n_in;
	node.in = in_names;
	node.n_out = 1;
	node.out = out_names;
	node.n_attr = n_attr;
	node.attrs = attrs;
	c.node = &node;
	c.opset = opset;
	c.n_in = n_in;
	c.in = in;
	c.n_out = 1;
	c.out = &y;
	c.n_threads = 1;
	c.in_dtype = in_dt;
	c.out_dtype = out_dt;
	desc = qr_op_find("", op_type, opset);
	if (desc == NULL) {
		st = qr_errorf(d, QR_EUNSUPPORTED, "no %s-%d", op_type, opset);
		goto out;
	}
	if (desc->check && (st = desc->check(&c, d)) != QR_OK)
		goto out;
	if ((st = desc->infer(&c, d)) != QR_OK)
		goto out;
	y->owned = 1;
	qr_tensor_alloc(y);
	st = desc->run(&c, d);
out:
	if (st != QR_OK)
		qr_tensor_free(y);
	else
		*out = y;
	return st;
}

static struct qr_attr
attr_int(const char *name, int64_t v)
{
	struct qr_attr a = {0};

	a.name = name;
	a.type = QR_ATTR_INT;
	a.i = v;
	return a;
}

static struct qr_attr
attr_str(const char *name, const char *v)
{
	struct qr_attr a = {0};

	a.name = name;
	a.type = QR_ATTR_STRING;
	a.s = v;
	a.s_len = strlen(v);
	return a;
}

static int
shape_is(const struct qr_tensor *t, int ndim, const int64_t *dims)
{
	return t != NULL && qr_op_same_shape(t, ndim, dims);
}

static int
floats_near(const struct qr_tensor *t, const float *want, size_t n,
	    double tol)
{
	size_t i;

	if (t == NULL || t->n_elem != n)
		return 0;
	for (i = 0; i < n; i++)
		if (fabs(((const float *)t->data)[i] - want[i]) > tol)
			return 0;
	return 1;
}

static int
ints_are(const struct qr_tensor *t, const int64_t *want, size_t n)
{
	size_t i;

	if (t == NULL || t->n_elem != n)
		return 0;
	for (i = 0; i < n; i++)
		if (qr_op_get(t, i) != (double)want[i])
			return 0;
	return 1;
}

/* ---- registry ---- */

static void
test_registry(void)
{
	static const struct {
		const char *domain, *name;
		int since;
		const struct qr_op_desc *desc;
	} rows[] = {
#define QR_OP(dom, name, since, desc) {dom, name, since, &desc},
#include "ops/ops.def"
#undef QR_OP
	};
	size_t i, n, bad = 0;

	qr_op_all(&n);
	ok(n == sizeof rows / sizeof rows[0], "qr_op_all lists every row");
	for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct qr_op_desc *d = rows[i].desc;

		if (strcmp(d->name, rows[i].name) != 0 ||
		    strcmp(d->domain, rows[i].domain) != 0 ||
		    d->since != rows[i].since || d->infer == NULL ||
		    d->run == NULL ||
		    qr_op_find(rows[i].domain, rows[i].name,
			       rows[i].since) != d) {
			diag("ops.def row %s (since %d) disagrees with its "
			     "descriptor", rows[i].name, rows[i].since);
			bad++;
		}
	}
	ok(bad == 0, "every ops.def row matches its descriptor");
	ok(qr_op_find("", "Clip", 10) == &qr_op_clip_6 &&
	   qr_op_find("ai.onnx", "Clip", 13) == &qr_op_clip_11,
	   "qr_op_find picks the row by opset");
	ok(qr_op_find("", "Add", 5) == NULL &&
	   qr_op_find("", "NoSuchOp", 13) == NULL &&
	   qr_op_find("com.example", "Add", 13) == NULL,
	   "qr_op_find: too old, unknown op, unknown domain");
}

/* ---- broadcasting ---- */

static void
test_broadcast(void)
{
	struct qr_diag d = {0};
	struct qr_tensor *in[2], *y;
	enum qr_status st;

	{
		static const int64_t da[] = {2, 3}, db[] = {3};
		static const float a[] = {1, 2, 3, 4, 5, 6};
		static const float b[] = {10, 20, 30};
		static const float want[] = {11, 22, 33, 14, 25, 36};

		in[0] = mkf(2, da, a);
		in[1] = mkf(1, db, b);
		st = call1("Add", 13, NULL, 0, in, 2, &y, &d);
		ok(st == QR_OK && shape_is(y, 2, da) &&
		   floats_near(y, want, 6, 0), "Add [2,3] + [3]");
		qr_tensor_free(y);
		qr_tensor_free(in[0]);
		qr_tensor_free(in[1]);
	}
	{
		static const int64_t da[] = {2, 1}, db[] = {1, 3}, dy[] = {2, 3};
		static const float a[] = {1, 2}, b[] = {10, 20, 30};
		static const float want[] = {-9, -19, -29, -8, -18, -28};

		in[0] = mkf(2, da, a);
		in[1] = mkf(2, db, b);
		st = call1("Sub", 13, NULL, 0, in, 2, &y, &d);
		ok(st == QR_OK && shape_is(y, 2, dy) &&
		   floats_near(y, want, 6, 0), "Sub [2,1] - [1,3] (both sides)");
		qr_tensor_free(y);
		qr_tensor_free(in[0]);
		qr_tensor_free(in[1]);
	}
	{
		/* middle axis broadcast: strides 1,0,1 do not merge */
		static const int64_t da[] = {2, 3, 2}, db[] = {2, 1, 2};
		static const float a[] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2};
		static const float b[] = {1, 2, 3, 4};
		static const float want[] = {1, 2, 1, 2, 1, 2, 6, 8, 6, 8, 6,
					     8};

		in[0] = mkf(3, da, a);
		in[1] = mkf(3, db, b);
		st = call1("Mul", 13, NULL, 0, in, 2, &y, &d);
		ok(st == QR_OK && floats_near(y, want, 12, 0),
		   "Mul [2,3,2] * [2,1,2] (middle axis)");
		qr_tensor_free(y);
		qr_tensor_free(in[0]);
		qr_tensor_free(in[1]);
	}
	{
		static const int64_t da[] = {2, 2};
		static const float a[] = {1, 2, 3, 4}, s[] = {2};
		static const float want[] = {0.5f, 1, 1.5f, 2};

		in[0] = mkf(2, da, a);
		in[1] = mkf(0, NULL, s);
		st = call1("Div", 13, NULL, 0, in, 2, &y, &d);
		ok(st == QR_OK && shape_is(y, 2, da) &&
		   floats_near(y, want, 4, 0), "Div [2,2] / scalar");
		qr_tensor_free(y);
		qr_tensor_free(in[0]);
		qr_tensor_free(in[1]);
	}
	{
		static const int64_t da[] = {3}, db[] = {1};
		static const int32_t a[] = {7, -7, INT32_MIN}, b[] = {-1};
		static const int64_t want[] = {-7, 7, INT32_MIN};

		in[0] = mk(QR_DT_INT32, 1, da, a);
		in[1] = mk(QR_DT_INT32, 1, db, b);
		st = call1("Div", 13, NULL, 0, in, 2, &y, &d);
		ok(st == QR_OK && y->dtype == QR_DT_INT32 &&
		   ints_are(y, want, 3), "Div int32 by -1 wraps, no trap");
		qr_tensor_free(y);
		qr_tensor_free(in[0]);
		qr_tensor_free(in[1]);
	}
	{
		static const int64_t da[] = {2, 3}, db[] = {2};
		static const float a[6] = {0}, b[2] = {0};

		in[0] = mkf(2, da, a);
		in[1] = mkf(1, db, b);
		st = call1("Add", 13, NULL, 0, in, 2, &y, &d);
		ok(st == QR_ESHAPE && strstr(d.msg, "node 'n0' (Add)") &&
		   strstr(d.msg, "[2,3]") && strstr(d.msg, "[2]"),
		   "Add [2,3] + [2] refused, naming node and shapes");
		diag("%s", d.msg);
		qr_tensor_free(in[0]);
		qr_tensor_free(in[1]);
	}
	{
		/* legacy (opset 6) broadcast with axis */
		static const int64_t da[] = {2, 3, 2}, db[] = {3};
		static const float a[12] = {0};
		static const float b[] = {1, 2, 3};
		static const float want[] = {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3,
					     3};
		struct qr_attr at[2];

		at[0] = attr_int("broadcast", 1);
		at[1] = attr_int("axis", 1);
		in[0] = mkf(3, da, a);
		in[1] = mkf(1, db, b);
		st = call1("Add", 6, at, 2, in, 2, &y, &d);
		ok(st == QR_OK && floats_near(y, want, 12, 0),
		   "Add-6 broadcast=1 axis=1");
		qr_tensor_free(y);
		qr_tensor_free(in[0]);
		qr_tensor_free(in[1]);
	}
	{
		/* NaN and Inf pass through */
		static const int64_t da[] = {3};
		float a[] = {NAN, INFINITY, -1}, b[] = {1, 1, 1};

		in[0] = mkf(1, da, a);
		in[1] = mkf(1, da, b);
		st = call1("Add", 13, NULL, 0, in, 2, &y, &d);
		ok(st == QR_OK && isnan(((float *)y->data)[0]) &&
		   isinf(((float *)y->data)[1]) && ((float *)y->data)[2] == 0,
		   "NaN and Inf pass through Add");
		qr_tensor_free(y);
		qr_tensor_free(in[0]);
		qr_tensor_free(in[1]);
	}
}

/* ---- Slice ---- */

static struct qr_tensor *
slice1(const struct qr_tensor *x, int64_t start, int64_t end, int64_t axis,
       int64_t step)
{
	struct qr_diag d = {0};
	static const int64_t one[] = {1};
	struct qr_tensor *in[5], *y = NULL;
	size_t i;

	in[0] = (struct qr_tensor *)x;
	in[1] = mki(1, one, &start);
	in[2] = mki(1, one, &end);
	in[3] = mki(1, one, &axis);
	in[4] = mki(1, one, &step);
	if (call1("Slice", 13, NULL, 0, in, 5, &y, &d) != QR_OK)
		diag("slice: %s", d.msg);
	for (i = 1; i < 5; i++)
		qr_tensor_free(in[i]);
	return y;
}

static void
test_slice(void)
{
	static const int64_t d10[] = {10}, d34[] = {3, 4};
	static const float v10[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	static const float v34[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
	struct qr_tensor *x = mkf(1, d10, v10), *m = mkf(2, d34, v34), *y;

	{
		static const float want[] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};

		y = slice1(x, -1, INT64_MIN, 0, -1);
		ok(floats_near(y, want, 10, 0), "Slice reverse: -1 to "
		   "INT64_MIN step -1");
		qr_tensor_free(y);
	}
	{
		static const float want[] = {8, 5, 2};

		y = slice1(x, 8, 0, 0, -3);
		ok(floats_near(y, want, 3, 0), "Slice 8:0:-3");
		qr_tensor_free(y);
	}
	{
		static const float want[] = {9, 7};

		y = slice1(x, 100, 5, 0, -2);
		ok(floats_near(y, want, 2, 0), "Slice start past the end "
		   "clamps to dim-1 with a negative step");
		qr_tensor_free(y);
	}
	{
		y = slice1(x, 3, 3, 0, -1);
		ok(y != NULL && y->n_elem == 0, "Slice 3:3:-1 is empty");
		qr_tensor_free(y);
	}
	{
		static const float want[] = {3, 1, 7, 5, 11, 9};
		static const int64_t dy[] = {3, 2};

		y = slice1(m, -1, -100, -1, -2);
		ok(shape_is(y, 2, dy) && floats_near(y, want, 6, 0),
		   "Slice last axis of [3,4] by -2");
		qr_tensor_free(y);
	}
	{
		static const float want[] = {8, 9, 10, 11, 0, 1, 2, 3};

		y = slice1(m, 2, -4, 0, -2);
		ok(floats_near(y, want, 8, 0), "Slice rows 2 and 0 of [3,4]");
		qr_tensor_free(y);
	}
	qr_tensor_free(x);
	qr_tensor_free(m);
}

/* ---- Tile ---- */

/* Tile against the index formula y[i] = x[i mod dims], over ranks 0..4,
 * repeats 1..3 and dims 1..4 (block copies along every axis). */
static void
test_tile(void)
{
	uint32_t r = 7;
	int round, good = 0, rounds = 200;

	for (round = 0; round < rounds; round++) {
		int64_t dx[4], rep[4], dr[1], idx[4] = {0}, n = 1;
		float xv[256];
		struct qr_tensor *in[2], *y = NULL;
		struct qr_diag d = {0};
		int nd = round % 5, i, same = 1;
		size_t k;

		for (i = 0; i < nd; i++) {
			r = r * 1103515245u + 12345u;
			dx[i] = 1 + (r >> 16) % 4;
			rep[i] = 1 + (r >> 20) % 3;
			n *= dx[i];
		}
		for (k = 0; k < (size_t)n; k++)
			xv[k] = (float)k;
		dr[0] = nd;
		in[0] = mkf(nd, dx, xv);
		in[1] = mki(1, dr, rep);
		if (call1("Tile", 13, NULL, 0, in, 2, &y, &d) != QR_OK) {
			diag("tile: %s", d.msg);
			same = 0;
		}
		for (k = 0; same && k < y->n_elem; k++) {
			int64_t off = 0, st = 1;

			for (i = nd - 1; i >= 0; i--) {
				off += idx[i] % dx[i] * st;
				st *= dx[i];
			}
			same = ((float *)y->data)[k] == xv[off];
			for (i = nd - 1; i >= 0 && ++idx[i] == y->dims[i]; i--)
				idx[i] = 0;
		}
		good += same;
		qr_tensor_free(in[0]);
		qr_tensor_free(in[1]);
		qr_tensor_free(y);
	}
	ok(good == rounds, "Tile = the index formula on %d of %d random "
	   "shapes (ranks 0-4)", good, rounds);
}

/* ---- Softmax ---- */

static void
test_softmax(void)
{
	static const int64_t dx[] = {1, 2, 2};
	static const float v[] = {0, 0, 0, 0};
	struct qr_diag d = {0};
	struct qr_tensor *x = mkf(3, dx, v), *y;
	struct qr_attr ax = attr_int("axis", 1);
	enum qr_status st;

	/* opset 11: axis 1 coerces to [1, 4]: each of 4 gets 1/4 */
	{
		static const float want[] = {0.25f, 0.25f, 0.25f, 0.25f};

		st = call1("Softmax", 11, &ax, 1, &x, 1, &y, &d);
		ok(st == QR_OK && floats_near(y, want, 4, 1e-7),
		   "Softmax-11 axis=1 normalises dims[1..] together");
		qr_tensor_free(y);
	}
	/* opset 13: only axis 1 (length 2): each gets 1/2 */
	{
		static const float want[] = {0.5f, 0.5f, 0.5f, 0.5f};

		st = call1("Softmax", 13, &ax, 1, &x, 1, &y, &d);
		ok(st == QR_OK && floats_near(y, want, 4, 1e-7),
		   "Softmax-13 axis=1 normalises that axis alone");
		qr_tensor_free(y);
	}
	/* opset 13, default axis -1, real values */
	{
		static const int64_t d2[] = {2, 2};
		static const float v2[] = {0, 1, 2, 2};
		float e = expf(1), want[4];
		struct qr_tensor *x2 = mkf(2, d2, v2);

		want[0] = 1 / (1 + e);
		want[1] = e / (1 + e);
		want[2] = want[3] = 0.5f;
		st = call1("Softmax", 13, NULL, 0, &x2, 1, &y, &d);
		ok(st == QR_OK && floats_near(y, want, 4, 1e-6),
		   "Softmax-13 default axis -1");
		qr_tensor_free(y);
		st = call1("LogSoftmax", 13, NULL, 0, &x2, 1, &y, &d);
		ok(st == QR_OK && fabsf(((float *)y->data)[3] - logf(0.5f)) <
		   1e-6f, "LogSoftmax-13 default axis -1");
		qr_tensor_free(y);
		qr_tensor_free(x2);
	}
	qr_tensor_free(x);
}

/* Dropout-12+ in training mode is the identity when its ratio is 0
 * (torchvision's Swin exports F.dropout(attn, p=0.0) so); any other
 * training ratio is refused, naming the node. */
static void
test_dropout_training(void)
{
	static const int64_t dx[] = {4}, d0[] = {0};
	static const float v[] = {1.5f, -2.0f, 0.0f, 3.25f};
	static const float r0[] = {0.0f}, r5[] = {0.5f};
	static const uint8_t on[] = {1};
	struct qr_diag d = {0};
	struct qr_tensor *in[3], *y;
	enum qr_status st;

	in[0] = mkf(1, dx, v);
	in[1] = mkf(0, d0, r0);
	in[2] = mk(QR_DT_BOOL, 0, d0, on);
	st = call1("Dropout", 13, NULL, 0, in, 3, &y, &d);
	ok(st == QR_OK && floats_near(y, v, 4, 0),
	   "Dropout-13 training with ratio 0 passes x through (%s)", d.msg);
	qr_tensor_free(y);
	qr_diag_clear(&d);
	qr_tensor_free(in[1]);
	in[1] = mkf(0, d0, r5);
	st = call1("Dropout", 13, NULL, 0, in, 3, &y, &d);
	ok(st == QR_EUNSUPPORTED && strstr(d.msg, "n0") != NULL,
	   "Dropout-13 training with ratio 0.5 is refused (%s)", d.msg);
	qr_diag_clear(&d);
	qr_tensor_free(in[0]);
	qr_tensor_free(in[1]);
	qr_tensor_free(in[2]);
}

/*
 * Einsum beyond what ONNX Runtime's shape inference allows ("..." of
 * different ranks, broadcast), worked by hand, and its refusal of an
 * index space that would take minutes.
 */
static void
test_einsum(void)
{
	/* a [2,1,2] ("...i" with ... = [2,1]), b [3,2] ("...i" with ... =
	 * [3]): "...i,...i->..." is [2,3] of row dot products */
	static const int64_t da[] = {2, 1, 2}, db[] = {3, 2}, dy[] = {2, 3};
	static const float a[] = {1, 2, 3, 4};
	static const float b[] = {1, 0, 0, 1, 1, 1};
	static const float want[] = {1, 2, 3, 3, 4, 7};
	static const int64_t dbig[] = {70000};
	struct qr_attr eq = attr_str("equation", "...i,...i->...");
	struct qr_diag d = {0};
	struct qr_tensor *in[3], *y;
	float *big;
	enum qr_status st;

	in[0] = mkf(3, da, a);
	in[1] = mkf(2, db, b);
	st = call1("Einsum", 12, &eq, 1, in, 2, &y, &d);
	ok(st == QR_OK && shape_is(y, 2, dy) && floats_near(y, want, 6, 0),
	   "Einsum broadcasts \"...\" of ranks 2 and 1 (%s)", d.msg);
	qr_tensor_free(y);
	qr_tensor_free(in[0]);
	qr_tensor_free(in[1]);
	qr_diag_clear(&d);
	big = xcalloc(70000, sizeof *big);
	in[0] = mkf(1, dbig, big);
	in[1] = mkf(1, dbig, big);
	in[2] = mkf(1, dbig, big);
	eq = attr_str("equation", "i,j,k->");
	st = call1("Einsum", 12, &eq, 1, in, 3, &y, &d);
	ok(st == QR_EUNSUPPORTED && strstr(d.msg, "'n0'") != NULL,
	   "Einsum of 3.4e14 products is refused, naming the node (%s)",
	   d.msg);
	qr_diag_clear(&d);
	qr_tensor_free(in[0]);
	qr_tensor_free(in[1]);
	qr_tensor_free(in[2]);
	free(big);
}

/* RoiAlign over planes of no rows: every sample reads 0. A sample at
 * y in [-1, 0] used to pass the in-plane test and read past the empty
 * plane (valgrind: uninitialised bytes written to the output). Here x's
 * data holds 7s past its 0 elements, so a read shows. */
static void
test_roi_empty_plane(void)
{
	static const int64_t rd[2] = {2, 4}, bd[1] = {2};
	static const float rois[8] = {0, 0, 3, 3, -1, -1, 0.5f, 0.5f};
	static const int64_t batch[2] = {0, 0};
	static float garbage[64];
	struct qr_tensor x = {0}, *in[3], *y = NULL;
	struct qr_attr at[2] = {attr_int("output_height", 2),
				attr_int("output_width", 2)};
	struct qr_diag d = {0};
	enum qr_status st;
	size_t i, nonzero = 0;

	for (i = 0; i < 64; i++)
		garbage[i] = 7.0f;
	x.dtype = QR_DT_FLOAT;
	x.ndim = 4;
	x.dims[0] = 1, x.dims[1] = 2, x.dims[2] = 0, x.dims[3] = 5;
	x.n_elem = 0;
	x.data = garbage;
	in[0] = &x;
	in[1] = mkf(2, rd, rois);
	in[2] = mki(1, bd, batch);
	st = call1("RoiAlign", 16, at, 2, in, 3, &y, &d);
	for (i = 0; y != NULL && i < y->n_elem; i++)
		nonzero += ((const float *)y->data)[i] != 0.0f;
	ok(st == QR_OK && y != NULL && y->n_elem == 16 && nonzero == 0,
	   "RoiAlign on planes of no rows reads nothing (%zu nonzero)",
	   nonzero);
	qr_tensor_free(y);
	qr_tensor_free(in[1]);
	qr_tensor_free(in[2]);
}

/* ---- npy ---- */

static void
test_npy(void)
{
	static const int64_t dims[] = {2, 3};
	static const float v[] = {1, 2, 3, 4, 5, NAN};
	static const char bad_hdr[] =
		"\x93NUMPY\x01\x00\x20\x00{'descr': '<f4', 'shape': (2,}   \n";
	char path[] = "/tmp/qr_test_ops_XXXXXX";
	struct qr_tensor *t = mkf(2, dims, v), *r = NULL;
	struct qr_diag d = {0};
	enum qr_status st;
	int fd = mkstemp(path);

	close(fd);
	st = qr_npy_write(path, t, &d);
	if (st == QR_OK)
		st = qr_npy_read(path, "t", &r, &d);
	ok(st == QR_OK && r->dtype == QR_DT_FLOAT && shape_is(r, 2, dims) &&
	   memcmp(r->data, t->data, t->nbytes) == 0,
	   ".npy round trip (float32 [2,3] with NaN)");
	qr_tensor_free(r);
	st = qr_npy_parse(bad_hdr, sizeof bad_hdr - 1, "bad.npy", NULL, &r,
			  &d);
	ok(st == QR_EFORMAT && strstr(d.msg, "bad.npy") != NULL,
	   "malformed header refused naming the file");
	diag("%s", d.msg);
	st = qr_npy_parse("\x93NUMPY\x01\x00\xff\xff{", 11, "short.npy", NULL,
			  &r, &d);
	ok(st == QR_EFORMAT, "header length past the end refused");
	unlink(path);
	qr_tensor_free(t);
}

int
main(void)
{
	plan_no_plan();
	RUN(test_registry);
	RUN(test_broadcast);
	RUN(test_slice);
	RUN(test_tile);
	RUN(test_softmax);
	RUN(test_dropout_training);
	RUN(test_einsum);
	RUN(test_roi_empty_plane);
	RUN(test_npy);
	return done();
}
