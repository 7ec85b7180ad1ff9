/*
 * util: the ground floor every other module stands on.
 *
 * - x*alloc (util.c): allocation that never returns NULL; out of memory
 *   ends the run cleanly, one line on stderr and exit 2 (as in tmux's
 *   xmalloc.c).
 * - struct qr_diag / enum qr_status (util.c): how user-caused failures
 *   travel up to cli/, which alone prints them and maps them to exit
 *   codes.
 * - struct qr_arena: bump allocator for data freed all at once (the
 *   model); struct qr_buf: growable byte/string buffer (util.c).
 * - file helpers (file.c): map a file read-only, read a small one, write
 *   a whole file, make and remove folders, compare paths.
 * - struct qr_strmap (strmap.c): the string -> index hash table.
 * - binary16 / bfloat16 conversions (half.c).
 * - interrupted runs (cleanup.c): the folders a run is building, removed
 *   on SIGINT/SIGTERM/SIGHUP; stale temporary folders swept.
 * - the memory budget (membudget.c): what the run holds and may hold
 *   (--max-memory), checked before large tensors get memory.
 *
 * Ownership: *_new / x*alloc results belong to the caller; *_free(NULL) is a
 * no-op.
 */
#ifndef QR_UTIL_H
#define QR_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define QR_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define QR_NORETURN __attribute__((noreturn))
#else
#define QR_PRINTF(a, b)
#define QR_NORETURN
#endif

/* Outcome of anything that can fail because of what the user gave us. */
enum qr_status {
	QR_OK = 0,
	QR_EUSAGE,       /* bad command line or option value */
	QR_EIO,          /* file missing, unreadable or unwritable */
	QR_EFORMAT,      /* file is not what it claims: not ONNX, truncated */
	QR_EUNSUPPORTED, /* valid input that qreport cannot handle */
	QR_ESHAPE,       /* shapes or sizes that disagree */
	QR_EGRAPH,       /* malformed graph: cycle, undefined input */
	QR_EPARTIAL,     /* part of the analysis could not be done */
	QR_ETHRESHOLD,   /* a --fail-if check was crossed */
	QR_ENOMEM,       /* the run would need more memory than it may use */
};

#define QR_DIAG_MSG_MAX 1024

/* A warning kept for the report (e.g. "skipped unreadable image x.jpg"). */
struct qr_warning {
	char *msg; /* heap string, owned by the qr_diag */
};

/* Where a failure is described. One per run; cli/ prints it. */
struct qr_diag {
	enum qr_status status;      /* last error status, QR_OK if none */
	char msg[QR_DIAG_MSG_MAX];  /* one-line message of the last error */
	struct qr_warning *warnings; /* non-fatal problems, in order */
	size_t n_warnings;          /* entries in warnings */
};

/* Record an error in d (may be NULL) and return st, so callers can write
 * `return qr_errorf(d, QR_EFORMAT, "file '%s': ...", path);`. */
enum qr_status qr_errorf(struct qr_diag *d, enum qr_status st,
			 const char *fmt, ...) QR_PRINTF(3, 4);
/* Append a warning to d (may be NULL). */
void qr_warnf(struct qr_diag *d, const char *fmt, ...) QR_PRINTF(2, 3);
/* Free the warnings held by d; d itself is caller storage. */
void qr_diag_clear(struct qr_diag *d);
/* Write prefix, msg and a newline to f, with msg's control characters
 * (ESC, BEL, ... from a model's strings) as \xHH: nothing a model names
 * reaches a terminal raw. */
void qr_diag_print(FILE *f, const char *prefix, const char *msg);
/* Move src's warnings into d, in order, before d's warning number at
 * (clamped to d's count); src keeps its error and no warnings. */
void qr_diag_take_warnings(struct qr_diag *d, size_t at, struct qr_diag *src);
/* Short name of a status, e.g. "bad input". */
const char *qr_status_name(enum qr_status st);

