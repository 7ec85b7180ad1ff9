/*
 * kernels: plain array maths for the operators. No graph or ONNX types:
 * every function takes raw arrays, explicit sizes and a params struct, so
 * tests can drive it with literal arrays.
 *
 * Layouts: images are NCHW, row-major, densely packed. Conv weights are
 * [c_out][c_in/group][kh][kw]; ConvTranspose weights are
 * [c_in][c_out/group][kh][kw]. Matrices are row-major.
 *
 * Ownership: a *_pack_new result belongs to the caller and is released by
 * the matching *_free (free(NULL) does nothing). Packing copies what it
 * needs, so the weights passed in may be freed afterwards. A pack depends
 * on the weights alone (channels, kernel size, group), never on the image:
 * ops pack constant weights once, at prepare time, and the image geometry
 * (struct qr_conv_params) comes with every run. Inputs are borrowed for
 * the call only. Workspace is caller memory of the size the matching
 * *_workspace function returns for the same params and thread count, in
 * bytes, any alignment; a workspace is never shared by two concurrent
 * calls.
 *
 * Float convs, MatMul and Gemm go through qr_sgemm (sgemm.c), which sums
 * in ONNX Runtime's order; ConvTranspose and double GEMMs through
 * OpenBLAS (qr_gemm_f32, cblas_dgemm). Integer paths are exact:
 * products accumulate in int32 (wrapping mod 2^32, as the ONNX spec allows
 * only in 32 bits), zero points are removed with row/column-sum corrections,
 * and requantization follows ONNX Runtime's MLAS bit for bit (see
 * qr_requantize_row). Kernels that take n_threads split their work over
 * the pool of parallel.c (results never depend on the thread count);
 * OpenBLAS calls inside them run single-threaded (the pool sets it so).
 * Shapes are validated by ops/; a kernel only asserts invariants.
 */
#ifndef QR_KERNELS_H
#define QR_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* ---- CPU features (cpu.c) ---- */

#define QR_CPU_AVX2 0x1u       /* AVX2 + FMA */
#define QR_CPU_AVX512BW 0x2u   /* AVX-512 F + BW + VL */
#define QR_CPU_AVX512VNNI 0x4u /* AVX-512 VNNI (vpdpbusd) */

/* Features detected at run time, masked by qr_kernels_force_portable. */
unsigned qr_kernels_cpu_features(void);
/* Test hook: when on is nonzero, every kernel takes its portable C path.
 * Results never change (integer paths are exact); only speed does. */
void qr_kernels_force_portable(int on);
/*
 * A few of ONNX Runtime's CPU kernels give different bits on different
 * x86-64 CPUs, because MLAS picks them by CPU when it loads. The kernels
 * that reproduce ORT's bits follow the choice ORT makes on this CPU:
 * QR_ORT_SUMEXP_AVX512, Softmax's exp and sum as its AVX-512F kernel
 * computes them (else as its AVX2/FMA3 one); QR_ORT_U8S8_SATURATES, no
 * VNNI, so ORT's u8 x s8 GEMMs sum products in saturating 16-bit pairs.
 */
#define QR_ORT_SUMEXP_AVX512 0x1u
#define QR_ORT_U8S8_SATURATES 0x2u
#define QR_ORT_DETECT (~0u)
/* The traits of this CPU, or those set by qr_kernels_force_ort. */
unsigned qr_kernels_ort_traits(void);
/* Test hook: use these traits instead of the CPU's (QR_ORT_DETECT: the
 * CPU's again). */
void qr_kernels_force_ort(unsigned traits);
/* The traits in use as a CPU name: "avx512vnni", "avx512" (AVX-512
 * without VNNI), "avx2vnni" (AVX-VNNI) or "avx2". */
const char *qr_kernels_ort_cpu(void);
/* Use the traits of the CPU named so (or "native": this one's); 0 for
 * an unknown name. Set before models are loaded: int8 weights are packed
 * for them. */
int qr_kernels_set_ort_cpu(const char *name);
/* Name of the int8 GEMM path in use now: "avx512vnni", "avx2" or
 * "portable". */
const char *qr_kernels_igemm_path(void);

/* ---- Threads (parallel.c) ---- */

/* One task of a parallel loop: task in [0, n_tasks); slot in
 * [0, n_threads) is the running thread's index, for per-thread scratch
 * (no two tasks run on one slot at the same time). */
typedef void (*qr_par_fn)(void *ctx, size_t task, int slot);

/*
 * Run fn(ctx, t, slot) for every t in [0, n_tasks) on up to n_threads
 * threads (the caller is one of them, slot 0) and return when all are
 * done. Tasks are handed out one at a time, so uneven tasks balance.
 * Tasks must be independent. A call made from inside a task, or while
 * another thread's job holds the pool, runs its tasks serially (slot 0).
 */
void qr_parallel_for(int n_threads, size_t n_tasks, qr_par_fn fn, void *ctx);
/* The share [*lo, *hi) of [0, n) that task `task` of n_tasks takes, cut
 * at multiples of align (>= 1). */
void qr_parallel_range(size_t n, size_t task, size_t n_tasks, size_t align,
		       size_t *lo, size_t *hi);
/* Threads OpenBLAS uses for each sgemm (process-wide; n < 1 means 1).
 * One also stops the threads its pthread build keeps idle. */
void qr_kernels_set_blas_threads(int n);

/* ---- Quantized element types ---- */

/* Element types of quantized tensors. */
enum qr_qtype {
	QR_QT_U8,  /* uint8_t */
	QR_QT_S8,  /* int8_t */
	QR_QT_U16, /* uint16_t */
	QR_QT_S16, /* int16_t */
	QR_QT_S32, /* int32_t (DequantizeLinear input, bias) */
};

/* ---- Float GEMM (gemm.c) ---- */

/*
 * C[m][n] = alpha * op(A)[m][k] * op(B)[k][n] + beta * C, row-major, with
 * op(X) = X^T when trans_x is nonzero. lda/ldb/ldc are row strides in
 * elements of the stored matrices. Calls cblas_sgemm; beta = 0 ignores C.
 */
