/*
 * weights: find the weighted layers of a float graph and compute AIMET's
 * per-output-channel view of each weight (ranges, relative ranges, Tukey
 * outliers) with the predicted int8 SQNR per tensor and per channel.
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"

const char *
qr_an_family_name(int fam)
{
	switch (fam) {
	case QR_AN_FAM_CONV:
		return "conv";
	case QR_AN_FAM_CONVT:
		return "conv-transpose";
	case QR_AN_FAM_MATMUL:
		return "matmul";
	default:
		return "none";
	}
}

static int
is_default_domain(const char *d)
{
	return d == NULL || d[0] == '\0' || strcmp(d, "ai.onnx") == 0;
}

/* Declared size of dim k of tensor name, or -1 when unknown. */
static int64_t
declared_dim(const struct qr_an_shapes *sh, const char *name, int k,
	     int from_end)
{
	const struct qr_value_info *vi = sh ? qr_an_shapes_get(sh, name) : NULL;
	int idx;

	if (vi == NULL || vi->ndim <= 0 || vi->dims == NULL)
		return -1;
	idx = from_end ? vi->ndim - 1 - k : k;
	if (idx < 0 || idx >= vi->ndim)
		return -1;
	return vi->dims[idx].value;
}

static enum qr_status
bad_shape(struct qr_diag *d, const struct qr_node *n,
	  const struct qr_tensor_data *w, const char *why)
{
	char buf[160];

	return qr_errorf(d, QR_ESHAPE, "node '%s': weight '%s' has shape %s "
			 "but %s", n->name, w->name,
			 qr_an_dims_buf(w->dims, w->ndim, buf, sizeof buf), why);
}

/*
 * Which input is the weight and which axis holds the output channels:
 *   Conv          W[M, C/g, k...]    axis 0
 *   ConvTranspose W[C, M/g, k...]    axis 1 (for group > 1 the output
 *                 channels are group-interleaved, o = g*(M/g) + j; channel
 *                 j of the analysis merges index j of every group: an
 *                 approximation, exact for group == 1)
 *   Gemm          B[K, N] axis 1 (transB = 0), B[N, K] axis 0 (transB = 1)
 *   MatMul        B[..., K, N] axis rank-1
 *   Attention     (com.microsoft) W[Hin, Hq+Hk+Hv] axis 1, as MatMul
 * The weight is input 1 and must be a float constant; a node whose only
 * constant is input 0 is not a weighted layer. The weight is checked
 * against the node's attributes and its input's declared shape.
 */
