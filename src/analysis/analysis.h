/*
 * analysis: what the report says about the models, computed from them.
 *
 * qr_analysis_new reads the float model and each quantized candidate
 * and produces a struct qr_analysis from their weights:
 *   - model summaries (producer, opsets, I/O, op histogram, parameters);
 *   - the quantization summary of each candidate (format, per-layer
 *     weight dtype/bits/granularity/scales, coverage);
 *   - AIMET-style per-output-channel weight ranges, relative ranges, Tukey
 *     outliers and predicted int8 SQNR per-tensor vs per-channel;
 *   - float<->quant weight pairing (by name, then by structure) with the
 *     dequantized weights' SQNR and clipping;
 *   - cross-layer-equalization sets and blockers;
 *   - memory and compression per layer;
 *   - hazards found in each candidate's graph (hazards_graph.c).
 * qr_analysis_run_data then runs representative data through the float
 * model and every candidate, one sample at a time, and adds the
 * activation comparison: matched tensors (act_match.c), streaming
 * statistics (act_stats.c, act_quant.c), local vs cumulative error
 * (act_sched.c, act_hook.c, act_results.c), where each candidate's error
 * comes from (error_sources.c), its worst samples (worst_samples.c) and
 * the activation outliers at the weighted layers' inputs (outliers.c).
 * qr_analysis_hazards then adds the hazards the data shows.
 * qr_analysis_sensitivity measures what changes buy with hybrid runs:
 * keeping layers float, quantizing them alone, and the CLE sets'
 * equalization (cle_measured.c).
 *
 * Ownership: qr_analysis_new returns a result the caller frees with
 * qr_analysis_free. Strings in it are copies owned by the result (so the
 * models may be freed first). Arrays are owned by the result.
 *
 * The maths helpers at the end work on literal arrays and are exported for
 * unit tests.
 */
#ifndef QR_ANALYSIS_H
#define QR_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

struct qr_model;
struct qr_tensor;

/* Quantization format of a model (report.json models[].format). */
enum qr_qformat {
	QR_QFMT_FLOAT = 0,   /* no quantization ops */
	QR_QFMT_QDQ,         /* QuantizeLinear/DequantizeLinear pairs */
	QR_QFMT_QOPERATOR,   /* QLinearConv, QLinearMatMul, com.microsoft QLinear* */
	QR_QFMT_DYNAMIC,     /* DynamicQuantizeLinear + MatMulInteger/ConvInteger */
	QR_QFMT_WEIGHT_ONLY, /* only weights dequantized (DQ on initializers) */
};
/* "float", "qdq", "qoperator", "dynamic", "weight-only". */
const char *qr_qformat_name(enum qr_qformat f);

/* Count of one op type in a model. */
struct qr_op_count {
	char *op;        /* "Conv", or "com.microsoft:QLinearAdd" */
	size_t count;    /* nodes of that type */
};

/* A graph input or output as shown in the summary. */
struct qr_io_desc {
	char *name;      /* tensor name */
	char *dtype;     /* "float", "uint8", ... */
	char *shape;     /* "[batch,3,224,224]"; "?" when unknown */
};

struct qr_model_summary {
	char *role;             /* "float" or "quant" */
	char *path;             /* as given on the command line */
	char *producer;         /* "pytorch 1.13" */
	int64_t ir_version;
	char *opsets;           /* "ai.onnx:13, com.microsoft:1" */
	enum qr_qformat format; /* detected format */
	size_t n_nodes;
	size_t n_inputs;
	struct qr_io_desc *inputs;
	size_t n_outputs;
	struct qr_io_desc *outputs;
	size_t n_ops;
	struct qr_op_count *ops; /* sorted by count, descending */
	size_t n_params;         /* elements in all initializers and Constants */
	size_t param_bytes;      /* their bytes as stored */
	size_t file_bytes;       /* size of the .onnx (+ external data) */
	size_t n_meta;
	char **meta_keys;        /* metadata_props */
	char **meta_values;
};

/* AIMET's per-output-channel view of one float weight. */
struct qr_weight_stats {
	char *layer;            /* node name */
	char *op;               /* Conv, ConvTranspose, Gemm, MatMul */
	char *weight;           /* initializer (or Constant output) name */
	char *shape;            /* "[64,3,7,7]" */
	int axis;               /* output-channel axis in the weight */
	size_t channels;        /* output channels */
	size_t n_elem;          /* weights in the tensor */
	float *ch_min;          /* per channel: minimum */
	float *ch_max;          /*   maximum */
	float *ch_mean;         /*   mean */
	float *ch_std;          /*   population standard deviation */
	float *rel_range;       /*   range_c / min_k range_k over the live
				 *   channels, 0 for a dead one (see
				 *   qr_rel_range) */
	double max_rel_range;   /* max over channels of rel_range */
	double tukey_fence;     /* Q3 + 1.5 IQR of rel_range over the live
				 * channels */
	size_t n_outliers;
	size_t *outliers;       /* channel indices above the fence */
	size_t n_zero_range;    /* channels whose range is 0 */
	size_t n_dead;          /* dead channels (qr_dead_channels): left
				 * out of rel_range's minimum, the fence
				 * and the outliers */
	size_t *dead;           /* their indices, ascending (n_dead) */
	double sqnr_per_tensor_db;  /* predicted int8 symmetric, one scale */
	double sqnr_per_channel_db; /* predicted int8 symmetric, scale per channel */
	int depth;              /* position of the layer in topological order */
	float *heat;            /* heat_rows x heat_cols: max |w| per (output
				   channel, input channel) pair, max-pooled
				   to at most QR_HEAT_MAX per side; NULL for
				   rank-1 weights */
	size_t heat_rows;       /* output channels (pooled) */
	size_t heat_cols;       /* input channels (pooled) */
};

#define QR_HEAT_MAX 256

/* How a float layer was paired with a quantized one. */
enum qr_match { QR_MATCH_NONE = 0, QR_MATCH_NAME, QR_MATCH_STRUCTURE };
const char *qr_match_name(enum qr_match m); /* "none", "name", "structure" */

/* One quantized compute layer of a candidate. */
struct qr_quant_layer {
	char *layer;            /* quant node name (the compute node) */
	char *op;               /* QLinearConv, Conv (QDQ), MatMulInteger, ... */
	char *weight;           /* quantized weight initializer name */
	char *weight_dtype;     /* "int8", "uint8", "int4", ... */
	int bits;               /* 8, 4, 16 */
	int per_channel;        /* 1 when scale has more than one element */
	int axis;               /* quantization axis when per_channel */
	size_t block_size;      /* > 0: blocks of this many along axis */
	size_t n_scales;        /* scale elements */
	double scale_min, scale_max;
	double zp_min, zp_max;
	int act_quantized;      /* 1 when the layer's input activation is quantized */
};

