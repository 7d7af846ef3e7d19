/*
 * test_auto_ctl.c: the `auto` gate's controller (src/lib/gate/auto_ctl.c)
 * fed synthetic intervals, no threads and no clock: each interval's
 * throughput is a curve's value at the N chosen, with 2% of noise and dips
 * to half in about one interval in five (one CPU lost to a preempted holder
 * or a neighbour, as the traces of the server workload on 2 CPUs show), and
 * with C clients nobody queues once N >= C.
 *
 *   test_auto_ctl idle     8 clients behind N = 8: nobody queues, so no step
 *                          may take N below the 8 threads seen inside
 *   test_auto_ctl climb    a curve where each doubling up to 64 pays (pthread's
 *                          at 256 clients): within 0.5 s, as a sweep's point
 *                          lasts, auto must serve 0.93 of the best N on average
 *   test_auto_ctl peak     a curve that peaks at N = 4 (innodb56's): auto must
 *                          serve 0.95 of N = 4 there: no chance climbs
 *
 * Deterministic: a fixed generator, the same intervals every run.
 */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "gate/gate_impl.h"

#define INTERVALS 100        /* 0.5 s of 5 ms intervals */
#define MEASURED_FROM 60     /* a sweep's point: 0.3 s of warm-up, 0.2 s measured */
#define RUNS 200

static unsigned long long rng;

static double uniform(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng >> 11) / 9007199254740992.0;
}

/* Throughput relative to the best, at N = 1, 2, 4, ..., 1024 (log-linear between). */
struct curve {
	int clients;
	double at[11];
};

static double curve_at(const struct curve *c, int64_t n)
{
	int i = 0;
	while (i < 10 && ((int64_t)1 << (i + 1)) <= n)
		i++;
	if (i == 10)
		return c->at[10];
	double t = log2((double)n) - i;
	return c->at[i] + (c->at[i + 1] - c->at[i]) * t;
}

/* One interval as measured: the curve, noise, and a dip now and then. */
static double measured(const struct curve *c, int64_t n)
{
	double x = curve_at(c, n) * (1 + 0.04 * (uniform() - 0.5));
	if (uniform() < 0.2)
		x *= 0.5 + 0.1 * uniform();
	return x * 400000;
}

/* Steps one controller through INTERVALS; the mean of the curve over the measured part. */
static double run_once(const struct curve *c, int64_t n0, int64_t *lowest_idle)
{
	struct auto_ctl ctl;
	auto_ctl_init(&ctl, n0, 2, 1024);
	double sum = 0;
	for (int t = 0; t < INTERVALS; t++) {
		int64_t n = ctl.n;
		if (t >= MEASURED_FROM)
			sum += curve_at(c, n);
		int queued = n < c->clients;
		uint32_t inside = (uint32_t)(queued ? n : c->clients);
		int64_t next = auto_ctl_step(&ctl, measured(c, n), 0, queued, inside);
		if (!queued && lowest_idle && next < *lowest_idle)
			*lowest_idle = next;
	}
	return sum / (INTERVALS - MEASURED_FROM);
}

static double mean_share(const struct curve *c, int64_t n0)
{
	double best = 0, sum = 0;
	for (int i = 0; i < 11; i++)
		best = c->at[i] > best ? c->at[i] : best;
	for (int r = 0; r < RUNS; r++) {
		rng = 0x9e3779b97f4a7c15ULL * (unsigned long long)(r + 1);
		sum += run_once(c, n0, NULL);
	}
	return sum / RUNS / best;
}

static int test_idle(void)
{
	/* pthread at 8 clients: N = 4 serves 0.88 of N = 8. */
	static const struct curve c = { 8, { .56, .76, .88, 1, 1, 1, 1, 1, 1, 1, 1 } };
	for (int r = 0; r < RUNS; r++) {
		rng = 0x2545f4914f6cdd1dULL * (unsigned long long)(r + 1);
		int64_t lowest = 8;
		run_once(&c, 8, &lowest);
		CHECK(lowest >= 8, "run %d: nobody queued, yet N went to %lld, below the 8 inside", r,
		      (long long)lowest);
	}
	printf("idle: N never below the threads inside while nobody queued, %d runs\n", RUNS);
	return 0;
}

static int test_climb(void)
{
	static const struct curve c = { 256, { .5, .56, .73, .86, .95, .98, 1, 1, .98, .98, .98 } };
	double share = mean_share(&c, 4);
	printf("climb: %.3f of the best N\n", share);
	CHECK(share >= 0.93, "auto served %.3f of the best N where larger N pays", share);
	return 0;
}

static int test_peak(void)
{
	static const struct curve c = { 256, { .56, .9, 1, .925, .825, .74, .65, .6, .5, .5, .5 } };
	double share = mean_share(&c, 4);
	printf("peak: %.3f of the best N\n", share);
	CHECK(share >= 0.95, "auto served %.3f of the best N where N = 4 is best", share);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		{ "idle", test_idle, 0 }, { "climb", test_climb, 0 }, { "peak", test_peak, 0 },
	};
	const char *arg;
	const struct test_case *t = test_pick(argc, argv, tests, sizeof(tests) / sizeof(tests[0]),
					      "idle|climb|peak", &arg);
	return t ? t->run() : 2;
}
