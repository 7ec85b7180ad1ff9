/*
 * analysis-int: what the files of src/analysis/ share with each other and
 * nobody else.
 *
 *   maths.c         plain array maths (no model types)
 *   shapes.c        declared tensor shapes and shape strings
 *   summary.c       model summaries, quant format, quantized layers,
 *                   coverage
 *   weights.c       weighted-layer discovery and per-channel weight
 *                   statistics
 *   weight_match.c  float <-> quant weight pairing and dequantized SQNR
 *   cle.c           cross-layer-equalization sets and blockers
 *   analysis.c      qr_analysis_new/free, the order of the steps above
 *   act_stats.c     streaming activation statistics, (de)quantization
 *   act_match.c     float <-> quant activation matching (names, structure)
 *   activations.c   qr_analysis_run_data: samples through every model
 *
 * Ownership: qr_an_* functions that return heap memory say so; everything
 * else is borrowed from the model or the graph index.
 */
#ifndef QR_ANALYSIS_INT_H
#define QR_ANALYSIS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

struct qr_graph;
struct qr_node;
struct qr_tensor;
struct qr_tensor_data;
struct qr_value_info;

/* ---- maths.c: helpers beyond the exported ones ---- */

/* mx[c] = max |w| over the slice c along axis (dims[axis] entries). */
void qr_an_channel_absmax(const float *w, const int64_t *dims, int ndim,
			  int axis, float *mx);
/* Predicted symmetric SQNR, per tensor and per channel in one pass, from
 * the per-channel absolute maxima chmax (dims[axis] entries). */
void qr_an_sqnr_sym2(const float *w, const int64_t *dims, int ndim, int axis,
		     const float *chmax, int bits, double *per_tensor,
		     double *per_channel);
/* Predicted per-tensor symmetric SQNR of w (n elements) whose absolute
 * maximum is amax; one pass. */
double qr_an_sqnr_sym_tensor(const float *w, size_t n, float amax, int bits);
/* Per-channel min and max along axis, one pass. */
void qr_an_channel_minmax(const float *w, const int64_t *dims, int ndim,
			  int axis, float *mn, float *mx);
/* Multiply slice c along axis of w by s[c], in place. */
void qr_an_scale_axis(float *w, const int64_t *dims, int ndim, int axis,
		      const float *s);
/* outer, channel and inner extents of dims around axis. */
void qr_an_split(const int64_t *dims, int ndim, int axis, size_t *outer,
		 size_t *chans, size_t *inner);

/* ---- shapes.c ---- */

/* Declared shapes of a graph (inputs, outputs, value_info), by name. */
struct qr_an_shapes;
struct qr_an_shapes *qr_an_shapes_new(const struct qr_model *m);
void qr_an_shapes_free(struct qr_an_shapes *s);
/* Declared value info of name, or NULL (borrowed). */
const struct qr_value_info *qr_an_shapes_get(const struct qr_an_shapes *s,
					     const char *name);
/* "[64,3,7,7]" as a new heap string. */
char *qr_an_dims_str(const int64_t *dims, int ndim);
/* Same, into a caller buffer (truncated to n bytes); returns buf. */
const char *qr_an_dims_buf(const int64_t *dims, int ndim, char *buf,
			   size_t n);
/* 1 when dtype is a floating-point type a weight can be analysed in. */
int qr_an_is_float(int dtype);
/* Whole tensor as a new heap float array; NULL for strings. */
float *qr_an_to_f32(const struct qr_tensor_data *t);
/* t's data as floats: borrowed when t is an aligned float tensor
 * (*owned = 0), else a heap copy (*owned = 1). NULL for strings. */
const float *qr_an_f32_view(const struct qr_tensor_data *t, int *owned);

/* ---- weights.c ---- */

/* A weighted layer of a float graph: a Conv, ConvTranspose, Gemm or MatMul
 * whose weight is constant. */
