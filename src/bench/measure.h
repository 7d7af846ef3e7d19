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
 * A thread's schedstat (/proc/.../schedstat, opened on fd): ns on a CPU so
 * far and ns runnable waiting for one (added only once it runs); either
 * pointer may be NULL.  0 if it could not be read.
 */
int schedstat_read(int fd, uint64_t *run_ns, uint64_t *wait_ns);
/* 1 if thread tid of this process is runnable now (state R), 0 if not, -1 unknown. */
int thread_runnable(pid_t tid);
/* Raise the soft limit on open files to n if the hard one allows (one fd per thread). */
void fd_limit_at_least(int64_t n);

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
