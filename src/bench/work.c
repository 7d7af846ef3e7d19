/*
 * work.c: calibration of the work loop, and histogram quantiles.
 */
#include <math.h>

#include "locklab/bits/spin.h"
#include "stats.h"
#include "work.h"

static double ns_per_loop;

static double time_loops(uint64_t n)
{
	uint64_t t0 = ll_now_ns();
	work_loops(n);
	return (double)(ll_now_ns() - t0);
}

void work_recalibrate(void)
{
	ns_per_loop = 0;
	work_calibrate();
}

double work_calibrate(void)
{
	if (ns_per_loop > 0)
		return ns_per_loop;
	/* Warm the core up (frequency, caches), then keep the fastest trial: the
	 * slower ones were interrupted, and holds are measured without interruption. */
	time_loops(2000000);
	double best = 1e18;
	for (int t = 0; t < 9; t++) {
		double d = time_loops(200000) / 200000.0;
		if (d < best)
			best = d;
	}
	ns_per_loop = best > 0.01 ? best : 0.01;
	return ns_per_loop;
}

uint64_t work_loops_for_ns(int64_t ns)
{
	if (ns <= 0)
		return 0;
	return (uint64_t)llround((double)ns / work_calibrate());
}

/*
 * The check's cost stays in milliseconds whatever the hold: the loop's time is
 * linear in its count, so its error at CHECK_MAX_NS stands for any longer hold,
 * and the number of timed calls shrinks as each call grows.
 */
enum { CHECK_MAX_CALLS = 2001, CHECK_MIN_CALLS = 101 };
#define CHECK_MAX_NS 20000
#define CHECK_BUDGET_NS 10000000.0

/* Median time of `calls` calls of work_loops(loops), clock reads included. */
static double median_call_ns(uint64_t loops, int calls)
{
	double samples[CHECK_MAX_CALLS];
	for (int i = 0; i < calls; i++)
		samples[i] = time_loops(loops);
	return median(samples, (size_t)calls);
}

double work_calibration_error_pct(int64_t ns)
{
	int64_t checked = ns < CHECK_MAX_NS ? ns : CHECK_MAX_NS;
	double fit = CHECK_BUDGET_NS / (double)checked;
	int calls = fit >= CHECK_MAX_CALLS ? CHECK_MAX_CALLS
		    : fit <= CHECK_MIN_CALLS ? CHECK_MIN_CALLS : (int)fit | 1;
	/* The median is what a hold actually gets, interrupts aside; the clock
	 * reads around it are measured alone and taken out. */
	double overhead = median_call_ns(0, calls);
	double got = median_call_ns(work_loops_for_ns(checked), calls) - overhead;
	return (got - (double)checked) / (double)checked * 100.0;
}

uint64_t hist_bucket_low(unsigned b)
{
	if (b < 16)
		return b;
	unsigned e = (b - 16u) / 16u + 4u;
	uint64_t sub = (b - 16u) % 16u;
	return (16u + sub) << (e - 4u);
}

uint64_t hist_quantile(const uint64_t *hist, uint64_t count, uint64_t max, double q)
{
	if (count == 0)
		return 0;
	uint64_t rank = (uint64_t)ceil(q * (double)count);
	if (rank == 0)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		seen += hist[b];
		if (seen >= rank) {
			/* Midpoint of the bucket: half its width is the error bound. */
			uint64_t lo = hist_bucket_low(b);
			uint64_t hi = b + 1 < HIST_BUCKETS ? hist_bucket_low(b + 1) : lo;
			uint64_t mid = lo + (hi - lo) / 2;
			return mid < max ? mid : max;
		}
	}
	return max;
}