/* A compute node of a candidate and whether it runs quantized. */
struct qr_coverage_entry {
	char *layer;            /* node name */
	char *op;               /* op type as it appears in the quant model */
	int quantized;          /* 1: runs on quantized data; 0: stays float */
};

struct qr_quant_summary {
	char *path;             /* quant model path */
	enum qr_qformat format;
	size_t n_layers;
	struct qr_quant_layer *layers;
	size_t n_coverage;
	struct qr_coverage_entry *coverage;
	size_t n_quantized;     /* coverage entries with quantized = 1 */
	size_t float_bytes;     /* param bytes of the float model */
	size_t quant_bytes;     /* param bytes of this candidate */
};

/* A float weight paired with its quantized counterpart (quant_weights[]). */
struct qr_quant_weight {
	size_t quant;           /* index of the candidate (0-based) */
	char *layer;            /* float node name */
	char *quant_layer;      /* quant node name */
	char *weight;           /* float weight name */
	char *quant_weight;     /* quantized weight name */
	enum qr_match match;    /* how the pairing was made */
	char *match_reason;     /* e.g. "name W -> W_quantized" */
	char *folded;           /* the per-channel ops after the layer folded
				 * into either side's weight before comparing
				 * ("float weight folded with
				 * BatchNormalization 'bn'"), or NULL */
	char *granularity;      /* "per-tensor", "per-channel" or
				 * "per-block" */
	size_t block_size;      /* per-block: elements a scale covers */
	int bits;
	double sqnr_db;         /* float weight vs dequantized quant weight */
	size_t clipped;         /* quantized values at qmin or qmax */
	size_t n_elem;
	size_t float_bytes;     /* bytes of the float weight */
	size_t quant_bytes;     /* bytes of the quantized weight + scale + zp */
	double compression;     /* float_bytes / quant_bytes */
	size_t out_of_range;    /* float weights more than half a step outside
				 * [(qmin-zp)*scale, (qmax-zp)*scale]: the
				 * values that really lost range (clipped counts
				 * every value at qmin/qmax, which includes each
				 * channel's max|w| in symmetric schemes) */
};

/* A layer of a CLE set (before/after view of its output channels). */
struct qr_cle_layer {
	char *name;             /* node name */
	size_t node;            /* its index in the float graph */
	char *op;               /* Conv */
	int depthwise;          /* 1 for a depthwise conv */
	int bn_folded;          /* 1 when a BatchNormalization was folded in */
	size_t channels;        /* output channels */
	float *min_before, *max_before; /* per output channel, after BN fold */
	float *min_after, *max_after;   /* after equalization */
};

/* A set of 2 or 3 convs that can be equalized (cle[]). */
struct qr_cle_set {
	size_t n_layers;        /* 2 or 3 */
	struct qr_cle_layer layers[3];
	char *joins[2];         /* "Relu", "PRelu" or "direct" between layers */
	size_t n_scales[2];     /* channels at each boundary */
	float *scales[2];       /* s per channel at each boundary */
	double max_rel_range_before; /* max over the set's layers */
	double max_rel_range_after;
	double sqnr_per_tensor_before_db; /* mean predicted int8 per-tensor SQNR */
	double sqnr_per_tensor_after_db;
	int bits;               /* weight bits of the prediction */
};

/* Two convs that would form a CLE set but for something between them. */
struct qr_cle_blocker {
	size_t clip;            /* the Clip(0,6) between them (node index
				 * in the float graph) */
	char *from, *to;        /* node names */
	char *reason;           /* "Clip(0,6) between conv1 and conv2" */
	char *fix;              /* "replace ReLU6 with ReLU" */
};

struct qr_analysis_opts {
	int bits;               /* weight bits for predictions (8) */
	double tukey_k;         /* fence multiplier (1.5) */
};

/* ---- activations: representative data through every model ---- */

#define QR_ACT_HIST_BINS 64      /* shared float/quant histogram bins */

/* Flags of a matched activation (struct qr_act_pair.flags). */
enum {
	QR_ACT_FLAG_COSINE = 1,      /* mean cosine below the threshold */
	QR_ACT_FLAG_SQNR = 2,        /* cumulative SQNR below the threshold */
	QR_ACT_FLAG_RMSE_SCALE = 4,  /* local rmse/scale above 0.7, 8-bit
				      * or narrower activations */
	QR_ACT_FLAG_SATURATION = 8,  /* over 1% of float values outside the
				      * quantized range */
	QR_ACT_FLAG_NONFINITE = 16,  /* NaN or Inf in either tensor */
	QR_ACT_FLAG_SHAPE = 32,      /* element counts or dims (1s aside)
				      * differ: not compared */
	QR_ACT_FLAG_CANCEL = 64,     /* float RMS below 1e-5 of its inputs'
				      * (an Add, Sub or mean that cancels):
				      * rounding noise, so its cosine and
				      * SQNR are not flagged and no verdict
				      * points at it */
	QR_ACT_FLAG_SUSPECT = 128,   /* suspect pairing: its error vanishes
				      * in the next compared layer, which
				      * quantization cannot do
				      * (error_sources.c); no verdict points
				      * at it */
};

/* Flags that take a pair out of every verdict: it is not a finding. */
#define QR_ACT_NOT_FINDING (QR_ACT_FLAG_CANCEL | QR_ACT_FLAG_SUSPECT)

#define QR_OL_ALPHAS 11           /* migration strengths 0, 0.1, ..., 1 */

/* SmoothQuant's view of a weighted layer's input (outliers.c): per input
 * channel j the float activation's max |x| (a_j) against the weight's
 * max |w| (w_j), and the predicted SQNR of the layer's int8 product when
 * s_j = a_j^alpha / w_j^(1-alpha) moves range from the activation to the
 * weight (Xiao et al. 2023). */
struct qr_act_outlier {
	char *layer;            /* the Conv, Gemm or MatMul */
	char *op;               /* its op type */
	size_t tensor;          /* its input: index into act_tensors */
	int depth;              /* the layer's topological position */
	size_t channels;        /* input channels */
	float *act_absmax;      /* a_j: max |x| per input channel, all
				 * samples */
	float *w_range;         /* w_j: max |w| over the weights reading
				 * input channel j */
	double absmax_max;      /* max_j a_j */
	double absmax_median;   /* median_j a_j (numpy's) */
	double max_over_median; /* their ratio; NaN when the median is 0 */
	size_t top_channel;     /* the j of max_j a_j */
	double kurtosis;        /* m4 / m2^2 of the activation's values
				 * (central moments; 3 for a Gaussian) */
	double sqnr_none_db;    /* predicted SQNR of the int8 product as the
				 * layer is (no migration: s_j = 1), dB */
	double sqnr_db[QR_OL_ALPHAS]; /* the same after migration at alpha =
				 * k / (QR_OL_ALPHAS - 1), dB */
	double best_alpha;      /* the alpha of the best SQNR (the lowest
				 * on ties) */
	double best_sqnr_db;
	float *heat;            /* 4 x heat_cols: log10(a_j / median), log10
				 * (w_j / median), the same at alpha 0.5;
				 * channels max-pooled to heat_cols */
	size_t heat_cols;
};

