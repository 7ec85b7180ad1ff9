/*
 * npy: numpy's .npy format (read and write) and ONNX TensorProto .pb files,
 * the two ways tensors are fed to `qreport run`. See run.h.
 *
 * .npy layout (numpy/lib/format.py): "\x93NUMPY", major, minor, header
 * length (uint16 LE for 1.x, uint32 LE for 2.x/3.x), then a Python dict
 * literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces to a multiple of 64 bytes and ended by '\n', then the
 * raw data. The header parser accepts exactly that grammar, in any key
 * order, and names the file and the problem otherwise.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/run.h"

/* numpy descr (without byte order) <-> ONNX dtype. */
static const struct {
	const char *descr; /* kind and size, e.g. "f4" */
	int dtype;
} descrs[] = {
	{"f4", QR_DT_FLOAT}, {"f8", QR_DT_DOUBLE}, {"f2", QR_DT_FLOAT16},
	{"u1", QR_DT_UINT8}, {"i1", QR_DT_INT8}, {"u2", QR_DT_UINT16},
	{"i2", QR_DT_INT16}, {"u4", QR_DT_UINT32}, {"i4", QR_DT_INT32},
	{"u8", QR_DT_UINT64}, {"i8", QR_DT_INT64}, {"b1", QR_DT_BOOL},
};

/* The header being parsed. */
struct hdr {
	const char *p, *end; /* cursor and end of the dict text */
	const char *what;    /* file name for messages */
	struct qr_diag *d;
};

static void
skip_ws(struct hdr *h)
{
	while (h->p < h->end && isspace((unsigned char)*h->p))
		h->p++;
}

static enum qr_status
hdr_err(struct hdr *h, const char *why)
{
	return qr_errorf(h->d, QR_EFORMAT, "file '%s': bad .npy header: %s",
			 h->what, why);
}

/* A quoted string ('...' or "...") into buf of size n. */
static enum qr_status
parse_str(struct hdr *h, char *buf, size_t n)
{
	char q;
	size_t len = 0;

	skip_ws(h);
	if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
		return hdr_err(h, "expected a quoted string");
	q = *h->p++;
	while (h->p < h->end && *h->p != q) {
		if (len + 1 >= n)
			return hdr_err(h, "string too long");
		buf[len++] = *h->p++;
	}
	if (h->p >= h->end)
		return hdr_err(h, "unterminated string");
	h->p++;
	buf[len] = '\0';
	return QR_OK;
}

static int
accept(struct hdr *h, char c)
{
	skip_ws(h);
	if (h->p < h->end && *h->p == c) {
		h->p++;
		return 1;
	}
	return 0;
}

/* (d0, d1, ...) with an optional trailing comma. */
static enum qr_status
parse_shape(struct hdr *h, int64_t *dims, int *ndim)
{
	*ndim = 0;
	if (!accept(h, '('))
		return hdr_err(h, "shape must be a tuple");
	for (;;) {
		int64_t v = 0;
		int digits = 0;

		if (accept(h, ')'))
			return QR_OK;
		skip_ws(h);
		while (h->p < h->end && isdigit((unsigned char)*h->p)) {
			if (v > (INT64_MAX - 9) / 10)
				return hdr_err(h, "dimension too large");
			v = v * 10 + (*h->p++ - '0');
			digits++;
		}
		if (h->p < h->end && *h->p == 'L') /* Python 2 longs */
			h->p++;
		if (digits == 0)
			return hdr_err(h, "shape holds a non-integer");
		if (*ndim == QR_TENSOR_MAX_DIMS)
			return hdr_err(h, "too many dimensions");
		dims[(*ndim)++] = v;
		if (accept(h, ')'))
			return QR_OK;
		if (!accept(h, ','))
			return hdr_err(h, "expected ',' or ')' in shape");
	}
}

