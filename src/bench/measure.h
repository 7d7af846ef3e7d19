/*
 * measure.h: what every benchmark workload measures around its window:
 * vmstat's system-wide counters from /proc/stat, this process's rusage,
 * and the timed waits of the main thread.
 */
#ifndef LOCKLAB_BENCH_MEASURE_H
#define LOCKLAB_BENCH_MEASURE_H

#include <pthread.h>
#include <stdatomic.h>
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

/* A window per operation, given the operations every thread made in it (0 without any). */
struct rates {
	double ns_per_op;        /* wall time / operations */
	double ops_per_sec;
	double cpu_ns_per_op;    /* this process's CPU time / operations */
};
void window_rates(const struct window *w, uint64_t ops, struct rates *r);

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

/* Where a workload's threads are: they read it once per iteration. */
enum run_phase { PHASE_WARMUP, PHASE_MEASURE, PHASE_STOP };

struct run_opts;
/*
 * How a workload measures its window.  Its threads, started, wait at
 * `start`; *phase is PHASE_MEASURE with --iterations (each thread stops
 * after its iterations), else PHASE_WARMUP (they run until PHASE_STOP).
 */
struct run_window {
	const struct run_opts *opts;   /* --iterations or --duration, --warmup */
	pthread_t *tids;
	int64_t threads;
	pthread_barrier_t *start;
	atomic_int *phase;
	/* Thread i's operations so far: per_thread counters from counters + i * stride bytes. */
	const atomic_uint_fast64_t *counters;
	size_t stride;
	int per_thread;
	double drain_s;                /* how long past the window the threads may take to end */
	/* The workload's part, each called with ctx; NULL where it has none. */
	void (*released)(void *ctx);   /* the threads are past the start barrier */
	void (*opening)(void *ctx);    /* --duration: the warm-up is over, the window opens next */
	void (*closed)(void *ctx);     /* the window has closed (--iterations: every thread ended) */
	void *ctx;
};
/*
 * Release the threads and take the window: *a as it opens, *b as it
 * closes, and in window[i * per_thread + k] what counter k of thread i
 * counted in between.  With --iterations the window is the whole run
 * (opened before the release: the threads run the moment main reaches the
 * barrier); with --duration it follows the warm-up.  1 if every thread has
 * ended (drained), 0 if some were still running drain_s after the window.
 */
int run_window(const struct run_window *w, uint64_t *window, struct snapshot *a,
	       struct snapshot *b);

/*
 * After the result is printed: when threads are still waiting on a lock or
 * a gate (not drained), end the process now, status 0 if the run's checks
 * held (ok), else 1, freeing nothing they use.  Returns when drained.
 */
void exit_if_undrained(int drained, int ok);

#endif
