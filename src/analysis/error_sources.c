/*
 * error_sources: where a candidate's error comes from, from the sums of
 * its two runs (act_results.c calls qr_es_analyse once its pairs are
 * out). Per compared tensor i, x the float values and y the candidate's,
 * over every element of every sample:
 *
 *   lambda_i  = sum (x - y_local)^2 / sum x^2: the noise-to-signal ratio
 *               (NSR) layer i makes itself, its inputs being the float
 *               model's values in the local run; noise_db = 10 log10
 *               lambda_i (= -local SQNR)
 *   rho_i     = sum (x - y)^2 / sum x^2: the NSR the candidate carries
 *               there (cumulative run)
 *   rho_in    = sum_j mse_j / sum_j ms_j: the NSR its inputs bring, j over
 *               the compared tensors it is computed from (the nearest ones
 *               above its producer in the float graph, through tensors
 *               not compared), mse_j and ms_j their mean (x - y)^2 and
 *               mean x^2 per element (so each input weighs alike whatever
 *               its size); 0 when it reads no compared tensor (graph
 *               inputs and constants are exact). For a product (Mul,
 *               Div, MatMul of two activations) relative errors add:
 *               rho_in = sum_j mse_j / ms_j
 *   noise_share_i   = lambda_i / sum_k lambda_k
 *   noise_gain_db_i = 10 log10(rho_i / (rho_in + lambda_i))
 *
 * NSRs, not noise powers: a layer that scales its input (a Conv with
 * large weights, a Mul by 100) scales noise and signal alike and leaves
 * the NSR as it was. Through layers that pass the NSR on unchanged (gain
 * 0 dB), the NSRs the layers make add up to the output's, so a layer's
 * share is the part of the output's noise it would take away if it made
 * none: QR_ES_DOMINANT (20.6%) is the share whose removal raises the
 * output's SQNR by QR_ES_FIX_DB (1 dB, the smallest change --compare-to
 * counts). When no layer makes that much, the error accumulates over many
 * layers and no single one is named. The gain compares what a layer hands
 * on with what it was given plus what it added: above 0 dB noise grew
 * beyond that sum (a Softmax or Exp turning absolute input noise into
 * relative output noise, a normalization dividing by a small spread, a
 * division by small values, an Add whose inputs cancel), below 0 it was
 * averaged away; from QR_ES_AMPLIFY_DB (3 dB, the noise doubled) on, the
 * layer is listed as an amplifier.
 *
 * The shares are summed per op group too (qr_op_group); a tensor counts
 * in the group of the heaviest op between it and the compared tensors it
 * is computed from (group_rank): the Relu output of a Conv whose own
 * output is not compared is the Conv's.
 *
 * A layer that only moves or selects values (a Reshape, Concat, MaxPool,
 * Relu ...) whose output has the same per-tensor scale and zero point as
 * every compared input re-rounds onto a grid its values are already on:
 * the candidate loses nothing there, although the local run, which feeds
 * it float values, measures a rounding. It is marked same_grid, makes no
 * share and counts lambda 0 in its gain.
 *
 * Suspect pairings. Noise a layer hands on does not vanish: no op but an
 * average over many values takes 20 dB off it in one step. When a
 * compared tensor's inputs bring an NSR that it then shows QR_ES_VANISH_DB
 * less of (gain below -QR_ES_VANISH_DB, its inputs below
 * QR_ES_SUSPECT_DB), those inputs were not the candidate's values of the
 * same tensor: they are marked suspect (QR_ACT_FLAG_SUSPECT), with the
 * compared tensors above them as bad, up to where the values agree
 * again. A pairing that swapped two parallel layers looks so; a layer
 * quantized badly does not (its error carries on to the output).
 * Reductions (pooling, Reduce*) average noise away by design and are
 * not taken as evidence.
 *
 * A tensor holding attention-mask values (the float minimum where a
 * position is masked) has a mean square near 1e76 whatever its real
 * values: its NSR, and the gain of the layers reading it (a Softmax),
 * are not computed, so no 800 dB SQNR is taken for a clean input. Suspect tensors are left out as if not
 * compared: no share, no verdict; their readers count from the inputs
 * above them.
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"

#define CAP_DB 100.0             /* SQNR cap for born_drop_db */
#define QR_ES_MASK_MS 1e60       /* a mean square this large: the tensor
				  * holds attention-mask values (the float
				  * minimum, about -3.4e38), which swamp
				  * its signal: no NSR of it means
				  * anything */
