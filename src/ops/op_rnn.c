/*
 * op_rnn: the recurrent operators, RNN, GRU and LSTM (ONNX, opset 7 on),
 * and com.microsoft DynamicQuantizeLSTM, which ONNX Runtime's
 * quantize_dynamic writes for an LSTM.
 *
 * Per direction (forward, reverse, or both with the forward one first in
 * Y's direction axis) and step t, with x_t the input, h the hidden state
 * (initial_h or 0), c the LSTM's cell (initial_c or 0), W/R/Wb/Rb the
 * gate's slices of the weights and biases and f, g, h the activations:
 *
 *   RNN   h = f(x W^T + h R^T + Wb + Rb)                       (f: Tanh)
 *   GRU   z = f(x Wz^T + h Rz^T + Wbz + Rbz), r likewise,       (Sigmoid,
 *         n = g(x Wh^T + (r . h) Rh^T + Rbh + Wbh)                Tanh)
 *             or, with linear_before_reset,
 *             g(x Wh^T + r . (h Rh^T + Rbh) + Wbh),
 *         h = (1 - z) . n + z . h
 *   LSTM  i = f(x Wi^T + h Ri^T + Pi . c + Wbi + Rbi), f likewise with
 *         Pf (or 1 - i with input_forget), c' = g(x Wc^T + h Rc^T + Wbc +
 *         Rbc), c = f . c + i . c', o = f(... + Po . c), h = o . h(c)
 *         (Sigmoid, Tanh, Tanh); gate order i, o, f, c in W, R, B, and
 *         i, o, f in P
 *
 * clip bounds every gate's input before its activation; activations
 * (per direction) take Relu, Tanh, Sigmoid, Affine, LeakyRelu,
 * ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign and Softplus,
 * each taking the next activation_alpha / activation_beta it uses (else
 * ONNX Runtime's default: that of the ONNX op of the same name, 0 for
 * Affine and ScaledTanh). sequence_lens stops batch row b after its length:
 * Y is 0 past it and Y_h / Y_c hold the state at its last step, 0 for a
 * length of 0 (the reverse direction starts at that step). layout 1 puts the batch first
 * in X, Y, Y_h, Y_c and the initial states.
 *
 * x W^T is one GEMM over every step, then each step adds h R^T into its
 * rows, as ONNX Runtime's CPU kernels compute them.
 *
 * DynamicQuantizeLSTM takes W [dirs, input, 4H] and R [dirs, H, 4H]
 * (transposed from LSTM's) 8-bit, with a scale and zero point per
 * direction or per direction and column. Each product quantizes its
 * float operand first, as DynamicQuantizeLinear does (all of x once,
 * then h at each step), sums in int32 and scales each column by the
 * operand's scale times the weight's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

#define MAX_ACTS 3

enum kind { K_RNN, K_GRU, K_LSTM };
enum { I_X, I_W, I_R, I_B, I_LENS, I_H0, I_C0, I_P, I_WS, I_WZ, I_RS, I_RZ };

enum act_fn {
	A_RELU, A_TANH, A_SIGMOID, A_AFFINE, A_LEAKY, A_THRESH, A_STANH,
	A_HSIGMOID, A_ELU, A_SOFTSIGN, A_SOFTPLUS,
};

/* Activation names, what they take and their ONNX defaults. */
static const struct {
	const char *name;
	enum act_fn fn;
	int uses_alpha, uses_beta;
	float alpha, beta;
} act_tab[] = {
	{ "Relu", A_RELU, 0, 0, 0, 0 },
	{ "Tanh", A_TANH, 0, 0, 0, 0 },
	{ "Sigmoid", A_SIGMOID, 0, 0, 0, 0 },
	{ "Affine", A_AFFINE, 1, 1, 0.0f, 0.0f },
	{ "LeakyRelu", A_LEAKY, 1, 0, 0.01f, 0 },
	{ "ThresholdedRelu", A_THRESH, 1, 0, 1.0f, 0 },
	{ "ScaledTanh", A_STANH, 1, 1, 0.0f, 0.0f },
	{ "HardSigmoid", A_HSIGMOID, 1, 1, 0.2f, 0.5f },
	{ "Elu", A_ELU, 1, 0, 1.0f, 0 },
	{ "Softsign", A_SOFTSIGN, 0, 0, 0, 0 },
	{ "Softplus", A_SOFTPLUS, 0, 0, 0, 0 },
};

