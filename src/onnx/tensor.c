/* onnx: dtype table and element conversion of loaded tensors. See onnx.h. */
#include "onnx/onnx.h"

#include <math.h>
#include <string.h>

/* One row per ONNX DataType code, in code order. */
static const struct {
	const char *name; /* ONNX spelling, lower case */
	size_t size;      /* bytes per element in memory */
	int bits;         /* integer width, 0 for non-integers */
} dtypes[QR_DT_COUNT] = {
	[QR_DT_UNDEFINED] = {"undefined", 0, 0},
	[QR_DT_FLOAT] = {"float", 4, 0},
	[QR_DT_UINT8] = {"uint8", 1, 8},
	[QR_DT_INT8] = {"int8", 1, 8},
	[QR_DT_UINT16] = {"uint16", 2, 16},
	[QR_DT_INT16] = {"int16", 2, 16},
	[QR_DT_INT32] = {"int32", 4, 32},
	[QR_DT_INT64] = {"int64", 8, 64},
	[QR_DT_STRING] = {"string", 0, 0},
	[QR_DT_BOOL] = {"bool", 1, 0},
	[QR_DT_FLOAT16] = {"float16", 2, 0},
	[QR_DT_DOUBLE] = {"double", 8, 0},
	[QR_DT_UINT32] = {"uint32", 4, 32},
	[QR_DT_UINT64] = {"uint64", 8, 64},
	[QR_DT_COMPLEX64] = {"complex64", 8, 0},
	[QR_DT_COMPLEX128] = {"complex128", 16, 0},
	[QR_DT_BFLOAT16] = {"bfloat16", 2, 0},
	[QR_DT_FLOAT8E4M3FN] = {"float8e4m3fn", 1, 0},
	[QR_DT_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 1, 0},
	[QR_DT_FLOAT8E5M2] = {"float8e5m2", 1, 0},
	[QR_DT_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 1, 0},
	[QR_DT_UINT4] = {"uint4", 1, 4},
	[QR_DT_INT4] = {"int4", 1, 4},
};

/* 1 for the ONNX codes qreport knows, UNDEFINED excluded. */
int
qr_dtype_valid(int dtype)
{
	return dtype > QR_DT_UNDEFINED && dtype < QR_DT_COUNT;
}

/* Static name of dtype, "undefined" for unknown codes. */
const char *
qr_dtype_name(int dtype)
{
	return qr_dtype_valid(dtype) ? dtypes[dtype].name : "undefined";
}

/* Bytes per element in memory (4-bit types unpacked: 1). */
size_t
qr_dtype_size(int dtype)
{
	return qr_dtype_valid(dtype) ? dtypes[dtype].size : 0;
}

/* Bytes n_elem elements take in a file: 4-bit types two to a byte, the
 * others qr_dtype_size each. */
size_t
qr_dtype_stored_bytes(int dtype, size_t n_elem)
{
	if (dtype == QR_DT_UINT4 || dtype == QR_DT_INT4)
		return n_elem / 2 + n_elem % 2;
	return n_elem * qr_dtype_size(dtype);
}

/* Width of an integer dtype, 0 for others (bool included). */
int
qr_dtype_bits(int dtype)
{
	return qr_dtype_valid(dtype) ? dtypes[dtype].bits : 0;
}

/* The float8 formats of ONNX (opset 19): 1 sign bit, ebits exponent bits,
 * mbits mantissa bits. FN types have no infinities and one NaN pattern
 * (all ones); FNUZ types have no negative zero, 0x80 is their only NaN. */
static float
f8_to_f32(uint8_t v, int ebits, int mbits, int bias, int fnuz)
{
	int sign = v >> 7;
	int exp = (v >> mbits) & ((1 << ebits) - 1);
	int mant = v & ((1 << mbits) - 1);
	float f;

	if (fnuz && v == 0x80)
		return NAN;
	if (!fnuz && ebits == 4 && (v & 0x7f) == 0x7f)
		return NAN;
	if (exp == 0)
		f = ldexpf((float)mant, 1 - bias - mbits);
	else
		f = ldexpf((float)((1 << mbits) | mant), exp - bias - mbits);
	return sign ? -f : f;
}