#define QR_ES_VANISH_DB 20.0     /* noise gain below minus this: vanished */
#define QR_ES_SUSPECT_DB 10.0    /* inputs this bad (cumulative SQNR, dB)
				  * before vanishing noise are suspect */
#define WALK_MAX 256             /* float nodes visited looking upward */
#define INPUTS_MAX 64            /* compared inputs kept for the grid test */

static const char *const linear_ops[] = {
	"Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum", "Attention",
	"MultiHeadAttention", "GroupQueryAttention", "FusedMatMul",
	"MatMulNBits", "RNN", "GRU", "LSTM", NULL
};
static const char *const eltwise_ops[] = {
	"Add", "Sub", "Mul", "Div", "Sum", "Mean", "Max", "Min", "Pow",
	"Sqrt", "Reciprocal", "Neg", "Abs", "Where", "Mod", "Floor", "Ceil",
	"Round", "Sign", "BiasAdd", NULL
};
static const char *const activation_ops[] = {
	"Relu", "LeakyRelu", "PRelu", "Clip", "Sigmoid", "HardSigmoid",
	"HardSwish", "Tanh", "Gelu", "FastGelu", "BiasGelu", "QuickGelu",
	"Softplus", "Softsign", "Elu", "Selu", "Celu", "Mish", "Erf", "Exp",
	"Log", "ThresholdedRelu", "Sin", "Cos", NULL
};
static const char *const pool_ops[] = {
	"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
	"LpPool", "GlobalLpPool", "ReduceMean", "ReduceSum", "ReduceMax",
	"ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
	"ReduceSumSquare", "RoiAlign", NULL
};
static const char *const norm_ops[] = {
	"BatchNormalization", "LayerNormalization", "InstanceNormalization",
	"GroupNormalization", "LpNormalization", "MeanVarianceNormalization",
	"Softmax", "LogSoftmax", "SimplifiedLayerNormalization",
	"SkipLayerNormalization", "SkipSimplifiedLayerNormalization",
	"EmbedLayerNormalization", "RMSNormalization", NULL
};
static const char *const move_ops[] = {
	"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity",
	"Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND",
	"Expand", "Tile", "Pad", "DepthToSpace", "SpaceToDepth", "Resize",
	"Upsample", "Cast", "Dropout", "ScatterND", "ScatterElements",
	"GridSample", NULL
};
/* Ops whose output is a product of its inputs. */
static const char *const product_ops[] = {
	"Mul", "Div", "MatMul", "Gemm", "Einsum", "FusedMatMul", NULL
};
/* Ops whose outputs are some of their inputs' values (or 0, which every
 * grid holds): on an unchanged grid they round nothing. */
static const char *const select_ops[] = {
	"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity",
	"Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND",
	"Expand", "Tile", "Pad", "DepthToSpace", "SpaceToDepth", "Dropout",
	"MaxPool", "GlobalMaxPool", "ReduceMax", "ReduceMin", "Relu", "Max",
	"Min", NULL
};

static int
in_list(const char *const *v, const char *op)
{
	for (; *v != NULL; v++)
		if (strcmp(*v, op) == 0)
			return 1;
	return 0;
}

