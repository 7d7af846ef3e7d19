/*
 * cli.h: subcommands of locklab-bench and what they share.
 */
#ifndef LOCKLAB_BENCH_CLI_H
#define LOCKLAB_BENCH_CLI_H

/* Exit status for bad input: a one-line error was printed to stderr. */
#define EXIT_USAGE 2

#include <stdint.h>

int cmd_list(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* server.c: bench's --workload dispatch, and the server workload (docs/admission.md). */
int cmd_bench_workload(int argc, char **argv);
int cmd_server(int argc, char **argv);
int cmd_floor(int argc, char **argv);
/* moncost.c: what the lock monitor costs an uncontended lock+unlock. */
int cmd_moncost(int argc, char **argv);

/* Parse `s` as the value of option `opt` within [min, max]; 0, or EXIT_USAGE after a one-line error. */
int parse_i64(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out);
int parse_seconds(const char *opt, const char *s, double min, double *out);

/* Print "locklab: <message>" on one line to stderr; returns EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