void qr_gemm_f32(int trans_a, int trans_b, size_t m, size_t n, size_t k,
		 float alpha, const float *a, size_t lda, const float *b,
		 size_t ldb, float beta, float *c, size_t ldc);

/* ---- Float GEMM in ONNX Runtime's order (sgemm.c) ---- */

/* How MLAS (ONNX Runtime's GEMM) sums each output on x86-64; see sgemm.c. */
enum qr_sgemm_order {
	QR_SGEMM_FMA, /* fma chains over K slices of stride_k, slices added */
	QR_SGEMM_ROW, /* M = 1: rounded products added in groups of 4 */
	QR_SGEMM_DOT, /* M = 1 with B^T, or N = 1: 8 lanes, then reduced */
};

struct qr_sgemm_plan {
	enum qr_sgemm_order order;
	size_t stride_k;  /* K slice (QR_SGEMM_FMA), else 0 */
};

/* The order ORT's MlasGemm picks for one whole C[m][n] = A * op(B) call
 * (alpha 1, beta 0 or 1) with these sizes and strides. */
void qr_sgemm_plan(size_t m, size_t n, size_t k, int trans_b, size_t ldb,
		   size_t ldc, struct qr_sgemm_plan *pl);
/* The order of ORT's GEMM on a pre-packed B (a Gemm's or MatMul's 2-D
 * initializer): QR_SGEMM_FMA in K slices of 256, whatever the sizes. */
void qr_sgemm_plan_packed(struct qr_sgemm_plan *pl);
/* Bytes of workspace qr_sgemm needs (any alignment). */
size_t qr_sgemm_workspace(void);
/*
 * C[m][n] = A[m][k] * op(B)[k][n] (accumulate == 0) or C += A * op(B)
 * (row-major; op(B) = B^T when trans_b), every element summed in the
 * plan's order, so it has the bits ONNX Runtime computes. The plan is
 * made for the whole call ORT would make; a caller may compute any block
 * of rows and columns of it with the same plan, except for
 * QR_SGEMM_DOT, whose blocks of 4, 2 and 1 rows count from the first
 * row of the call: it must get the whole call, or rows cut at multiples
 * of 4 with the last block whole.
 */
void qr_sgemm(const struct qr_sgemm_plan *pl, size_t m, size_t n, size_t k,
	      const float *a, size_t lda, const float *b, size_t ldb,
	      int trans_b, float *c, size_t ldc, int accumulate, void *ws);

/*
 * B held quantized, as a weight's DequantizeLinear left as a view reads
 * it: op(B)[k][j] = (float)(q - zp[r]) * scale[r], r = j (the column of
 * op(B)) when per_col, else 0; zp may be NULL (0). q is laid out as a
 * float B would be (ldb, trans_b).
 */
struct qr_sgemm_qb {
	const void *q;
	enum qr_qtype t;
	const float *scale;
	const int32_t *zp;
	int per_col;
};
/* Bytes of workspace qr_sgemm_q needs (any alignment). */
size_t qr_sgemm_q_workspace(void);
/* qr_sgemm with B held quantized, with the bits of qr_sgemm on B
 * dequantized: in the QR_SGEMM_FMA order each panel of B is dequantized
 * as it is packed, so no float copy of B is made; the M = 1 and N = 1
 * orders, which read B whole, dequantize it for the call. ldb is
 * trans_b ? k : n. */
void qr_sgemm_q(const struct qr_sgemm_plan *pl, size_t m, size_t n,
		size_t k, const float *a, size_t lda,
		const struct qr_sgemm_qb *b, size_t ldb, int trans_b,
		float *c, size_t ldc, int accumulate, void *ws);

/* ---- LLM attention (attn.c) ---- */

/*
 * One row of rotary embedding, as MLAS's AVX2 kernel: for each pair
 * (re, im) and its cos c and sin s (i < dim / 2),
 *   re' = fma(re, c, -(im * s)),  im' = fma(re, s, im * c)
 * with the pairs (x[i], x[i + dim/2]), or (x[2i], x[2i + 1]) when
 * interleaved. Interleaved, the kernel's last step (the pairs past the
 * last whole 8, when dim is not a multiple of 16) fuses its first pair
 * only: the next ones are re c - im s and re s + im c with both products
 * rounded (as onnxruntime-node 1.30 computes them on x86-64, measured
 * for dims 2 to 64). x and y may be the same array.
 */
void qr_rope_row_f32(const float *x, const float *sin, const float *cos,
		     size_t dim, int interleaved, float *y);
/*
 * C[m][n] = alpha * A[m][k] op(B) (ldb as qr_sgemm's) as ONNX Runtime's
 * MlasSgemmOperation sums it: with alpha 1, as qr_sgemm; otherwise
 * always the packed order (MLAS's M = 1 and N = 1 kernels take alpha 1
 * only), each K slice's chain times alpha, the first slice stored and
 * the next ones added by a fused multiply-add. ws: qr_sgemm_workspace()
 * bytes.
 */
void qr_sgemm_alpha(size_t m, size_t n, size_t k, float alpha,
		    const float *a, size_t lda, const float *b, size_t ldb,
		    int trans_b, float *c, size_t ldc, void *ws);

