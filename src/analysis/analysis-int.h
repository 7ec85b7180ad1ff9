/*
 * analysis-int: what the files of src/analysis/ share with each other and
 * nobody else.
 *
 *   maths.c         plain array maths (no model types)
 *   shapes.c        declared tensor shapes and shape strings
 *   summary.c       model summaries, quant format, quantized layers,
 *                   coverage
 *   qdq_links.c     no-op nodes inside Q/DQ chains (Identity, torch's
 *                   Cast) and the constant behind a weight
 *   weights.c       weighted-layer discovery and per-channel weight
 *                   statistics
 *   weight_match.c  float <-> quant weight pairing and dequantized SQNR
 *   cle.c           cross-layer-equalization sets and blockers
 *   hazards.c       what in a candidate costs accuracy: the kinds, how a
 *                   hazard is built, the data pass and the result
 *   hazards_graph.c the hazards a candidate's graph shows
 *   analysis.c      qr_analysis_new/free, the order of the steps above
 *   act_stats.c     streaming activation statistics: sums, histograms,
 *                   per-channel ranges
 *   act_quant.c     an activation's scale and zero point: to float and
 *                   back, saturation
 *   act_match.c     float <-> quant activation matching (names, structure)
 *   act_classes.c   each graph's activations for it, the candidate's
 *                   value classes, a tensor's quantization parameters
 *                   (shared through act-match-int.h)
 *   act_sched.c     qr_analysis_run_data: samples through every model;
 *                   sample slots, lanes, the step mode, threads
 *   act_hook.c      the runs' per-node hooks: comparison, and the local
 *                   run's float values put in the candidate's tensors
 *   act_results.c   running sums into the per-activation, per-pair and
 *                   per-output results
 *   error_sources.c where a candidate's error comes from: the noise each
 *                   layer makes and amplifies, shares per op group, where
 *                   it is born
 *   outliers.c      activation outliers at the weighted layers' inputs:
 *                   SmoothQuant's predicted gain
 *   worst_samples.c the samples a candidate matches worst, with their
 *                   per-layer cosines and thumbnails
 *   distribution.c  a row of scores as a probability distribution:
 *                   log-softmax, KL divergence, top k and its overlap
 *   llm_metrics.c   a decoder's next-token metrics (KL, top-1/top-5,
 *                   perplexity) from its logits, and its blocks' outputs
 *   outputs.c       what a candidate's graph outputs say: a classifier's
 *                   KL, top-1/top-5 and class flips, a segmenter's
 *                   per-pixel agreement and per-class IoU
 *   hybrid.c        a candidate with some layers kept float, or the
 *                   float model with some quantized as the candidate
 *                   does: what each edit is, per format
 *   hybrid_edit.c   the edits: a copy of a loaded graph that nodes and
 *                   initializers are added to or rewritten in
 *   hybrid_groups.c what-ifs for groups changed at once: elementwise or
 *                   sensitive ops' outputs in float, first and last
 *                   layer float, per-channel weights
 *   sensitivity.c   qr_analysis_sensitivity: hybrid runs on a few
 *                   samples, weights vs activations, per-layer
 *                   sensitivity both ways, their ranking
 *   sens_runs.c     its runs: the samples, the bases' runs, each
 *                   variant built, cut, run and compared
 *   sens_prefix.c   a variant cut to what its edits reach, fed with its
 *                   base's values (a store)
 *   fallback.c      the layers to keep float to meet a target, found
 *                   greedily from the sensitivities and run to confirm
 *   cle_measured.c  CLE, measured: the float model's CLE-set layers
 *                   quantized per tensor, run with and without each
 *                   set's equalization
 *
 * Ownership: qr_an_* functions that return heap memory say so; everything
 * else is borrowed from the model or the graph index.
 */
#ifndef QR_ANALYSIS_INT_H
#define QR_ANALYSIS_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/run.h"

struct qr_exec;
struct qr_graph;
struct qr_ws_store;
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

/* ---- distribution.c ---- */

#define QR_AN_PROB_FLOOR 1e-7    /* a probability below counts as this
				  * in a log (a quantized softmax rounds
				  * small ones to 0: KL stays finite) */
#define QR_AN_PROB_SUM_TOL 1e-3  /* a row of values in [0, 1] summing to
				  * 1 within this is a distribution */

/* out[v] = log softmax(x)[v] over n values, in double (the maximum
 * subtracted, then the log of the sum of exponentials). */
void qr_an_log_softmax(const float *x, size_t n, double *out);
/* out[v] = log of x[v] / sum of x's positive values, each probability
 * floored at QR_AN_PROB_FLOOR (negative values count as 0). */
void qr_an_log_probs(const float *x, size_t n, double *out);
/* 1 when x's n values are in [0, 1] and sum to 1 within
 * QR_AN_PROB_SUM_TOL: probabilities, not logits. */
int qr_an_is_distribution(const float *x, size_t n);
/* KL(P || Q) = sum_v exp(lp_v) (lp_v - lq_v) of two log distributions
 * over n classes, nats. */
double qr_an_kl(const double *lp, const double *lq, size_t n);
/* The indices of the k largest of x[n] (k <= n) into top, by value
 * descending; ties to the lower index. */
void qr_an_top_k(const float *x, size_t n, size_t k, size_t *top);
/* |a ∩ b| of two lists of k distinct indices. */
size_t qr_an_top_common(const size_t *a, const size_t *b, size_t k);

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
	const struct qr_node *lazy; /* a MatMulNBits whose codes folded holds
				  * only while qr_an_qlayer_codes has them
				  * in (one byte a code: a 1 G-parameter
				  * decoder's would take 1 GB at once) */
	const struct qr_graph *lazy_g;
};
/* Quant summary of candidate g; ql gets the layers pairing can use
 * (heap, *n_ql entries; free with qr_an_qlayers_free). */