enum qr_status
qr_an_wlayer(const struct qr_graph *g, const struct qr_an_shapes *sh,
	     size_t i, struct qr_an_wlayer *wl, struct qr_diag *d)
{
	const struct qr_node *n = qr_graph_node(g, i);
	const struct qr_tensor_data *w, *b = NULL;
	const char *op = n->op_type;
	char why[200];
	int64_t c;

	memset(wl, 0, sizeof *wl);
	wl->group = 1;
	if (n->n_in < 2 || n->in[1][0] == '\0')
		return QR_OK;
	if (!is_default_domain(n->domain)) {
		/* ONNX Runtime's fused Attention: its Q|K|V projection
		 * [Hin, Hq+Hk+Hv] is a MatMul's weight */
		if (strcmp(n->domain, "com.microsoft") != 0 ||
		    strcmp(op, "Attention") != 0)
			return QR_OK;
		wl->family = QR_AN_FAM_MATMUL;
	} else if (strcmp(op, "Conv") == 0)
		wl->family = QR_AN_FAM_CONV;
	else if (strcmp(op, "ConvTranspose") == 0)
		wl->family = QR_AN_FAM_CONVT;
	else if (strcmp(op, "Gemm") == 0 || strcmp(op, "MatMul") == 0)
		wl->family = QR_AN_FAM_MATMUL;
	else
		return QR_OK;
	w = qr_graph_const(g, n->in[1]);
	if (w == NULL || !qr_an_is_float(w->dtype) || w->data == NULL) {
		wl->family = QR_AN_FAM_NONE;
		return QR_OK;
	}
	if (n->n_in > 2 && n->in[2][0] != '\0')
		b = qr_graph_const(g, n->in[2]);

	if (wl->family == QR_AN_FAM_CONV || wl->family == QR_AN_FAM_CONVT) {
		int64_t grp = qr_node_attr_int(n, "group", 1);
		const struct qr_attr *ks = qr_node_attr(n, "kernel_shape");
		int convt = wl->family == QR_AN_FAM_CONVT;
		int64_t cin, cout;
		int k;

		if (w->ndim < 3)
			return bad_shape(d, n, w, "a convolution weight needs "
					 "rank >= 3");
		if (grp < 1 || (w->dims[0] % grp) != 0) {
			snprintf(why, sizeof why, "group %lld does not divide "
				 "dim 0", (long long)grp);
			return bad_shape(d, n, w, why);
		}
		if (ks && ks->type == QR_ATTR_INTS) {
			int same = ks->n == (size_t)(w->ndim - 2);

			for (k = 0; same && k < w->ndim - 2; k++)
				same = ks->ints[k] == w->dims[k + 2];
			if (!same)
				return bad_shape(d, n, w, "it disagrees with "
						 "attribute kernel_shape");
		}
		cin = convt ? w->dims[0] : w->dims[1] * grp;
		cout = convt ? w->dims[1] * grp : w->dims[0];
		c = declared_dim(sh, n->in[0], 1, 0);
		if (c >= 0 && c != cin) {
			snprintf(why, sizeof why, "input '%s' has %lld "
				 "channels (group %lld)", n->in[0],
				 (long long)c, (long long)grp);
			return bad_shape(d, n, w, why);
		}
		if (b && (int64_t)b->n_elem != cout) {
			snprintf(why, sizeof why, "bias '%s' has %zu "
				 "elements, not %lld", b->name, b->n_elem,
				 (long long)cout);
			return bad_shape(d, n, w, why);
		}
		wl->group = (int)grp;
		wl->axis = convt ? 1 : 0;
	} else if (strcmp(op, "Gemm") == 0) {
		int tb = qr_node_attr_int(n, "transB", 0) != 0;
		int ta = qr_node_attr_int(n, "transA", 0) != 0;

		if (w->ndim != 2)
			return bad_shape(d, n, w, "Gemm's B must have rank 2");
		c = declared_dim(sh, n->in[0], ta ? 0 : 1, 0);
		if (c >= 0 && c != w->dims[tb ? 1 : 0]) {
			snprintf(why, sizeof why, "input '%s' has K = %lld "
				 "(transA %d, transB %d)", n->in[0],
				 (long long)c, ta, tb);
			return bad_shape(d, n, w, why);
		}
		wl->axis = tb ? 0 : 1;
	} else {
		if (w->ndim < 2) {
			/* B[K] is a dot product: no output channel. */
			wl->family = QR_AN_FAM_NONE;
			return QR_OK;
		}
		c = declared_dim(sh, n->in[0], 0, 1);
		if (c >= 0 && c != w->dims[w->ndim - 2]) {
			snprintf(why, sizeof why, "input '%s' has K = %lld",
				 n->in[0], (long long)c);
			return bad_shape(d, n, w, why);
		}
		wl->axis = w->ndim - 1;
	}
	if (w->n_elem == 0) {
		wl->family = QR_AN_FAM_NONE;
		return QR_OK;
	}
	wl->node = i;
	wl->n = n;
	wl->w = w;
	return QR_OK;
}

/* Every weighted layer of g, in topological order. Errors: QR_ESHAPE from
 * qr_an_wlayer. *out is a heap array (NULL on error). */