/* Element i as double; complex types give their real part. */
static double
elem_get(const struct qr_tensor_data *t, size_t i)
{
	const uint8_t *p = t->data;

	switch (t->dtype) {
	case QR_DT_FLOAT: {
		float v;
		memcpy(&v, p + i * 4, 4);
		return v;
	}
	case QR_DT_COMPLEX64: {
		float v;
		memcpy(&v, p + i * 8, 4);
		return v;
	}
	case QR_DT_DOUBLE:
	case QR_DT_COMPLEX128: {
		double v;
		memcpy(&v, p + i * qr_dtype_size(t->dtype), 8);
		return v;
	}
	case QR_DT_UINT8:
	case QR_DT_BOOL:
	case QR_DT_UINT4:
		return p[i];
	case QR_DT_INT8:
	case QR_DT_INT4:
		return (int8_t)p[i];
	case QR_DT_UINT16: {
		uint16_t v;
		memcpy(&v, p + i * 2, 2);
		return v;
	}
	case QR_DT_INT16: {
		int16_t v;
		memcpy(&v, p + i * 2, 2);
		return v;
	}
	case QR_DT_INT32: {
		int32_t v;
		memcpy(&v, p + i * 4, 4);
		return v;
	}
	case QR_DT_UINT32: {
		uint32_t v;
		memcpy(&v, p + i * 4, 4);
		return v;
	}
	case QR_DT_INT64: {
		int64_t v;
		memcpy(&v, p + i * 8, 8);
		return (double)v;
	}
	case QR_DT_UINT64: {
		uint64_t v;
		memcpy(&v, p + i * 8, 8);
		return (double)v;
	}
	case QR_DT_FLOAT16: {
		uint16_t v;
		memcpy(&v, p + i * 2, 2);
		return qr_f16_to_f32(v);
	}
	case QR_DT_BFLOAT16: {
		uint16_t v;
		memcpy(&v, p + i * 2, 2);
		return qr_bf16_to_f32(v);
	}
	case QR_DT_FLOAT8E4M3FN:
		return f8_to_f32(p[i], 4, 3, 7, 0);
	case QR_DT_FLOAT8E4M3FNUZ:
		return f8_to_f32(p[i], 4, 3, 8, 1);
	case QR_DT_FLOAT8E5M2: /* the top byte of a float16 */
		return qr_f16_to_f32((uint16_t)(p[i] << 8));
	case QR_DT_FLOAT8E5M2FNUZ:
		return f8_to_f32(p[i], 5, 2, 16, 1);
	default:
		return NAN;
	}
}

/*
 * Element i of t as double. t must be numeric with data loaded; complex
 * types give their real part, strings NAN. i must be below t->n_elem.
 */
double
qr_tensor_get(const struct qr_tensor_data *t, size_t i)
{
	QR_ASSERT(i < t->n_elem);
	if (t->data == NULL)
		return NAN;
	return elem_get(t, i);
}

/*
 * Convert all of t to float into dst (t->n_elem slots, caller storage).
 * Returns QR_EUNSUPPORTED naming the tensor for strings, complex and
 * undefined dtypes.
 */
enum qr_status
qr_tensor_to_f32(const struct qr_tensor_data *t, float *dst,
		 struct qr_diag *d)
{
	size_t i;

	switch (t->dtype) {
	case QR_DT_STRING:
	case QR_DT_COMPLEX64:
	case QR_DT_COMPLEX128:
		return qr_errorf(d, QR_EUNSUPPORTED,
				 "tensor '%s': cannot convert %s to float",
				 t->name ? t->name : "", qr_dtype_name(t->dtype));
	default:
		break;
	}
	if (!qr_dtype_valid(t->dtype) || (t->data == NULL && t->n_elem > 0))
		return qr_errorf(d, QR_EUNSUPPORTED,
				 "tensor '%s': cannot convert %s to float",
				 t->name ? t->name : "", qr_dtype_name(t->dtype));
	if (t->dtype == QR_DT_FLOAT) {
		if (t->n_elem > 0)
			memcpy(dst, t->data, t->n_elem * sizeof *dst);
		return QR_OK;
	}
	for (i = 0; i < t->n_elem; i++)
		dst[i] = (float)elem_get(t, i);
	return QR_OK;
}
