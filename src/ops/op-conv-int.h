/*
 * op-conv-int: what the convolution, pooling and quantized op files
 * (op_conv.c, op_pool.c, op_quant.c, op_qconv.c, op_qmatmul.c,
 * op_qlinear.c and the com.microsoft ones built on them) share: the
 * spatial "window" attributes (kernel_shape, strides, dilations, pads,
 * auto_pad, ceil_mode, ...) parsed once and resolved against actual
 * shapes, the mapping of 1-D and 2-D windows onto the kernels' 2-D
 * parameter structs, readers for quantization parameters (scales, zero
 * points; op_quant.c), and the integer matmul helpers (op_qmatmul.c).
 *
 * Kernels are 2-D: a 1-D op runs as h = kh = 1. 3-D windows are parsed so
 * they can be refused by name (QR_EUNSUPPORTED).
 */
#ifndef QR_OP_CONV_INT_H
#define QR_OP_CONV_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ops/op-int.h"

struct qr_conv_params;
struct qr_pool_params;

#define QR_OP_SP_MAX 3 /* spatial dims an attribute may hold */
/* Largest kernel_shape, strides, dilations, pads or output_padding value
 * (QR_EUNSUPPORTED above): keeps the window arithmetic in int64. */
#define QR_OP_WIN_VALUE_MAX INT32_MAX
/* Most window steps (outputs x kernel area) a pool may take
 * (QR_EUNSUPPORTED above), so a hostile model cannot stall a run. */
#define QR_OP_POOL_WORK_MAX (1ull << 28)

enum qr_op_autopad {
	QR_AUTOPAD_NOTSET,
	QR_AUTOPAD_SAME_UPPER, /* extra padding at the end */
	QR_AUTOPAD_SAME_LOWER, /* extra padding at the beginning */
	QR_AUTOPAD_VALID,      /* no padding */
};

/* Spatial attributes of one node, as written (defaults filled in). */
struct qr_op_win {
	int nsp;                          /* spatial dims named by the
					   * attributes, 0 when none does */
	int has_kernel;                   /* kernel_shape given */
	int64_t kernel[QR_OP_SP_MAX];     /* kernel_shape, pixels */
	int64_t strides[QR_OP_SP_MAX];    /* >= 1; 1 when absent */
	int64_t dil[QR_OP_SP_MAX];        /* dilations >= 1; 1 when absent */
	int has_pads;                     /* pads given */
	int64_t pads[2 * QR_OP_SP_MAX];   /* begins, then ends; 0 absent */
	int64_t out_pad[QR_OP_SP_MAX];    /* ConvTranspose output_padding */
	int n_out_shape;                  /* ConvTranspose output_shape
					   * entries, 0 when absent */
	int64_t out_shape[QR_OP_SP_MAX + 2]; /* output_shape as written */
	enum qr_op_autopad auto_pad;      /* auto_pad */
	int ceil_mode;                    /* pools: round output up */
	int count_include_pad;            /* AveragePool */
	int64_t group;                    /* Conv group, >= 1 */
};

/*
 * Parse and validate the window attributes of c's node into w (lengths
 * agree, values in range, auto_pad known). QR_EGRAPH for malformed
 * values, QR_EUNSUPPORTED for 3-D windows and values over
 * QR_OP_WIN_VALUE_MAX, both naming the node.
 */
enum qr_status qr_op_win_parse(const struct qr_op_call *c, struct qr_diag *d,
			       struct qr_op_win *w);

/*
 * Conv-family shapes: from input x ([N][C][spatial]) and weights w
 * ([M][C/group][k...], or [C][M/group][k...] when transposed) fill the
 * kernels' params p and the output shape (*ndim, dims). Checks ranks,
 * channel counts and kernel_shape against w; QR_ESHAPE / QR_EGRAPH /
 * QR_EUNSUPPORTED (over 3-D) naming the node; 3-D sets p->kd and the rest
 * of the depth axis.
 */
enum qr_status qr_op_conv_shape(const struct qr_op_call *c,
				struct qr_diag *d, const struct qr_op_win *win,
				const struct qr_tensor *x,
				const struct qr_tensor *w, int transposed,
				struct qr_conv_params *p, int *ndim,
				int64_t *dims);

/*
 * Pool shapes: x is [N][C][spatial] with 1 to 3 spatial dims; fills p
 * and the output shape. Pads follow auto_pad (SAME pads use the dilated
 * window, as the ONNX spec). Errors as qr_op_conv_shape, and
 * QR_EUNSUPPORTED when the pool would take over QR_OP_POOL_WORK_MAX steps.
 */
enum qr_status qr_op_pool_shape(const struct qr_op_call *c,
				struct qr_diag *d, const struct qr_op_win *win,
				const struct qr_tensor *x,
				struct qr_pool_params *p, int *ndim,
				int64_t *dims);
/*
 * The load-time window checks of a pool: at most max_nsp spatial dims
 * (2 or 3; QR_EUNSUPPORTED) and a kernel_shape (QR_EGRAPH), naming the
 * node.
 */
enum qr_status qr_op_pool_win_check(const struct qr_op_call *c,
				    struct qr_diag *d,
				    const struct qr_op_win *win, int max_nsp);

/* ---- quantization parameters ---- */