/* One head of ONNX Runtime's flash attention (GroupQueryAttention). */
struct qr_attn_flash {
	size_t s;             /* query rows */
	size_t total;         /* key rows attended (positions 0..total-1) */
	size_t hs;            /* head size */
	size_t past;          /* position of query row 0 */
	long window;          /* local_window_size: a query sees that many
			       * keys up to itself; < 0: no limit */
	size_t q_block;       /* query rows a tile (s > 1) */
	size_t kv_block;      /* keys a tile (s > 1) */
	float scale;          /* on Q K^T */
	const float *bias;    /* added to the scores, row i at bias +
			       * i * bias_ld; NULL: none */
	size_t bias_ld;
	int mha;              /* MultiHeadAttention's kernel (flashattn.cpp):
			       * no causal mask or window, tiles for s = 1
			       * too, rows divided by their sum */
};
/*
 * out[i * ldo + j] (i < s, j < hs) = softmax(scale q_i K^T (+ bias),
 * causal, windowed) V, q [s][hs], k and v [total][hs], in MLAS's order
 * (flashattn_gqa.cpp): for s > 1 tiles of q_block rows, each over
 * kv_block keys at a time: scores by qr_sgemm_alpha, masked keys set to
 * -FLT_MAX, e = exp(score - running max) with its sum
 * (qr_sumexp_ort_f32), earlier tiles rescaled by expf of the max's
 * change, e V added (qr_sgemm), and each row times 1 / its sum at the
 * end; for s = 1 one pass over all keys with MLAS's GEMVs (8 lanes of
 * rounded products for q . k, rounded products added in key order for
 * e V). A row that sees no key is 0. ws: qr_sgemm_workspace() bytes.
 */
void qr_attn_flash_f32(const struct qr_attn_flash *p, const float *q,
		       const float *k, const float *v, float *out,
		       size_t ldo, void *ws);

/* ---- Float convolution (conv.c) ---- */

/* One 2-D convolution (Conv, ConvTranspose; 1-D uses h = kh = 1). */
struct qr_conv_params {
	size_t n;         /* batch size */
	size_t c_in;      /* input channels */
	size_t h, w;      /* input height and width, pixels */
	size_t c_out;     /* output channels */
	size_t kh, kw;    /* kernel height and width */
	size_t stride_h, stride_w; /* strides, >= 1 */
	size_t pad_t, pad_l;       /* leading (top, left) padding, pixels */
	size_t pad_b, pad_r;       /* trailing (bottom, right) padding */
	size_t dil_h, dil_w;       /* dilations, >= 1 */
	size_t group;     /* groups; c_in and c_out are multiples of it */
	size_t out_pad_h, out_pad_w; /* ConvTranspose output_padding, else 0 */
	/* 3-D Conv: the depth axis, before h (input d, kernel kd, stride,
	 * dilation, leading and trailing padding). kd = 0 for 1-D and 2-D
	 * convs, which leave the rest 0 too. */
	size_t d, kd, stride_d, dil_d, pad_f, pad_k;
};

/* Conv output height/width: floor((h + pads - dil*(k-1) - 1) / stride) + 1,
 * or 0 when the dilated kernel is larger than the padded input. */
size_t qr_conv_out_h(const struct qr_conv_params *p);
size_t qr_conv_out_w(const struct qr_conv_params *p);
/* Conv output depth (3-D; 1 when kd is 0). */
size_t qr_conv_out_d(const struct qr_conv_params *p);
/* ConvTranspose output height/width:
 * stride*(h-1) + out_pad + dil*(k-1) + 1 - pad_begin - pad_end (0 if < 1). */
size_t qr_convt_out_h(const struct qr_conv_params *p);
size_t qr_convt_out_w(const struct qr_conv_params *p);

/* Packed float conv weights; opaque. */
struct qr_conv_f32_packed;

/*
 * Pack Conv weights w ([c_out][c_in/group][kh][kw]) once, at prepare time.
 * Depthwise weights (c_in/group == 1) get the direct loop; the others
 * GEMM (pointwise convs with stride 1 and no padding read x directly,
 * the rest go through im2col).
 */
struct qr_conv_f32_packed *qr_conv_f32_pack_new(size_t c_out, size_t c_in,
						size_t kh, size_t kw,
						size_t group, const float *w);
/* The same without a copy: the pack borrows w, which must outlive it
 * (an op's constant weights outlive its prepared state). transposed: w
 * is ConvTranspose's [c_in][c_out/group][kh][kw]. */
struct qr_conv_f32_packed *qr_conv_f32_pack_view(size_t c_out, size_t c_in,
						 size_t kh, size_t kw,
						 size_t group, const float *w,
						 int transposed);
/*
 * Conv weights held quantized, as a DequantizeLinear of constants reads
 * them: w[co][k] = (float)(q[co][k] - zp[r]) * scale[r], r = co when
 * per_row (axis 0), else 0; zp may be NULL (0).
 */
struct qr_conv_qweights {
	const void *q;           /* [c_out][c_in/group][kh][kw] codes of type t */
	enum qr_qtype t;
	const float *scale;      /* c_out values (per_row) or one */
	const int32_t *zp;       /* as scale, or NULL */
	int per_row;
};
/* qr_conv_f32_pack_view for weights held quantized (borrowed, with their
 * scales and zero points): the GEMM dequantizes a block of rows at a
 * time into its workspace, in DequantizeLinear's arithmetic, so outputs
 * have the bits of a conv on the dequantized weights without a float
 * copy of them. Depthwise weights (small) are dequantized whole here. */
struct qr_conv_f32_packed *qr_conv_f32_pack_q(size_t c_out, size_t c_in,
					      size_t kh, size_t kw,
					      size_t group,
					      const struct qr_conv_qweights *q);
/* qr_conv_f32_pack_view for 3-D Conv weights [c_out][c_in/group][kd][kh][kw]:
 * always GEMM (the depthwise loop is 2-D), through a 3-D im2col. */
struct qr_conv_f32_packed *qr_conv3d_f32_pack_view(size_t c_out, size_t c_in,
						   size_t kd, size_t kh,
						   size_t kw, size_t group,
						   const float *w);
/* Bytes of workspace qr_conv_f32_run / qr_convt_f32_run need for the
 * geometry p (which must match the pack) on n_threads (may be 0). */
size_t qr_conv_f32_workspace(const struct qr_conv_f32_packed *pk,
			     const struct qr_conv_params *p, int n_threads);
/* y[n][c_out][oh][ow] = conv(x[n][c_in][h][w]) + bias[c_out] (bias may be
 * NULL; 3-D: y[n][c_out][od][oh][ow] from x[n][c_in][d][h][w], summed in
 * ORT's order as the 2-D GEMM convs). x and y must not overlap. Split over n_threads of the pool
 * (ConvTranspose: one thread). */
