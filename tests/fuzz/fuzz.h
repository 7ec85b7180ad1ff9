/*
 * fuzz: entry points shared by the libFuzzer harnesses
 * (tests/fuzz/fuzz_<name>.c) and the regression replayer
 * (tests/test_fuzz_regress.c).
 *
 * Each qr_fuzz_<name> feeds one input through a loader (and what comes
 * after it) and returns the enum qr_status it ended with. Hostile input
 * must end in a status, never a signal: a broken invariant found by a
 * harness itself (a refused load that left no message, a message that
 * spans lines) aborts, so libFuzzer and the replayer see it as a crash.
 * qr_fuzz_init must be called once before the first input.
 *
 * Built with -DQR_FUZZ_NO_MAIN the harness files define only these
 * functions; otherwise each also defines LLVMFuzzerTestOneInput.
 */
#ifndef QR_FUZZ_H
#define QR_FUZZ_H

#include <stddef.h>
#include <stdint.h>

struct qr_diag;

void qr_fuzz_init(void);
int qr_fuzz_onnx(const uint8_t *data, size_t size);
int qr_fuzz_npy(const uint8_t *data, size_t size);
int qr_fuzz_pb(const uint8_t *data, size_t size);
int qr_fuzz_exec(const uint8_t *data, size_t size);
int qr_fuzz_image(const uint8_t *data, size_t size);

/* Abort unless a failed call left a one-line message with its status. */
void qr_fuzz_check_diag(int st, const struct qr_diag *d);

/* Path of a scratch file in the harnesses' folder: "scratch.pb" or
 * "scratch.npy" (removed at exit). Static storage, valid until the next
 * call. */
const char *qr_fuzz_scratch(const char *name);

/* Most elements a harness lets one tensor have before it computes on it. */
#define QR_FUZZ_MAX_ELEM ((size_t)1 << 20)

#endif
