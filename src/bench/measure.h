/*
 * measure.h: what every benchmark workload measures around its window:
 * vmstat's system-wide counters from /proc/stat, this process's rusage,
 * and the timed waits of the main thread.
 */
#ifndef LOCKLAB_BENCH_MEASURE_H
#define LOCKLAB_BENCH_MEASURE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

/* The system-wide CPU counters vmstat reads, in clock ticks. */
struct cpu_ticks {
	unsigned long long user, sys, idle, total, ctxt;
};

struct snapshot {
	uint64_t ns;
	struct cpu_ticks cpu;
	struct rusage ru;
};

void take_snapshot(struct snapshot *s);

/* Between two snapshots, as vmstat and time(1) would show it. */
struct window {
	double duration_s;
	double cpu_user_pct, cpu_sys_pct, cpu_idle_pct;   /* share of all ticks */
	double cs_per_sec;                                /* system-wide */
	uint64_t vcsw, ivcsw;                             /* this process */
	double cpu_ns;                                    /* this process, user + system */
};
void window_between(const struct snapshot *a, const struct snapshot *b, struct window *w);

void sleep_seconds(double s);

/*
 * Each thread's time so far on a CPU (/proc/self/task/TID/schedstat, ns) and
 * whether it is runnable now (its stat's state R: running, or waiting for a
 * CPU).  A window whose threads did not all get a CPU measured fewer threads
 * than it claims: with more threads that never sleep than CPUs, each one runs
 * once per round of the scheduler's slices (1024 threads on 2 CPUs: about a
 * second).
 */
struct sched_times {
	uint64_t run_ns;
	int runnable;
};
/* Read n threads' times (tids: their kernel ids) into t; 0 if any could not be read. */
int read_sched_times(const pid_t *tids, int64_t n, struct sched_times *t);
/*
 * Of n threads read at a and again at b, those never on a CPU in between and
 * runnable at b: kept out by the scheduler, not asleep on a lock.  (The
 * kernel adds a wait for a CPU to a thread's schedstat only once it runs.)
 */
int64_t count_unscheduled(const struct sched_times *a, const struct sched_times *b, int64_t n);

/*
 * Start n threads running fn(args + i * stride), with small stacks (1024
 * threads x 8 MiB of default stack is address space nobody needs).  A
 * thread that cannot be created ends the process with a one-line error
 * naming `what`: those already started wait at a barrier they would never
 * leave.
 */
void start_threads(pthread_t *tids, int64_t n, void *(*fn)(void *), void *args, size_t stride,
		   const char *what);

/* Join every thread within `seconds`; 0 when some are still running then. */
int join_until(pthread_t *tids, int64_t n, double seconds);

#endif
