/*
 * report-opts-int.h: what the report's option table (report_options.c)
 * and its --config handlers (report_config.c) share.
 */
#ifndef QR_REPORT_OPTS_INT_H
#define QR_REPORT_OPTS_INT_H

#include <cjson/cJSON.h>

#include "cli/cli.h"

#define MAX_QUANT QR_CLI_MAX_QUANT

/* Option values (report_options.c), for both sources. */
enum qr_status parse_floats(const char *opt, const char *s, float v[3],
			    int *n, struct qr_diag *d);
enum qr_status parse_hw(const char *opt, const char *s, int *h, int *w,
			struct qr_diag *d);
enum qr_status parse_layout(const char *s, enum qr_layout *out,
			    struct qr_diag *d);
enum qr_status parse_order(const char *s, int *out, struct qr_diag *d);
enum qr_status parse_sens(const char *what, const char *v, int *mode,
			  struct qr_diag *d);
enum qr_status push_str(char ***v, size_t *n, const char *opt,
			const char *s, struct qr_diag *d);

/* The --config handlers (report_config.c), a row's .conf each. */
enum qr_status conf_path(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_flag(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_quant(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_bits(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_ort_cpu(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_data(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_input(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_samples(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_seed(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_scale(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_cos(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_sqnr(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_sens(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_sens_samples(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_target(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_mean(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_std(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_input_size(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_layout(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_order(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);
enum qr_status conf_fail_if(const struct qr_cli_opt *e, void *opts,
			const cJSON *it, const struct qr_cli_conf *c,
			struct qr_diag *d);

#endif