void qr_an_quant_summary(const struct qr_graph *g, const char *path,
			 struct qr_quant_summary *qs,
			 struct qr_an_qlayer **ql, size_t *n_ql);
void qr_an_qlayers_free(struct qr_an_qlayer *ql, size_t n_ql);
/* Unpack a MatMulNBits layer's codes into ql->folded (a no-op for other
 * layers), and free them again: every reader of ql->q's data brackets
 * its use with the two. */
void qr_an_qlayer_codes(struct qr_an_qlayer *ql);
void qr_an_qlayer_drop_codes(struct qr_an_qlayer *ql);
void qr_an_quant_summary_free(struct qr_quant_summary *qs);

/* ---- qdq_links.c ---- */

/* 1 when node n returns its first input's values unchanged inside a
 * Q/DQ chain (Identity; a Cast of a QuantizeLinear's codes to a type
 * that holds them, as torch.onnx writes). */
int qr_an_is_noop_link(const struct qr_graph *g, const struct qr_node *n);
/* name, or the tensor it copies through no-op links. */
const char *qr_an_link_source(const struct qr_graph *g, const char *name);
/* The constant behind a weight input: the input itself, or what a
 * DequantizeLinear reads (integer codes), or the float constant a
 * QuantizeLinear -> DequantizeLinear pair fake-quantizes; seen through
 * no-op links. NULL when none. */
const struct qr_tensor_data *qr_an_weight_behind(const struct qr_graph *g,
						 const char *name);

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
/* Equalize a CLE set of n (2 or 3) layers L in place: w[k], layer k's
 * weight as floats (L[k]->w's shape, a BN after it folded in), and
 * b[k], its bias (L[k]'s output channels; b or b[k] NULL: none; the
 * last layer's is not changed). The scales, computed from w, go to s0
 * (and s1 for a triplet), L[0]'s output channels each. */
void qr_an_cle_apply(const struct qr_an_wlayer *const *L, size_t n,
		     float *const *w, float *const *b, float *s0, float *s1);
void qr_an_cle_free(struct qr_analysis *a);

/* ---- hazards.c, hazards_graph.c ---- */

#define QR_AN_HZ_SPREAD 16.0 /* Concat/Add input scales, or the float
				ranges of inputs sharing one, this far
				apart: a hazard */

/* Hazards being built: a growing array. */
struct qr_an_hz_list {
	size_t n;                /* hazards in v */
	struct qr_hazard *v;     /* heap, owned */
};
/* A new hazard of kind for candidate quant at the end of l, nothing else
 * set (borrowed until l grows). */
struct qr_hazard *qr_an_hz_add(struct qr_an_hz_list *l, int kind,
			       size_t quant);
/* Add what h concerns: name and its float layer (copied; NULL or "" for
 * none). */
void qr_an_hz_ref(struct qr_hazard *h, const char *name, const char *layer);
/* Add a measured number; key is a static string. */
void qr_an_hz_num(struct qr_hazard *h, const char *key, double v);
/* *dst = the formatted sentence; the old one is freed after formatting,
 * so it may be one of the arguments. */
void qr_an_hz_text(char **dst, const char *fmt, ...) QR_PRINTF(2, 3);

/* A Concat or Add whose quantized inputs share one scale: the data pass
 * compares their float ranges. */
struct qr_an_hz_group {
	size_t quant;            /* candidate index */
	char *op;                /* "Concat", "QLinearAdd", ... */
	char *node;              /* candidate node name */
	char *layer;             /* its float layer, or NULL */
	double scale;            /* the shared scale */
	size_t n;                /* inputs */
	char **qname;            /* per input: candidate tensor */
	char **fname;            /* per input: float tensor, or NULL */
	char **flayer;           /* per input: its float producer, or NULL */
};

/* What the graph pass keeps for qr_analysis_hazards (a->hz_plan). */
struct qr_an_hazard_plan {
	struct qr_an_hz_list graph; /* graph hazards of every candidate */
	size_t n_groups;         /* entries in groups */
	struct qr_an_hz_group *groups; /* shared-scale groups, heap */
};

/* hazards_graph.c: candidate quant's graph hazards (qg against the float
 * graph fg, with a's weights, pairings and coverage so far) and its
 * shared-scale groups into a->hz_plan (made when NULL). */
void qr_an_hazards_graph(struct qr_analysis *a, size_t quant,
			 const struct qr_graph *fg, const struct qr_graph *qg);
/* hazards.c: free a's hazards and its plan. */
void qr_an_hazards_free(struct qr_analysis *a);