void qr_conv_f32_run(const struct qr_conv_f32_packed *pk,
		     const struct qr_conv_params *p, const float *x,
		     const float *bias, float *y, void *ws, int n_threads);

/* Pack ConvTranspose weights w ([c_in][c_out/group][kh][kw]). */
struct qr_conv_f32_packed *qr_convt_f32_pack_new(size_t c_out, size_t c_in,
						 size_t kh, size_t kw,
						 size_t group, const float *w);
/* y[n][c_out][qr_convt_out_h][qr_convt_out_w] = convtranspose(x) + bias. */
void qr_convt_f32_run(const struct qr_conv_f32_packed *pk,
		      const struct qr_conv_params *p, const float *x,
		      const float *bias, float *y, void *ws, int n_threads);

void qr_conv_f32_packed_free(struct qr_conv_f32_packed *pk);

/* ---- Integer GEMM and convolution (igemm.c, qconv.c) ---- */

/*
 * Requantization multiplier, computed as ONNX Runtime does for QLinearConv
 * and QLinearMatMul: (x_scale * w_scale) / y_scale, in float, left to
 * right. Kept in one place so every caller rounds the same way.
 */
float qr_requant_scale(float x_scale, float w_scale, float y_scale);

/*
 * Requantize n int32 accumulators: for each i,
 *   v = (float)(int32)(acc[i] + bias) * scale          (wrapping add)
 *   v = min(max(v, qmin - zp), qmax - zp)               (in float)
 *   y[i] = round_half_even(v) + zp
 * with [qmin, qmax] = [-128, 127] when y_signed, else [0, 255]. This is
 * MLAS's MlasRequantizeOutput (scalar and SSE/AVX paths agree), which
 * QLinearConv, QLinearMatMul and QGemm use. y is int8_t or uint8_t.
 */
void qr_requantize_row(const int32_t *acc, size_t n, int32_t bias, float scale,
		       int32_t zp, int y_signed, void *y);
/* As qr_requantize_row with a bias and a scale per element i (either
 * array may hold a single value when its n_* is 1; bias may be NULL). */
void qr_requantize_cols(const int32_t *acc, size_t n, const int32_t *bias,
			size_t n_bias, const float *scale, size_t n_scale,
			int32_t zp, int y_signed, void *y);

/* Packed integer GEMM right-hand side (the weights); opaque. */
struct qr_qgemm_packed;

/*
 * Pack B for C = A * B with B of k x n (trans_b = 0, row-major [k][n]) or
 * stored transposed ([n][k], trans_b != 0). b is int8_t when b_signed,
 * else uint8_t. b_zp holds n_b_zp zero points: 1 (per tensor) or n (per
 * column). u8*u8, s8*s8, u8*s8 and s8*u8 all use one u8*s8 kernel: signed
 * activations and unsigned weights are shifted by 128 with their zero
 * points, which leaves every (a - a_zp) * (b - b_zp) unchanged.
 */
struct qr_qgemm_packed *qr_qgemm_pack_new(const void *b, int b_signed,
					  int trans_b, size_t k, size_t n,
					  const int32_t *b_zp, size_t n_b_zp);
/* Bytes of workspace qr_qgemm_run needs for an m-row A on n_threads. */
size_t qr_qgemm_workspace(const struct qr_qgemm_packed *pk, size_t m,
			  int n_threads);
/*
 * c[m][n] = sum_k (a[m][k] - a_zp) * (b[k][n] - b_zp[n]), exact in int32.
 * a is row-major [m][k] (int8_t when a_signed, else uint8_t); c has row
 * stride ldc (>= n). The columns of c are split over n_threads.
 */
void qr_qgemm_run(const struct qr_qgemm_packed *pk, const void *a,
		  int a_signed, int32_t a_zp, size_t m, int32_t *c, size_t ldc,
		  void *ws, int n_threads);
void qr_qgemm_packed_free(struct qr_qgemm_packed *pk);

/* Packed integer conv weights; opaque. */
struct qr_qconv_packed;

/*
 * Pack QLinearConv / ConvInteger weights w ([c_out][c_in/group][kh][kw],
 * or [kd][kh][kw] for a 3-D conv, else kd = 0; int8_t when w_signed, else
 * uint8_t) with w_zp holding n_w_zp zero points (1 or c_out). Depthwise
 * 2-D convs get a direct loop, 1x1 convs with stride 1 and no padding a
 * plain int8 GEMM on x, others im2col (padding with the input zero point)
 * + the int8 GEMM.
 */
struct qr_qconv_packed *qr_qconv_pack_new(size_t c_out, size_t c_in,
					  size_t kd, size_t kh, size_t kw,
					  size_t group,
					  const void *w, int w_signed,
					  const int32_t *w_zp, size_t n_w_zp);
/* Bytes of workspace the runs need for geometry p on n_threads. */
size_t qr_qconv_workspace(const struct qr_qconv_packed *pk,
			  const struct qr_conv_params *p, int n_threads);

/* Run-time quantization of one QLinearConv call. */
struct qr_qconv_quant {
	int x_signed;         /* input is int8 (1) or uint8 (0) */
	int32_t x_zp;         /* input zero point */
	const int32_t *bias;  /* c_out int32 biases (scale x_s*w_s), or NULL */
	const float *scale;   /* qr_requant_scale per output channel */
	size_t n_scale;       /* entries in scale: 1 or c_out */
	int y_signed;         /* output is int8 (1) or uint8 (0) */
	int32_t y_zp;         /* output zero point */
};

/* QLinearConv: y = requantize(sum (x - x_zp)(w - w_zp) + bias), on
 * n_threads of the pool. */
void qr_qconv_run(const struct qr_qconv_packed *pk,
		  const struct qr_conv_params *p, const void *x,
		  const struct qr_qconv_quant *q, void *y, void *ws,
		  int n_threads);