/* Parse the dict into dtype, fortran flag and shape. */
static enum qr_status
parse_dict(struct hdr *h, int *dtype, int *fortran, int64_t *dims, int *ndim)
{
	char key[32], val[32];
	int have = 0;
	enum qr_status st;
	size_t i;

	if (!accept(h, '{'))
		return hdr_err(h, "expected '{'");
	while (!accept(h, '}')) {
		if ((st = parse_str(h, key, sizeof key)) != QR_OK)
			return st;
		if (!accept(h, ':'))
			return hdr_err(h, "expected ':'");
		if (strcmp(key, "descr") == 0) {
			if ((st = parse_str(h, val, sizeof val)) != QR_OK)
				return st;
			if (val[0] == '>' && strcmp(val + 1, "u1") != 0 &&
			    strcmp(val + 1, "i1") != 0 &&
			    strcmp(val + 1, "b1") != 0)
				return qr_errorf(h->d, QR_EUNSUPPORTED, "file "
						 "'%s': big-endian dtype '%s' "
						 "is not supported", h->what,
						 val);
			if (val[0] != '<' && val[0] != '|' && val[0] != '=' &&
			    val[0] != '>')
				return qr_errorf(h->d, QR_EUNSUPPORTED, "file "
						 "'%s': dtype '%s' is not "
						 "supported", h->what, val);
			*dtype = QR_DT_UNDEFINED;
			for (i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
				if (strcmp(val + 1, descrs[i].descr) == 0)
					*dtype = descrs[i].dtype;
			if (*dtype == QR_DT_UNDEFINED)
				return qr_errorf(h->d, QR_EUNSUPPORTED, "file "
						 "'%s': dtype '%s' is not "
						 "supported", h->what, val);
			have |= 1;
		} else if (strcmp(key, "fortran_order") == 0) {
			skip_ws(h);
			if ((size_t)(h->end - h->p) >= 4 &&
			    memcmp(h->p, "True", 4) == 0) {
				*fortran = 1;
				h->p += 4;
			} else if ((size_t)(h->end - h->p) >= 5 &&
				   memcmp(h->p, "False", 5) == 0) {
				*fortran = 0;
				h->p += 5;
			} else {
				return hdr_err(h, "fortran_order must be True "
					       "or False");
			}
			have |= 2;
		} else if (strcmp(key, "shape") == 0) {
			if ((st = parse_shape(h, dims, ndim)) != QR_OK)
				return st;
			have |= 4;
		} else {
			return hdr_err(h, "unknown key");
		}
		if (!accept(h, ',')) {
			if (!accept(h, '}'))
				return hdr_err(h, "expected ',' or '}'");
			break;
		}
	}
	skip_ws(h);
	if (h->p != h->end)
		return hdr_err(h, "text after the dict");
	if (have != 7)
		return hdr_err(h, "descr, fortran_order or shape is missing");
	return QR_OK;
}

/*
 * The header of the .npy image buf: a new tensor t of its dtype and
 * shape, without data (t->nbytes the data's size), and *off where the
 * data starts. Checks that the data is exactly that long.
 */
static enum qr_status
parse_head(const uint8_t *b, size_t len, const char *what,
	   struct qr_tensor **out, size_t *off, struct qr_diag *d)
{
	struct qr_tensor *t;
	struct hdr h = {0};
	int64_t dims[QR_TENSOR_MAX_DIMS];
	size_t hlen;
	int dtype = 0, fortran = 0, ndim = 0;
	enum qr_status st;

	*out = NULL;
	if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
		return qr_errorf(d, QR_EFORMAT, "file '%s': not a .npy file "
				 "(bad magic)", what);
	if (b[6] == 1) {
		hlen = (size_t)b[8] | (size_t)b[9] << 8;
		*off = 10;
	} else if (b[6] == 2 || b[6] == 3) {
		if (len < 12)
			return qr_errorf(d, QR_EFORMAT, "file '%s': truncated "
					 ".npy header", what);
		hlen = (size_t)b[8] | (size_t)b[9] << 8 |
			(size_t)b[10] << 16 | (size_t)b[11] << 24;
		*off = 12;
	} else {
		return qr_errorf(d, QR_EUNSUPPORTED, "file '%s': .npy format "
				 "version %d.%d is not supported", what, b[6],
				 b[7]);
	}
	if (hlen > len - *off)
		return qr_errorf(d, QR_EFORMAT, "file '%s': .npy header of %zu "
				 "bytes runs past the end of the file", what,
				 hlen);
	h.p = (const char *)b + *off;
	h.end = h.p + hlen;
	h.what = what;
	h.d = d;
	if ((st = parse_dict(&h, &dtype, &fortran, dims, &ndim)) != QR_OK)
		return st;
	if (fortran && ndim > 1)
		return qr_errorf(d, QR_EUNSUPPORTED, "file '%s': Fortran "
				 "order is not supported (save with "
				 "np.ascontiguousarray)", what);
	t = xcalloc(1, sizeof *t);
	st = qr_tensor_set_shape(t, dtype, ndim, dims, what, d);
	*off += hlen;
	if (st == QR_OK && len - *off != t->nbytes)
		st = qr_errorf(d, QR_EFORMAT, "file '%s': .npy data is %zu "
			       "bytes, shape and dtype need %zu", what,
			       len - *off, t->nbytes);
	if (st != QR_OK)
		qr_tensor_free(t);
	else
		*out = t;
	return st;
}

/* See run.h. */
enum qr_status
qr_npy_parse(const void *buf, size_t len, const char *what, const char *name,
	     struct qr_tensor **out, struct qr_diag *d)
{
	struct qr_tensor *t;
	size_t off;
	enum qr_status st = parse_head(buf, len, what, &t, &off, d);

	*out = NULL;
	if (st != QR_OK)
		return st;
	t->owned = 1;
	qr_tensor_alloc(t);
	if (t->nbytes > 0)
		memcpy(t->data, (const uint8_t *)buf + off, t->nbytes);
	t->name = name;
	*out = t;
	return QR_OK;
}

/* Map path and parse it (qr_npy_parse), or only its header (head: the
 * tensor has no data); QR_EIO when it cannot be read. */
static enum qr_status
npy_read(const char *path, const char *name, int head, struct qr_tensor **out,
	 struct qr_diag *d)
{
	struct qr_map m;
	size_t off;
	enum qr_status st;

	*out = NULL;
	st = qr_map_file(path, &m, d);
	if (st != QR_OK)
		return st;
	if (head) {
		st = parse_head(m.data, m.size, path, out, &off, d);
		if (st == QR_OK)
			(*out)->name = name;
	} else {
		st = qr_npy_parse(m.data, m.size, path, name, out, d);
	}
	qr_unmap(&m);
	return st;
}

enum qr_status
qr_npy_read(const char *path, const char *name, struct qr_tensor **out,
	    struct qr_diag *d)
{
	return npy_read(path, name, 0, out, d);
}

enum qr_status
qr_npy_read_head(const char *path, struct qr_tensor **out, struct qr_diag *d)
{
	return npy_read(path, NULL, 1, out, d);
}

/* See run.h. */
enum qr_status
qr_npy_write(const char *path, const struct qr_tensor *t, struct qr_diag *d)
{
	struct qr_buf hb = {0}, file = {0};
	const char *descr = NULL;
	enum qr_status st;
	size_t i, pre, total, hlen;
	int v2;

	for (i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
		if (descrs[i].dtype == t->dtype)
			descr = descrs[i].descr;
	if (descr == NULL)
		return qr_errorf(d, QR_EUNSUPPORTED, "file '%s': dtype %s "
				 "cannot be written as .npy", path,
				 qr_dtype_name(t->dtype));
	qr_buf_printf(&hb, "{'descr': '%c%s', 'fortran_order': False, "
		      "'shape': (", descr[1] == '1' ? '|' : '<', descr);
	for (i = 0; i < (size_t)t->ndim; i++)
		qr_buf_printf(&hb, "%lld,%s", (long long)t->dims[i],
			      i + 1 < (size_t)t->ndim ? " " : "");
	if (t->ndim > 1) /* numpy writes (2, 3), not (2, 3,) */
		hb.data[--hb.len] = '\0';
	qr_buf_puts(&hb, "), }");
	v2 = hb.len + 1 + 10 > 65535;
	pre = v2 ? 12 : 10;
	total = pre + hb.len + 1;
	while (total % 64 != 0) {
		qr_buf_putc(&hb, ' ');
		total++;
	}
	qr_buf_putc(&hb, '\n');
	hlen = hb.len;
	qr_buf_append(&file, "\x93NUMPY", 6);
	qr_buf_putc(&file, (char)(v2 ? 2 : 1));
	qr_buf_putc(&file, 0);
	qr_buf_putc(&file, (char)(hlen & 0xff));
	qr_buf_putc(&file, (char)((hlen >> 8) & 0xff));
	if (v2) {
		qr_buf_putc(&file, (char)((hlen >> 16) & 0xff));
		qr_buf_putc(&file, (char)((hlen >> 24) & 0xff));
	}
	qr_buf_append(&file, hb.data, hb.len);
	if (t->nbytes > 0)
		qr_buf_append(&file, t->data, t->nbytes);
	st = qr_write_file(path, file.data, file.len, d);
	qr_buf_free(&hb);
	qr_buf_free(&file);
	return st;
}

/* See run.h. */
enum qr_status
qr_pb_read(const char *path, const char *name, struct qr_tensor **out,
	   struct qr_diag *d)
{
	struct qr_arena a = {0};
	struct qr_tensor_data td;
	struct qr_tensor *t = NULL;
	struct qr_map m;
	enum qr_status st;

	*out = NULL;
	st = qr_map_file(path, &m, d);
	if (st != QR_OK)
		return st;
	memset(&td, 0, sizeof td);
	st = qr_onnx_load_tensor_pb(m.data, m.size, path, &a, &td, d);
	if (st != QR_OK)
		goto out;
	if (td.data == NULL && td.n_elem > 0) {
		st = qr_errorf(d, QR_EUNSUPPORTED, "file '%s': %s tensors are "
			       "not supported", path, qr_dtype_name(td.dtype));
		goto out;
	}
	t = xcalloc(1, sizeof *t);
	st = qr_tensor_set_shape(t, td.dtype, td.ndim, td.dims, path, d);
	if (st != QR_OK)
		goto out;
	t->owned = 1;
	qr_tensor_alloc(t);
	if (t->nbytes > 0)
		memcpy(t->data, td.data, t->nbytes);
	t->name = name;
out:
	if (st != QR_OK) {
		qr_tensor_free(t);
		t = NULL;
	}
	*out = t;
	qr_arena_free(&a);
	qr_unmap(&m);
	return st;
}
