/*
 * harness.c: shared helpers of the C tests (see harness.h).
 */
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

long test_scaled(long n)
{
	const char *s = getenv("LL_TEST_SCALE");
	double f = s ? atof(s) : 1.0;
	long v = (long)((double)n * (f > 0 ? f : 1.0));
	return v > 0 ? v : 1;
}

struct start {
	pthread_barrier_t *barrier;
	void *(*fn)(void *);
	void *arg;
};

static void *start_main(void *p)
{
	struct start *s = p;
	pthread_barrier_wait(s->barrier);
	return s->fn(s->arg);
}

void test_run_threads(int n, void *(*fn)(void *), void *args, size_t arg_size)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	struct start *s = calloc((size_t)n, sizeof(*s));
	pthread_barrier_t barrier;
	pthread_attr_t a;

	CHECK(t && s, "calloc");
	pthread_barrier_init(&barrier, NULL, (unsigned)n);
	pthread_attr_init(&a);
	/* Small stacks: lost-wakeup tests start hundreds of threads. */
	pthread_attr_setstacksize(&a, 256 * 1024);
	for (int i = 0; i < n; i++) {
		s[i] = (struct start){ &barrier, fn, (char *)args + (size_t)i * arg_size };
		int rc = pthread_create(&t[i], &a, start_main, &s[i]);
		CHECK(rc == 0, "pthread_create %d: %s", i, strerror(rc));
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_attr_destroy(&a);
	pthread_barrier_destroy(&barrier);
	free(s);
	free(t);
}

struct watchdog {
	const char *what;
	int seconds;
};

static void *watchdog_main(void *p)
{
	struct watchdog *w = p;
	struct timespec ts = { .tv_sec = w->seconds };
	while (nanosleep(&ts, &ts))
		;
	fprintf(stderr, "watchdog: %s still running after %d s: hang (lost wakeup?)\n", w->what,
		w->seconds);
	_exit(3);
}

void test_watchdog(const char *what, int seconds)
{
	static struct watchdog w;
	pthread_t t;
	w.what = what;
	w.seconds = seconds;
	pthread_create(&t, NULL, watchdog_main, &w);
	pthread_detach(t);
}

int test_ncpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

int test_usable_cpu(int k)
{
	cpu_set_t can;
	CHECK(sched_getaffinity(0, sizeof(can), &can) == 0, "sched_getaffinity");
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &can) && k-- == 0)
			return c;
	return -1;
}

void test_pin_to_cpu(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	CHECK(sched_setaffinity(0, sizeof(set), &set) == 0, "cannot pin to CPU %d", cpu);
}

int test_sched_fifo(int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

pthread_t test_start_fifo(void *(*fn)(void *), void *arg, int prio)
{
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = prio };
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	int rc = pthread_create(&t, &a, fn, arg);
	CHECK(rc == 0, "pthread_create at SCHED_FIFO %d: %s", prio, strerror(rc));
	pthread_attr_destroy(&a);
	return t;
}

const struct test_case *test_pick(int argc, char **argv, const struct test_case *cases, size_t n,
				  const char *usage, const char **arg)
{
	for (size_t i = 0; argc >= 2 && i < n; i++) {
		if (strcmp(argv[1], cases[i].name))
			continue;
		if (cases[i].needs_arg && argc < 3)
			break;
		*arg = argc >= 3 ? argv[2] : NULL;
		return &cases[i];
	}
	fprintf(stderr, "usage: %s %s\n", argv[0], usage);
	return NULL;
}