enum qr_status
qr_an_wlayers(const struct qr_graph *g, struct qr_an_wlayer **out, size_t *n,
	      struct qr_diag *d)
{
	const size_t *topo = qr_graph_topo_order(g);
	size_t nn = qr_graph_n_nodes(g), k, cnt = 0;
	struct qr_an_shapes *sh = qr_an_shapes_new(qr_graph_model(g));
	struct qr_an_wlayer *v = NULL, wl;
	enum qr_status st = QR_OK;

	*out = NULL;
	*n = 0;
	for (k = 0; k < nn; k++) {
		st = qr_an_wlayer(g, sh, topo[k], &wl, d);
		if (st != QR_OK)
			goto out;
		if (wl.n == NULL)
			continue;
		wl.depth = (int)k;
		v = xreallocarray(v, cnt + 1, sizeof *v);
		v[cnt++] = wl;
	}
out:
	qr_an_shapes_free(sh);
	if (st != QR_OK) {
		free(v);
		return st;
	}
	*out = v;
	*n = cnt;
	return st;
}

/*
 * AIMET's weight view of one layer (Qualcomm AIMET's visualization):
 * per output channel min/max/mean/std, relative range
 * range_c / min_k range_k over the live channels (qr_rel_range), the dead
 * channels (qr_dead_channels) apart, Tukey fence Q3 + k IQR over the
 * live channels' relative ranges (qr_tukey_fence), outliers = live
 * channels strictly above the fence, and the predicted
 * symmetric SQNR with opts->bits per tensor and per channel
 * (qr_an_sqnr_sym2). Strings are copies; ws owns everything it points to.
 */
/*
 * The layer's weight as a matrix of max |w| over each (output channel,
 * input channel) pair, the view that shows whole input or output
 * channels standing out. The input-channel axis is the one next to the
 * output axis: 1 for Conv (W[M,C,k..]), 0 for ConvTranspose and Gemm
 * without transB, rank-2 for MatMul. Larger matrices are max-pooled to
 * QR_HEAT_MAX per side.
 */
static void
weight_heat(const float *w, const int64_t *dims, int ndim, int oaxis,
	    struct qr_weight_stats *ws)
{
	int iaxis = oaxis == 0 ? 1 : oaxis - 1, a, b, k;
	size_t O, I, R, C, outer = 1, mid = 1, inner = 1, na, nb;
	size_t x, y, z, p, q, *ca, *cb;
	float *h;

	if (ndim < 2)
		return;
	O = (size_t)dims[oaxis];
	I = (size_t)dims[iaxis];
	if (O == 0 || I == 0)
		return;
	R = O < QR_HEAT_MAX ? O : QR_HEAT_MAX;
	C = I < QR_HEAT_MAX ? I : QR_HEAT_MAX;
	a = oaxis < iaxis ? oaxis : iaxis;
	b = oaxis < iaxis ? iaxis : oaxis;
	for (k = 0; k < a; k++)
		outer *= (size_t)dims[k];
	for (k = a + 1; k < b; k++)
		mid *= (size_t)dims[k];
	for (k = b + 1; k < ndim; k++)
		inner *= (size_t)dims[k];
	na = (size_t)dims[a];
	nb = (size_t)dims[b];
	h = xcalloc(R * C, sizeof *h);
	/* the cell offsets of each index along a and b, worked out once */
	ca = xmalloc(na * sizeof *ca);
	cb = xmalloc(nb * sizeof *cb);
	for (p = 0; p < na; p++)
		ca[p] = a == oaxis ? p * R / O * C : p * C / I;
	for (q = 0; q < nb; q++)
		cb[q] = a == oaxis ? q * C / I : q * R / O * C;
	for (x = 0; x < outer; x++)
		for (p = 0; p < na; p++)
			for (y = 0; y < mid; y++)
				for (q = 0; q < nb; q++) {
					float *cell = &h[ca[p] + cb[q]];
					const float *v = w +
						(((x * na + p) * mid + y) * nb +
						 q) * inner;
					float m = *cell;

					for (z = 0; z < inner; z++)
						if (fabsf(v[z]) > m)
							m = fabsf(v[z]);
					*cell = m;
				}
	free(ca);
	free(cb);
	ws->heat = h;
	ws->heat_rows = R;
	ws->heat_cols = C;
}