/* See analysis.h. */
int
qr_op_group(const char *op)
{
	static const struct {
		const char *const *ops;
		int group;
	} groups[] = {
		{ linear_ops, QR_OPG_LINEAR }, { eltwise_ops, QR_OPG_ELTWISE },
		{ activation_ops, QR_OPG_ACTIVATION }, { pool_ops, QR_OPG_POOL },
		{ norm_ops, QR_OPG_NORM }, { move_ops, QR_OPG_MOVE },
	};
	size_t i;

	if (op == NULL)
		return QR_OPG_OTHER;
	if (strcmp(op, "input") == 0)
		return QR_OPG_INPUT;
	for (i = 0; i < sizeof groups / sizeof groups[0]; i++)
		if (in_list(groups[i].ops, op))
			return groups[i].group;
	return QR_OPG_OTHER;
}

/* See analysis.h. */
const char *
qr_op_group_name(int g)
{
	static const char *const names[QR_OPG_N] = {
		"Conv/Gemm/MatMul", "elementwise", "activations", "pooling",
		"normalization", "data movement", "inputs", "other"
	};

	return g >= 0 && g < QR_OPG_N ? names[g] : "other";
}

/* What the analysis reads of one float tensor's pair. */
struct tens {
	int cmp;                 /* compared in the cumulative run (a stop
				  * for the upward walk) */
	double ms, mse;          /* mean x^2, mean (x-y)^2 per element */
	double rho;              /* cumulative NSR */
	double lam;              /* local NSR (NaN: not measured) */
	double sq;               /* cumulative SQNR, capped */
	int mask;                /* holds mask values (QR_ES_MASK_MS) */
};

/* Which group a layer of several ops is counted in: the first of these
 * among its ops (a Conv whose Relu output is the one compared is a
 * Conv; a LayerNorm compared only at its end is its Sub, Pow and Div). */
static const int group_rank[] = {
	QR_OPG_LINEAR, QR_OPG_NORM, QR_OPG_ELTWISE, QR_OPG_POOL,
	QR_OPG_ACTIVATION, QR_OPG_MOVE, QR_OPG_OTHER, QR_OPG_INPUT
};

static int
rank_of(int g)
{
	size_t i;

	for (i = 0; i < sizeof group_rank / sizeof group_rank[0]; i++)
		if (group_rank[i] == g)
			return (int)i;
	return (int)i;
}

/* The group of node ni's op (default domain, or a com.microsoft op by
 * its name). */
static int
node_group(const struct qr_ar_ctx *c, size_t ni)
{
	return qr_op_group(qr_graph_node(c->fg, ni)->op_type);
}

/* The compared tensors float tensor i is computed from: the nearest
 * ones above its producer, through tensors that are not compared (graph
 * inputs not compared are exact and stop the walk). Up to INPUTS_MAX of
 * them go to in[] (*n_in; *more when some did not fit). *grp gets the
 * op group of the layer: of its producer and the nodes walked through;
 * *pooled whether one of those pools or reduces; *via_bad (when bad is
 * not NULL) whether the walk went through a tensor bad[] marks (a suspect
 * pairing, compared no more). */
static void
inputs_via(const struct qr_ar_ctx *c, const struct tens *t, size_t i,
	   unsigned char *seen, size_t *stack, size_t *visited, size_t *in,
	   size_t *n_in, int *more, int *grp, int *pooled,
	   const unsigned char *bad, int *via_bad)
{
	size_t sp = 0, nv = 0, j, k;

	if (via_bad != NULL)
		*via_bad = 0;
	*n_in = 0;
	*more = 0;
	*grp = node_group(c, (size_t)c->ft[i].node);
	*pooled = *grp == QR_OPG_POOL;
	stack[sp++] = (size_t)c->ft[i].node;
	while (sp > 0) {
		const struct qr_node *n = qr_graph_node(c->fg, stack[--sp]);

		for (j = 0; j < n->n_in; j++) {
			size_t hit;
			long p;

			if (n->in[j] == NULL || n->in[j][0] == '\0')
				continue;
			hit = qr_ar_ft_find(c, n->in[j]);
			if (hit != QR_AR_NONE && t[hit].cmp) {
				for (k = 0; k < *n_in && in[k] != hit; k++)
					;
				if (k < *n_in)
					continue;
				if (*n_in < INPUTS_MAX)
					in[(*n_in)++] = hit;
				else
					*more = 1;
				continue;
			}
			if (hit != QR_AR_NONE && c->ft[hit].node < 0)
				continue;
			if (hit != QR_AR_NONE && bad != NULL && bad[hit])
				*via_bad = 1;
			p = qr_graph_producer(c->fg, n->in[j]);
			if (p < 0 || seen[p] || nv == WALK_MAX)
				continue;
			seen[p] = 1;
			visited[nv++] = (size_t)p;
			stack[sp++] = (size_t)p;
		}
	}
	for (j = 0; j < nv; j++) {
		int g = node_group(c, visited[j]);

		if (rank_of(g) < rank_of(*grp))
			*grp = g;
		*pooled |= g == QR_OPG_POOL;
		seen[visited[j]] = 0;
	}
}