/* A float activation that some candidate's tensor was matched to, with
 * the float model's own statistics (shared by all candidates). */
struct qr_act_tensor {
	char *name;             /* float tensor name */
	char *layer;            /* producing node name ("" for a graph input) */
	char *op;               /* its op type ("input" for a graph input) */
	int depth;              /* topological position of the producer; -1
				 * for a graph input */
	char *shape;            /* "[1,64,56,56]", as in the first sample */
	size_t channels;        /* ch_* entries: axis 1 for rank >= 3, the
				 * last axis for rank 2, 1 otherwise */
	float *ch_min;          /* per channel, over all samples */
	float *ch_max;
	float *ch_mean;
	double min, max;        /* over the whole tensor and all samples */
	uint64_t n_values;      /* elements seen, all samples */
};

/* One float tensor compared with its counterpart in one candidate. All
 * sums run over every sample ("samples concatenated"). */
struct qr_act_pair {
	size_t quant;           /* candidate index (0-based) */
	size_t tensor;          /* index into qr_analysis.act_tensors */
	char *quant_tensor;     /* the candidate's tensor compared */
	char *quant_dtype;      /* its dtype: "uint8", "float", ... */
	enum qr_match match;    /* name or structure */
	char *match_reason;     /* "name X -> X_DequantizeLinear_Output" */
	size_t samples;         /* samples compared */
	double cosine_mean;     /* cosine per sample, mean over samples */
	double cosine_min;      /*   minimum over samples */
	double cosine_max;      /*   maximum over samples */
	double mse;             /* mean (x-y)^2 */
	double max_abs;         /* max |x-y| */
	double norm_l2;         /* ||x-y|| / ||x|| */
	double sqnr_db;         /* 10 log10(sum x^2 / sum (x-y)^2); +inf exact */
	double local_cosine_mean; /* the same with every input taken from the */
	double local_cosine_min;  /* float model (the local run) */
	double local_mse;
	double local_sqnr_db;
	uint64_t nan_float, inf_float; /* non-finite values in x */
	uint64_t nan_quant, inf_quant; /* non-finite values in y */
	int has_qparams;        /* 1: the quantized tensor has a scale */
	double scale;           /* its scale (per tensor; the first of a
				 * per-channel one) */
	double zero_point;      /* its zero point */
	double qmin, qmax;      /* integer range of its dtype */
	double saturation;      /* fraction of float values more than half a
				 * step outside [(qmin-zp)s, (qmax-zp)s] */
	double rmse_over_scale; /* sqrt(local mse) / scale; about 0.289 =
				 * 1/sqrt(12) when only rounding is lost */
	double hist_lo, hist_hi; /* shared bin range (first sample, padded) */
	uint64_t hist_float[QR_ACT_HIST_BINS]; /* float values per bin */
	uint64_t hist_quant[QR_ACT_HIST_BINS]; /* quantized values per bin */
	uint64_t under_float, over_float; /* outside [hist_lo, hist_hi] */
	uint64_t under_quant, over_quant;
	int flags;              /* QR_ACT_FLAG_* */
	/* where the error comes from (error_sources.c) */
	double noise_db;        /* noise the layer makes itself over its
				 * signal, 10 log10(local sum (x-y)^2 / sum
				 * x^2) = -local_sqnr_db; -inf when exact */
	double noise_share;     /* its share (0..1) of the noise the
				 * candidate's layers make; NaN when left out
				 * (cancellation, nothing compared) */
	double noise_gain_db;   /* its cumulative noise-to-signal ratio over
				 * what its inputs bring plus what it makes,
				 * dB; NaN when undefined */
	int same_grid;          /* 1: only moves or selects values already
				 * on its input's grid (same scale and zero
				 * point), so the candidate loses nothing
				 * there: no share */
};

/* What a graph output holds, read from the float model's first sample
 * (outputs.c): the metrics beyond cosine and SQNR follow from it. */
enum qr_out_kind {
	QR_OUT_OTHER = 0,        /* anything else (boxes, features): cosine
				  * and SQNR per sample only */
	QR_OUT_CLASSIFIER,       /* float [N, C] or [N, C, 1, 1], C >= 2, N
				  * the batch of the first input: one score
				  * row per item */
	QR_OUT_SEGMENTER,        /* float [N, C, H, W], C >= 2, H W > 1:
				  * class scores per pixel */
};
/* "other", "classifier", "segmenter". */
const char *qr_out_kind_name(int kind);

#define QR_FLIP_MATRIX_MAX 20    /* classes up to which the whole flip
				  * matrix is kept */

/* Float class -> candidate class, for the rows whose top-1 differs. */
struct qr_class_flip {
	size_t from;             /* the float model's class */
	size_t to;               /* the candidate's class */
	size_t count;            /* rows */
};

/*
 * A classifier output compared (outputs.c). Each row is a distribution:
 * softmax of the values when they are logits, the values divided by
 * their sum when the float model's first sample gives probabilities
 * (every row in [0, 1] summing to 1); the float model's is the
 * reference.
 */
struct qr_out_classes {
	size_t classes;          /* C */
	int probabilities;       /* 1: the values are probabilities, used
				  * as they are; 0: logits, softmax taken */
	size_t k;                /* classes in the top-k overlap: min(5, C) */
	size_t rows;             /* rows compared, every sample */
	size_t flipped;          /* rows whose top-1 class differs */
	double kl_mean;          /* mean over rows of KL(P_float || P_quant),
				  * nats */
	double kl_max;           /* the largest of one row */
	double top1;             /* rows with the same top-1 / rows */
	double top5;             /* mean over rows of |topk_f ∩ topk_q| / k */
	size_t samples;          /* entries in the per-sample arrays */
	double *kl;              /* per sample: mean KL over its rows */
	double *top1_s;          /* per sample: same top-1 / rows */
	double *top5_s;          /* per sample: mean top-k overlap */
	size_t n_flips;          /* distinct (from, to) pairs */
	struct qr_class_flip *flips; /* every one, most rows first (then by
				  * from, to) */
	uint64_t *matrix;        /* classes x classes rows counted by
				  * [float class][candidate class] when
				  * classes <= QR_FLIP_MATRIX_MAX, else
				  * NULL */
};

/* A segmenter output compared: the class of each pixel is the argmax
 * over C (the first index of the maximum). */
struct qr_out_seg {
	size_t classes;          /* C */
	uint64_t pixels;         /* pixels compared, every sample */
	uint64_t agree;          /* pixels with the same class */
	size_t samples;          /* entries in agree_s */
	double *agree_s;         /* per sample: agreeing pixels / pixels */
	uint64_t *inter;         /* per class: pixels both give it */
	uint64_t *uni;           /* per class: pixels either gives it */
	double miou;             /* mean of inter / uni over the classes
				  * with uni > 0; NaN when none */
};