struct act {
	enum act_fn fn;
	float alpha, beta;
};

/* One node's sizes and attributes. */
struct rnn {
	enum kind kind;
	int q;                    /* DynamicQuantizeLSTM */
	size_t dirs, gates;       /* directions; gates per direction */
	size_t seq, batch, in, h; /* sizes */
	int layout, reverse_only, input_forget, lbr;
	float clip;               /* 0: none */
	struct act act[2][MAX_ACTS];
};

/* Constant weights, packed once (DynamicQuantizeLSTM). */
struct rnn_state {
	int w_const, r_const;
	struct qr_qgemm_packed *pw[2], *pr[2];
	void *ws;
	size_t ws_cap;
	void *qws;
	size_t qws_cap;
};

static enum kind
kind_of(const struct qr_op_call *c, int *q)
{
	const char *op = c->node->op_type;

	*q = strcmp(op, "DynamicQuantizeLSTM") == 0;
	return op[0] == 'R' ? K_RNN : op[0] == 'G' ? K_GRU : K_LSTM;
}

static size_t
n_acts(enum kind k)
{
	return k == K_RNN ? 1 : k == K_GRU ? 2 : 3;
}

/* The activations of every direction, from the attributes. */
static enum qr_status
parse_acts(const struct qr_op_call *c, struct qr_diag *d, struct rnn *r)
{
	static const enum act_fn dflt[3][MAX_ACTS] = {
		{ A_TANH }, { A_SIGMOID, A_TANH },
		{ A_SIGMOID, A_TANH, A_TANH },
	};
	const struct qr_attr *a = qr_node_attr(c->node, "activations");
	size_t na = n_acts(r->kind), n_alpha, n_beta, ia = 0, ib = 0, i, k;
	const float *alpha = qr_op_attr_floats(c, "activation_alpha",
					       &n_alpha);
	const float *beta = qr_op_attr_floats(c, "activation_beta", &n_beta);

	if (a == NULL) {
		for (i = 0; i < r->dirs * na; i++) {
			r->act[i / na][i % na].fn = dflt[r->kind][i % na];
			r->act[i / na][i % na].alpha = 0;
			r->act[i / na][i % na].beta = 0;
		}
		return QR_OK;
	}
	if (a->type != QR_ATTR_STRINGS ||
	    (a->n != na && a->n != na * r->dirs))
		return qr_op_errorf(c, d, QR_EGRAPH, "attribute activations "
				    "must name %zu functions per direction",
				    na);
	for (i = 0; i < a->n; i++) {
		struct act *t = &r->act[i / na][i % na];

		for (k = 0; k < sizeof act_tab / sizeof *act_tab; k++)
			if (strcasecmp(a->strings[i], act_tab[k].name) == 0)
				break;
		if (k == sizeof act_tab / sizeof *act_tab)
			return qr_op_errorf(c, d, QR_EUNSUPPORTED,
					    "activation '%s' is not supported",
					    a->strings[i]);
		t->fn = act_tab[k].fn;
		t->alpha = act_tab[k].uses_alpha && ia < n_alpha ?
			   alpha[ia++] : act_tab[k].alpha;
		t->beta = act_tab[k].uses_beta && ib < n_beta ? beta[ib++] :
			  act_tab[k].beta;
	}
	/* one direction's list for both */
	for (i = 0; a->n == na && r->dirs == 2 && i < na; i++)
		r->act[1][i] = r->act[0][i];
	return QR_OK;
}

