/*
 * floor.c: `locklab-bench floor`, this machine's physical limits, the
 * figures every lock result is read against:
 *
 *   atomic_rmw_ns           uncontended lock-prefixed add on a private line
 *   cacheline_pingpong_ns   one-way transfer of a line between two CPUs
 *   futex_wake_nowaiter_ns  FUTEX_WAKE with nobody to wake (an unlock's worst case)
 *   futex_wait_eagain_ns    FUTEX_WAIT whose value already changed
 *   futex_wake_to_run_ns    FUTEX_WAKE until the woken thread runs, across CPUs
 *   context_switch_ns       one switch between two threads on one CPU
 *   pause_ns                one spin-wait PAUSE (calibrated as the locks use it)
 *
 * The machine is shared: interference only ever adds time, so each figure
 * is the best of several trials, except wake-to-run, the median of many
 * single wake-ups (its best would be a lucky one, not a floor).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdalign.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/futex_sys.h"
#include "cli.h"
#include "options.h"
#include "stats.h"
#include "locklab/bits/spin.h"

static double best(const double *v, int n)
{
	double b = v[0];
	for (int i = 1; i < n; i++)
		b = v[i] < b ? v[i] : b;
	return b;
}

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *idle_thread(void *p)
{
	/* Alive, asleep: makes the process multi-threaded so glibc keeps its atomics. */
	atomic_int *stop = p;
	while (!atomic_load(stop))
		ll_sys_futex_wait((atomic_uint *)stop, 0, NULL);
	return NULL;
}

static double atomic_rmw_ns(void)
{
	enum { N = 1000000, TRIALS = 7 };
	double t[TRIALS];
	atomic_ulong word = 0;
	for (int k = 0; k < TRIALS; k++) {
		uint64_t t0 = ll_now_ns();
		for (int i = 0; i < N; i++)
			atomic_fetch_add_explicit(&word, 1, memory_order_relaxed);
		t[k] = (double)(ll_now_ns() - t0) / N;
	}
	return best(t, TRIALS);
}

static double syscall_ns(int wake)
{
	enum { N = 20000, TRIALS = 7 };
	double t[TRIALS];
	atomic_uint word = 1;
	for (int k = 0; k < TRIALS; k++) {
		uint64_t t0 = ll_now_ns();
		for (int i = 0; i < N; i++) {
			if (wake)
				ll_sys_futex_wake(&word, 1);
			else
				ll_sys_futex_wait(&word, 0, NULL);   /* value is 1: EAGAIN at once */
		}
		t[k] = (double)(ll_now_ns() - t0) / N;
	}
	return best(t, TRIALS);
}

/* Two threads pass a token back and forth; the measures differ in how. */
enum pingpong_kind { PP_SPIN, PP_FUTEX };

struct pingpong {
	alignas(64) atomic_uint turn;    /* 0: side A's move, 1: side B's */
	enum pingpong_kind kind;
	int cpu_b, rounds;
	alignas(64) atomic_ulong sent_ns; /* when A handed over (wake-to-run) */
	double *latency;                 /* B's per-round handover latency */
};

static void pp_wait(struct pingpong *pp, unsigned want)
{
	unsigned v;
	while ((v = atomic_load_explicit(&pp->turn, memory_order_acquire)) != want) {
		if (pp->kind == PP_FUTEX)
			ll_sys_futex_wait(&pp->turn, v, NULL);
		else
			ll_cpu_relax();
	}
}

static void pp_pass(struct pingpong *pp, unsigned to)
{
	atomic_store_explicit(&pp->turn, to, memory_order_release);
	if (pp->kind == PP_FUTEX)
		ll_sys_futex_wake(&pp->turn, 1);
}

static void *pp_side_b(void *p)
{
	struct pingpong *pp = p;
	pin(pp->cpu_b);
	for (int i = 0; i < pp->rounds; i++) {
		pp_wait(pp, 1);
		if (pp->latency)
			pp->latency[i] = (double)(ll_now_ns() -
						  atomic_load_explicit(&pp->sent_ns, memory_order_relaxed));
		pp_pass(pp, 0);
	}
	return NULL;
}