/* A graph output of the float model compared with a candidate's output
 * at the same position. */
struct qr_act_output {
	size_t quant;           /* candidate index */
	char *name;             /* float output name */
	char *quant_name;       /* candidate output name */
	size_t samples;         /* entries in the per-sample arrays */
	double *cosine;         /* per sample */
	double *sqnr_db;        /* per sample */
	double cosine_mean, cosine_min;
	double sqnr_total_db;   /* samples concatenated */
	int classifier;         /* kind is QR_OUT_CLASSIFIER */
	size_t rows;            /* classifier rows compared (batch x samples) */
	size_t agree;           /* rows with the same top-1 class */
	size_t labeled;         /* rows with a label */
	size_t float_correct;   /* labeled rows the float model got right */
	size_t quant_correct;   /* labeled rows the candidate got right */
	int kind;               /* enum qr_out_kind */
	struct qr_out_classes *cls; /* QR_OUT_CLASSIFIER: KL, top-k, flips
				 * (owned), else NULL */
	struct qr_out_seg *seg; /* QR_OUT_SEGMENTER: pixel agreement, IoU
				 * (owned), else NULL */
};

/* A float tensor a candidate has no counterpart for. */
struct qr_act_unmatched {
	size_t quant;           /* candidate index */
	char *tensor;           /* float tensor name */
	char *layer;            /* its producer */
	char *reason;           /* why */
};

/* Groups of ops for the error shares (qr_op_group). */
enum qr_op_group {
	QR_OPG_LINEAR = 0,       /* Conv, Gemm, MatMul and other weighted ops */
	QR_OPG_ELTWISE,          /* Add, Mul, Div, Pow, ... */
	QR_OPG_ACTIVATION,       /* Relu, Sigmoid, Gelu, Exp, ... */
	QR_OPG_POOL,             /* pools and reductions */
	QR_OPG_NORM,             /* normalizations and Softmax */
	QR_OPG_MOVE,             /* reshapes, concats, gathers, resizes */
	QR_OPG_INPUT,            /* graph inputs */
	QR_OPG_OTHER,
	QR_OPG_N
};
/* The group of an op type of the float model ("input" for a graph input). */
int qr_op_group(const char *op);
/* "Conv/Gemm/MatMul", "elementwise", "activations", "pooling",
 * "normalization", "data movement", "inputs", "other". */
const char *qr_op_group_name(int g);

#define QR_ES_TOP 5              /* creators and amplifiers listed */
#define QR_ES_DOMINANT 0.5       /* a layer that makes this share of the
				  * noise makes more than all others
				  * together: without it the output's
				  * noise at least halves (+3 dB) */
#define QR_ES_AMPLIFY_DB 3.0     /* a gain from which a layer amplifies:
				  * it doubles the noise it is given */

/* Where one candidate's error comes from (error_sources.c). */
struct qr_error_sources {
	int computed;            /* 1 once the pairs were analysed */
	double created_db;       /* 10 log10 of the summed noise-to-signal
				  * ratios the layers make (-inf: none) */
	double top_share;        /* the largest noise_share; NaN: no noise */
	int accumulates;         /* 1: no layer makes QR_ES_DOMINANT of the
				  * noise: it builds up over many */
	size_t n_creators;
	long creators[QR_ES_TOP];   /* act_pairs indices, largest share first */
	size_t n_amplifiers;
	long amplifiers[QR_ES_TOP]; /* act_pairs indices, largest gain first
				     * (gain of QR_ES_AMPLIFY_DB or more) */
	double group_share[QR_OPG_N]; /* share of the noise per op group */
	size_t group_pairs[QR_OPG_N]; /* pairs analysed per op group */
	size_t n_suspect;        /* pairs flagged QR_ACT_FLAG_SUSPECT */
};

#define QR_WORST_SAMPLES 5       /* worst samples kept per candidate */

/* A sample whose output the candidate matches worst. */
struct qr_worst_sample {
	size_t sample;           /* index into data.sample_names */
	double cosine;           /* its output cosine (lowest over outputs) */
	size_t n_trace;          /* the candidate's act_pairs */
	float *trace;            /* its cosine per pair of the candidate, in
				  * act_pairs order; NaN where not compared */
	uint8_t *thumb;          /* RGB thumbnail (thumb_w x thumb_h), or
				  * NULL: not an image */
	int thumb_w, thumb_h;    /* pixels */
};

/* A decoder block's output compared (struct qr_llm_result.blocks). */
struct qr_llm_block {
	int block;              /* N of the layers.N / layers/N in its names */
	long pair;              /* its output: the block's last compared
				 * tensor in depth order (index into
				 * act_pairs) */
	double sqnr_db;         /* that pair's cumulative SQNR, dB */
	double cosine;          /* its mean cosine */
	double local_sqnr_db;   /* its local SQNR, dB */
};

/*
 * What a candidate does to a decoder LLM's next-token predictions
 * (llm_metrics.c), from the logits output ([B, S, V] or [B, V]) of a
 * model with an input_ids input, the float model's as reference. Each
 * position's distribution is softmax(logits) in double. Averages pool
 * every position of every sample.
 */
struct qr_llm_result {
	char *output;           /* the logits output (float model's name) */
	size_t vocab;           /* V */
	size_t samples;         /* samples compared (entries per array) */
	size_t positions;       /* positions compared, every sample */
	double *kl;             /* per sample: mean over its positions of
				 * KL(P_float || P_quant), nats */
	double *top1;           /* per sample: positions with the same
				 * argmax / positions */
	double *top5;           /* per sample: mean |top5_f ∩ top5_q| / 5 */
	double kl_mean;         /* over every position, nats */
	double kl_max;          /* largest of one position */
	double top1_agree;      /* over every position */
	double top5_overlap;    /* over every position */
	int perplexity;         /* 1: the token ids are data (not random),
				 * so the perplexities below are set */
	double *ppl_float;      /* per sample: exp(mean NLL of ids[t+1]
				 * at positions t = 0..S-2), float model */
	double *ppl_quant;      /* the same, candidate */
	size_t ppl_tokens;      /* predicted tokens, every sample */
	double ppl_float_all;   /* exp(NLL summed over every predicted
				 * token / ppl_tokens), float model */
	double ppl_quant_all;   /* the same, candidate */
	double ppl_change;      /* ppl_quant_all / ppl_float_all - 1 */
	size_t n_blocks;
	struct qr_llm_block *blocks; /* by block number */
};