/* Broken invariant: a bug in qreport, never bad input. */
#define QR_ASSERT(cond)                                                     \
	do {                                                                \
		if (!(cond))                                                \
			qr_assert_fail(#cond, __FILE__, __LINE__);          \
	} while (0)
QR_NORETURN void qr_assert_fail(const char *what, const char *file, int line);
QR_NORETURN void qr_fatal(const char *fmt, ...) QR_PRINTF(1, 2);

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
/* realloc of n*size bytes, fatal on overflow. */
void *xreallocarray(void *p, size_t n, size_t size);
/*
 * Large buffers (a model's weights, transformed kernels): size zeroed
 * bytes, 64-byte aligned. From 2 MiB on they are pages of their own,
 * asked to be transparent huge pages (madvise), so touching them first
 * costs one page fault per 2 MiB rather than one per 4 KiB (each about
 * 10 us under a hypervisor that shadows page tables: 0.15 s for
 * resnet18's weights); smaller ones come from the heap. Never NULL (out
 * of memory is fatal); free with xpages_free and the same size.
 */
void *xpages(size_t size);
void xpages_free(void *p, size_t size);
/* The system's page size (4096 when sysconf cannot tell). */
size_t qr_page_size(void);

/*
 * Large buffers that live as long as their owner (an executor's pool of
 * activation buffers, the float tensors of a sample slot), carved one
 * after another from chunks of xpages: one page fault per 2 MiB for
 * all of them, where a buffer of its own would take one per 4 KiB each
 * time it is first written. A buffer is never given back alone;
 * qr_bulk_free releases them all.
 */
struct qr_bulk_chunk;
struct qr_bulk {
	struct qr_bulk_chunk *head;  /* the chunk being carved first */
	size_t bytes;                /* bytes in all chunks */
};
/* size bytes, 64-byte aligned, contents undefined. Never NULL. */
void *qr_bulk_alloc(struct qr_bulk *b, size_t size);
/* Whether p is a buffer qr_bulk_alloc gave from b. */
int qr_bulk_owns(const struct qr_bulk *b, const void *p);
void qr_bulk_free(struct qr_bulk *b);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) QR_PRINTF(1, 2);

/* Overflow-checked size arithmetic: return 0 and set *out on success. */
int qr_mul_overflow(size_t a, size_t b, size_t *out);
int qr_add_overflow(size_t a, size_t b, size_t *out);

/* Bump allocator; everything is released by qr_arena_free. */
struct qr_arena_block;
struct qr_arena {
	struct qr_arena_block *head; /* newest block first */
	size_t total;                /* bytes handed out, for reporting */
};
void *qr_arena_alloc(struct qr_arena *a, size_t size); /* zeroed, 16-aligned */
void *qr_arena_array(struct qr_arena *a, size_t n, size_t size);
char *qr_arena_strdup(struct qr_arena *a, const char *s);
char *qr_arena_strndup(struct qr_arena *a, const char *s, size_t n);
void qr_arena_free(struct qr_arena *a);

/* Growable buffer; data is always NUL-terminated when len > 0. */
struct qr_buf {
	char *data; /* heap bytes, owned by the buffer */
	size_t len; /* bytes used, excluding the NUL */
	size_t cap; /* bytes allocated */
};
void qr_buf_append(struct qr_buf *b, const void *p, size_t n);
void qr_buf_puts(struct qr_buf *b, const char *s);
void qr_buf_putc(struct qr_buf *b, char c);
void qr_buf_printf(struct qr_buf *b, const char *fmt, ...) QR_PRINTF(2, 3);
void qr_buf_vprintf(struct qr_buf *b, const char *fmt, va_list ap);
/* Give up the buffer's string (never NULL) and reset b. */
char *qr_buf_take(struct qr_buf *b);
void qr_buf_free(struct qr_buf *b);

/* A read-only view of a whole file, mmap'd when possible. */
struct qr_map {
	const uint8_t *data; /* file bytes; NULL for an empty file */
	size_t size;         /* file size in bytes */
	int mapped;          /* 1 when data came from mmap */
};
/* Map path read-only. Returns QR_EIO naming the file when it cannot. */
enum qr_status qr_map_file(const char *path, struct qr_map *out,
			   struct qr_diag *d);
void qr_unmap(struct qr_map *m);
/* Give back the memory of the whole pages inside [off, off + len) of a
 * mapped file (read again from the file if touched later); nothing for a
 * map that is not mapped. */
void qr_map_drop(const struct qr_map *m, size_t off, size_t len);
/* Map in the pages of [off, off + len) of a mapped file at once (one
 * call instead of a fault per few pages), where the kernel can; a hint,
 * nothing for a map that is not mapped. */
void qr_map_populate(const struct qr_map *m, size_t off, size_t len);
/* Read a whole regular file into a NUL-terminated heap buffer (*out,
 * *len). A FIFO, a device or a folder is refused without blocking, and so
 * is a file over QR_READ_FILE_MAX (QR_EIO naming the file). Models and
 * data are mapped (qr_map_file), which refuses non-regular files too. */
#define QR_READ_FILE_MAX ((uint64_t)256 << 20) /* --config, --compare-to,
						  templates */
