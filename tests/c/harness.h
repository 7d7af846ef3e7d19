/*
 * harness.h: what every C test shares: failing loudly, scaling the work
 * (LL_TEST_SCALE, lowered under sanitizers), threads, and a watchdog that
 * turns a hang into a failure with a message instead of a silent timeout.
 */
#ifndef LOCKLAB_TEST_HARNESS_H
#define LOCKLAB_TEST_HARNESS_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			exit(1);                                                \
		}                                                               \
	} while (0)

/* Exit status ctest reads as "skipped" (SKIP_RETURN_CODE in the CMakeLists). */
enum { TEST_SKIPPED = 77 };

/* n scaled by LL_TEST_SCALE (default 1), at least 1. */
long test_scaled(long n);

/*
 * Start n threads running fn(arg_i) with arg_i = (char *)args + i * arg_size,
 * released together from a barrier once all exist (else the first threads
 * finish before the last start and nothing contends); join them all.
 */
void test_run_threads(int n, void *(*fn)(void *), void *args, size_t arg_size);

/* Abort the process with `what` if it is still running after `seconds`. */
void test_watchdog(const char *what, int seconds);

/* Online CPUs. */
int test_ncpu(void);

/* The k-th CPU (from 0) this process may run on, or -1 if it may use k or fewer. */
int test_usable_cpu(int k);

/* Pin the calling thread to `cpu` (fails the test if it cannot). */
void test_pin_to_cpu(int cpu);

/*
 * The calling thread to SCHED_FIFO at prio: 0, or the error (EPERM without
 * root or RLIMIT_RTPRIO: the caller skips, saying so).
 */
int test_sched_fifo(int prio);
/* A thread running fn(arg) at SCHED_FIFO prio (fails the test if it cannot start). */
pthread_t test_start_fifo(void *(*fn)(void *), void *arg, int prio);

/* One test of a test program: its name, its body, and whether it takes an argument (a lock, a policy). */
struct test_case {
	const char *name;
	int (*run)(void);
	int needs_arg;
};

/*
 * The case argv[1] names, with *arg = argv[2] (or NULL).  NULL, after
 * "usage: PROG USAGE" on stderr, when none matches or its argument is
 * missing; the caller exits 2.
 */
const struct test_case *test_pick(int argc, char **argv, const struct test_case *cases, size_t n,
				  const char *usage, const char **arg);

#endif