/* How the data run went for one candidate. */
struct qr_act_run {
	char *path;             /* candidate path */
	int ran;                /* 1 when its activations were compared */
	char *why;              /* ran == 0: the reason (engine, shapes) */
	size_t n_pairs;         /* matched tensors */
	size_t n_name;          /*   by name */
	size_t n_structure;     /*   by structure */
	size_t n_flagged;       /* pairs with a threshold flag */
	long born;              /* pair (index into act_pairs) that makes
				 * most of the noise, when it makes
				 * QR_ES_DOMINANT of it or more; else -1 */
	double born_drop_db;    /* cumulative SQNR from its inputs to it,
				 * dB (SQNR capped at 100 dB) */
	long worst_local;       /* pair with the lowest local SQNR, or -1 */
	double seconds;         /* time in its runs */
	double born_share;      /* born's noise_share */
	struct qr_error_sources es; /* where the error comes from */
	size_t n_worst;         /* worst samples, lowest output cosine first */
	struct qr_worst_sample worst[QR_WORST_SAMPLES];
	struct qr_llm_result *llm; /* a decoder's next-token metrics
				    * (owned), NULL for other models */
};

/* A sample the float model could not take, left out of every number. */
struct qr_act_skip {
	char *sample;           /* its display name (file name, "random #3") */
	char *why;              /* the float run's error on it */
};

/* The representative data and what the run found. */
struct qr_act_data {
	int ran;                /* 1 when samples went through the models */
	char *why;              /* ran == 0 and set: the reason (the float
				 * model cannot run) */
	char *source;           /* "random", "images", "npy", "pb" */
	char *preprocessing;    /* one line, or NULL */
	size_t samples;         /* samples run */
	char **sample_names;    /* per sample */
	size_t n_skipped;       /* samples skipped: the float model cannot
				 * take them (shapes), in feed order */
	struct qr_act_skip *skipped;
	int *labels;            /* per sample, -1 without a label */
	size_t n_classes;
	char **classes;         /* class names, label order */
	size_t n_warnings;
	char **warnings;        /* data problems (skipped files) */
	double cos_threshold;   /* flags: mean cosine below */
	double sqnr_threshold;  /* flags: SQNR below, dB */
	double seconds;         /* wall time of the data run */
};

/* ---- hazards: what in a candidate is known to cost accuracy ---- */

/* Kinds of hazard, in the order the report lists them (hazards.c and
 * hazards_graph.c say how each is found). */
enum qr_hazard_kind {
	QR_HZ_BAD_SCALE = 0,    /* a scale zero, negative, denormal or not
				 * finite */
	QR_HZ_BAD_ZERO_POINT,   /* a zero point outside its integer type */
	QR_HZ_SATURATION,       /* over 1% of an activation's values clipped */
	QR_HZ_SCALE_MISMATCH,   /* an activation scale over 4x off the one
				 * the data asks for */
	QR_HZ_INPUT_SCALES,     /* Concat/Add input scales over 16x apart */
	QR_HZ_SHARED_SCALE,     /* Concat/Add inputs share one scale, their
				 * float ranges over 16x apart */
	QR_HZ_SENSITIVE_8BIT,   /* Softmax, LayerNormalization, Sigmoid or
				 * Exp output in 8 bits */
	QR_HZ_REQUANT_CHAIN,    /* 3 or more elementwise ops requantized at
				 * every step */
	QR_HZ_HALF_RANGE,       /* one-signed values, half the codes kept
				 * for the other sign */
	QR_HZ_PER_TENSOR,       /* a per-tensor weight that per-channel
				 * scales would improve by over 6 dB */
	QR_HZ_FIRST_LAST,       /* the first or last compute layer quantized */
	QR_HZ_N
};
/* "bad_scale", "saturation", ... (report.json hazards[].kind). */
const char *qr_hazard_kind_name(int kind);

/* A node or tensor a hazard concerns. */
struct qr_hazard_ref {
	char *name;             /* the candidate's node or tensor */
	char *layer;            /* the float layer it stands for, or NULL */
};

#define QR_HAZARD_MAX_NUMS 6

struct qr_hazard {
	int kind;               /* enum qr_hazard_kind */
	size_t quant;           /* candidate index */
	size_t n_refs;          /* entries in refs */
	struct qr_hazard_ref *refs; /* what it concerns, the main one first */
	size_t n_nums;          /* entries used in nums */
	struct {
		const char *key; /* static: "ratio", "saturation", ... */
		double v;        /* NaN when unknown */
	} nums[QR_HAZARD_MAX_NUMS]; /* the measured numbers */
	char *what;             /* one sentence: what was measured */
	char *fix;              /* one sentence: the fix */
	size_t seq;             /* order found (ties of the listing order) */
};

/* ---- what to change: hybrid runs (sensitivity.c, fallback.c) ---- */

enum qr_sens_mode {
	QR_SENS_NONE = 0,        /* no hybrid runs */
	QR_SENS_QUICK,           /* the layers the local errors rank
				  * highest, QR_SENS_QUICK_LAYERS of them,
				  * kept float alone */
	QR_SENS_FULL,            /* every quantized layer */
};
#define QR_SENS_QUICK_LAYERS 10
#define QR_SENS_SAMPLES 8        /* default --sensitivity-samples */

/* Metrics a target can name (struct qr_sens_target.metric). */
enum { QR_SENS_COSINE = 0, QR_SENS_SQNR, QR_SENS_TOP1 };

/* "output.cosine>=0.999": what the fallback plan must reach. */
struct qr_sens_target {
	int metric;              /* QR_SENS_COSINE, _SQNR or _TOP1 */
	double value;            /* the bound; met when the metric >= it */
};
/* Parse "output.cosine>=0.999" (cosine, sqnr in dB, top1 as a fraction;
 * ">=" or ">"). QR_EUSAGE with a message naming s. */
enum qr_status qr_sens_target_parse(const char *s, struct qr_sens_target *t,
				    struct qr_diag *d);
/* "output.cosine>=0.999" into buf (n bytes); returns buf. */
const char *qr_sens_target_str(const struct qr_sens_target *t, char *buf,
			       size_t n);

/* A hybrid model's outputs against the float model's on the same
 * samples: the lowest over graph outputs of each metric. */
struct qr_sens_metric {
	int ran;                 /* 1: measured; 0: not run (why says) */
	double cosine;           /* mean over samples of the cosine */
	double sqnr_db;          /* samples concatenated, dB */
	double top1;             /* rows with the float model's top-1
				  * class / rows, classifier outputs and a
				  * decoder's logits; NaN for others */
	double kl;               /* mean KL(float || run) of those rows'
				  * distributions (a decoder's next-token
				  * distributions), nats; NaN for others */
};

/* A quantized layer of a candidate and what it costs. */
struct qr_sens_layer {
	char *layer;             /* float node name */
	char *quant_layer;       /* candidate node name */
	char *op;                /* candidate op type */
	int depth;               /* candidate topological position */
	double local_share;      /* its share of the noise the layers make
				  * (the activation run's local errors;
				  * NaN: not known), quick's ranking */
	size_t params;           /* float weight elements */
	size_t macs;             /* multiply-accumulates per sample (the
				  * float model's output shape; 0 when
				  * unknown) */
	struct qr_sens_metric kept_float; /* only this layer kept float */
	struct qr_sens_metric quant_only; /* only this layer quantized */
	char *why;               /* set when it cannot be kept float */
};