static void
inputs_of(const struct qr_ar_ctx *c, const struct tens *t, size_t i,
	  unsigned char *seen, size_t *stack, size_t *visited, size_t *in,
	  size_t *n_in, int *more, int *grp, int *pooled)
{
	inputs_via(c, t, i, seen, stack, visited, in, n_in, more, grp, pooled,
		   NULL, NULL);
}

/* 1 when pair p only re-rounds onto the grid of every input in[] (its
 * op selects values; one per-tensor scale and zero point throughout). */
static int
same_grid(const struct qr_ar_ctx *c, size_t ft, const struct qr_ar_pair *p,
	  const struct qr_ar_pair *const *ap, const size_t *in, size_t n_in,
	  int more)
{
	const struct qr_node *n;
	size_t j;

	if (c->ft[ft].node < 0 || n_in == 0 || more || p->qp.n != 1)
		return 0;
	n = qr_graph_node(c->fg, (size_t)c->ft[ft].node);
	if (n->domain[0] != '\0' || !in_list(select_ops, n->op_type))
		return 0;
	for (j = 0; j < n_in; j++) {
		const struct qr_ar_pair *q = ap[in[j]];

		if (q == NULL || q->qp.n != 1 ||
		    q->qp.scale[0] != p->qp.scale[0] ||
		    q->qp.zp[0] != p->qp.zp[0] || q->qdtype != p->qdtype)
			return 0;
	}
	return 1;
}

/* The n (at most QR_ES_TOP) largest of v[0..m) above floor, NaN left
 * out, largest first (ties in order), as idx[] of them into out; returns
 * how many. */
static size_t
top_n(const double *v, const long *idx, size_t m, double floor, long *out,
      size_t n)
{
	size_t best[QR_ES_TOP], k = 0, i, j;

	for (i = 0; i < m; i++) {
		double x = v[i];

		if (!(x > floor) || (k == n && !(x > v[best[n - 1]])))
			continue;
		j = k < n ? k++ : n - 1;
		for (; j > 0 && v[best[j - 1]] < x; j--)
			best[j] = best[j - 1];
		best[j] = i;
	}
	for (i = 0; i < k; i++)
		out[i] = idx[best[i]];
	return k;
}

/* Mark suspect pairings (see the top of this file): t[i].cmp cleared and
 * the pair flagged; bad[i] set (c->n_ft entries). Returns how many. */
