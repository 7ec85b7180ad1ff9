/*
 * fuzz_common: what every harness shares: the invariant a refused input
 * must keep (a status and a one-line message), and a scratch folder of
 * external data files the ONNX harnesses resolve locations against.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "graph/tensor.h"
#include "util/util.h"

/* Folder holding ext_ok.bin (37 bytes), ext_small.bin (8 bytes) and
 * link.bin -> /etc/hostname, as tests/data/loader/ has them; NULL until
 * qr_fuzz_init. The seeds' external locations resolve here. */
const char *qr_fuzz_ext_dir;

static char ext_dir[64];

static void
remove_ext_dir(void)
{
	static const char *const names[] = {"ext_ok.bin", "ext_small.bin",
					    "link.bin", "scratch.pb",
					    "scratch.npy"};
	char path[128];
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", ext_dir, names[i]);
		unlink(path);
	}
	rmdir(ext_dir);
}

static void
write_bytes(const char *name, const void *p, size_t n)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", ext_dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		abort();
	}
}

void
qr_fuzz_init(void)
{
	unsigned char ok[37], small[8] = {0};
	char link_path[128];
	const char *tmp;
	size_t i;

	if (qr_fuzz_ext_dir != NULL)
		return;
	/* Far below libFuzzer's -rss_limit_mb=2048, so that a model asking
	 * for a huge tensor meets the limit, not the out-of-memory report. */
	qr_tensor_set_max_bytes((size_t)256 << 20);
	/* Every pb/npy input is written there: prefer memory to disk. */
	tmp = getenv("TMPDIR");
	if (tmp == NULL || strlen(tmp) >= 32)
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(ext_dir, sizeof ext_dir, "%s/qr-fuzz-ext-XXXXXX", tmp);
	if (mkdtemp(ext_dir) == NULL) {
		perror("mkdtemp");
		abort();
	}
	for (i = 0; i < sizeof ok; i++)
		ok[i] = (unsigned char)(i * 37 + 11);
	write_bytes("ext_ok.bin", ok, sizeof ok);
	write_bytes("ext_small.bin", small, sizeof small);
	snprintf(link_path, sizeof link_path, "%s/link.bin", ext_dir);
	if (symlink("/etc/hostname", link_path) != 0)
		perror("symlink");
	atexit(remove_ext_dir);
	qr_fuzz_ext_dir = ext_dir;
}

const char *
qr_fuzz_scratch(const char *name)
{
	static char path[128];

	snprintf(path, sizeof path, "%s/%s", ext_dir, name);
	return path;
}

void
qr_fuzz_check_diag(int st, const struct qr_diag *d)
{
	if (st == QR_OK)
		return;
	if (d->status != (enum qr_status)st || d->msg[0] == '\0') {
		fprintf(stderr, "fuzz: status %d returned without a message "
			"(diag status %d)\n", st, (int)d->status);
		abort();
	}
	if (strpbrk(d->msg, "\r\n") != NULL) {
		fprintf(stderr, "fuzz: message spans lines: %s\n", d->msg);
		abort();
	}
}
