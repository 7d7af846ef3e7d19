/*
 * swapbench.c: what a program sees of the swapper's speed on mutexes and
 * condvars (scripts/swap-bench.py runs it with two builds of the swapper
 * preloaded, alternating, and prints ratios).  Not a test: it checks only that
 * its counts add up.
 *
 *   swapbench pairs N          N uncontended lock/unlock pairs: ns per pair,
 *                              a second thread alive and blocked throughout
 *                              (glibc drops its mutex's atomics while a
 *                              process has one thread: a program's pair has
 *                              them)
 *   swapbench pingpong N       two threads taking N turns each by signal: ms
 *   swapbench queue T N        T/2 producers and T/2 consumers pass N items
 *                              through a 16-slot queue: items per ms
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "second_thread.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void fail(const char *what)
{
	fprintf(stderr, "swapbench: %s\n", what);
	exit(1);
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c1 = PTHREAD_COND_INITIALIZER, c2 = PTHREAD_COND_INITIALIZER;
static long turn, rounds;

static void *pp_main(void *p)
{
	long me = (long)(intptr_t)p;
	pthread_mutex_lock(&m);
	while (turn < 2 * rounds) {
		if (turn % 2 == me) {
			turn++;
			pthread_cond_signal(&c1);
		} else {
			pthread_cond_wait(&c1, &m);
		}
	}
	pthread_mutex_unlock(&m);
	return NULL;
}

#define QCAP 16
static long q[QCAP], qhead, qcount, items, produced, consumed, sum;

static void *producer(void *p)
{
	(void)p;
	for (;;) {
		pthread_mutex_lock(&m);
		while (qcount == QCAP && produced < items)
			pthread_cond_wait(&c2, &m);   /* not full */
		if (produced == items) {
			pthread_mutex_unlock(&m);
			return NULL;
		}
		q[(qhead + qcount++) % QCAP] = ++produced;
		pthread_cond_signal(&c1);   /* not empty */
		pthread_mutex_unlock(&m);
	}
}

static void *consumer(void *p)
{
	(void)p;
	for (;;) {
		pthread_mutex_lock(&m);
		while (qcount == 0 && consumed < items)
			pthread_cond_wait(&c1, &m);
		if (consumed == items) {
			pthread_mutex_unlock(&m);
			return NULL;
		}
		sum += q[qhead];
		qhead = (qhead + 1) % QCAP;
		qcount--;
		if (++consumed == items || produced == items) {
			/* The end: everyone still waiting must see it. */
			pthread_cond_broadcast(&c1);
			pthread_cond_broadcast(&c2);
		} else {
			pthread_cond_signal(&c2);
		}
		pthread_mutex_unlock(&m);
	}
}

/* The pairs, timed while a second thread waits (second_thread.h says why). */
static double pairs_ns(long n)
{
	struct second_thread s;
	if (second_thread_start(&s))
		fail("cannot start the second thread");
	double t0 = now_ms();
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	double ns = (now_ms() - t0) * 1e6 / (double)n;
	second_thread_stop(&s);
	return ns;
}

static void run(int n, void *(*fn)(void *), pthread_t *t, int first)
{
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[first + i], NULL, fn, (void *)(intptr_t)i))
			fail("pthread_create");
}

int main(int argc, char **argv)
{
	if (argc < 3)
		fail("usage: swapbench pairs N | pingpong N | queue THREADS N");
	long n = atol(argv[2]);
	if (n <= 0)
		fail("N must be a positive number");
	if (!strcmp(argv[1], "pairs")) {
		printf("%.3f\n", pairs_ns(n));
	} else if (!strcmp(argv[1], "pingpong")) {
		rounds = n;
		pthread_t t[2];
		double t0 = now_ms();
		run(2, pp_main, t, 0);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		if (turn != 2 * rounds)
			fail("turns do not add up");
		printf("%.3f\n", now_ms() - t0);
	} else if (!strcmp(argv[1], "queue") && argc == 4) {
		int threads = (int)n;
		items = atol(argv[3]);
		if (threads < 2 || threads % 2 || items <= 0)
			fail("queue: an even number of threads, at least 2, and items > 0");
		pthread_t *t = calloc((size_t)threads, sizeof(*t));
		if (!t)
			fail("calloc");
		double t0 = now_ms();
		run(threads / 2, producer, t, 0);
		run(threads / 2, consumer, t, threads / 2);
		for (int i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
		double ms = now_ms() - t0;
		if (consumed != items || sum != items * (items + 1) / 2)
			fail("items do not add up");
		printf("%.3f\n", (double)items / ms);
		free(t);
	} else {
		fail("usage: swapbench pairs N | pingpong N | queue THREADS N");
	}
	return 0;
}