static size_t
suspects(struct qr_ar_ctx *c, struct tens *t, const long *at,
	 unsigned char *seen, size_t *stack, size_t *visited,
	 unsigned char *bad)
{
	struct qr_analysis *a = c->a;
	size_t *in = xcalloc(INPUTS_MAX + 1, sizeof *in);
	size_t *todo = xcalloc(c->n_ft + 1, sizeof *todo);
	size_t i, j, n_in, n = 0, nt;
	int more, grp, pooled;

	for (i = 0; i < c->n_ft; i++) {
		double sms = 0, smse = 0, rin, lim;

		if (!t[i].cmp || c->ft[i].node < 0)
			continue;
		inputs_of(c, t, i, seen, stack, visited, in, &n_in, &more,
			  &grp, &pooled);
		if (n_in == 0 || pooled)
			continue;
		for (j = 0; j < n_in; j++) {
			sms += t[in[j]].ms;
			smse += t[in[j]].mse;
		}
		rin = sms > 0 ? smse / sms : NAN;
		if (!(rin > pow(10.0, -QR_ES_SUSPECT_DB / 10.0)) ||
		    isnan(t[i].rho) ||
		    !(10.0 * log10(t[i].rho / rin) < -QR_ES_VANISH_DB))
			continue;
		/* the bad inputs, and the bad compared tensors above them */
		lim = t[i].sq - QR_ES_VANISH_DB;
		lim = lim < QR_ES_SUSPECT_DB ? lim : QR_ES_SUSPECT_DB;
		nt = 0;
		for (j = 0; j < n_in; j++)
			if (t[in[j]].sq < lim && !bad[in[j]]) {
				bad[in[j]] = 1;
				todo[nt++] = in[j];
			}
		while (nt > 0) {
			size_t u = todo[--nt];

			if (c->ft[u].node < 0)
				continue;
			inputs_of(c, t, u, seen, stack, visited, in, &n_in,
				  &more, &grp, &pooled);
			for (j = 0; j < n_in; j++)
				if (t[in[j]].sq < lim && !bad[in[j]]) {
					bad[in[j]] = 1;
					todo[nt++] = in[j];
				}
		}
	}
	for (i = 0; i < c->n_ft; i++)
		if (bad[i] && at[i] >= 0) {
			a->act_pairs[at[i]].flags |= QR_ACT_FLAG_SUSPECT;
			n++;
		}
	for (i = 0; i < c->n_ft; i++)
		if (bad[i])
			t[i].cmp = 0;
	free(todo);
	free(in);
	return n;
}

