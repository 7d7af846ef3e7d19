/*
 * options.h: option values of locklab-bench's subcommands, and bad input as
 * one line on stderr with exit status EXIT_USAGE.
 */
#ifndef LOCKLAB_BENCH_OPTIONS_H
#define LOCKLAB_BENCH_OPTIONS_H

#include <stdint.h>

/* Exit status for bad input: a one-line error was printed to stderr. */
#define EXIT_USAGE 2

/* Parse `s` as the value of option `opt` within [min, max]; 0, or EXIT_USAGE after a one-line error. */
int parse_i64(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out);
/* Seconds in [min, a day]: finite, no junk after the number. */
int parse_seconds(const char *opt, const char *s, double min, double *out);

/* Print "locklab: <message>" on one line to stderr; returns EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