static enum qr_status
rnn_check(const struct qr_op_call *c, struct qr_diag *d)
{
	int q;
	enum kind k = kind_of(c, &q);
	enum qr_status st;
	const char *dir = qr_op_attr_str(c, "direction", "forward");
	size_t i;

	if ((st = qr_op_arity(c, d, 3, q ? 12 : k == K_LSTM ? 8 : 6, 0,
			      k == K_LSTM ? 3 : 2)) != QR_OK)
		return st;
	if (q && (!qr_op_has_in(c, I_WS) || !qr_op_has_in(c, I_RS)))
		return qr_op_errorf(c, d, QR_EGRAPH, "W_scale and R_scale are "
				    "required");
	if (strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0 &&
	    strcmp(dir, "bidirectional") != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "direction '%s' is not "
				    "forward, reverse or bidirectional", dir);
	if (qr_op_attr_int(c, "layout", 0) != 0 &&
	    qr_op_attr_int(c, "layout", 0) != 1)
		return qr_op_errorf(c, d, QR_EGRAPH, "layout must be 0 or 1");
	if ((st = qr_op_want_dtype(c, d, I_X, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, I_LENS, QR_DTM(QR_DT_INT32))) !=
		    QR_OK)
		return st;
	for (i = 1; i < c->n_in && i <= I_P; i++)
		if (i != I_LENS && (st = qr_op_want_dtype(c, d, i,
				   q && (i == I_W || i == I_R) ? QR_DTM_Q8 :
				   QR_DTM_FLOAT)) != QR_OK)
			return st;
	if (q && ((st = qr_op_want_dtype(c, d, I_WS, QR_DTM_FLOAT)) != QR_OK ||
		  (st = qr_op_want_dtype(c, d, I_RS, QR_DTM_FLOAT)) != QR_OK ||
		  (st = qr_op_same_dtype(c, d, I_W, I_WZ)) != QR_OK ||
		  (st = qr_op_same_dtype(c, d, I_R, I_RZ)) != QR_OK))
		return st;
	for (i = 0; i < c->n_out; i++)
		c->out_dtype[i] = QR_DT_FLOAT;
	return QR_OK;
}

/* Sizes and attributes, checked against every input's shape. */
static enum qr_status
rnn_dims(const struct qr_op_call *c, struct qr_diag *d, struct rnn *r)
{
	const struct qr_tensor *x = c->in[I_X], *w = c->in[I_W];
	const struct qr_tensor *rr = c->in[I_R];
	const char *dir = qr_op_attr_str(c, "direction", "forward");
	int64_t hs = qr_op_attr_int(c, "hidden_size", -1);
	size_t i, gh;
	char b[128];

	memset(r, 0, sizeof *r);
	r->kind = kind_of(c, &r->q);
	r->gates = r->kind == K_RNN ? 1 : r->kind == K_GRU ? 3 : 4;
	r->dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
	r->reverse_only = strcmp(dir, "reverse") == 0;
	r->layout = (int)qr_op_attr_int(c, "layout", 0);
	r->input_forget = qr_op_attr_int(c, "input_forget", 0) != 0;
	r->lbr = qr_op_attr_int(c, "linear_before_reset", 0) != 0;
	r->clip = qr_op_has_attr(c, "clip") ? qr_op_attr_float(c, "clip", 0)
					      : 0.0f;
	if (r->clip < 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "clip must not be "
				    "negative");
	if (x->ndim != 3 || w->ndim != 3 || rr->ndim != 3)
		return qr_op_errorf(c, d, QR_ESHAPE, "X '%s' %s, W and R must "
				    "be 3-D", qr_op_in_name(c, I_X),
				    qr_shape_str(x, b, sizeof b));
	r->seq = (size_t)x->dims[r->layout ? 1 : 0];
	r->batch = (size_t)x->dims[r->layout ? 0 : 1];
	r->in = (size_t)x->dims[2];
	r->h = hs > 0 ? (size_t)hs : (size_t)rr->dims[r->q ? 1 : 2];
	gh = r->gates * r->h;
	if ((size_t)w->dims[0] != r->dirs ||
	    (size_t)w->dims[r->q ? 2 : 1] != gh ||
	    (size_t)w->dims[r->q ? 1 : 2] != r->in ||
	    (size_t)rr->dims[0] != r->dirs ||
	    (size_t)rr->dims[r->q ? 2 : 1] != gh ||
	    (size_t)rr->dims[r->q ? 1 : 2] != r->h) {
		char b2[128];

		return qr_op_errorf(c, d, QR_ESHAPE, "W '%s' %s or R %s do "
				    "not fit %zu direction(s), %zu gates of "
				    "hidden %zu and input %zu",
				    qr_op_in_name(c, I_W),
				    qr_shape_str(w, b, sizeof b),
				    qr_shape_str(rr, b2, sizeof b2), r->dirs,
				    r->gates, r->h, r->in);
	}
	if (qr_op_has_in(c, I_B) && c->in[I_B]->n_elem != r->dirs * 2 * gh)
		return qr_op_errorf(c, d, QR_ESHAPE, "B '%s' %s must be "
				    "[%zu, %zu]", qr_op_in_name(c, I_B),
				    qr_shape_str(c->in[I_B], b, sizeof b),
				    r->dirs, 2 * gh);
	if (qr_op_has_in(c, I_LENS) && c->in[I_LENS]->n_elem != r->batch)
		return qr_op_errorf(c, d, QR_ESHAPE, "sequence_lens '%s' %s "
				    "must hold %zu values",
				    qr_op_in_name(c, I_LENS),
				    qr_shape_str(c->in[I_LENS], b, sizeof b),
				    r->batch);
	for (i = I_H0; i <= I_C0; i++)
		if (qr_op_has_in(c, i) && (r->kind == K_LSTM || i == I_H0) &&
		    c->in[i]->n_elem != r->dirs * r->batch * r->h)
			return qr_op_errorf(c, d, QR_ESHAPE, "initial state "
					    "'%s' %s must hold %zu x %zu x %zu",
					    qr_op_in_name(c, i),
					    qr_shape_str(c->in[i], b, sizeof b),
					    r->dirs, r->batch, r->h);
	if (r->kind == K_LSTM && qr_op_has_in(c, I_P) &&
	    c->in[I_P]->n_elem != r->dirs * 3 * r->h)
		return qr_op_errorf(c, d, QR_ESHAPE, "P '%s' %s must be "
				    "[%zu, %zu]", qr_op_in_name(c, I_P),
				    qr_shape_str(c->in[I_P], b, sizeof b),
				    r->dirs, 3 * r->h);
	if (r->kind != K_LSTM && c->n_in > I_C0 && qr_op_has_in(c, I_C0))
		return qr_op_errorf(c, d, QR_EGRAPH, "too many inputs");
	return parse_acts(c, d, r);
}

