/*
 * options.h: option values of locklab-bench's subcommands, and bad input as
 * one line on stderr with exit status EXIT_USAGE.
 */
#ifndef LOCKLAB_BENCH_OPTIONS_H
#define LOCKLAB_BENCH_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

/* Exit status for bad input: a one-line error was printed to stderr. */
#define EXIT_USAGE 2

/* Parse `s` as the value of option `opt` within [min, max]; 0, or EXIT_USAGE after a one-line error. */
int parse_i64(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out);
/* Seconds in [min, a day]: finite, no junk after the number. */
int parse_seconds(const char *opt, const char *s, double min, double *out);

/*
 * The options every workload of `bench` (bench.c's mutex loop, rw.c,
 * server.c) shares: the lock, the threads, the work inside and outside,
 * and how long the point runs.  RUN_OPTIONS goes into a getopt_long
 * table, SAMPLE_OPTION too where the workload samples its waits.
 */
struct run_opts {
	const char *lock, *lock_opts;
	int64_t threads, hold_ns, outside_ns, iterations, sample_every;
	double duration_s, warmup_s;
	int json, have_threads, have_hold;
};
#define RUN_OPTIONS                                                                            \
	{ "lock", required_argument, 0, 'l' },        { "lock-opts", required_argument, 0, 'o' },   \
	{ "threads", required_argument, 0, 't' },     { "hold-ns", required_argument, 0, 'H' },     \
	{ "outside-ns", required_argument, 0, 'O' },  { "duration", required_argument, 0, 'd' },    \
	{ "iterations", required_argument, 0, 'i' },  { "warmup", required_argument, 0, 'w' },      \
	{ "json", no_argument, 0, 'j' }
#define SAMPLE_OPTION { "sample-every", required_argument, 0, 's' }
/* Defaults: sample every 16th, 0.2 s of warm-up. */
void run_opts_defaults(struct run_opts *o);
/* After every option: exactly one of --duration and --iterations, --sample-every a power of two. */
int check_run_opts(const struct run_opts *o);

struct option;
/*
 * getopt_long over argv with `opts`: the letters of RUN_OPTIONS and
 * SAMPLE_OPTION go into *r, every other is handed to take(ch, arg, ctx),
 * which returns 0, EXIT_USAGE (it printed the error), or -1 for one it
 * does not know.  No argument may be left over.  0, or EXIT_USAGE after
 * one line.
 */
int parse_options(int argc, char **argv, const struct option *opts, struct run_opts *r,
		  int (*take)(int ch, const char *arg, void *ctx), void *ctx);

/*
 * The options every workload of `bench` takes (--lock, --lock-opts, --threads,
 * --duration, --iterations, --warmup, --json, --help), described for its --help;
 * `what` names what a thread repeats ("iterations", "queries").
 */
void usage_run_options(FILE *f, const char *what);

/* Print "locklab: <message>" on one line to stderr; returns EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