/* ConvInteger: y (int32) = sum (x - x_zp)(w - w_zp). */
void qr_qconv_run_s32(const struct qr_qconv_packed *pk,
		      const struct qr_conv_params *p, const void *x,
		      int x_signed, int32_t x_zp, int32_t *y, void *ws,
		      int n_threads);
void qr_qconv_packed_free(struct qr_qconv_packed *pk);

/* ---- Quantize / dequantize and quantized elementwise (quant.c) ---- */

/*
 * QuantizeLinear over x viewed as [outer][axis_len][inner]; scale and zp
 * hold axis_len values (per axis) or one (per tensor: pass axis_len = 1 and
 * fold the axis into inner). As MLAS: v = x / scale; NaN -> qmin; clamp to
 * [qmin - zp, qmax - zp]; round half to even; + zp. y has element type t.
 */
void qr_quantize_f32(const float *x, size_t outer, size_t axis_len,
		     size_t inner, const float *scale, const int32_t *zp,
		     enum qr_qtype t, void *y);
/* qr_quantize_f32, but where v = x / scale is NaN (x NaN, 0 / 0, inf /
 * inf) y gets the zero point, the code of 0, rather than qmin: for a NaN
 * that should read back as 0, not as the range's end. */
void qr_quantize_f32_nan_zp(const float *x, size_t outer, size_t axis_len,
			    size_t inner, const float *scale,
			    const int32_t *zp, enum qr_qtype t, void *y);
/* Code j of a run of bits-bit codes (1 to 8) packed low bits first, as
 * com.microsoft MatMulNBits stores its weights and zero points. */
static inline unsigned
qr_packed_code(const uint8_t *p, size_t j, unsigned bits)
{
	size_t bit = j * bits;

	return (unsigned)(p[bit / 8] >> (bit % 8)) & ((1u << bits) - 1);
}

/* ---- Weight-only n-bit matmul with int8 activations (nbits.c) ---- */

/*
 * com.microsoft MatMulNBits at accuracy_level 4 with integer zero
 * points: y[m][n] = A W + bias, A quantized to int8 per block of `block`
 * values of each row, W[k][n] = (code - zp) * scale. Bit for bit ONNX
 * Runtime's AVX-512 VNNI kernels for 4 bits and blocks of 32 or >= 128
 * (qr_nbits_exact); other shapes sum block after block (a few 1e-7
 * away). The weights are read in place, never copied.
 */
struct qr_nbits_params {
	size_t m, n, k;       /* A [m][k] float, y [m][n] float */
	size_t bits;          /* 2, 4 or 8 */
	size_t block;         /* block_size: a power of two >= 16 */
	const uint8_t *b;     /* [n][kb][block * bits / 8] codes, low bits
			       * first (kb = ceil(k / block)); the short
			       * last block's padding any value */
	const float *scales;  /* [n][kb] */
	const uint8_t *zp;    /* [n][ceil(kb * bits / 8)] packed like b, or
			       * NULL: 2^(bits - 1) */
	const float *bias;    /* [n], or NULL */
};

/* Whether p gets ONNX Runtime's order bit for bit. */
int qr_nbits_exact(const struct qr_nbits_params *p);
/* Workspace bytes of qr_nbits_gemm for p on n_threads threads. */
size_t qr_nbits_workspace(const struct qr_nbits_params *p, int n_threads);
/* y = the product of a [m][k] and p's weights; ws of
 * qr_nbits_workspace(p, n_threads) bytes. */
void qr_nbits_gemm(const struct qr_nbits_params *p, const float *a, float *y,
		   void *ws, int n_threads);
/* Test hook: when on is nonzero, the AVX2 path runs where AVX-512 would.
 * Results never change; only speed does. */
void qr_nbits_force_avx2(int on);

/* DequantizeLinear, same layout: y = (float)(x - zp) * scale. */
void qr_dequantize_f32(const void *x, enum qr_qtype t, size_t outer,
		       size_t axis_len, size_t inner, const float *scale,
		       const int32_t *zp, float *y);
/* The same with a scale and zero point per element: y[i] = (float)(x[i]
 * - zp[i]) * scale[i] (zp may be NULL): a row of a weight quantized per
 * column. */
void qr_dequantize_cols_f32(const void *x, enum qr_qtype t, size_t n,
			    const float *scale, const int32_t *zp, float *y);
/* Bytes of one element of t. */
size_t qr_qtype_size(enum qr_qtype t);
/*
 * DynamicQuantizeLinear (uint8), as ORT's GetQuantizationParameter:
 * lo = min(min(x), 0), hi = max(max(x), 0); scale = hi == lo ? 1 :
 * (hi - lo) / 255; zp = round_half_even(clamp(0 - lo / scale, 0, 255));
 * then qr_quantize_f32.
 */
void qr_dynamic_quantize_u8(const float *x, size_t n, uint8_t *y,
			    float *scale, uint8_t *zp);

/*
 * QLinearAdd (com.microsoft) over n elements, as MLAS's AVX2 kernel (the
 * one ORT runs on this class of x86 machine):
 *   ra = sa / sc, rb = sb / sc, k = (float)zc - (ra * za + rb * zb)
 *   y = sat(round_half_even(fma(a, ra, fma(b, rb, k))))
 * where a value too large for int32 becomes INT32_MIN before saturation
 * (cvtps2dq). a_step/b_step are 1, or 0 to broadcast a single element.
 * All three tensors have element type t (QR_QT_U8 or QR_QT_S8).
 */
void qr_qlinear_add(const void *a, size_t a_step, float sa, int32_t za,
		    const void *b, size_t b_step, float sb, int32_t zb,
		    float sc, int32_t zc, enum qr_qtype t, void *y, size_t n);
/*
 * QLinearMul (com.microsoft), as MLAS's SSE2 kernel:
 *   y = sat(round_half_even((float)((a - za) * (b - zb)) * (sa * sb / sc)
 *                           + (float)zc))
 * (the zero point added in float, before rounding)
 */