static enum qr_status
rnn_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct rnn r;
	int64_t y[4], s[3];
	enum qr_status st;
	size_t i;

	if ((st = rnn_dims(c, d, &r)) != QR_OK)
		return st;
	if (r.layout) {
		y[0] = (int64_t)r.batch, y[1] = (int64_t)r.seq;
		y[2] = (int64_t)r.dirs;
		s[0] = (int64_t)r.batch, s[1] = (int64_t)r.dirs;
	} else {
		y[0] = (int64_t)r.seq, y[1] = (int64_t)r.dirs;
		y[2] = (int64_t)r.batch;
		s[0] = (int64_t)r.dirs, s[1] = (int64_t)r.batch;
	}
	y[3] = s[2] = (int64_t)r.h;
	for (i = 0; i < c->n_out; i++)
		if (c->out[i] != NULL &&
		    (st = qr_tensor_set_shape(c->out[i], QR_DT_FLOAT,
					      i == 0 ? 4 : 3, i == 0 ? y : s,
					      qr_op_out_name(c, i), d)) !=
			    QR_OK)
			return st;
	return QR_OK;
}

static enum qr_status
rnn_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct rnn_state *st = xcalloc(1, sizeof *st);

	(void)d;
	c->state = st;
	st->w_const = c->in[I_W] != NULL;
	st->r_const = c->in[I_R] != NULL;
	return QR_OK;
}

static void
rnn_release(void *state)
{
	struct rnn_state *st = state;
	int i;

	if (st == NULL)
		return;
	for (i = 0; i < 2; i++) {
		qr_qgemm_packed_free(st->pw[i]);
		qr_qgemm_packed_free(st->pr[i]);
	}
	free(st->ws);
	free(st->qws);
	free(st);
}