/* Nanoseconds per round trip; B's handover latencies in latency[] when given. */
static double pingpong(enum pingpong_kind kind, int cpu_a, int cpu_b, int rounds, double *latency)
{
	struct pingpong pp = { .kind = kind, .cpu_b = cpu_b, .rounds = rounds, .latency = latency };
	pthread_t t;

	pin(cpu_a);
	pthread_create(&t, NULL, pp_side_b, &pp);
	uint64_t t0 = ll_now_ns();
	for (int i = 0; i < rounds; i++) {
		pp_wait(&pp, 0);
		atomic_store_explicit(&pp.sent_ns, ll_now_ns(), memory_order_relaxed);
		pp_pass(&pp, 1);
	}
	pp_wait(&pp, 0);
	double per = (double)(ll_now_ns() - t0) / rounds;
	pthread_join(t, NULL);
	return per;
}

int cmd_floor(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--help")) {
		fputs("usage: locklab-bench floor [--json]\n"
		      "What the primitives every lock is built from cost on this machine: a private\n"
		      "atomic read-modify-write, a cache line handed between two CPUs, FUTEX_WAKE\n"
		      "with no waiter, FUTEX_WAIT that returns EAGAIN, a futex wake until the woken\n"
		      "thread runs, a context switch, one PAUSE.  A few seconds.\n"
		      "  --json              the figures as one JSON line (default: text)\n"
		      "  --help              this text\n",
		      stdout);
		return 0;
	}
	int json = argc > 1 && !strcmp(argv[1], "--json");
	if (argc > 2 || (argc == 2 && !json))
		return usage_error("floor: unexpected argument '%s' (only --json, --help)", argv[argc - 1]);

	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	atomic_int stop = 0;
	pthread_t idle;
	pthread_create(&idle, NULL, idle_thread, &stop);

	double rmw = atomic_rmw_ns();
	double wake = syscall_ns(1), eagain = syscall_ns(0);
	double pause = ll_spin_ns(LL_SPIN_PAUSE);

	/* Across two CPUs: a spin ping-pong is two line transfers a round trip. */
	double trips[5], wake_run = -1, pingpong_ns = -1;
	if (cpus >= 2) {
		for (int k = 0; k < 5; k++)
			trips[k] = pingpong(PP_SPIN, 0, 1, 20000, NULL) / 2;
		pingpong_ns = best(trips, 5);
		enum { WR = 400 };
		double *lat = calloc(WR, sizeof(double));
		pingpong(PP_FUTEX, 0, 1, WR, lat);
		wake_run = median(lat, WR);
		free(lat);
	}
	/* On one CPU a futex ping-pong is two context switches a round trip. */
	for (int k = 0; k < 5; k++)
		trips[k] = pingpong(PP_FUTEX, 0, 0, 5000, NULL) / 2;
	double cswitch = best(trips, 5);

	atomic_store(&stop, 1);
	ll_sys_futex_wake((atomic_uint *)&stop, 1);
	pthread_join(idle, NULL);

	if (json) {
		printf("{\"cpus\":%ld,\"atomic_rmw_ns\":%.2f,\"cacheline_pingpong_ns\":%.1f,"
		       "\"futex_wake_nowaiter_ns\":%.1f,\"futex_wait_eagain_ns\":%.1f,"
		       "\"futex_wake_to_run_ns\":%.0f,\"context_switch_ns\":%.0f,\"pause_ns\":%.2f}\n",
		       cpus, rmw, pingpong_ns, wake, eagain, wake_run, cswitch, pause);
	} else {
		printf("cpus                    %ld\n", cpus);
		printf("atomic RMW, private     %8.2f ns\n", rmw);
		printf("cache line, one way     %8.1f ns%s\n", pingpong_ns, cpus < 2 ? " (one CPU)" : "");
		printf("FUTEX_WAKE, no waiter   %8.1f ns\n", wake);
		printf("FUTEX_WAIT, EAGAIN      %8.1f ns\n", eagain);
		printf("futex wake to run       %8.0f ns (across CPUs)\n", wake_run);
		printf("context switch          %8.0f ns (same CPU)\n", cswitch);
		printf("PAUSE                   %8.2f ns\n", pause);
	}
	return 0;
}
