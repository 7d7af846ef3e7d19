/*
 * work.h: the calibrated busy loop that stands for work inside and outside
 * the lock, and the log-linear histogram the wait latencies go into.
 */
#ifndef LOCKLAB_BENCH_WORK_H
#define LOCKLAB_BENCH_WORK_H

#include <stdint.h>

/* A dependent multiply-add chain: the compiler cannot shorten it, the CPU cannot overlap it. */
static inline void work_loops(uint64_t n)
{
	uint64_t x = n;
	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ __volatile__("" : "+r"(x));
	}
}

/* Measure ns per loop (best of several trials); idempotent. */
double work_calibrate(void);
/* Forget the calibration and take it again (a check found it off). */
void work_recalibrate(void);
/* Loops that take about ns nanoseconds. */
uint64_t work_loops_for_ns(int64_t ns);
/* Relative error, in percent, of work_loops_for_ns(ns) measured now; a few ms
 * whatever ns (a long hold is checked at a shorter one: the loop is linear). */
double work_calibration_error_pct(int64_t ns);

/*
 * Log-linear histogram: exact below 16 ns, then 16 sub-buckets per power of
 * two (at most 6% error), 976 buckets up to 2^64 ns.
 */
#define HIST_BUCKETS 976

static inline unsigned hist_bucket(uint64_t v)
{
	if (v < 16)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);
	return 16u + (e - 4u) * 16u + (unsigned)((v >> (e - 4u)) & 15u);
}

/* The smallest value that falls in bucket b. */
uint64_t hist_bucket_low(unsigned b);
/*
 * Value at quantile q (0..1) of a histogram holding `count` samples whose
 * largest is `max`: the middle of the quantile's bucket, but never above
 * `max` (a bucket's middle can pass the largest sample in it).
 */
uint64_t hist_quantile(const uint64_t *hist, uint64_t count, uint64_t max, double q);

#endif