/* Groups of changes made at once (hybrid_groups.c). */
enum {
	QR_SENS_GROUP_ELTWISE = 0, /* elementwise outputs in float */
	QR_SENS_GROUP_SENSITIVE,   /* Softmax, LayerNorm, Sigmoid outputs */
	QR_SENS_GROUP_FIRST_LAST,  /* first and last layer kept float */
	QR_SENS_GROUP_PER_CHANNEL, /* per-channel weights */
	QR_SENS_GROUPS
};
/* "elementwise", "sensitive", "first_last", "per_channel". */
const char *qr_sens_group_name(int g);

/* A group what-if of a candidate (--sensitivity full). */
struct qr_sens_group {
	struct qr_sens_metric m; /* its output */
	size_t changed;          /* ops or layers it changed */
	char *why;               /* set when it does not apply or failed */
};

/* The fallback plan: layers kept float, in the order chosen. */
struct qr_sens_fallback {
	int computed;            /* 1 once searched */
	int met;                 /* the target is met by the last step */
	size_t n_steps;          /* entries in order and curve */
	size_t *order;           /* layers (index into layers) */
	struct qr_sens_metric *curve; /* measured after each step: curve[i]
				  * with order[0..i] kept float */
	size_t n_plan;           /* steps the plan keeps (the first that
				  * meets the target, else all tried) */
	size_t float_bytes;      /* float weight bytes the plan adds */
	size_t macs;             /* multiply-accumulates it runs in float */
};

/* Hybrid runs of one candidate. */
struct qr_sens_result {
	int ran;                 /* 1: the runs happened */
	char *why;               /* ran 0: why not */
	char *semantics;         /* what "kept float" means for its format */
	enum qr_sens_mode mode;
	size_t samples;          /* samples every run used */
	struct qr_sens_metric base;   /* the candidate as it is */
	struct qr_sens_metric weights_only; /* only its weights quantized */
	struct qr_sens_metric acts_only;    /* only its activations */
	char *verdict;           /* one line naming the side to work on */
	size_t n_layers;
	struct qr_sens_layer *layers; /* ranked: measured ones by kept-float
				  * cosine, best first; then the rest by
				  * local share */
	size_t n_measured;       /* the first n_measured were run */
	struct qr_sens_fallback fb;
	int has_groups;          /* the group what-ifs were run (full) */
	struct qr_sens_group groups[QR_SENS_GROUPS];
	size_t runs;             /* model runs made (samples x models) */
	size_t cut_runs;         /* of them, runs that started from the
				  * base's values where the change starts */
	double seconds;          /* wall time of its runs */
};

/* CLE, measured (cle_measured.c): the float model with every layer of
 * every CLE set quantized per tensor (symmetric, the bits the CLE page
 * predicts with), activations float, run with and without equalization
 * applied to its float weights: quick measures every set equalized at
 * once, full each set alone too. */

/* One equalized variant of that model. */
struct qr_cle_run {
	struct qr_sens_metric m; /* its output against the float model's */
	double gain_db;          /* m.sqnr_db less the base's; NaN when
				  * either did not run */
	char *why;               /* not measured: why (heap), else NULL */
};

/* The sets ReLU6 blocks, measured: the float model with every Clip(0,6)
 * that blocks a set a Relu, then the sets of that model (those that were
 * blocked and the others) quantized and equalized as above. */
struct qr_cle_swap {
	int tried;               /* some Clip(0,6) blocked a set */
	char *why;               /* not measured: why (heap), else NULL */
	size_t n_clips;          /* Clip(0,6) nodes made Relu */
	size_t n_sets;           /* sets of the swapped model */
	size_t n_layers;         /* their layers, quantized */
	struct qr_sens_metric swap_only; /* swapped, nothing quantized: what
				  * the swap alone does to the output */
	struct qr_sens_metric base; /* swapped, quantized, not equalized */
	struct qr_cle_run all;   /* swapped, every set equalized, quantized:
				  * gain_db against base */
};

struct qr_cle_measured {
	int ran;                 /* 1: the base ran */
	char *why;               /* ran 0: why not (heap) */
	enum qr_sens_mode mode;
	size_t samples;          /* samples every run used */
	int bits;                /* weight bits (--bits) */
	size_t n_layers;         /* layers quantized: those of every set */
	size_t n_equalizable;    /* sets whose equalization keeps the
				  * float function (the others are left
				  * out of every run) */
	struct qr_sens_metric base; /* quantized, nothing equalized */
	struct qr_cle_run all;   /* every equalizable set equalized, in
				  * topological order, each from the
				  * weights the sets before it left (as
				  * the CLE page predicts) */
	struct qr_sens_metric float_check; /* every equalizable set
				  * equalized, not quantized: the float
				  * model's function, to rounding */
	size_t n_sets;           /* a->n_cle */
	struct qr_cle_run *sets; /* per CLE set: it alone equalized */
	struct qr_cle_swap relu6; /* with the blocking ReLU6 made ReLU */
	size_t runs;             /* model runs made (samples x models) */
	size_t cut_runs;         /* of them, runs of a cut */
	double seconds;          /* wall time of its runs */
};

struct qr_an_hazard_plan;

struct qr_analysis {
	size_t n_models;                  /* 1 + number of candidates */
	struct qr_model_summary *models;  /* [0] float, [1..] candidates */
	size_t n_weights;
	struct qr_weight_stats *weights;  /* float model, topological order */
	size_t n_quant;
	struct qr_quant_summary *quants;  /* one per candidate */
	size_t n_qweights;
	struct qr_quant_weight *qweights;
	size_t n_unmatched;
	char **unmatched;                 /* "conv3 (candidate 1): reason" */
	size_t n_cle;
	struct qr_cle_set *cle;
	size_t n_cle_blockers;
	struct qr_cle_blocker *cle_blockers;
	int cle_bits;                     /* weight bits of its predictions */
	double seconds;                   /* time spent analysing */
	/* activations (qr_analysis_run_data; empty until it runs) */
	struct qr_act_data data;          /* the data and its run */
	size_t n_act_tensors;
	struct qr_act_tensor *act_tensors; /* matched float tensors, by depth */
	size_t n_act_pairs;
	struct qr_act_pair *act_pairs;    /* by candidate, then depth */
	size_t n_act_outputs;
	struct qr_act_output *act_outputs; /* by candidate, then output */
	size_t n_act_unmatched;
	struct qr_act_unmatched *act_unmatched;
	struct qr_act_run *act_runs;      /* n_quant entries, or NULL */
	/* hazards (qr_analysis_hazards) */
	size_t n_hazards;                 /* entries in hazards */
	struct qr_hazard *hazards;        /* by candidate, then kind */
	struct qr_an_hazard_plan *hz_plan; /* what the graph pass keeps for
					    * the data pass (hazards.c) */
	size_t n_outliers;
	struct qr_act_outlier *outliers;  /* activation outliers at the
					   * inputs of weighted layers, by
					   * depth */
	/* what to change (qr_analysis_sensitivity) */
	struct qr_sens_result *sens;      /* n_quant entries, or NULL */
	struct qr_sens_target target;     /* what the fallback aims at */
	struct qr_cle_measured *cle_meas; /* CLE, measured; NULL when not
					   * run (no set, no what-to-change
					   * runs) */
};