/* See analysis-int.h and the top of this file. */
void
qr_es_analyse(struct qr_ar_ctx *c, size_t k, const long *at,
	      const struct qr_ar_pair *const *ap)
{
	struct qr_analysis *a = c->a;
	struct qr_act_run *r = &a->act_runs[k];
	struct qr_error_sources *es = &r->es;
	size_t nn = qr_graph_n_nodes(c->fg), i, j, n_in, m = 0;
	struct tens *t = xcalloc(c->n_ft + 1, sizeof *t);
	unsigned char *seen = xcalloc(nn + 1, 1);
	size_t *stack = xcalloc(WALK_MAX + 1, sizeof *stack);
	size_t *visited = xcalloc(WALK_MAX + 1, sizeof *visited);
	size_t in[INPUTS_MAX];
	double *lam = xcalloc(c->n_ft + 1, sizeof *lam);
	double *gain = xcalloc(c->n_ft + 1, sizeof *gain);
	double *drop = xcalloc(c->n_ft + 1, sizeof *drop);
	long *idx = xcalloc(c->n_ft + 1, sizeof *idx);
	unsigned char *bad = xcalloc(c->n_ft + 1, 1);
	double total = 0;
	int more, grp, pooled, via_bad = 0;

	memset(es, 0, sizeof *es);
	es->computed = 1;
	for (i = 0; i < c->n_ft; i++) {
		const struct qr_ar_pair *p = ap[i];

		t[i].lam = NAN;
		if (p == NULL || at[i] < 0 || p->cum.n == 0)
			continue;
		t[i].cmp = 1;
		t[i].ms = p->cum.sxx / (double)p->cum.n;
		t[i].mse = p->cum.see / (double)p->cum.n;
		t[i].rho = p->cum.sxx > 0 ? p->cum.see / p->cum.sxx : NAN;
		t[i].mask = !(t[i].ms < QR_ES_MASK_MS);
		t[i].sq = qr_cmp_sqnr_db(&p->cum);
		t[i].sq = t[i].sq > CAP_DB ? CAP_DB : t[i].sq;
		if (p->loc.samples > 0 && p->loc.sxx > 0)
			t[i].lam = p->loc.see / p->loc.sxx;
	}
	es->n_suspect = suspects(c, t, at, seen, stack, visited, bad);
	for (i = 0; i < c->n_ft; i++) {
		struct qr_act_pair *o;
		double sms = 0, smse = 0, lo = INFINITY, rin, l;

		if (!t[i].cmp)
			continue;
		o = &a->act_pairs[at[i]];
		o->noise_db = isnan(t[i].lam) ? NAN : 10.0 * log10(t[i].lam);
		o->noise_share = o->noise_gain_db = NAN;
		n_in = 0;
		more = 0;
		grp = QR_OPG_INPUT;
		via_bad = 0;
		if (c->ft[i].node >= 0)
			inputs_via(c, t, i, seen, stack, visited, in, &n_in,
				   &more, &grp, &pooled, bad, &via_bad);
		for (j = 0; j < n_in; j++) {
			sms += t[in[j]].ms;
			smse += t[in[j]].mse;
			lo = t[in[j]].sq < lo ? t[in[j]].sq : lo;
			via_bad |= t[in[j]].mask;
		}
		rin = n_in == 0 ? 0 : sms > 0 ? smse / sms : NAN;
		/* a product's relative errors add up: the NSRs of its
		 * factors, not their pooled noise over pooled signal (an exact
		 * sin cache would hide the error of what it multiplies) */
		if (n_in > 1 && c->ft[i].node >= 0 &&
		    in_list(product_ops,
			    qr_graph_node(c->fg, (size_t)c->ft[i].node)->op_type)) {
			rin = 0;
			for (j = 0; j < n_in; j++)
				rin += t[in[j]].ms > 0 ? t[in[j]].mse / t[in[j]].ms
						       : 0;
		}
		o->same_grid = same_grid(c, i, ap[i], ap, in, n_in, more);
		l = o->same_grid ? 0 : t[i].mask ? NAN : t[i].lam;
		/* what a suspect pairing above brings is not known */
		if (!via_bad && !isnan(l) && !isnan(rin) && !isnan(t[i].rho) &&
		    rin + l > 0)
			o->noise_gain_db = 10.0 * log10(t[i].rho / (rin + l));
		drop[m] = isfinite(lo) ? lo - t[i].sq : NAN;
		lam[m] = l;
		gain[m] = o->noise_gain_db;
		idx[m++] = at[i];
		if (!isnan(l)) {
			total += l;
			es->group_share[grp] += l;
			es->group_pairs[grp]++;
		}
	}
	es->created_db = 10.0 * log10(total);
	es->top_share = NAN;
	for (j = 0; j < m; j++) {
		struct qr_act_pair *o = &a->act_pairs[idx[j]];

		if (isnan(lam[j]) || !(total > 0))
			continue;
		o->noise_share = lam[j] / total;
		if (isnan(es->top_share) || o->noise_share > es->top_share)
			es->top_share = o->noise_share;
	}
	for (j = 0; j < QR_OPG_N; j++)
		es->group_share[j] = total > 0 ? es->group_share[j] / total
					       : NAN;
	es->n_creators = top_n(lam, idx, m, 0.0, es->creators, QR_ES_TOP);
	es->n_amplifiers = top_n(gain, idx, m, QR_ES_AMPLIFY_DB - 1e-12,
				 es->amplifiers, QR_ES_TOP);
	/* the noise a suspect pairing's true counterpart makes is not
	 * measured: no share is known, so nothing is said */
	es->accumulates = total > 0 && es->top_share < QR_ES_DOMINANT &&
			  es->n_suspect == 0;
	r->born = -1;
	r->born_share = r->born_drop_db = NAN;
	if (es->n_creators > 0 && !es->accumulates && es->n_suspect == 0) {
		r->born = es->creators[0];
		r->born_share = a->act_pairs[r->born].noise_share;
		for (j = 0; j < m; j++)
			if (idx[j] == r->born)
				r->born_drop_db = drop[j];
	}
	free(bad);
	free(idx);
	free(drop);
	free(gain);
	free(lam);
	free(visited);
	free(stack);
	free(seen);
	free(t);
}