struct qr_an_wlayer {
	size_t node;             /* node index in the model */
	int depth;               /* position in topological order */
	const struct qr_node *n; /* the node (borrowed) */
	const struct qr_tensor_data *w; /* its weight (borrowed) */
	int axis;                /* output-channel axis of w */
	int group;               /* Conv/ConvTranspose group, 1 otherwise */
	int family;              /* QR_AN_FAM_* */
};

enum { QR_AN_FAM_NONE = 0, QR_AN_FAM_CONV, QR_AN_FAM_CONVT, QR_AN_FAM_MATMUL };
/* "conv", "conv-transpose", "matmul". */
const char *qr_an_family_name(int fam);

/* Classify node i of g. Returns QR_OK with *wl->n == NULL when the node is
 * not a weighted layer; QR_ESHAPE naming node and weight when its weight
 * disagrees with the node. */
enum qr_status qr_an_wlayer(const struct qr_graph *g,
			    const struct qr_an_shapes *sh, size_t i,
			    struct qr_an_wlayer *wl, struct qr_diag *d);
/* All weighted layers of g in topological order (*out heap, *n count). */
enum qr_status qr_an_wlayers(const struct qr_graph *g,
			     struct qr_an_wlayer **out, size_t *n,
			     struct qr_diag *d);
/* Fill ws from a weighted layer. */
void qr_an_weight_stats(const struct qr_an_wlayer *wl,
			const struct qr_analysis_opts *o,
			struct qr_weight_stats *ws);
void qr_an_weight_stats_free(struct qr_weight_stats *ws);

/* ---- summary.c ---- */

void qr_an_summary(const struct qr_graph *g, const char *role,
		   struct qr_model_summary *s);
void qr_an_summary_free(struct qr_model_summary *s);
enum qr_qformat qr_an_detect_format(const struct qr_graph *g);

/* A quantized compute layer of a candidate, with what pairing needs. */
struct qr_an_qlayer {
	size_t node;             /* node index in the candidate */
	int depth;               /* position in topological order */
	int family;              /* QR_AN_FAM_* */
	const struct qr_tensor_data *q;     /* quantized weight */
	const struct qr_tensor_data *scale; /* its scale */
	const struct qr_tensor_data *zp;    /* its zero point, NULL if none */
	int axis;                /* quantization axis (per channel) */
	int per_channel;         /* scale has more than one element */
	size_t block;            /* > 0: blocked along axis, scale and zp
				  * shaped as q but for ceil(dims[axis] /
				  * block) there */
	int bits;                /* code bits when the dtype's are not them
				  * (2-bit MatMulNBits codes in uint8), or 0 */
	int matched;             /* set by the pairing */
	struct qr_tensor_data *folded; /* q when it is a QuantizeLinear of a
				  * float constant or a MatMulNBits' packed
				  * codes, computed here (owned) */
	struct qr_tensor_data *fscale, *fzp; /* a MatMulNBits' scale and
				  * zero point as blocks over folded (owned) */
	int zp_implied;          /* fzp holds MatMulNBits' default zero
				  * point: nothing stored in the model */
};
/* Quant summary of candidate g; ql gets the layers pairing can use
 * (heap, *n_ql entries; free with qr_an_qlayers_free). */
void qr_an_quant_summary(const struct qr_graph *g, const char *path,
			 struct qr_quant_summary *qs,
			 struct qr_an_qlayer **ql, size_t *n_ql);
void qr_an_qlayers_free(struct qr_an_qlayer *ql, size_t n_ql);
void qr_an_quant_summary_free(struct qr_quant_summary *qs);

/* ---- weight_match.c ---- */

/* Pair the float layers with candidate ci's quantized layers and append to
 * a->qweights / a->unmatched. */
void qr_an_match(struct qr_analysis *a, size_t ci,
		 const struct qr_graph *fg, const struct qr_an_wlayer *fl,
		 size_t n_fl, const struct qr_graph *qg,
		 struct qr_an_qlayer *ql, size_t n_ql, struct qr_diag *d);
/* Per-channel BatchNormalization factors gamma/sqrt(var+eps) for the BN
 * that alone consumes the output of node (channels entries, heap), or NULL
 * when there is none or it cannot be folded. *bn gets the BN node. */