static float
act(const struct act *a, float x)
{
	switch (a->fn) {
	case A_RELU:
		return x > 0 ? x : 0.0f;
	case A_TANH:
		return tanhf(x);
	case A_SIGMOID:
		return 1.0f / (1.0f + expf(-x));
	case A_AFFINE:
		return a->alpha * x + a->beta;
	case A_LEAKY:
		return x >= 0 ? x : a->alpha * x;
	case A_THRESH:
		return x > a->alpha ? x : 0.0f;
	case A_STANH:
		return a->alpha * tanhf(a->beta * x);
	case A_HSIGMOID: {
		float v = a->alpha * x + a->beta;

		return v < 0 ? 0.0f : v > 1 ? 1.0f : v;
	}
	case A_ELU:
		return x >= 0 ? x : a->alpha * (expf(x) - 1.0f);
	case A_SOFTSIGN:
		return x / (1.0f + fabsf(x));
	case A_SOFTPLUS:
		return log1pf(expf(x));
	}
	return x;
}

/* clip, then the activation */
static float
gate(const struct rnn *r, const struct act *a, float x)
{
	if (r->clip > 0)
		x = x < -r->clip ? -r->clip : x > r->clip ? r->clip : x;
	return act(a, x);
}

/* y[m][GH] (+)= a[m][k] * op(B) in float, or quantizing a first. */
static void
product(struct qr_op_call *c, const struct rnn *r, const float *a, size_t m,
	size_t k, const float *bf, struct qr_qgemm_packed *bq,
	const float *bscale, float *y, int accumulate)
{
	struct rnn_state *st = c->state;
	size_t n = r->gates * r->h, i, j;

	if (m == 0 || n == 0)
		return;
	if (!r->q) {
		struct qr_sgemm_plan pl;

		qr_sgemm_plan(m, n, k, 1, k, n, &pl);
		qr_sgemm(&pl, m, n, k, a, k, bf, k, 1, y, n, accumulate,
			 qr_op_ws(c, &st->ws, &st->ws_cap,
				  qr_sgemm_workspace()));
	} else {
		uint8_t *aq = xmalloc(m * k), zp = 0;
		int32_t *acc = xcalloc(m * n, sizeof *acc);
		float as = 1.0f;

		qr_dynamic_quantize_u8(a, m * k, aq, &as, &zp);
		if (k > 0)
			qr_qgemm_run(bq, aq, 0, zp, m, acc, n,
				     qr_op_ws(c, &st->qws, &st->qws_cap,
					      qr_qgemm_workspace(bq, m,
								 c->n_threads)),
				     c->n_threads);
		for (j = 0; j < n; j++) {
			float mult = as * bscale[j];

			for (i = 0; i < m; i++) {
				float v = (float)acc[i * n + j] * mult;

				y[i * n + j] = accumulate ? y[i * n + j] + v :
							    v;
			}
		}
		free(aq);
		free(acc);
	}
}

/* Scale and zero point input pair (is, iz) of direction dir as n per
 * column values into scale and zp (int32). */
static enum qr_status
q_params(const struct qr_op_call *c, struct qr_diag *d, size_t is, size_t iz,
	 size_t dirs, size_t dir, size_t n, float *scale, int32_t *zp)
{
	const struct qr_tensor *s = c->in[is];
	const struct qr_tensor *z = qr_op_has_in(c, iz) ? c->in[iz] : NULL;
	size_t j, per = s->n_elem == dirs ? 1 : n;
	char b[128];

	if ((s->n_elem != dirs && s->n_elem != dirs * n) ||
	    (z != NULL && z->n_elem != s->n_elem))
		return qr_op_errorf(c, d, QR_ESHAPE, "scale '%s' %s (and its "
				    "zero point) must hold %zu or %zu x %zu "
				    "values", qr_op_in_name(c, is),
				    qr_shape_str(s, b, sizeof b), dirs, dirs,
				    n);
	for (j = 0; j < n; j++) {
		size_t at = dir * per + (per == 1 ? 0 : j);

		scale[j] = ((const float *)s->data)[at];
		zp[j] = z ? (int32_t)qr_op_get(z, at) : 0;
	}
	return QR_OK;
}

/* Pack direction dir of quantized weight input i ([dirs][k][n]) unless
 * it is packed already and constant. */