void qr_qlinear_mul(const void *a, size_t a_step, float sa, int32_t za,
		    const void *b, size_t b_step, float sb, int32_t zb,
		    float sc, int32_t zc, enum qr_qtype t, void *y, size_t n);

/* ---- Pooling (pool.c) ---- */

/* One 2-D pooling window description (1-D uses h = kh = 1). */
struct qr_pool_params {
	size_t n, c;               /* batch and channels */
	size_t h, w;               /* input height and width */
	size_t kh, kw;             /* window height and width */
	size_t stride_h, stride_w; /* strides, >= 1 */
	size_t pad_t, pad_l, pad_b, pad_r; /* padding, pixels */
	size_t dil_h, dil_w;       /* dilations, >= 1 */
	int ceil_mode;             /* round output size up (ceil_mode = 1) */
	int count_include_pad;     /* AveragePool: divide by the padded count */
	/* 3-D windows: depth, the axis before h; 1-D and 2-D windows have
	 * d = kd = stride_d = dil_d = 1 and no depth padding. The 2-D
	 * kernels take planes of h x w and ignore these. */
	size_t d, kd, stride_d, dil_d, pad_f, pad_k;
};

/* Output height/width, ONNX rule: floor or ceil of
 * (in + pads - dil*(k-1) - 1) / stride + 1; in ceil mode a last window that
 * would start in the trailing padding is dropped. */
size_t qr_pool_out_h(const struct qr_pool_params *p);
size_t qr_pool_out_w(const struct qr_pool_params *p);
size_t qr_pool_out_d(const struct qr_pool_params *p);
/* MaxPool: padding never wins (it is -inf). */
void qr_maxpool_f32(const struct qr_pool_params *p, const float *x, float *y);
/* MaxPool on uint8 (y_signed = 0) or int8 (1) tensors, exact. */
void qr_maxpool_q8(const struct qr_pool_params *p, const void *x, int is_signed,
		   void *y);
/* AveragePool: sum over the window's in-image elements divided by their
 * count, or with count_include_pad by the window clipped to the padded
 * image (ORT's rule, which ceil mode can make smaller than kh*kw); summed
 * as qr_avgpool3d_f32. */
void qr_avgpool_f32(const struct qr_pool_params *p, const float *x, float *y);
/*
 * 3-D windows over [n][c][d][h][w]: MaxPool (float, or uint8/int8 as
 * qr_maxpool_q8) and AveragePool, summed as ONNX Runtime does: where its
 * MLAS vector kernel runs (stride_w <= 2, windows of at most 32 along
 * each axis, rows of at most 2044 with their padding, and not both
 * ceil_mode and count_include_pad), each kernel column down its planes
 * and rows, then the columns left to right; otherwise plane by plane,
 * row by row, in order; a window that is the whole unpadded volume at
 * stride 1 as qr_global_avgpool_f32. The divisor is as qr_avgpool_f32's.
 */
void qr_maxpool3d_f32(const struct qr_pool_params *p, const float *x,
		      float *y);
void qr_maxpool3d_q8(const struct qr_pool_params *p, const void *x,
		     int is_signed, void *y);
void qr_avgpool3d_f32(const struct qr_pool_params *p, const float *x,
		      float *y);
/* GlobalAveragePool / GlobalMaxPool over nc planes of hw elements. */
void qr_global_avgpool_f32(const float *x, size_t nc, size_t hw, float *y);
void qr_global_maxpool_f32(const float *x, size_t nc, size_t hw, float *y);
/*
 * QLinearGlobalAveragePool (NCHW), as MLAS: acc = sum(x) - x_zp * hw
 * (int32), scale = x_scale / (y_scale * (float)hw), then
 * qr_requantize_row(acc, scale, y_zp).
 */
void qr_qlinear_global_avgpool(const void *x, int is_signed, size_t nc,
			       size_t hw, float x_scale, int32_t x_zp,
			       float y_scale, int32_t y_zp, void *y);

/* ---- Resize (resize.c) ---- */

enum qr_resize_coord {
	QR_COORD_HALF_PIXEL,         /* (o + 0.5) / s - 0.5 */
	QR_COORD_PYTORCH_HALF_PIXEL, /* same, but 0 when the output is 1 long */
	QR_COORD_ALIGN_CORNERS,      /* o * (in - 1) / (out - 1), 0 if out 1 */
	QR_COORD_ASYMMETRIC,         /* o / s */
	QR_COORD_TF_HALF_PIXEL_NN,   /* (o + 0.5) / s (nearest only) */
};

enum qr_resize_nearest {
	QR_NEAREST_ROUND_PREFER_FLOOR, /* halves go down */
	QR_NEAREST_ROUND_PREFER_CEIL,  /* halves go up */
	QR_NEAREST_FLOOR,
	QR_NEAREST_CEIL,
};

/* Resize of the two innermost axes of nc planes of h x w to oh x ow. */
struct qr_resize_params {
	size_t nc;             /* planes (product of the outer axes) */
	size_t h, w;           /* input plane size */
	size_t oh, ow;         /* output plane size */
	float scale_h, scale_w; /* scales as given (or oh/h, ow/w for sizes) */
	enum qr_resize_coord coord;     /* coordinate_transformation_mode */
	enum qr_resize_nearest nearest; /* nearest_mode (nearest only) */
	float cubic_a;         /* cubic_coeff_a (cubic only) */
	int exclude_outside;   /* cubic: taps outside the input weigh 0 */
};

/* Source coordinate of output index o along one axis (exposed for tests). */
float qr_resize_coord(enum qr_resize_coord mode, size_t o, float scale,
		      size_t in_len, size_t out_len);
/* mode = "nearest" on elements of elem_size bytes (any dtype, exact). */
void qr_resize_nearest(const struct qr_resize_params *p, const void *x,
		       size_t elem_size, void *y);
/* mode = "linear" (bilinear) on floats; coordinates clamped to the input. */
void qr_resize_linear_f32(const struct qr_resize_params *p, const float *x,
			  float *y);