/* Analyse the float model and n_quant candidates (quant may be NULL when
 * n_quant is 0). Errors: QR_EGRAPH for a malformed graph, QR_ESHAPE for a
 * weight whose shape disagrees with its node (naming both); warnings go to
 * d. */
enum qr_status qr_analysis_new(const struct qr_model *fmodel,
			       const struct qr_model *const *quant,
			       size_t n_quant,
			       const struct qr_analysis_opts *opts,
			       struct qr_analysis **out, struct qr_diag *d);
void qr_analysis_free(struct qr_analysis *a);
/*
 * An analysis of n_quant candidates with nothing in it, for
 * qr_analysis_run_data to fill while qr_analysis_new runs on another
 * thread (the two write disjoint fields and only read the models);
 * qr_analysis_take_data then joins them. Free with qr_analysis_free.
 */
struct qr_analysis *qr_analysis_new_data(size_t n_quant);
/* Move src's data-run results (data and act_*) into dst, which has none
 * and the same number of candidates; src is left without them. dst's
 * hazards are then computed again with the data (qr_analysis_hazards). */
void qr_analysis_take_data(struct qr_analysis *dst, struct qr_analysis *src);
/*
 * Fill a->hazards: the graph hazards qr_analysis_new found and, when the
 * data ran, the ones its statistics show (shared scales over inputs whose
 * ranges are far apart, saturation, scales far off the data's, half the
 * codes unused). qr_analysis_new and qr_analysis_take_data call it; call
 * it again after running qr_analysis_run_data on a itself.
 */
void qr_analysis_hazards(struct qr_analysis *a);
/* log2 of the codes activation p's float range (t's min and max, cut to
 * what p's scale and zero point represent) spans, at most p's bits; NaN
 * without a scale or data. */
double qr_act_effective_bits(const struct qr_act_pair *p,
			     const struct qr_act_tensor *t);

/*
 * The next sample for qr_analysis_run_data: *inputs gets *n_inputs tensors
 * named after the float model's graph inputs (borrowed until the next
 * call), *label a class index or -1, *name a display name. *n_inputs == 0
 * ends the data. A status other than QR_OK stops the run with it.
 */
typedef enum qr_status (*qr_sample_fn)(void *user,
				       struct qr_tensor *const **inputs,
				       size_t *n_inputs, int *label,
				       const char **name, struct qr_diag *d);
/* Called after each model run: done of total (samples x models). */
typedef void (*qr_progress_fn)(size_t done, size_t total, void *user);

/* Default of qr_act_opts.pipe_bytes. */
#define QR_ACT_PIPE_BYTES ((size_t)64 << 20)

struct qr_act_opts {
	qr_sample_fn next;       /* the data */
	void *user;              /* for next */
	size_t samples;          /* samples expected (progress total) */
	const char *source;      /* "random", "images", ... (copied) */
	const char *preprocessing; /* one line (copied), or NULL */
	const char *const *classes; /* class names (copied), or NULL */
	size_t n_classes;
	size_t warn_first;       /* d's warnings from this index on are data
				  * warnings (copied into data.warnings) */
	double cos_threshold;    /* flag layers below (0.99) */
	double sqnr_threshold;   /* flag layers below, dB (20) */
	int n_threads;           /* threads per op (0: 1) */
	int exact;               /* 1: local runs sum in ONNX Runtime's
				  * order too (else any order: Winograd
				  * convs) */
	size_t pipe_bytes;       /* a sample's compared float tensors up to
				  * this many bytes are kept whole, two
				  * samples in flight; above it the runs go
				  * in step (0: QR_ACT_PIPE_BYTES) */
	size_t fold_max;         /* qr_exec_opts.fold_max of every executor
				  * (0: QR_EXEC_FOLD_MAX); the weights past
				  * it are dequantized as each run reads
				  * them (qr_exec_opts.views) */
	qr_progress_fn progress; /* may be NULL */
	void *progress_user;
};

/*
 * Run the data through the float model and each candidate, one sample at
 * a time, and fill a's activation fields: matched tensors (by name, then
 * structure), streaming similarity per tensor (cumulative, and local with
 * every matched input replaced by the float model's value), histograms,
 * per-channel float ranges, output comparison and top-1. Nothing of a
 * sample is kept after it (statistics only). a comes from qr_analysis_new
 * for the same models.
 * A sample the float model cannot take (QR_ESHAPE: its shape does not
 * fit an input, or some node of the graph) is skipped: a warning in d
 * names it, a->data.skipped keeps it with the reason, and nothing of it
 * is in any number (neither the float statistics nor a candidate's).
 * Returns QR_OK; QR_EPARTIAL when a model could not run (unsupported op,
 * or a failure inside the graph: a->data.why or a->act_runs[k].why says
 * why and the rest is filled) or some samples were skipped and others
 * ran; QR_ESHAPE when every sample was skipped (naming the first and its
 * reason); the feed's status (bad data), or QR_EUSAGE when the data
 * does not fit the float model's inputs (names, count).
 */
enum qr_status qr_analysis_run_data(struct qr_analysis *a,
				    const struct qr_model *fmodel,
				    const struct qr_model *const *quant,
				    size_t n_quant,
				    const struct qr_act_opts *o,
				    struct qr_diag *d);

struct qr_sens_opts {
	enum qr_sens_mode mode;  /* QR_SENS_NONE: nothing */
	size_t samples;          /* samples per run (0: QR_SENS_SAMPLES) */
	qr_sample_fn next;       /* a feed of the data from its start */
	void *user;              /* for next */
	struct qr_sens_target target; /* the fallback's target */
	int n_threads;           /* threads per op (0: 1) */
};

/*
 * What to change in each candidate, measured with hybrid runs (hybrid.c
 * says what they are) on the first o->samples samples: the candidate's
 * output with only its weights and only its activations quantized; for
 * each quantized layer the output with only it kept float and (full)
 * with only it quantized (quick: the QR_SENS_QUICK_LAYERS that make most
 * of the local noise, kept float); and the fallback plan (fallback.c). Fills a->sens, and
 * first a->cle_meas (cle_measured.c: the float model's CLE sets'
 * layers quantized per tensor, with and without equalization). Runs
 * after qr_analysis_run_data when there was data (its local errors rank
 * the layers). Returns QR_OK; a candidate whose runs fail gets
 * sens[k].why; the feed's status stops it.
 */