static enum qr_status
q_pack(struct qr_op_call *c, struct qr_diag *d, size_t i, size_t iscale,
       size_t izp, const struct rnn *r, size_t dir, size_t k,
       struct qr_qgemm_packed **pk, int is_const, float *scale)
{
	size_t n = r->gates * r->h;
	int32_t *zp = xmalloc(n * sizeof *zp);
	const struct qr_tensor *w = c->in[i];
	enum qr_status s;

	s = q_params(c, d, iscale, izp, r->dirs, dir, n, scale, zp);
	if (s == QR_OK && (*pk == NULL || !is_const)) {
		qr_qgemm_packed_free(*pk);
		*pk = qr_qgemm_pack_new((const uint8_t *)w->data +
						dir * k * n,
					w->dtype == QR_DT_INT8, 0, k, n, zp,
					c->in[iscale]->n_elem == r->dirs ?
					1 : n);
	}
	free(zp);
	return s;
}

/* Where row b of step t of direction dir goes in Y, and b's state in
 * Y_h / Y_c and the initial states. */
static size_t
y_at(const struct rnn *r, size_t t, size_t dir, size_t b)
{
	return (r->layout ? (b * r->seq + t) * r->dirs + dir
			  : (t * r->dirs + dir) * r->batch + b) * r->h;
}

static size_t
s_at(const struct rnn *r, size_t dir, size_t b)
{
	return (r->layout ? b * r->dirs + dir : dir * r->batch + b) * r->h;
}

/* The gates of one row from its pre-activations g (x W^T + h R^T, a GRU's
 * candidate part without h R^T) into its state hb (and cb). */
static void
lstm_row(const struct rnn *r, const struct act *a, const float *g,
	 const float *bias, const float *p, float *hb, float *cb)
{
	size_t h = r->h, j;

	/* i at 0, o at h, f at 2h, c at 3h */
	for (j = 0; j < h; j++) {
		float ig, fg, cg, og;

		ig = g[j] + bias[j];
		if (p)
			ig += p[j] * cb[j];
		ig = gate(r, &a[0], ig);
		fg = g[2 * h + j] + bias[2 * h + j];
		if (p)
			fg += p[2 * h + j] * cb[j];
		fg = r->input_forget ? 1.0f - ig : gate(r, &a[0], fg);
		cg = gate(r, &a[1], g[3 * h + j] + bias[3 * h + j]);
		cb[j] = fg * cb[j] + ig * cg;
		og = g[h + j] + bias[h + j];
		if (p)
			og += p[h + j] * cb[j];
		og = gate(r, &a[0], og);
		hb[j] = og * act(&a[2], cb[j]);
	}
}

/*
 * One direction over the whole sequence, as ONNX Runtime steps through
 * it: step s of batch row b reads time s (forward) or len_b - 1 - s
 * (reverse), a row stops after its length, and the state a product reads
 * for a stopped row is 0 when Y is asked for (ORT reads the step's
 * output, zeroed), else its last one. That only shows in the quantized
 * products' ranges. x W^T covers the steps up to the longest row.
 */
