/* gemm: float GEMM through OpenBLAS. */
#include "kernels/kernels.h"

#include <cblas.h>

void
qr_gemm_f32(int trans_a, int trans_b, size_t m, size_t n, size_t k,
	    float alpha, const float *a, size_t lda, const float *b,
	    size_t ldb, float beta, float *c, size_t ldc)
{
	size_t i, j;

	if (m == 0 || n == 0)
		return;
	if (k == 0) {
		/* BLAS would leave C alone; the maths says beta * C. */
		for (i = 0; i < m; i++)
			for (j = 0; j < n; j++)
				c[i * ldc + j] = beta == 0.0f ? 0.0f :
						 beta * c[i * ldc + j];
		return;
	}
	cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
		    trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
		    alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}