void
qr_an_weight_stats(const struct qr_an_wlayer *wl,
		   const struct qr_analysis_opts *o, struct qr_weight_stats *ws)
{
	const struct qr_tensor_data *w = wl->w;
	size_t C = (size_t)w->dims[wl->axis], c, n_live = 0;
	int owned;
	const float *f = qr_an_f32_view(w, &owned);
	float *absmax, *live;
	unsigned char *dead;

	QR_ASSERT(f != NULL);
	memset(ws, 0, sizeof *ws);
	ws->layer = xstrdup(wl->n->name);
	ws->op = xstrdup(wl->n->op_type);
	ws->weight = xstrdup(w->name);
	ws->shape = qr_an_dims_str(w->dims, w->ndim);
	ws->axis = wl->axis;
	ws->channels = C;
	ws->n_elem = w->n_elem;
	ws->depth = wl->depth;
	ws->ch_min = xcalloc(C ? C : 1, sizeof(float));
	ws->ch_max = xcalloc(C ? C : 1, sizeof(float));
	ws->ch_mean = xcalloc(C ? C : 1, sizeof(float));
	ws->ch_std = xcalloc(C ? C : 1, sizeof(float));
	ws->rel_range = xcalloc(C ? C : 1, sizeof(float));
	qr_channel_stats(f, w->dims, w->ndim, wl->axis, ws->ch_min, ws->ch_max,
			 ws->ch_mean, ws->ch_std);
	ws->max_rel_range = qr_rel_range(ws->ch_min, ws->ch_max, C,
					 ws->rel_range);
	dead = xmalloc(C ? C : 1);
	live = xmalloc((C ? C : 1) * sizeof *live);
	ws->n_dead = qr_dead_channels(ws->ch_min, ws->ch_max, C, dead);
	ws->dead = xcalloc(ws->n_dead ? ws->n_dead : 1, sizeof *ws->dead);
	ws->n_dead = 0;
	for (c = 0; c < C; c++) {
		if (dead[c])
			ws->dead[ws->n_dead++] = c;
		else
			live[n_live++] = ws->rel_range[c];
	}
	ws->tukey_fence = qr_tukey_fence(live, n_live, o->tukey_k, NULL, NULL);
	for (c = 0; c < C; c++) {
		if (ws->ch_max[c] - ws->ch_min[c] == 0)
			ws->n_zero_range++;
		if (!dead[c] && ws->rel_range[c] > ws->tukey_fence)
			ws->n_outliers++;
	}
	ws->outliers = xcalloc(ws->n_outliers ? ws->n_outliers : 1,
			       sizeof *ws->outliers);
	ws->n_outliers = 0;
	for (c = 0; c < C; c++)
		if (!dead[c] && ws->rel_range[c] > ws->tukey_fence)
			ws->outliers[ws->n_outliers++] = c;
	free(live);
	free(dead);
	absmax = xmalloc((C ? C : 1) * sizeof *absmax);
	for (c = 0; c < C; c++)
		absmax[c] = fmaxf(fabsf(ws->ch_min[c]), fabsf(ws->ch_max[c]));
	qr_an_sqnr_sym2(f, w->dims, w->ndim, wl->axis, absmax, o->bits,
			&ws->sqnr_per_tensor_db, &ws->sqnr_per_channel_db);
	free(absmax);
	weight_heat(f, w->dims, w->ndim, wl->axis, ws);
	if (owned)
		free((float *)f);
}

void
qr_an_weight_stats_free(struct qr_weight_stats *ws)
{
	free(ws->layer);
	free(ws->op);
	free(ws->weight);
	free(ws->shape);
	free(ws->ch_min);
	free(ws->ch_max);
	free(ws->ch_mean);
	free(ws->ch_std);
	free(ws->rel_range);
	free(ws->outliers);
	free(ws->dead);
	free(ws->heat);
}