static enum qr_status
run_dir(struct qr_op_call *c, struct qr_diag *d, const struct rnn *r,
	size_t dir, int reverse, const float *x, float *y, float *yh,
	float *yc)
{
	struct rnn_state *st = c->state;
	size_t h = r->h, gh = r->gates * h, nb = r->batch, s, b, j, t;
	size_t *len = xmalloc(nb * sizeof *len), steps = 0;
	const float *bias = qr_op_has_in(c, I_B) ?
			    (const float *)c->in[I_B]->data + dir * 2 * gh :
			    NULL;
	const float *p = r->kind == K_LSTM && qr_op_has_in(c, I_P) ?
			 (const float *)c->in[I_P]->data + dir * 3 * h : NULL;
	const float *wf = NULL, *rf = NULL;
	const struct act *a = r->act[dir];
	float *xs = xmalloc(r->seq * nb * r->in * sizeof *xs);
	float *xw = xmalloc(r->seq * nb * gh * sizeof *xw);
	float *hr = xmalloc(nb * gh * sizeof *hr);
	float *hs = xcalloc(nb * h, sizeof *hs), *cs = xcalloc(nb * h, sizeof *cs);
	float *hin = xcalloc(nb * h, sizeof *hin);
	float *rh = xcalloc(nb * h, sizeof *rh), *wb = xcalloc(2 * gh, sizeof *wb);
	float *rb = wb + gh, *wsc = NULL, *rsc = NULL;
	enum qr_status st_ = QR_OK;

	if (r->q) {
		wsc = xmalloc(gh * sizeof *wsc);
		rsc = xmalloc(gh * sizeof *rsc);
		if ((st_ = q_pack(c, d, I_W, I_WS, I_WZ, r, dir, r->in,
				  &st->pw[dir], st->w_const, wsc)) != QR_OK ||
		    (st_ = q_pack(c, d, I_R, I_RS, I_RZ, r, dir, h,
				  &st->pr[dir], st->r_const, rsc)) != QR_OK)
			goto out;
	} else {
		wf = (const float *)c->in[I_W]->data + dir * gh * r->in;
		rf = (const float *)c->in[I_R]->data + dir * gh * h;
	}
	/* bias: Wb + Rb once (a GRU's candidate keeps Rbh apart) */
	for (j = 0; bias != NULL && j < gh; j++) {
		int apart = r->kind == K_GRU && j >= 2 * h;

		wb[j] = apart ? bias[j] : bias[j] + bias[gh + j];
		rb[j] = apart ? bias[gh + j] : 0.0f;
	}
	for (b = 0; b < nb; b++) {
		int32_t l = qr_op_has_in(c, I_LENS) ?
			    ((const int32_t *)c->in[I_LENS]->data)[b] :
			    (int32_t)r->seq;

		len[b] = l < 0 ? 0 : (size_t)l > r->seq ? r->seq : (size_t)l;
		steps = len[b] > steps ? len[b] : steps;
		for (j = 0; j < h; j++) {
			size_t at = s_at(r, dir, b) + j;

			if (qr_op_has_in(c, I_H0))
				hs[b * h + j] = ((const float *)
						 c->in[I_H0]->data)[at];
			if (r->kind == K_LSTM && qr_op_has_in(c, I_C0))
				cs[b * h + j] = ((const float *)
						 c->in[I_C0]->data)[at];
		}
	}
	memcpy(hin, hs, nb * h * sizeof *hin);
	/* the inputs in step order, then x W^T for every step at once */
	for (s = 0; s < steps; s++)
		for (b = 0; b < nb; b++) {
			t = reverse && s < len[b] ? len[b] - 1 - s : s;
			memcpy(xs + (s * nb + b) * r->in,
			       x + (t * nb + b) * r->in, r->in * sizeof *xs);
		}
	product(c, r, xs, steps * nb, r->in, wf, st->pw[dir], wsc, xw, 0);
	for (b = 0; y != NULL && b < nb; b++)
		for (t = 0; t < r->seq; t++)
			memset(y + y_at(r, t, dir, b), 0, h * sizeof *y);
	for (s = 0; s < steps; s++) {
		/* h R^T into every gate (a GRU's candidate apart) */
		product(c, r, hin, nb, h, rf, st->pr[dir], rsc, hr, 0);
		for (b = 0; b < nb; b++) {
			float *g = xw + (s * nb + b) * gh, *hrb = hr + b * gh;

			if (s >= len[b])
				continue;
			for (j = 0; j < (r->kind == K_GRU ? 2 * h : gh); j++)
				g[j] += hrb[j];
			if (r->kind == K_RNN) {
				for (j = 0; j < h; j++)
					hs[b * h + j] = gate(r, &a[0],
							     g[j] + wb[j]);
			} else if (r->kind == K_GRU) {
				/* z at 0, r at h, the candidate at 2h */
				for (j = 0; j < 2 * h; j++)
					g[j] = gate(r, &a[0], g[j] + wb[j]);
				for (j = 0; j < h; j++)
					rh[b * h + j] = g[h + j] * hs[b * h + j];
			} else {
				lstm_row(r, a, g, wb, p, hs + b * h,
					 cs + b * h);
			}
		}
		if (r->kind == K_GRU) {
			/* h Rh^T (linear_before_reset, in hr already) or
			 * (r . h) Rh^T */
			if (!r->lbr)
				product(c, r, rh, nb, h, rf, st->pr[dir], rsc,
					hr, 0);
			for (b = 0; b < nb; b++) {
				const float *g = xw + (s * nb + b) * gh;
				const float *hrb = hr + b * gh;
				float *hb = hs + b * h;

				if (s >= len[b])
					continue;
				for (j = 0; j < h; j++) {
					size_t o = 2 * h + j;
					float n, z = g[j];

					n = r->lbr ? g[o] + wb[o] + g[h + j] *
						     (hrb[o] + rb[o])
						   : g[o] + wb[o] + hrb[o] +
						     rb[o];
					n = gate(r, &a[1], n);
					hb[j] = (1.0f - z) * n + z * hb[j];
				}
			}
		}
		for (b = 0; b < nb; b++) {
			float *src = hs + b * h;

			if (s < len[b]) {
				t = reverse ? len[b] - 1 - s : s;
				if (y != NULL)
					memcpy(y + y_at(r, t, dir, b), src,
					       h * sizeof *y);
				memcpy(hin + b * h, src, h * sizeof *hin);
			} else if (y != NULL) {
				memset(hin + b * h, 0, h * sizeof *hin);
			}
		}
	}
	for (b = 0; b < nb; b++) {
		if (len[b] == 0) {
			memset(hs + b * h, 0, h * sizeof *hs);
			memset(cs + b * h, 0, h * sizeof *cs);
		}
		if (yh != NULL)
			memcpy(yh + s_at(r, dir, b), hs + b * h, h * sizeof *yh);
		if (yc != NULL)
			memcpy(yc + s_at(r, dir, b), cs + b * h, h * sizeof *yc);
	}
out:
	free(len);
	free(xs);
	free(xw);
	free(hr);
	free(hs);
	free(cs);
	free(hin);
	free(rh);
	free(wb);
	free(wsc);
	free(rsc);
	return st_;
}