enum qr_status qr_analysis_sensitivity(struct qr_analysis *a,
				       const struct qr_model *fmodel,
				       const struct qr_model *const *quant,
				       size_t n_quant,
				       const struct qr_sens_opts *o,
				       struct qr_diag *d);

/*
 * Write candidate k (quant, the model a was made from) with its fallback
 * plan's layers kept float to path as an ONNX model, the hybrid the plan
 * was measured with. QR_EUSAGE when candidate k has no plan (a message
 * says why); errors of qr_onnx_save.
 */
enum qr_status qr_analysis_write_fallback(const struct qr_analysis *a,
					  size_t k,
					  const struct qr_model *fmodel,
					  const struct qr_model *quant,
					  const char *path,
					  struct qr_diag *d);

/* Float <-> quantized activation matching for one candidate (act_match.c). */
struct qr_act_match_pair {
	char *ftensor;           /* float tensor */
	char *qtensor;           /* candidate tensor compared with it */
	enum qr_match match;     /* name or structure */
	char *reason;            /* how it was found */
};
struct qr_act_match {
	size_t n;
	struct qr_act_match_pair *pairs; /* in float topological order */
	size_t n_unmatched;
	char **unmatched;        /* float tensors left, "name: reason" */
};
/* Match the float model's activations with the candidate's. *out is a
 * new result freed with qr_act_match_free. Errors: QR_EGRAPH from the
 * graph index. */
enum qr_status qr_act_match_new(const struct qr_model *fmodel,
				const struct qr_model *qmodel,
				struct qr_act_match **out, struct qr_diag *d);
void qr_act_match_free(struct qr_act_match *m);

/* ---- maths on literal arrays (exported for tests) ---- */

/* Per-channel min/max/mean/std of w (shape dims[ndim]) along axis. Output
 * arrays have dims[axis] entries. */
void qr_channel_stats(const float *w, const int64_t *dims, int ndim, int axis,
		      float *mn, float *mx, float *mean, float *std);
/*
 * A channel is dead when its range is 0 or below QR_DEAD_FRACTION of the
 * layer's median channel range. 1e-3 because such a channel is narrower
 * than half a step of any 8-bit per-tensor scale that covers the median
 * channel (asymmetric: step >= median / 255, symmetric: step >= median /
 * 254, half a step > 1.9e-3 median): per tensor it is quantized to a
 * single code, so it carries nothing a relative range should be measured
 * against. Pruned channels (all 0) and channels weight decay drove to
 * denormals (1e-38) are the usual cases.
 */
#define QR_DEAD_FRACTION 1e-3
/* dead[c] (may be NULL) = 1 for the dead channels of per-channel ranges
 * mx - mn (NaN and infinite ranges are not dead); returns their count. */
size_t qr_dead_channels(const float *mn, const float *mx, size_t n,
			unsigned char *dead);
/* rel[c] = range_c / min_k range_k over the live channels (not dead,
 * range > 0); a dead channel gets 0 (and no live channel gives all 0).
 * Returns the max. */
double qr_rel_range(const float *mn, const float *mx, size_t n, float *rel);
/* Quartiles with linear interpolation (numpy's default); returns
 * Q3 + k*(Q3-Q1). */
double qr_tukey_fence(const float *v, size_t n, double k, double *q1,
		      double *q3);
/* Predicted SQNR (dB) of symmetric signed quantization with `bits`,
 * scale = max|w|/(2^(bits-1)-1), round half to even. per_channel uses one
 * scale per slice along axis. +inf when the error is 0. */
double qr_sqnr_sym(const float *w, const int64_t *dims, int ndim, int axis,
		   int per_channel, int bits);
/* Cosine similarity of x and y: sum xy / (||x|| ||y||), in double; 1 when
 * both are all zero, 0 when only one is. Non-finite pairs are skipped. */
double qr_cosine(const float *x, const float *y, size_t n);

/* Streaming comparison of a float tensor x with its counterpart y, one
 * sample at a time (act_stats.c). Zero-initialise, then add samples. */
struct qr_cmp_acc {
	size_t samples;          /* samples added */
	uint64_t n;              /* finite element pairs summed */
	double sxx;              /* sum x^2 */
	double see;              /* sum (x-y)^2 */
	double max_abs;          /* max |x-y| */
	double cos_sum;          /* sum of per-sample cosines */
	double cos_min;          /* min per-sample cosine */
	double cos_max;          /* max per-sample cosine */
	uint64_t nan_x, inf_x, nan_y, inf_y; /* non-finite counts */
	double cos_last;         /* the last sample's cosine */
};
void qr_cmp_add(struct qr_cmp_acc *a, const float *x, const float *y,
		size_t n);
/* Results: mean cosine, SQNR 10 log10(sxx/see) (+inf when see is 0),
 * MSE, ||x-y||/||x||. NaN before any sample. */
double qr_cmp_cosine_mean(const struct qr_cmp_acc *a);
double qr_cmp_sqnr_db(const struct qr_cmp_acc *a);
double qr_cmp_mse(const struct qr_cmp_acc *a);
double qr_cmp_norm_l2(const struct qr_cmp_acc *a);

/* SQNR in dB of y against reference x: 10 log10(sum x^2 / sum (x-y)^2). */
double qr_sqnr_db(const float *x, const float *y, size_t n);
/* CLE pair: s[i] = sqrt(r1[i]/r2[i]) (Nagel et al. 2019); channels with a
 * zero range get 1. */
void qr_cle_pair_scales(const float *r1, const float *r2, size_t n, float *s);
/* CLE triplet: s12 = r0/cbrt(r0 r1 r2), s23 = cbrt(r0 r1 r2)/r2. */
void qr_cle_triplet_scales(const float *r0, const float *r1, const float *r2,
			   size_t n, float *s12, float *s23);
/* SmoothQuant's migration scales (Xiao et al. 2023): s[j] = amax[j]^alpha
 * / wr[j]^(1 - alpha) for n input channels; 1 where amax or wr is 0. */
void qr_smooth_scales(const float *amax, const float *wr, size_t n,
		      double alpha, double *s);
/*
 * Predicted SQNR (dB) of a weighted layer's int8 product once its input
 * channels are divided by s and the weight's multiplied by it (s NULL:
 * as it is; outliers.c has the model): w is [out][in / groups][taps]
 * (output channel o reads input channels from (o / (out / groups)) * (in
 * / groups) on), amax and msq the activation's max |x| and mean x^2 per
 * input channel (in entries). +inf when nothing is lost, NaN when there
 * is no signal.
 */
double qr_smooth_sqnr(const float *w, size_t out, size_t in, size_t groups,
		      size_t taps, const float *amax, const double *msq,
		      const double *s);

#endif
