/* util: file helpers. See util.h. */
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__linux__) && !defined(MADV_POPULATE_READ)
#define MADV_POPULATE_READ 22 /* <linux/mman.h>; older libc headers */
#endif

/*
 * Open path for reading only when it is a regular file: the open does not
 * block (O_NONBLOCK: a FIFO or a device would wait forever for a writer)
 * and fstat then refuses anything that is not a file, with QR_EIO naming
 * path. *fd is -1 unless QR_OK.
 */
static enum qr_status
open_regular(const char *path, int *fd, struct stat *sb, struct qr_diag *d)
{
	enum qr_status st = QR_OK;

	*fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (*fd < 0)
		return qr_errorf(d, QR_EIO, "cannot open '%s': %s", path,
				 strerror(errno));
	if (fstat(*fd, sb) != 0)
		st = qr_errorf(d, QR_EIO, "cannot stat '%s': %s", path,
			       strerror(errno));
	else if (!S_ISREG(sb->st_mode))
		st = qr_errorf(d, QR_EIO, "'%s' is not a regular file", path);
	if (st != QR_OK) {
		close(*fd);
		*fd = -1;
	}
	return st;
}

enum qr_status
qr_map_file(const char *path, struct qr_map *out, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	struct stat sb;
	int fd;

	memset(out, 0, sizeof *out);
	if ((st = open_regular(path, &fd, &sb, d)) != QR_OK)
		return st;
	out->size = (size_t)sb.st_size;
	if (out->size == 0)
		goto out;
	out->data = mmap(NULL, out->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (out->data == MAP_FAILED) {
		out->data = NULL;
		st = qr_errorf(d, QR_EIO, "cannot map '%s': %s", path,
			       strerror(errno));
		goto out;
	}
	out->mapped = 1;
out:
	close(fd);
	return st;
}

void
qr_map_drop(const struct qr_map *m, size_t off, size_t len)
{
	size_t page = qr_page_size();
	uintptr_t a, b;

	if (m == NULL || !m->mapped || m->data == NULL || off > m->size ||
	    len > m->size - off)
		return;
	a = ((uintptr_t)(m->data + off) + page - 1) / page * page;
	b = (uintptr_t)(m->data + off + len) / page * page;
	if (a < b)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

void
qr_map_populate(const struct qr_map *m, size_t off, size_t len)
{
#ifdef __linux__
	size_t page = qr_page_size();
	uintptr_t a, b;

	if (m == NULL || !m->mapped || m->data == NULL || off > m->size ||
	    len > m->size - off || len == 0)
		return;
	a = (uintptr_t)(m->data + off) / page * page;
	b = (uintptr_t)(m->data + off + len);
	/* Linux 5.14 on; older kernels say EINVAL, which is fine */
	madvise((void *)a, b - a, MADV_POPULATE_READ);
#else
	(void)m;
	(void)off;
	(void)len;
#endif
}

void
qr_unmap(struct qr_map *m)
{
	if (m == NULL)
		return;
	if (m->mapped && m->data != NULL)
		munmap((void *)m->data, m->size);
	memset(m, 0, sizeof *m);
}

enum qr_status
qr_read_file(const char *path, char **out, size_t *len, struct qr_diag *d)
{
	enum qr_status st;
	struct stat sb;
	size_t have = 0;
	ssize_t n;
	char *buf;
	int fd;

	*out = NULL;
	if (len != NULL)
		*len = 0;
	if ((st = open_regular(path, &fd, &sb, d)) != QR_OK)
		return st;
	if ((uint64_t)sb.st_size > QR_READ_FILE_MAX) {
		st = qr_errorf(d, QR_EIO, "'%s' is larger than %d MiB, the "
			       "most qreport reads of such a file", path,
			       (int)(QR_READ_FILE_MAX >> 20));
		goto out;
	}
	/* read up to one byte past the size fstat gave, so a file that grows
	 * meanwhile is still bounded and seen */
	buf = xmalloc((size_t)sb.st_size + 2);
	while (have <= (size_t)sb.st_size &&
	       (n = read(fd, buf + have, (size_t)sb.st_size + 1 - have)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			st = qr_errorf(d, QR_EIO, "cannot read '%s': %s", path,
				       strerror(errno));
			free(buf);
			goto out;
		}
		have += (size_t)n;
	}
	if (have > (size_t)sb.st_size) {
		st = qr_errorf(d, QR_EIO, "'%s' changed while it was read",
			       path);
		free(buf);
		goto out;
	}
	buf[have] = '\0';
	if (len != NULL)
		*len = have;
	*out = buf;
out:
	close(fd);
	return st;
}

/*
 * Written into a fresh file beside path (O_CREAT | O_EXCL | O_NOFOLLOW:
 * never an existing file, never through a link) and renamed over path,
 * which replaces a link planted at path instead of writing where it
 * points, and never leaves half a file under path's name.
 */
enum qr_status
qr_write_file(const char *path, const void *p, size_t n, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	char *tmp = NULL;
	const char *at = p;
	size_t left = n;
	unsigned k;
	int fd = -1;

	for (k = 0; fd < 0 && k < 100; k++) {
		free(tmp);
		tmp = xasprintf("%s.part-%ld-%u", path, (long)getpid(), k);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			  O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		st = qr_errorf(d, QR_EIO, "cannot create '%s': %s", path,
			       strerror(errno));
		goto out;
	}
	while (left > 0) {
		ssize_t w = write(fd, at, left);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			st = qr_errorf(d, QR_EIO, "cannot write '%s': %s",
				       path, w < 0 ? strerror(errno) :
				       "no space written");
			break;
		}
		at += w;
		left -= (size_t)w;
	}
	if (close(fd) != 0 && st == QR_OK)
		st = qr_errorf(d, QR_EIO, "cannot write '%s': %s", path,
			       strerror(errno));
	if (st == QR_OK && rename(tmp, path) != 0)
		st = qr_errorf(d, QR_EIO, "cannot write '%s': %s", path,
			       strerror(errno));
	if (st != QR_OK)
		unlink(tmp);
out:
	free(tmp);
	return st;
}

enum qr_status
qr_mkdirs(const char *path, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	char *p = xstrdup(path);
	struct stat sb;
	char *s;

	for (s = p + 1; ; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;

		*s = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			st = qr_errorf(d, QR_EIO, "cannot create folder '%s': %s",
				       p, strerror(errno));
			goto out;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
		st = qr_errorf(d, QR_EIO, "'%s' exists and is not a folder",
			       path);
out:
	free(p);
	return st;
}

int
qr_remove_tree(const char *path)
{
	struct dirent *de;
	struct stat sb;
	int rc = 0;
	DIR *dir;

	if (lstat(path, &sb) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(sb.st_mode))
		return unlink(path);
	dir = opendir(path);
	if (dir == NULL)
		return -1;
	while ((de = readdir(dir)) != NULL) {
		char *child;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		child = qr_path_join(path, de->d_name);
		if (qr_remove_tree(child) != 0)
			rc = -1;
		free(child);
	}
	closedir(dir);
	if (rmdir(path) != 0)
		rc = -1;
	return rc;
}

char *
qr_path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir);

	if (n == 0)
		return xstrdup(name);
	if (dir[n - 1] == '/')
		return xasprintf("%s%s", dir, name);
	return xasprintf("%s/%s", dir, name);
}

char *
qr_path_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

const char *
qr_path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

/* path made absolute with every symlink of its existing part resolved;
 * the components that do not exist yet are appended as they are. */
static char *
canonical(const char *path)
{
	char *dir, *r, *out;

	r = realpath(path, NULL);
	if (r != NULL)
		return r;
	if (errno != ENOENT && errno != ENOTDIR)
		return NULL;
	dir = qr_path_dirname(path);
	if (strcmp(dir, path) == 0) {
		free(dir);
		return NULL;
	}
	r = canonical(dir);
	free(dir);
	if (r == NULL)
		return NULL;
	out = qr_path_join(r, qr_path_basename(path));
	free(r);
	return out;
}

/* 1 when a is b or lies inside it, by their canonical paths. */
static int
within(const char *a, const char *b)
{
	size_t n = strlen(b);

	return strncmp(a, b, n) == 0 &&
	       (a[n] == '\0' || a[n] == '/' || (n == 1 && b[0] == '/'));
}

int
qr_path_overlap(const char *a, const char *b)
{
	char *ca = canonical(a), *cb = canonical(b);
	int r = ca != NULL && cb != NULL && (within(ca, cb) || within(cb, ca));

	free(ca);
	free(cb);
	return r;
}