/* mode = "cubic" on floats: 4 taps per axis weighted by Keys' cubic
 * with a = cubic_a, taps outside the input clamped to its edge or, with
 * exclude_outside, given weight 0 and the others renormalized; the rows
 * are interpolated first, then the columns. */
void qr_resize_cubic_f32(const struct qr_resize_params *p, const float *x,
			 float *y);

/* GridSample (2-D): output [n][c][oh][ow] from x [n][c][h][w] at the
 * normalized (x, y) pairs of grid [n][oh][ow][2]. */
enum qr_grid_mode { QR_GRID_LINEAR, QR_GRID_NEAREST, QR_GRID_CUBIC };
enum qr_grid_pad { QR_GRID_ZEROS, QR_GRID_BORDER, QR_GRID_REFLECTION };
struct qr_grid_params {
	size_t n, c, h, w, oh, ow;
	enum qr_grid_mode mode;
	enum qr_grid_pad pad;
	int align_corners;
};
void qr_grid_sample_f32(const struct qr_grid_params *p, const float *x,
			const float *grid, float *y);

/* ---- Normalization and softmax (norm.c) ---- */

/* Softmax over rows of n elements (the axis already made innermost):
 * y = exp(x - max) / sum. x and y may be the same array. */
void qr_softmax_f32(const float *x, size_t rows, size_t n, float *y);
/* One row of n in ONNX Runtime's arithmetic and order (MLAS's exp and
 * lane sums), bit for bit; x and y may be the same array. */
void qr_softmax_row_ort_f32(const float *x, size_t n, float *y);
/* The exp-sum of ONNX Runtime's softmax (MLAS's ComputeSumExp kernel, as
 * qr_softmax_row_ort_f32 uses it): y_i = exp(x_i + negmax) with MLAS's
 * exp, and their sum in its lanes' order is returned. Attention kernels
 * that normalize later (the flash attentions) use it. x may be y. */
float qr_sumexp_ort_f32(const float *x, size_t n, float negmax, float *y);
/* Sum of n contiguous floats in ONNX Runtime's reduction order (Eigen's
 * SSE redux, which depends on x's 16-byte alignment), bit for bit. */
float qr_sum_ort_f32(const float *x, size_t n);
/* The layer norms ONNX Runtime's CPU kernels compute, by op. */
enum qr_ort_norm {
	QR_ORT_LAYERNORM,      /* LayerNormalization */
	QR_ORT_SKIP_LAYERNORM, /* com.microsoft SkipLayerNormalization */
	QR_ORT_RMSNORM,        /* SimplifiedLayerNormalization */
	QR_ORT_SKIP_RMSNORM,   /* com.microsoft SkipSimplifiedLayerNormalization */
	QR_ORT_LAYERNORM_BCAST /* LayerNormalization whose scale or bias is
				  broadcast over the normalized dims (given
				  here expanded to whole rows) */
};
/* One row of n (n > 0) normalized as ONNX Runtime 1.30's kernel for kind
 * does it, bit for bit: (x - mean) / sqrt(var + eps) * gamma + beta
 * (population variance; beta may be NULL), or for the RMS kinds
 * x / sqrt(mean(x^2) + eps) * gamma (beta unused, mean 0). The mean and
 * 1 / sqrt(var + eps) go to *mean and *inv when not NULL. x may be y. */
void qr_norm_row_ort_f32(enum qr_ort_norm kind, const float *x, size_t n,
			 const float *gamma, const float *beta, float eps,
			 float *y, float *mean, float *inv);
/* LayerNormalization over rows of n: (x - mean) / sqrt(var + eps) * gamma
 * + beta (beta may be NULL), as qr_norm_row_ort_f32 (QR_ORT_LAYERNORM)
 * on each row. */
void qr_layernorm_f32(const float *x, size_t rows, size_t n,
		      const float *gamma, const float *beta, float eps,
		      float *y);
/* BatchNormalization (inference) over [n][c][hw]. */
void qr_batchnorm_f32(const float *x, size_t n, size_t c, size_t hw,
		      const float *scale, const float *bias, const float *mean,
		      const float *var, float eps, float *y);
/* InstanceNormalization over [n][c][hw]: per (n, c) statistics. */
void qr_instancenorm_f32(const float *x, size_t n, size_t c, size_t hw,
			 const float *scale, const float *bias, float eps,
			 float *y);

/* ---- Broadcasting elementwise (eltwise.c) ---- */

#define QR_MAX_RANK 8 /* highest rank the broadcast helpers take */

/*
 * Strides (in elements) with which an input of rank in_rank and dims
 * in_dims is read when broadcast to out_dims (rank out_rank, numpy rules:
 * right-aligned, size-1 axes get stride 0). Returns 0, or -1 when the
 * shapes do not broadcast.
 */
int qr_broadcast_strides(size_t out_rank, const int64_t *out_dims,
			 size_t in_rank, const int64_t *in_dims,
			 size_t *strides);

enum qr_binop {
	QR_BIN_ADD,
	QR_BIN_SUB,
	QR_BIN_MUL,
	QR_BIN_DIV,
	QR_BIN_MAX,
	QR_BIN_MIN,
	QR_BIN_POW,
};

/* y[i] = a[i] op b[i] over out_dims, a and b read with the strides from
 * qr_broadcast_strides. y is dense. */
void qr_binary_f32(enum qr_binop op, size_t rank, const int64_t *out_dims,
		   const float *a, const size_t *a_strides, const float *b,
		   const size_t *b_strides, float *y);
/* y[i] = a[i * sa] op b[i * sb] for i < n: one run of a broadcast. y may
 * be a or b. */
void qr_binary_row_f32(enum qr_binop op, size_t n, const float *a, size_t sa,
		       const float *b, size_t sb, float *y);

