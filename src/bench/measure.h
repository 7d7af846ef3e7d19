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
 * Threads the scheduler kept off every CPU through a window.  A window whose
 * threads did not all get a CPU measured fewer threads than it claims: with
 * more threads that never sleep than CPUs, each one runs once per round of
 * the scheduler's slices (1024 threads on 2 CPUs: about a second).
 *
 * sched_watch_open opens each thread's /proc/self/task/TID/schedstat (its
 * time on a CPU) once, while the threads still wait to start: reading 1024
 * paths among 1024 runnable threads took the main thread seconds, one time
 * slice per round of the run queue.  0 if it could not (every fd closed).
 */
int sched_watch_open(const pid_t *tids, int64_t n, int *fds);
/* Each thread's ns on a CPU so far (one pread per thread); 0 if one failed. */
int sched_run_times(const int *fds, int64_t n, uint64_t *run_ns);
/*
 * Of the threads whose time on a CPU did not move from a to b, those
 * runnable now (state R in /proc/self/task/TID/stat): kept out by the
 * scheduler, not asleep on a lock (the kernel adds a wait for a CPU to
 * schedstat only once the thread runs).  -1 if a state could not be read.
 */
int64_t count_unscheduled(const pid_t *tids, const uint64_t *a, const uint64_t *b, int64_t n);
void sched_watch_close(int *fds, int64_t n);

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