float *qr_an_bn_factors(const struct qr_graph *g, size_t node,
			size_t channels, const struct qr_node **bn);

/* ---- cle.c ---- */

void qr_an_cle(struct qr_analysis *a, const struct qr_graph *g,
	       const struct qr_an_wlayer *fl, size_t n_fl,
	       const struct qr_analysis_opts *o);
void qr_an_cle_free(struct qr_analysis *a);

/* ---- act_stats.c ---- */

/* A quantized tensor's parameters, read from the graph. */
struct qr_as_qparams {
	int dtype;               /* integer dtype (of the zero point; uint8
				  * when absent) */
	size_t n;                /* scale / zero point entries; 0: none */
	float *scale;            /* n entries (heap) */
	int32_t *zp;             /* n entries (heap) */
	int axis;                /* axis for n > 1 */
	double qmin, qmax;       /* integer range of dtype */
};
void qr_as_qparams_free(struct qr_as_qparams *p);
void qr_as_qrange(int dtype, double *lo, double *hi);
/* t as floats into out (t->n_elem entries), dequantized with p (may be
 * NULL) when t is an integer tensor. 0 for unreadable dtypes. */
int qr_as_to_float(const struct qr_tensor *t, const struct qr_as_qparams *p,
		   float *out);
/* x written into t in t's domain (float copy, or quantized with p). 0 for
 * dtypes it cannot write. */
int qr_as_from_float(struct qr_tensor *t, const struct qr_as_qparams *p,
		     const float *x);
/* Float values outside the range p represents (half a step of slack). */
uint64_t qr_as_saturated(const struct qr_as_qparams *p, const float *x,
			 size_t n, const int64_t *dims, int ndim);

/* Shared histogram range of x and y (y may be NULL), padded by 5%. */
void qr_as_hist_range(const float *x, const float *y, size_t n, double *lo,
		      double *hi);
void qr_as_hist_add(double lo, double hi, uint64_t *bins, size_t nbins,
		    uint64_t *under, uint64_t *over, const float *v,
		    size_t n);

/* Per-channel min/max/mean of an activation, over samples. */
struct qr_as_chan {
	size_t ch;               /* channels (0 before the first sample) */
	float *mn, *mx;          /* per channel */
	double *sum;             /* per channel, finite values */
	uint64_t *cnt;           /* per channel, finite values */
	double min, max;         /* whole tensor */
};
int qr_as_channel_axis(int ndim);
int qr_as_chan_add(struct qr_as_chan *c, const float *x, const int64_t *dims,
		   int ndim);
void qr_as_chan_free(struct qr_as_chan *c);

/* ---- activations.c ---- */

/* Free the activation fields of a (qr_analysis_free calls it). */
void qr_an_act_free(struct qr_analysis *a);

/* ---- act_match.c ---- */

/* A float tensor and the candidate tensor that holds the same value. */
struct qr_am_pair {
	const char *f;           /* float tensor (borrowed from the model) */
	const char *q;           /* candidate tensor compared with it */
	enum qr_match how;
	char *reason;            /* heap */
	size_t n_also;           /* tensors of q's Q/DQ chain computed after
				  * q: the local run overwrites them too */
	const char **also;       /* heap array of borrowed names */
	long fpos;               /* float topological position; -1 input */
};
struct qr_am_unmatched {
	const char *f;           /* float tensor (borrowed) */
	char *reason;            /* heap */
	long fpos;
};
struct qr_am {
	size_t n;
	struct qr_am_pair *pairs;    /* by fpos */
	size_t n_un;
	struct qr_am_unmatched *un;  /* by fpos */
};
void qr_am_match(const struct qr_graph *fg, const struct qr_graph *qg,
		 struct qr_am *out);
void qr_am_free(struct qr_am *m);
/* The scale and zero point behind tensor name of g (from its producer,
 * through pass-through ops, or from a Q/DQ consumer). 0 when none. */
int qr_am_qparams(const struct qr_graph *g, const char *name,
		  struct qr_as_qparams *p);

#endif