/* y[i] = x[i] clamped to [lo, hi] (Relu, Clip); NaN stays NaN. x may be y. */
void qr_clamp_f32(const float *x, size_t n, float lo, float hi, float *y);
/* y[i] = x[i] * alpha + beta clamped to [0, 1] (HardSigmoid), two
 * roundings as ONNX Runtime; NaN stays NaN. x may be y. */
void qr_hard_sigmoid_f32(const float *x, size_t n, float alpha, float beta,
			 float *y);
/* y[i] = x[i] * HardSigmoid(x[i]) with alpha 1/6, beta 0.5 (HardSwish, as
 * ONNX Runtime: x * (1/6), not x / 6). x may be y. */
void qr_hard_swish_f32(const float *x, size_t n, float *y);

/* y[i] = exp(x[i]) with ONNX Runtime's bits (MLAS's exp kernel: x
 * clamped to [-103.97, 88.78], a degree-6 polynomial in fused
 * multiply-adds, 2^m applied in two factors so that results near the
 * float range's ends are denormal or finite as there). x may be y. */
void qr_exp_ort_f32(const float *x, size_t n, float *y);
/* y[i] = 1 / (1 + exp(-x[i])) with ONNX Runtime's bits (MLAS's logistic
 * kernel: x clamped to [-18, 18], a rational polynomial in fused
 * multiply-adds, the result clamped to [0, 1]; NaN stays NaN). x may be
 * y. */
void qr_sigmoid_ort_f32(const float *x, size_t n, float *y);
/* y[i] = tanh(x[i]) with ONNX Runtime's bits (MLAS's tanh kernel: x
 * clamped to [-9, 9], a rational polynomial in fused multiply-adds; NaN
 * stays NaN). x may be y. */
void qr_tanh_ort_f32(const float *x, size_t n, float *y);
/* y[i] = erf(x[i]) with ONNX Runtime's bits (MLAS's erf kernel: a
 * polynomial below |x| = 0.921875, 1 - exp(-polynomial) above, |x|
 * clamped to 3.925; NaN stays NaN). x may be y. */
void qr_erf_ort_f32(const float *x, size_t n, float *y);

/* ---- Eigen's float functions, as ONNX Runtime computes with them
 * (eigen.c) ---- */

/* ONNX Runtime's Elu, Selu, Celu, Softplus, Log, Sin and Cos, bit for
 * bit: Eigen's exp, log, sin and cos polynomials on all but the last
 * n % 4 values, libm on those (see eigen.c), in the ops' own formulas:
 * Elu x >= 0 ? x : alpha (exp(x) - 1); Selu x > 0 ? gamma x :
 * gamma alpha (exp(x) - 1); Celu max(x, 0) + min(alpha (exp(x /
 * alpha) - 1), 0); Softplus x > 0 ? x + log1p(exp(-x)) :
 * log1p(exp(x)). x may be y. */
void qr_elu_ort_f32(const float *x, size_t n, float alpha, float *y);
void qr_selu_ort_f32(const float *x, size_t n, float alpha, float gamma,
		     float *y);
void qr_celu_ort_f32(const float *x, size_t n, float alpha, float *y);
void qr_softplus_ort_f32(const float *x, size_t n, float *y);
void qr_log_ort_f32(const float *x, size_t n, float *y);
void qr_sin_ort_f32(const float *x, size_t n, float *y);
void qr_cos_ort_f32(const float *x, size_t n, float *y);

/* ---- box overlap (detect.c) ---- */

/* Boxes as columns of corners (x0 <= x1, y0 <= y1) and their areas. */
struct qr_boxes {
	float *x0, *y0, *x1, *y1, *area;
};

/* (x1 - x0) * (y1 - y0) of the box b = {x0, y0, x1, y1}. */
float qr_box_area(const float *b);
/* 1 when box b = {x0, y0, x1, y1} overlaps any of the n boxes k by an
 * intersection over union above thr, computed as ONNX Runtime's
 * NonMaxSuppression does (intersection then union in float; a box of no
 * area, or no intersection, never suppresses). */
int qr_box_suppressed(const struct qr_boxes *k, size_t n, const float *b,
		      float thr);

/* ---- Winograd 3x3 convolution (winograd.c) ---- */

/*
 * Float 3x3 stride-1 convs by Winograd F(4x4, 3x3): about a quarter of
 * the direct conv's multiplies, for runs that need not match ONNX
 * Runtime's bits (it sums in its own order). Use qr_conv_f32_* where
 * ORT's bits matter.
 */
struct qr_wino_f32; /* transformed weights; opaque */

/* 1 when p is a conv this path computes: kh = kw = 3, strides 1,
 * dilations 1, group 1, no out_pad (any padding, batch, size). */
int qr_wino_f32_ok(const struct qr_conv_params *p);
/* Transform w[c_out][c_in][3][3] once (the returned object owns a copy,
 * 36 * c_in * c_out rounded up to 16 floats; w may be freed after). */
struct qr_wino_f32 *qr_wino_f32_new(size_t c_out, size_t c_in,
				    const float *w);
/* Bytes held by the transformed weights (for memory accounting). */
size_t qr_wino_f32_bytes(const struct qr_wino_f32 *wk);
/* Workspace bytes for qr_wino_f32_run with these params and threads. */
size_t qr_wino_f32_workspace(const struct qr_wino_f32 *wk,
			     const struct qr_conv_params *p, int n_threads);
/*
 * y[n][c_out][oh][ow] = conv(x[n][c_in][h][w]) + bias[c_out] (bias may be
 * NULL), oh/ow as qr_conv_out_h/qr_conv_out_w; p must pass
 * qr_wino_f32_ok and match wk's channels. Sums in Winograd's order, not
 * ONNX Runtime's: results differ from the direct kernel by rounding only
 * (and never depend on n_threads or on the AVX-512/portable path).
 */
void qr_wino_f32_run(const struct qr_wino_f32 *wk,
		     const struct qr_conv_params *p, const float *x,
		     const float *bias, float *y, void *ws, int n_threads);
void qr_wino_f32_free(struct qr_wino_f32 *wk);

#endif