/*
 * Dtype checks of the QOperator ops: inputs in `q` are 8-bit
 * (QR_DTM_Q8) and of the same dtype as input 0, inputs in `f` are float.
 * Bit i of a mask is input i. The statuses of qr_op_want_dtype and
 * qr_op_same_dtype.
 */
enum qr_status qr_op_q8_dtypes(const struct qr_op_call *c, struct qr_diag *d,
			       unsigned q, unsigned f);

/*
 * Input i as one float scale (a float scalar or 1-element tensor).
 * QR_EGRAPH naming the node otherwise.
 */
enum qr_status qr_op_q_scale(const struct qr_op_call *c, struct qr_diag *d,
			     size_t i, float *out);
/*
 * Input i as one zero point of an integer dtype (0 when the input is
 * absent). When dtype is not QR_DT_UNDEFINED the zero point must have
 * that dtype (QR_EGRAPH otherwise).
 */
enum qr_status qr_op_q_zp(const struct qr_op_call *c, struct qr_diag *d,
			  size_t i, int dtype, int32_t *out);

/*
 * Per-tensor or per-channel parameters: input i_scale (float) and i_zp
 * (integer, may be absent) with 1 or n values each into new heap arrays
 * *scale and *zp (n entries each, the single value repeated; caller
 * frees). QR_EGRAPH naming the node when a count is neither 1 nor n.
 */
enum qr_status qr_op_q_vec(const struct qr_op_call *c, struct qr_diag *d,
			   size_t i_scale, size_t i_zp, size_t n,
			   float **scale, int32_t **zp);

/* Grow a scratch buffer to at least n bytes (contents not kept). */
void *qr_op_scratch(void **buf, size_t *cap, size_t n);
/* A kernel workspace of n bytes for this run (contents not kept): the
 * executor's shared one when c has it, else *own (grown, owned by the
 * op's state). One buffer per executor instead of one per node keeps a
 * model's workspace memory at its largest node's. */
void *qr_op_ws(const struct qr_op_call *c, void **own, size_t *own_cap,
	       size_t n);

/* ---- integer matrix products (MatMulInteger, QLinearMatMul) ---- */

/* numpy matmul of A [..][m][k] and B [..][k][n] with batch broadcasting;
 * 1-D operands get their dim dropped from the output, as numpy. */
struct qr_op_mm {
	size_t m, k, n;                 /* one product's sizes */
	size_t batch;                   /* products in the output */
	size_t a_mats, b_mats;          /* matrices held by A and B */
	int nb;                         /* broadcast batch rank */
	int64_t bdims[QR_TENSOR_MAX_DIMS]; /* output batch dims */
	size_t a_st[QR_TENSOR_MAX_DIMS];   /* A's stride per batch dim, in
					    * matrices (0 broadcast) */
	size_t b_st[QR_TENSOR_MAX_DIMS];   /* same for B */
	int ndim;                       /* output rank */
	int64_t dims[QR_TENSOR_MAX_DIMS];  /* output shape */
};

/* Shapes of a times b; QR_ESHAPE naming the node when they disagree. */
enum qr_status qr_op_mm_shape(const struct qr_op_call *c, struct qr_diag *d,
			      const struct qr_tensor *a,
			      const struct qr_tensor *b, struct qr_op_mm *mm);
/* Infer of the integer matmuls: output 0, of dtype, shaped as input 0
 * times input ib (errors of qr_op_mm_shape). */
enum qr_status qr_op_mm_infer(struct qr_op_call *c, struct qr_diag *d,
			      size_t ib, int dtype);
/* Matrix indices into A and B of output product bi. */
void qr_op_mm_index(const struct qr_op_mm *mm, size_t bi, size_t *ai,
		    size_t *bj);

/* What an integer matmul node keeps between runs. */
struct qr_qgemm_packed;
struct qr_op_mm_cache {
	int b_const;                /* B and its zero points are constant */
	size_t k, n;                /* shape pk was packed for */
	struct qr_qgemm_packed *pk; /* packed B (a single constant matrix) */
	void *ws;                   /* kernel workspace, heap */
	size_t ws_cap;              /* bytes in ws */
};
/* Frees a heap qr_op_mm_cache (a release function; NULL does nothing). */
void qr_op_mm_cache_free(void *state);
/*
 * At prepare: pack B (input ib, zero points at ib_zp) into st when both
 * are constant and B is one matrix ([k][n], or [n][k] when trans_b).
 * Sets st->b_const. Leaves st unpacked when the zero points are malformed
 * (the run reports it).
 */
void qr_op_mm_prepack(const struct qr_op_call *c, struct qr_op_mm_cache *st,
		      size_t ib, size_t ib_zp, int trans_b);

/*
 * acc[batch][m][n] = sum_k (a - a_zp)(b - b_zp), exact in int32, for the
 * inputs ia (A) and ib (B) of c, B's zero points at input ib_zp (absent,
 * one value, or one per column: QR_EUNSUPPORTED otherwise). B is packed
 * once into the cache when it is a constant single matrix.
 */
enum qr_status qr_op_mm_int32(struct qr_op_call *c, struct qr_diag *d,
			      struct qr_op_mm_cache *st,
			      const struct qr_op_mm *mm, size_t ia,
			      int32_t a_zp, size_t ib, size_t ib_zp,
			      int32_t *acc);

/* enum qr_qtype of a quantized dtype (uint8, int8, uint16, int16, int32),
 * -1 for others. */
int qr_op_qtype(int dtype);

#endif
