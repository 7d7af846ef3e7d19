/*
 * stats.h: the summary statistics the benchmark's subcommands report: the
 * median of a set of timings, and how evenly threads shared the work.
 */
#ifndef LOCKLAB_BENCH_STATS_H
#define LOCKLAB_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

/* The median of v[0..n) (the mean of the middle two when n is even); sorts v.  n > 0. */
double median(double *v, size_t n);

/*
 * Per-thread counts, added one thread at a time (zero-initialised): their
 * sum, smallest, largest, and Jain's fairness index.
 */
struct spread {
	uint64_t n, total, min, max;
	double sum_sq;
};
void spread_add(struct spread *s, uint64_t count);
/* Jain's index: 1 when every thread did the same, 1/n when one did all; 0 for no work. */
double spread_jain(const struct spread *s);

#endif