enum qr_status qr_read_file(const char *path, char **out, size_t *len,
			    struct qr_diag *d);
/* Write n bytes to path: into a new file beside it, renamed over it, so
 * a link at path is replaced, never followed, and path never holds half
 * the bytes. */
enum qr_status qr_write_file(const char *path, const void *p, size_t n,
			     struct qr_diag *d);
/* mkdir -p; QR_EIO naming the path when it fails. */
enum qr_status qr_mkdirs(const char *path, struct qr_diag *d);
/* Remove a directory tree we created (never follows symlinks out). */
int qr_remove_tree(const char *path);
/* 1 when one of two paths is the other or lies inside it, once both are
 * resolved (symlinks, "..", relative paths; parts that do not exist yet
 * are taken as written). */
int qr_path_overlap(const char *a, const char *b);
/* Join a directory and a name into a new heap string. */
char *qr_path_join(const char *dir, const char *name);
/* Directory part of path as a new heap string ("." when none). */
char *qr_path_dirname(const char *path);
/* Pointer to the last component of path (borrowed). */
const char *qr_path_basename(const char *path);
/* Monotonic clock in seconds. */
double qr_now(void);

/* Folders removed when the run is interrupted (cleanup.c). Call
 * qr_cleanup_start first thing in main, before any thread starts: it
 * blocks SIGINT, SIGTERM and SIGHUP and takes them on a thread of its
 * own, which removes the registered folders and then lets the signal end
 * the process. Without it, registering does nothing harmful. */
void qr_cleanup_start(void);
void qr_cleanup_add(const char *path);
void qr_cleanup_del(const char *path);
/* Remove the registered folders now (out of memory, a failed assertion);
 * nothing registers after it. */
void qr_cleanup_now(void);
/* A new empty folder "<target>.tmp-<pid>-XXXXXX" beside target (*out, a
 * heap string), registered with qr_cleanup_add; first removes the ones of
 * earlier runs whose process is gone (a SIGKILL leaves its folder). The
 * caller removes it, or renames it into place, then calls
 * qr_cleanup_del. */
enum qr_status qr_tmpdir_make(const char *target, char **out,
			      struct qr_diag *d);

/* Memory the run holds and may hold (membudget.c): bytes malloc holds
 * plus xpages' own mappings; the budget is qr_mem_set_budget's, or else
 * what the machine has available when first asked (MemAvailable, and
 * `ulimit -v` when set). Tensors of QR_MEM_CHECK_MIN bytes and more are
 * checked against it before they get memory (qr_tensor_set_shape). */
#define QR_MEM_CHECK_MIN ((size_t)16 << 20)
size_t qr_mem_in_use(void);
/* Give the pages malloc holds free back to the system, between phases
 * that allocate much (a no-op without glibc). */
void qr_mem_trim(void);
size_t qr_mem_budget(void);
void qr_mem_set_budget(size_t bytes);
/* End the run (qr_fatal: exit 2) when bytes more would exceed the
 * budget; nothing below QR_MEM_CHECK_MIN. x*alloc and xpages call it. */
void qr_mem_need(size_t bytes);
/* xpages' accounting: bytes mapped (add 1) or unmapped (add 0). */
void qr_mem_mapped(size_t bytes, int add);

/* Strings (borrowed, they must outlive the map) to indices: open
 * addressing, linear probing, doubled when half full. A zeroed struct is
 * an empty map. */
struct qr_strmap {
	const char **keys; /* cap slots, NULL when free */
	size_t *vals;      /* the index stored with each key */
	size_t cap;        /* slots: 0, or a power of two */
	size_t n;          /* keys held */
};
#define QR_STRMAP_NONE ((size_t)-1)
/* FNV-1a, 64 bits, of a NUL-terminated string. */
uint64_t qr_hash_str(const char *s);
/* The index stored with key, QR_STRMAP_NONE when absent. */
size_t qr_strmap_get(const struct qr_strmap *m, const char *key);
/* Store val with key unless key is there; the index stored either way. */
size_t qr_strmap_put(struct qr_strmap *m, const char *key, size_t val);
/* Room for n keys without growing. */
void qr_strmap_reserve(struct qr_strmap *m, size_t n);
void qr_strmap_free(struct qr_strmap *m);

/* IEEE binary16 and bfloat16 bits to float (exact), and float to them
 * rounding to nearest even (as numpy's astype; NaN stays NaN). */
float qr_f16_to_f32(uint16_t h);
uint16_t qr_f32_to_f16(float f);
float qr_bf16_to_f32(uint16_t h);
uint16_t qr_f32_to_bf16(float f);

#endif