static float *
out_asked(struct qr_op_call *c, size_t i)
{
	return i < c->n_out && c->out[i] != NULL &&
	       qr_op_out_name(c, i)[0] != '\0' ? c->out[i]->data : NULL;
}

static enum qr_status
rnn_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct rnn r;
	const float *x = c->in[I_X]->data;
	float *xt = NULL, *y, *yh, *yc;
	enum qr_status s;
	size_t dir, t, b;

	if ((s = rnn_dims(c, d, &r)) != QR_OK)
		return s;
	/* an output named "" is not asked for (the executor may still
	 * hand a scratch tensor), and whether Y is changes the quantized
	 * products (see run_dir) */
	y = out_asked(c, 0);
	yh = out_asked(c, 1);
	yc = out_asked(c, 2);
	if (r.layout) {
		/* time-major rows for the products */
		xt = xmalloc(r.seq * r.batch * r.in * sizeof *xt);
		for (t = 0; t < r.seq; t++)
			for (b = 0; b < r.batch; b++)
				memcpy(xt + (t * r.batch + b) * r.in,
				       x + (b * r.seq + t) * r.in,
				       r.in * sizeof *xt);
		x = xt;
	}
	for (dir = 0; dir < r.dirs && s == QR_OK; dir++)
		s = run_dir(c, d, &r, dir, dir == 1 || r.reverse_only, x, y,
			    yh, yc);
	free(xt);
	return s;
}

const struct qr_op_desc qr_op_rnn = {
	.domain = "", .name = "RNN", .since = 7,
	.check = rnn_check, .prepare = rnn_prepare, .infer = rnn_infer,
	.run = rnn_run, .release = rnn_release,
};

const struct qr_op_desc qr_op_gru = {
	.domain = "", .name = "GRU", .since = 7,
	.check = rnn_check, .prepare = rnn_prepare, .infer = rnn_infer,
	.run = rnn_run, .release = rnn_release,
};

const struct qr_op_desc qr_op_lstm = {
	.domain = "", .name = "LSTM", .since = 7,
	.check = rnn_check, .prepare = rnn_prepare, .infer = rnn_infer,
	.run = rnn_run, .release = rnn_release,
};

const struct qr_op_desc qr_op_dynamic_quantize_lstm = {
	.domain = "com.microsoft", .name = "DynamicQuantizeLSTM", .since = 1,
	.check = rnn_check, .prepare = rnn_prepare, .infer = rnn_infer,
	.run = rnn_run, .release = rnn_release,
};
