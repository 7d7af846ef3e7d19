/*
 * swap_cost.c: what one uncontended pthread_mutex_lock+unlock pair costs this
 * process, in ns: the timing side of the lock swapper's overhead figure
 * (scripts/swap-figures.py runs it with and without liblocklab-swap.so,
 * alternating; docs/swap.md).  One thread times PAIRS pairs on a static
 * mutex, RUNS times; a second thread stays alive, blocked, throughout, as in
 * a real program (glibc drops its atomics while a process has one thread).
 * Prints the median of the runs.
 *
 *   swap_cost [PAIRS] [RUNS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "second_thread.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 10000000;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	if (pairs < 1 || runs < 1 || runs > 1000) {
		fprintf(stderr, "usage: swap_cost [PAIRS >= 1] [RUNS 1..1000]\n");
		return 2;
	}
	struct second_thread s;
	if (second_thread_start(&s)) {
		fprintf(stderr, "swap_cost: cannot start the second thread\n");
		return 1;
	}
	double ns[1000];
	for (int r = 0; r < runs; r++) {
		double t0 = now_ns();
		for (long i = 0; i < pairs; i++) {
			pthread_mutex_lock(&m);
			pthread_mutex_unlock(&m);
		}
		ns[r] = (now_ns() - t0) / (double)pairs;
	}
	second_thread_stop(&s);
	qsort(ns, (size_t)runs, sizeof(ns[0]), cmp);
	printf("%.3f\n", ns[runs / 2]);
	return 0;
}