/* ---- act_quant.c ---- */

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
 * dtypes it cannot write (and zero points outside t's range). */
int qr_as_from_float(struct qr_tensor *t, const struct qr_as_qparams *p,
		     const float *x);
/* Float values outside the range p represents (half a step of slack). */
uint64_t qr_as_saturated(const struct qr_as_qparams *p, const float *x,
			 size_t n, const int64_t *dims, int ndim);

/* ---- act_stats.c ---- */

/* Shared histogram range of x and y (y may be NULL), padded by 5%. */
void qr_as_hist_range(const float *x, const float *y, size_t n, double *lo,
		      double *hi);
void qr_as_hist_add(double lo, double hi, uint64_t *bins, size_t nbins,
		    uint64_t *under, uint64_t *over, const float *v,
		    size_t n);

/* Per input channel of a weighted layer (a Conv's axis 1, a MatMul's
 * last axis): what SmoothQuant's view needs, over samples. */
struct qr_as_inch {
	int axis;                /* input-channel axis; -1: the last */
	size_t ch;               /* channels (0 before the first sample) */
	float *amax;             /* per channel: max |x| */
	double *ss;              /* per channel: sum x^2 */
	uint64_t *cnt;           /* per channel: finite values */
	double m[4];             /* whole tensor: sum x, x^2, x^3, x^4 */
	uint64_t n;              /* whole tensor: finite values */
};

/* Per-channel min/max/mean of an activation, over samples. */
struct qr_as_chan {
	size_t ch;               /* channels (0 before the first sample) */
	float *mn, *mx;          /* per channel */
	double *sum;             /* per channel, finite values */
	uint64_t *cnt;           /* per channel, finite values */
	double min, max;         /* whole tensor */
	struct qr_as_inch *in;   /* input-channel sums too, when the tensor
				  * feeds a weighted layer (qr_ol_setup);
				  * owned */
};
int qr_as_channel_axis(int ndim);
int qr_as_chan_add(struct qr_as_chan *c, const float *x, const int64_t *dims,
		   int ndim);
/* to as a deep copy of from (to's arrays reused or replaced). */
void qr_as_chan_copy(struct qr_as_chan *to, const struct qr_as_chan *from);
void qr_as_chan_free(struct qr_as_chan *c);

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

/* ---- act_sched.c, act_hook.c, act_results.c: the activation run ---- */

#define QR_AR_SLOTS 2            /* samples in flight (double buffer) */
#define QR_AR_NONE ((size_t)-1)  /* no such tensor, pair or slot */

/* A float tensor compared by some candidate. */
struct qr_ar_ftens {
	const char *name;        /* borrowed from the float model */
	long node;               /* producer node index, -1 for an input */
	long pos;                /* topological position, -1 for an input */
	float *buf[QR_AR_SLOTS]; /* values of the sample in each slot */
	size_t cap[QR_AR_SLOTS]; /* floats allocated in buf */
	size_t n[QR_AR_SLOTS];   /* elements of that sample */
	int ndim[QR_AR_SLOTS];   /* its rank */
	int64_t dims[QR_AR_SLOTS][QR_TENSOR_MAX_DIMS]; /* its shape */
	int have[QR_AR_SLOTS];   /* 1 once seen in that sample */
	int heap[QR_AR_SLOTS];   /* buf is from the heap (qr_ar_grow), not
				  * carved from ctx.bulk */
	int seen;                /* 1 once seen in any sample */
	char *shape;             /* of the first sample */
	struct qr_as_chan chan;  /* per-channel statistics */
	uint64_t n_values;       /* elements over every sample */
	struct qr_as_chan undo;  /* chan before the float sample in progress
				  * was added (ch 0: empty), put back if the
				  * float run fails on it */
	int first;               /* that sample is the first seen (shape is
				  * its) */
	size_t out;              /* index in a->act_tensors */
};

/* A matched pair of one candidate, with its running sums. The cumulative
 * run's task alone writes cum, the histograms, saturation, qdtype and
 * shape_bad; the local run's task alone writes loc. */
struct qr_ar_pair {
	size_t ft;               /* index into the ftens array */
	const struct qr_am_pair *am; /* borrowed from cand.am */
	struct qr_as_qparams qp; /* of the compared tensor */
	struct qr_as_qparams *also_qp; /* per am->also */
	int qdtype;              /* dtype seen at run time */
	struct qr_cmp_acc cum, loc; /* cumulative and local run's sums */
	int hist_set;            /* hlo, hhi set (by the first sample) */
	double hlo, hhi;         /* the histograms' shared range */
	uint64_t hf[QR_ACT_HIST_BINS], hq[QR_ACT_HIST_BINS]; /* float and
				  * candidate values' histograms */
	uint64_t uf, of, uq, oq; /* values below / above the range: float,
				  * candidate */
	uint64_t sat, sat_n;     /* saturated float values, values seen */
	int shape_bad;           /* the two tensors' layouts disagreed */
};

/* What the hook does at one output of one node. */
struct qr_ar_hook_ent {
	size_t slot;             /* output index of the node */
	size_t pair;             /* index into cand.pairs (or ftens) */
	long also;               /* -1: the compared tensor; k: also[k] */
};

/* Entries per node, CSR style. */
struct qr_ar_hook_map {
	size_t *start;           /* n_nodes + 1 offsets into ent */
	struct qr_ar_hook_ent *ent; /* n_ent entries, by node */
	size_t n_ent;
};

/* The comparison of one graph output of a candidate. */
struct qr_ar_outacc {
	size_t samples, cap;     /* entries used and allocated in cos, sqnr */
	double *cos, *sqnr;      /* per sample: cosine, SQNR (dB) */
	struct qr_cmp_acc total; /* over every sample */
	int classifier;          /* the output is a classifier's (set by
				  * outputs.c at the first sample) */
	size_t rows, agree, labeled, fcorrect, qcorrect; /* rows compared,
				  * same argmax, rows with a label, float
				  * and candidate argmax equal to it */
	struct qr_as_qparams qp; /* for an integer output */
	struct qr_llm_acc *llm;  /* next-token sums when this is a
				  * decoder's logits (llm_metrics.c) */
	struct qr_om_acc *om;    /* its kind and a classifier's or
				  * segmenter's sums (outputs.c) */
};

/* A candidate: its executors, pairs and hook map, and the state of its
 * two tasks. */
struct qr_ar_cand {
	const struct qr_model *m; /* borrowed */
	struct qr_graph *g;      /* index of m */
	struct qr_exec *e;       /* the cumulative run's executor */
	struct qr_exec *el;      /* the local run's: its own when two lanes
				  * run them at once, else e */
	struct qr_am am;         /* the matched tensors */
	struct qr_ar_pair *pairs; /* am.n */
	struct qr_ar_hook_map map; /* node -> pairs */
	size_t *pre;             /* pairs on graph inputs (compared before) */
	size_t n_pre;
	struct qr_ar_outacc *outs; /* n_outs graph outputs */
	size_t n_outs;
	int ran;                 /* runs (0: failed or cannot run) */
	char *why;               /* why it did not run (heap) */
	double seconds;          /* time in its runs */
	size_t next[2];          /* next sample of the cumulative / local
				  * task */
	int busy[2];             /* that task is running */
	unsigned *uses;          /* per ftens: reads by one run (hook
				  * entries and compared inputs) */
	struct qr_ar_pair *undo; /* in step: pairs before the sample, put
				  * back if the float run fails on it */
	struct qr_ws_store *worst; /* the worst samples so far (cumulative
				  * task only) */
};

/* One sample in flight: the inputs (copied, the feed reuses its own)
 * and the float model's outputs, kept until every candidate task of the
 * sample has read them. */
struct qr_ar_slot {
	struct qr_tensor **ins;  /* n_ins owned copies */
	size_t n_ins;
	struct qr_tensor **fouts; /* the float outputs (owned copies) */
	size_t n_fouts;
	int label;               /* the sample's class, -1 if none */
	size_t pending;          /* candidate tasks of this sample left */
};

/* A whole activation run. */
struct qr_ar_ctx {
	struct qr_analysis *a;   /* the result */
	const struct qr_act_opts *o; /* the caller's */
	const struct qr_model *fm; /* the float model */
	struct qr_graph *fg;     /* its index */
	struct qr_exec *fe;      /* its executor */
	struct qr_ar_ftens *ft;  /* n_ft compared float tensors, in
				  * topological order */
	size_t n_ft;
	struct qr_strmap ft_idx; /* name -> index in ft */
	struct qr_ar_hook_map fmap; /* float node -> ftens */
	struct qr_ar_cand *c;    /* n_c candidates */
	size_t n_c;
	struct qr_ar_slot slot[QR_AR_SLOTS]; /* samples in flight */
	struct qr_bulk bulk;     /* the slots' float tensors in the
				  * pipeline (float task only) */
	/* scheduling, under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;       /* broadcast on every change below */
	size_t next_f;           /* next sample the float task reads */
	size_t f_done;           /* samples whose float task finished */
	int f_busy;              /* a float task runs */
	int eof;                 /* the feed is exhausted at next_f */
	enum qr_status stop;     /* QR_OK, or why every lane stops */
	enum qr_status partial;  /* QR_EPARTIAL once a candidate failed or
				  * a sample was skipped */
	size_t skipped;          /* samples skipped (a->data.n_skipped, for
				  * progress under mu) */
	size_t done, running;    /* progress: runs done, models running */
	struct qr_diag *d;       /* the caller's; the float task's only */
	/* in step (slot 0 only), under mu */
	int step;                /* this sample goes in step */
	unsigned *refs;          /* per ftens: runs yet to read it */
	size_t held;             /* bytes of float tensors held */
	size_t sample_bytes;     /* bytes of this sample's float tensors */
	int f_end;               /* the float run of the sample has ended */
	int f_fail;              /* and failed: the sample is skipped */
	int waiting;             /* runs waiting for a float tensor */
	int active;              /* candidate threads still running */
	int lanes_free;          /* threads that may compute now */
};

/* What one run's hook works with (one per task: lanes run at once). */
struct qr_ar_hctx {
	struct qr_ar_ctx *c;     /* the run it is part of */
	struct qr_ar_cand *q;    /* NULL for the float run */
	int local;               /* the local run */
	size_t s;                /* slot */
	float *scratch;          /* quant values of one tensor */
	size_t scratch_cap;      /* floats allocated in scratch */
	unsigned *left;          /* in step: per ftens, reads left in this
				  * run; NULL in the pipeline */
	double waited;           /* in step: seconds spent waiting for the
				  * float run */
};

/* act_hook.c */

/* *buf with room for n floats (a new buffer, contents lost, when it had
 * less); *cap follows. */
float *qr_ar_grow(float **buf, size_t *cap, size_t n);
/* The float tensor named name, QR_AR_NONE when it is not compared. */
size_t qr_ar_ft_find(const struct qr_ar_ctx *c, const char *name);
/* c->ft (every candidate's compared float tensors, sorted), c->ft_idx
 * and c->fmap, from the candidates' matches. */
void qr_ar_collect_ftens(struct qr_ar_ctx *c);
/* q's pairs, hook map and output accumulators (after
 * qr_ar_collect_ftens). */
void qr_ar_cand_setup(struct qr_ar_ctx *c, struct qr_ar_cand *q);
/* Free what q owns (its executors and graph index included). */
void qr_ar_cand_free(struct qr_ar_cand *q);
void qr_ar_map_free(struct qr_ar_hook_map *m);
/* The float run's and a candidate run's hooks (qr_hook_fn; user is a
 * struct qr_ar_hctx). */
int qr_ar_float_hook(const struct qr_node *node,
		     struct qr_tensor *const *outs, size_t n_outs,
		     void *user);
int qr_ar_cand_hook(const struct qr_node *node,
		    struct qr_tensor *const *outs, size_t n_outs, void *user);
/* Compare candidate tensor t with pair p's float tensor in h's run. */
void qr_ar_compare(struct qr_ar_hctx *h, struct qr_ar_pair *p,
		   struct qr_tensor *t);
/* Compare q's graph outputs with the float ones kept in sl. */
void qr_ar_compare_outputs(struct qr_ar_cand *q,
			   const struct qr_ar_slot *sl);

/* act_sched.c */

/* Float tensor t into f's buffer of slot s, and its statistics; 1 when
 * taken, then shown to the candidate runs with qr_ar_ft_ready. */
int qr_ar_ft_take(struct qr_ar_ctx *c, struct qr_ar_ftens *f, size_t s,
		  const struct qr_tensor *t);
void qr_ar_ft_ready(struct qr_ar_ctx *c, size_t s, size_t i);
/* In step: wait for float tensor i (nonzero: the sample is given up);
 * one read of it done. Nothing in the pipeline. */
int qr_ar_step_wait(struct qr_ar_hctx *h, size_t i);
void qr_ar_step_read(struct qr_ar_hctx *h, size_t i);

/* llm_metrics.c */

struct qr_llm_acc;
/* Add one sample to *acc (made at the first) when output i of the
 * float outputs in sl is a decoder's logits: x the float model's
 * values, y the candidate's (as floats, fouts[i]->n_elem each). */
void qr_llm_add(struct qr_llm_acc **acc, const struct qr_ar_slot *sl,
		size_t i, const float *x, const float *y);
void qr_llm_acc_free(struct qr_llm_acc *acc);
/* Candidate k's qr_llm_result into a->act_runs[k].llm (after its
 * act_pairs are out), or nothing when no output had next-token sums. */
void qr_llm_results(struct qr_ar_ctx *c, size_t k);
void qr_llm_result_free(struct qr_llm_result *r);

/* outputs.c */

struct qr_om_acc;
/* Add one sample of output i (sl->fouts[i]) to o: its kind at the first
 * sample (o->om made, o->classifier set), then a classifier's rows
 * (o->rows, agree, labeled, fcorrect, qcorrect and the KL, top-k and
 * flip sums) or a segmenter's pixels. x the float model's values, y the
 * candidate's (as floats, fouts[i]->n_elem each). Called once per
 * sample compared, after o->samples grew. */
void qr_om_add(struct qr_ar_outacc *o, const struct qr_ar_slot *sl,
	       size_t i, const float *x, const float *y);
void qr_om_acc_free(struct qr_om_acc *acc);
/* o's kind, and its cls or seg (owned by o), from oa's sums. */
void qr_om_results(const struct qr_ar_outacc *oa, struct qr_act_output *o);
/* Free o's cls and seg (set to NULL). */
void qr_om_result_free(struct qr_act_output *o);

/* act_results.c */

/* The result of a finished run into c->a: act_tensors, act_pairs,
 * act_outputs, act_unmatched and act_runs. */
void qr_ar_results(struct qr_ar_ctx *c);
/* Free the activation fields of a (qr_analysis_free calls it). */
void qr_an_act_free(struct qr_analysis *a);

/* error_sources.c */

/* Where candidate k's error comes from, once its pairs are in
 * c->a->act_pairs: each pair's noise_db, noise_share, noise_gain_db and
 * same_grid, and act_runs[k]'s es, born, born_share and born_drop_db.
 * at[ft] is the act_pairs index of float tensor ft's pair (-1: none, or
 * a cancellation) and ap[ft] the pair's sums. */
void qr_es_analyse(struct qr_ar_ctx *c, size_t k, const long *at,
		   const struct qr_ar_pair *const *ap);

/* outliers.c */

/* Mark the compared float tensors that feed a Conv, Gemm or MatMul with
 * a constant weight: their input-channel sums are taken (chan.in). */
void qr_ol_setup(struct qr_ar_ctx *c);
/* c->a->outliers from those sums and the float weights. */
void qr_ol_results(struct qr_ar_ctx *c);
void qr_ol_free(struct qr_analysis *a);

/* worst_samples.c */

/* The worst samples of one candidate, kept while the cumulative run goes:
 * at most QR_WORST_SAMPLES of them, each with a cosine per pair (and a
 * thumbnail of at most 64 x 64 pixels): QR_WORST_SAMPLES floats and one
 * counter per pair, whatever the number of samples. */
struct qr_ws_kept {
	size_t sample;           /* sample index */
	double cos;              /* its output cosine */
	float *trace;            /* per pair of the candidate (am.n) */
	uint8_t *thumb;          /* RGB, or NULL */
	int w, h;                /* thumbnail pixels */
};
struct qr_ws_store {
	uint64_t *seen;          /* per pair: cum.samples when the last
				  * sample was noted */
	size_t next;             /* index of the next sample */
	int images;              /* the data are images: thumbnails */
	size_t n;                /* kept */
	struct qr_ws_kept e[QR_WORST_SAMPLES];
};
/* A store for every candidate that runs. */
void qr_ws_setup(struct qr_ar_ctx *c);
/* The cumulative run of q has compared its outputs on the sample in sl:
 * out_cos is the lowest output cosine (NaN: none compared). */
void qr_ws_note(struct qr_ar_cand *q, const struct qr_ar_slot *sl,
		double out_cos);
/* act_runs[k]'s worst samples; pv[i] is q's pair i's index among the
 * candidate's act_pairs (-1: not there), n_pv of them in act_pairs. */
void qr_ws_results(struct qr_ar_ctx *c, size_t k, const long *pv,
		   size_t n_pv);
void qr_ws_free(struct qr_ar_cand *q);

/* ---- hybrid.c ---- */

/* A paired quantized layer of a candidate, as hybrid runs change it. */
struct qr_hy_layer {
	const char *layer;       /* float node name (borrowed from a) */
	const char *quant_layer; /* candidate node name (borrowed from a) */
	const char *op;          /* candidate op type (borrowed) */
	size_t fnode, qnode;     /* node indices in the two models */
	int depth;               /* candidate topological position */
	const struct qr_tensor_data *fw; /* the float weight (borrowed) */
	const struct qr_node *bn; /* the float Conv's BatchNormalization the
				  * candidate folded, or NULL */
	float *fw_fold;          /* fw folded with bn (heap), or NULL */
	float *fb_fold;          /* the folded bias (heap; bn set) */
	const struct qr_an_qlayer *q; /* its quantized weight (the plan's
				  * ql); NULL: it cannot be quantized
				  * alone */
	float *qw;               /* q dequantized, made on first use (heap) */
	int w_in;                /* candidate input reading the weight, -1 */
	const char *in_scale;    /* the candidate's constants its input is
				  * quantized with (NULL: not quantized) */
	const char *in_zp;       /* "" when it has none */
	const char *in_domain;   /* the domain of the candidate's input
				  * DequantizeLinear (com.microsoft for
				  * ONNX Runtime's 16-bit ones), NULL: "" */
	size_t n_out_dq;         /* QDQ: DequantizeLinear nodes after its */
	size_t *out_dq;          /* output's QuantizeLinear (heap) */
	int q_direct;            /* QDQ: that QuantizeLinear reads the
				  * layer's output itself */
	const struct qr_node *fact; /* the float model's activation after
				  * the layer when the candidate has none
				  * (its QuantizeLinear clamps instead):
				  * kept float, it replaces the pair */
	char *why;               /* NULL: it can be kept float; else why
				  * not (heap) */
};

struct qr_hy_plan {
	const struct qr_graph *fg, *qg; /* float and candidate (borrowed) */
	enum qr_qformat format;  /* the candidate's */
	size_t n;
	struct qr_hy_layer *l;   /* the candidate's paired layers, in
				  * a->qweights order */
	struct qr_an_qlayer *ql; /* the candidate's quantized layers */
	size_t n_ql;
};

/* A model the executor runs, edited from another (the two models it was
 * made from and its plan must outlive it). */
struct qr_hy_model {
	struct qr_model m;       /* the model: graph arrays below */
	struct qr_node *nodes;   /* heap */
	struct qr_tensor_data *inits; /* heap */
	struct qr_arena ar;      /* names, small arrays, computed tensors */
};

/* hybrid_edit.c: a model being edited. Node and initializer indices
 * below the original counts are the original's until qr_hy_finish. */
struct qr_hy_build {
	struct qr_hy_model *h;   /* the model being made (its arena holds
				  * what the edits allocate) */
	struct qr_node *nodes;   /* n_nodes of cap_nodes (heap) */
	size_t n_nodes, cap_nodes;
	struct qr_tensor_data *inits; /* n_inits of cap_inits (heap) */
	size_t n_inits, cap_inits;
	unsigned char *drop;     /* per original node: replaced, to remove
				  * (the caller's, heap; may be NULL) */
};
/* Start b as a copy of m's main graph (m's strings and data borrowed). */
void qr_hy_start(struct qr_hy_build *b, const struct qr_model *m);
/* A new node at the end (domain ai.onnx), name copied, n_in inputs and
 * n_out outputs to fill. Borrowed until the next qr_hy_add_node. */
struct qr_node *qr_hy_add_node(struct qr_hy_build *b, const char *op,
			       const char *name, size_t n_in, size_t n_out);
/* A copy of constant src (data borrowed) as an initializer named name;
 * returns the name (b's). */
const char *qr_hy_add_const(struct qr_hy_build *b, const char *name,
			    const struct qr_tensor_data *src);
/* A float initializer named name holding v (borrowed: the caller keeps
 * it alive as long as the model) of shape's dims, or ndim/dims when
 * shape is NULL; returns the name (b's). */
const char *qr_hy_add_init(struct qr_hy_build *b, const char *name,
			   const struct qr_tensor_data *shape, int ndim,
			   const int64_t *dims, const float *v);
/* Node i with an input array of its own, to rename inputs in. */
struct qr_node *qr_hy_own_node(struct qr_hy_build *b, size_t i);
/* Turn node i into Identity(src). */
void qr_hy_to_identity(struct qr_hy_build *b, size_t i, const char *src);
/* Make the model import domain (at version, at least 1) if it does not. */
void qr_hy_need_opset(struct qr_hy_build *b, const char *domain,
		      int64_t version);
/* Drop the nodes whose outputs nobody reads (in subgraphs too) and no
 * graph output is, until none is left, and hand b's arrays to the model,
 * which the caller then owns (qr_hy_model_free). */
struct qr_hy_model *qr_hy_finish(struct qr_hy_build *b);
/* "qr.hybrid/LAYER/WHAT", a name for something qreport adds (heap). */
char *qr_hy_name(const char *layer, const char *what);

void qr_hy_plan_new(const struct qr_analysis *a, size_t k,
		    const struct qr_graph *fg, const struct qr_graph *qg,
		    struct qr_hy_plan **out);
/* Free the layers' dequantized weights (made again on next use): the
 * models reading them are freed. */
void qr_hy_plan_drop_qw(struct qr_hy_plan *p);
void qr_hy_plan_free(struct qr_hy_plan *p);
struct qr_hy_model *qr_hy_keep_float(const struct qr_hy_plan *p,
				     const unsigned char *keep,
				     int weights_only);
/* A weight for layer l of plan p in arena ar (fw's shape), or NULL to
 * leave the layer as it is. */
typedef const float *(*qr_hy_weight_fn)(struct qr_arena *ar,
					const struct qr_hy_plan *p,
					const struct qr_hy_layer *l,
					void *user);
/* QOperator: every layer fn gives a weight becomes DequantizeLinear ->
 * float op reading that weight -> QuantizeLinear at its output scale and
 * zero point, as qr_hy_keep_float keeps a layer float; *n_changed gets
 * how many. */
struct qr_hy_model *qr_hy_qop_reweight(const struct qr_hy_plan *p,
				       qr_hy_weight_fn fn, void *user,
				       size_t *n_changed);
struct qr_hy_model *qr_hy_quant_only(struct qr_hy_plan *p,
				     const unsigned char *quant, int acts);
void qr_hy_model_free(struct qr_hy_model *h);

/* hybrid_groups.c: group what-if group (QR_SENS_GROUP_*) of p's
 * candidate, or NULL with *why (heap) when it does not apply; *n_changed
 * gets the ops or layers it changed. */
struct qr_hy_model *qr_hy_group(const struct qr_hy_plan *p, int group,
				size_t *n_changed, char **why);

/* ---- sens_prefix.c: a hybrid run from its base's values ---- */

/* A hybrid model cut to the nodes its edits reach. */
struct qr_sp_cut {
	struct qr_model m;       /* those nodes (the hybrid's strings and
				  * tensors); its graph inputs are front */
	struct qr_node *nodes;   /* heap */
	struct qr_value_info *ins; /* heap: one per front name (dtype set
				  * from the store before it runs) */
	size_t n_front;
	const char **front;      /* heap array of the hybrid's names: what
				  * the cut reads from the rest */
	long *out_of;            /* per hybrid graph output: its index among
				  * the cut's, -1: the base's value */
	struct qr_value_info *outs; /* heap: the cut's graph outputs */
};
/* The cut of hybrid model h against its base's graph bg, or NULL (every
 * node reached, or h does not index). Borrows h. */
struct qr_sp_cut *qr_sp_cut_new(const struct qr_model *h,
				const struct qr_graph *bg);
void qr_sp_cut_free(struct qr_sp_cut *c);

/* A base model's values the cuts read, and its outputs, per sample. */
struct qr_sp_store {
	struct qr_strmap idx;    /* name -> index in names */
	const char **names;      /* heap array of borrowed names */
	size_t n;
	size_t n_s;              /* samples */
	struct qr_tensor ***v;   /* [sample][name] owned copies (NULL: not
				  * found; all NULL when full) */
	struct qr_tensor ***outs; /* [sample][output] owned copies */
	size_t n_outs;
	const struct qr_sp_cut **cuts; /* heap: the cuts that want values,
				  * in the order they asked */
	size_t **cut_names;      /* per cut: its front's indices in names */
	size_t n_cuts;
	unsigned char *kept;     /* per name: copied on every sample (the
				  * cuts that fit the budget read it) */
	size_t bytes;            /* bytes of the first sample's values */
	int full;                /* the values would pass the budget even
				  * for the first cut: none kept, the cuts
				  * run whole */
	int skip_bad;            /* a sample the base cannot take is left
				  * out (its outs NULL), not an error */
	qr_hook_fn hook;         /* sees the first sample's run, or NULL */
	void *user;              /* for hook */
	int parent;              /* keep e */
	struct qr_exec *e;       /* with parent, an executor of the base
				  * (owned), never run: the one that fills
				  * the store and the variants' executors
				  * reuse its folded weights and prepared
				  * steps; else NULL */
	struct qr_exec *e2;      /* a second such executor, for a second
				  * lane (qr_sens_parents), or NULL */
};
/* Add what cut c reads (c may be NULL) to what st keeps. When the values
 * of every cut would pass the budget, the cuts asked for first are
 * served: a cut's whole front or none of it. */
void qr_sp_store_want(struct qr_sp_store *st, const struct qr_sp_cut *c);
enum qr_status qr_sp_store_fill(struct qr_sp_store *st,
				const struct qr_model *m,
				const struct qr_exec_opts *eo,
				struct qr_tensor ***ins, const size_t *n_ins,
				size_t n_s, const char *const *fnames,
				size_t n_fin, size_t max, struct qr_diag *d);
/* Free st's values, what it was asked to keep and its executors,
 * keeping its outputs: its variants have run. */
void qr_sp_store_release(struct qr_sp_store *st);
/* Free what st holds of sample s (its entries become NULL). */
void qr_sp_store_drop(struct qr_sp_store *st, size_t s);
const struct qr_tensor *qr_sp_store_get(const struct qr_sp_store *st,
					size_t s, const char *name);
int qr_sp_store_covers(const struct qr_sp_store *st,
		       const struct qr_sp_cut *c);
void qr_sp_store_free(struct qr_sp_store *st);

/* ---- sensitivity.c, sens_runs.c, fallback.c ---- */

/* Bytes a base's store may keep over every sample: past them it keeps
 * what the first cuts read, and the others run whole (doc/sensitivity.md,
 * Cost). */
#define QR_SENS_STORE_MAX ((size_t)32 << 20)

/* The hybrid runs of one analysis. */
struct qr_sens_ctx {
	const struct qr_sens_opts *o;
	size_t n_s;              /* samples kept */
	struct qr_tensor ***ins; /* per sample: its inputs (owned) */
	size_t *n_ins;
	struct qr_tensor ***fouts; /* per sample: the float outputs (the
				  * float store's) */
	size_t n_fouts;
	const char **fin;        /* the float model's input names (heap
				  * array of the model's strings) */
	size_t n_fin;
	int threads;             /* per op, in each lane */
	int lanes;               /* variants run at once */
	int one_lane;            /* run one variant at a time with every
				  * thread (the CLE runs, each holding its
				  * own copy of most weights) */
	size_t runs;             /* model runs */
	size_t cut_runs;         /* of them, runs of a cut */
	/* the candidate being measured */
	const struct qr_model *fm, *qm; /* float model and candidate */
	struct qr_hy_plan *p;    /* its plan */
	struct qr_as_qparams *oqp; /* per output: its params */
	struct qr_sp_store fst, cst; /* the float model's and its values */
	struct qr_strmap osz;    /* float node name -> index into: */
	size_t *osz_elem, *osz_ch; /* its first output's elements and
				  * channels on the first sample (a layer's
				  * MACs), from the float model's store */
	size_t n_osz;
	int busy_lane;           /* a lane does other work: run one
				  * variant at a time, on one lane */
	int keep_models;         /* a run leaves the variants' models */
};

/* Kinds of variant. */
enum { QR_SV_WEIGHTS, QR_SV_ACTS, QR_SV_KEEP, QR_SV_QUANT, QR_SV_SET,
       QR_SV_GROUP, QR_SV_CLE /* built by cle_measured.c, on the float
				 model */ };

/* A hybrid model to build and measure. */
struct qr_sens_variant {
	int kind;                /* QR_SV_* */
	size_t layer;            /* KEEP, QUANT: the plan's layer; GROUP:
				  * the group */
	const unsigned char *set; /* SET: layers kept float (borrowed) */
	struct qr_sens_metric *out; /* where the result goes */
	char *why;               /* heap: why it did not run */
	int on_float;            /* built on the float model */
	struct qr_hy_model *h;   /* its model (owned) */
	struct qr_sp_cut *cut;   /* its cut (owned), or NULL; both freed
				  * once it has run */
	int skip;                /* not in this qr_sens_variants_run */
	size_t n_s;              /* runs on the first n_s samples only (0:
				  * on every sample) */
};

/* Read up to o->samples samples (their inputs). Errors: the feed's. */
enum qr_status qr_sens_samples_read(struct qr_sens_ctx *c,
				    const struct qr_model *fm,
				    struct qr_diag *d);
void qr_sens_samples_free(struct qr_sens_ctx *c);
/* Build the n variants' models and cuts (c->p set). */
void qr_sens_variants_build(struct qr_sens_ctx *c, struct qr_sens_variant *v,
			    size_t n);
/* What their cuts read, to the stores. */
void qr_sens_variants_want(struct qr_sens_ctx *c,
			   const struct qr_sens_variant *v, size_t n);
/* Fill the stores and run the n variants built on the float model:
 * the float model's run (c->fouts, its outputs; the samples it cannot
 * take dropped; c->osz the nodes' sizes), unless the store kept its
 * outputs and those variants want nothing else of it, and the
 * candidate's, which then runs beside them; *base gets the candidate's
 * output metrics. Errors: the bases' runs', QR_ESHAPE when no sample is
 * left. */
enum qr_status qr_sens_float_phase(struct qr_sens_ctx *c,
				   struct qr_sens_variant *v, size_t n,
				   struct qr_sens_metric *base,
				   struct qr_diag *d);
/* Layer name's multiply-accumulates per sample with params weight
 * elements, from c->osz (0 when unknown). */
size_t qr_sens_macs(const struct qr_sens_ctx *c, const char *name,
		    size_t params);
/* Measure those of the n variants built on the float model (on 1) or
 * on the candidate (on 0), or all of them (on -1), c->lanes at a time
 * (a variant whose run fails gets why, out->ran 0); each one's model
 * and cut are freed once it has run. */
void qr_sens_variants_run(struct qr_sens_ctx *c, struct qr_sens_variant *v,
			  size_t n, int on);
/* Free the candidate's graph outputs that no cut of the n variants
 * built on it reads (its own base metric taken): a decoder's logits,
 * which every cut computes again. */
void qr_sens_base_outputs_trim(struct qr_sens_ctx *c,
			       const struct qr_sens_variant *v, size_t n);
/* Give the store of the base the variants built on it (on: as in
 * qr_sens_variants_run) read from an executor per lane that runs them,
 * at most c->lanes, for their executors to reuse. */
void qr_sens_parents(struct qr_sens_ctx *c, const struct qr_sens_variant *v,
		     size_t n, int on);
void qr_sens_variants_free(struct qr_sens_variant *v, size_t n);
/* Build and measure n sets of layers kept float (sets[i] marks c->p's
 * layers) into out[i]. */
void qr_sens_measure_sets(struct qr_sens_ctx *c,
			  const unsigned char *const *sets,
			  struct qr_sens_metric *out, size_t n);
/* Variants the context runs at once. */
int qr_sens_lanes(const struct qr_sens_ctx *c);
/* Fill the float model's store alone (c->fm set; what c->fst wants):
 * c->fouts, the float outputs; the samples it cannot take dropped.
 * Errors: its runs', QR_ESHAPE when no sample is left. */
enum qr_status qr_sens_float_base(struct qr_sens_ctx *c, struct qr_diag *d);
/* cle_measured.c: a->cle_meas from runs of float model fm's variants
 * on c's samples (read, no candidate in progress: c's float store is
 * filled for them and left empty). Leaves a->cle_meas NULL when a has
 * no CLE set. */
void qr_clm_measure(struct qr_sens_ctx *c, struct qr_analysis *a,
		    const struct qr_model *fm);
/* Free a->cle_meas. */
void qr_clm_free(struct qr_analysis *a);
/* fallback.c: r->fb from r's measured layers (in c->p's order), each
 * step run. */
void qr_fb_search(struct qr_sens_ctx *c, struct qr_sens_result *r,
		  const struct qr_sens_target *t);
/* Free a->sens. */
void qr_sens_free(struct qr_analysis *a);

#endif
