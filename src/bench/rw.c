/*
 * rw.c: `locklab-bench bench --workload rw`: N threads on one rwlock
 * (locklab/rwlock.h).  Each iteration reads with probability read-pct,
 * else writes: lock, work hold_ns inside, unlock, work outside_ns.  Timing
 * as `bench` does (start barrier, warm-up, a window of --duration, or
 * --iterations per thread), with /proc/stat and rusage around the window.
 *
 * Per class: operations, the mean ns of a sampled lock+hold+unlock, the
 * wait to acquire (p50/p99/max of every sample_every-th op of that class, a
 * log-linear histogram), Jain's index over the threads' counts.
 *
 * With --runqueue, each thread keeps its /proc/thread-self/schedstat open:
 * each sampled op reads its time runnable but not running before and after
 * it, and each class reports the largest wait less that time and the
 * runqueue time of its longest wait (how much of a tail is the scheduler's,
 * not the lock's); and the main thread reads every thread's time on a CPU
 * before and after the window, to count the threads that never got one
 * though runnable (a window shorter than the scheduler's round measured
 * fewer threads than it claims).  Off by default: the main thread's reads
 * cost it its place in a crowded run queue, and the window it times
 * stretches.
 *
 * The exclusion check writes nothing shared on the read side (a shared
 * write would be the cost the rwlocks are measured without): a writer
 * bumps `begin` on entry and `end` before it leaves; a reader sees begin ==
 * end on entry (no writer inside) and the same begin on leaving (none came
 * in).  Writers check an `inside` flag, and when every thread has exited,
 * end must equal the writes the threads made.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "locklab/locklab.h"
#include "measure.h"
#include "options.h"
#include "stats.h"
#include "work.h"

enum { RD, WR };
static const char *const class_name[] = { "read", "write" };

struct rw_worker {
	/* Operations by class: written by the worker, read by main at the window's ends. */
	alignas(64) atomic_uint_fast64_t ops[2];
	uint64_t samples[2], sampled_ns[2], wait_max[2];
	/* --runqueue: the runqueue ns of the longest wait, the largest wait less its runqueue ns. */
	uint64_t runq_at_max[2], wait_max_off_runq[2];
	int schedstat_fd;              /* --runqueue: its own, also read by main around the window */
	pid_t tid;                     /* the kernel's id of the thread */
	uint64_t run_ns_at_start;      /* --runqueue: its ns on a CPU when the window opened */
	uint64_t violations;
	uint64_t rng;
	uint64_t hist[2][HIST_BUCKETS];
};

struct rw_config {
	double read_pct;
	int runqueue;
	struct run_opts r;
};

static struct {
	alignas(64) ll_rwlock_t rw;
	/* Guarded by rw, apart from the lock: written by writers only. */
	alignas(64) atomic_uint_fast64_t begin, end;
	int inside;
	alignas(64) atomic_int phase;
	uint64_t hold_loops, outside_loops, iterations, sample_mask, read_below;
	int runqueue;
	pthread_barrier_t start;
} g;

static inline uint64_t next_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* The thread's ns runnable but not running so far (schedstat's second field); 0 if unread. */
static uint64_t runq_ns(int fd)
{
	uint64_t wait = 0;
	return schedstat_read(fd, NULL, &wait) ? wait : 0;
}

static void *rw_main(void *p)
{
	struct rw_worker *w = p;
	w->schedstat_fd = g.runqueue ? open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC) : -1;
	w->tid = gettid();
	const uint64_t hold = g.hold_loops, outside = g.outside_loops, mask = g.sample_mask;

	pthread_barrier_wait(&g.start);
	for (uint64_t i = 0;; i++) {
		int phase = atomic_load_explicit(&g.phase, memory_order_relaxed);
		if (g.iterations ? i == g.iterations : phase == PHASE_STOP)
			break;
		int c = (next_rand(&w->rng) >> 32) < g.read_below ? RD : WR;
		uint64_t n = atomic_load_explicit(&w->ops[c], memory_order_relaxed);
		int sample = phase == PHASE_MEASURE && (n & mask) == 0;
		uint64_t q0 = sample && w->schedstat_fd >= 0 ? runq_ns(w->schedstat_fd) : 0;
		uint64_t t0 = sample ? ll_now_ns() : 0, t1 = 0;
		if (c == RD) {
			ll_rwlock_rdlock(&g.rw);
			if (sample)
				t1 = ll_now_ns();
			uint64_t b = atomic_load_explicit(&g.begin, memory_order_relaxed);
			if (b != atomic_load_explicit(&g.end, memory_order_relaxed))
				w->violations++;
			work_loops(hold);
			if (atomic_load_explicit(&g.begin, memory_order_relaxed) != b)
				w->violations++;
		} else {
			ll_rwlock_wrlock(&g.rw);
			if (sample)
				t1 = ll_now_ns();
			uint64_t b = atomic_load_explicit(&g.begin, memory_order_relaxed);
			atomic_store_explicit(&g.begin, b + 1, memory_order_relaxed);
			if (g.inside)
				w->violations++;
			g.inside = 1;
			work_loops(hold);
			g.inside = 0;
			atomic_store_explicit(&g.end, b + 1, memory_order_relaxed);
		}
		ll_rwlock_unlock(&g.rw);
		if (sample) {
			uint64_t t2 = ll_now_ns(), wait = t1 - t0;
			w->hist[c][hist_bucket(wait)]++;
			w->samples[c]++;
			w->sampled_ns[c] += t2 - t0;
			/* Read after the section: its runqueue time is taken off the wait, at worst. */
			uint64_t q = w->schedstat_fd >= 0 ? runq_ns(w->schedstat_fd) - q0 : 0;
			if (wait > w->wait_max[c]) {
				w->wait_max[c] = wait;
				w->runq_at_max[c] = q;
			}
			uint64_t off = wait > q ? wait - q : 0;
			if (off > w->wait_max_off_runq[c])
				w->wait_max_off_runq[c] = off;
		}
		atomic_store_explicit(&w->ops[c], n + 1, memory_order_relaxed);
		work_loops(outside);
	}
	if (w->schedstat_fd >= 0)
		close(w->schedstat_fd);
	return NULL;
}

static void usage(FILE *f)
{
	fputs("usage: locklab-bench bench --workload rw --lock RWLOCK [--lock-opts K=V,...]\n"
	      "         --threads N --read-pct P --hold-ns H [--outside-ns O]\n"
	      "         (--duration S | --iterations J) [--warmup S] [--sample-every K] [--json]\n"
	      "One point of the rw workload: N threads on one read-write lock, each operation a\n"
	      "read (P percent of them) or a write: lock, H ns of work, unlock, O ns of work.\n"
	      "  --workload rw       this workload; RWLOCK is a name of `locklab-bench list --rwlock`\n",
	      f);
	usage_run_options(f, "operations");
	fputs("  --read-pct P        percent of the operations that read, 0..100 (99.9 works)\n"
	      "  --hold-ns H         ns of work with the lock held, 0..1000000000\n"
	      "  --outside-ns O      ns of work between unlock and the next lock (0)\n"
	      "  --sample-every K    time one operation of each class in K, a power of two (16)\n"
	      "  --runqueue          per class, also the longest wait less the time the waiter\n"
	      "                      spent runnable but not running (/proc/thread-self/schedstat,\n"
	      "                      read around every sampled operation: about 2 us each), and\n"
	      "                      the threads that never got a CPU in the window\n",
	      f);
}

static int parse_pct(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= 0 && v <= 100))
		return usage_error("--read-pct wants a percentage in [0, 100], got '%s'", s);
	*out = v;
	return 0;
}

/* One option of the rw workload (parse_options' take). */
static int take_option(int ch, const char *arg, void *ctx)
{
	struct rw_config *c = ctx;
	switch (ch) {
	case 'W': return 0;   /* rw: how we got here */
	case 'r': return parse_pct(arg, &c->read_pct);
	case 'q': c->runqueue = 1; return 0;
	case 'h': usage(stdout); exit(0);
	default: return -1;
	}
}

static int parse_args(int argc, char **argv, struct rw_config *c)
{
	static const struct option opts[] = {
		RUN_OPTIONS,
		SAMPLE_OPTION,
		{ "workload", required_argument, 0, 'W' },  { "read-pct", required_argument, 0, 'r' },
		{ "runqueue", no_argument, 0, 'q' },        { "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	*c = (struct rw_config){ .read_pct = -1 };   /* -1: not given */
	run_opts_defaults(&c->r);
	int rc = parse_options(argc, argv, opts, &c->r, take_option, c);
	if (rc)
		return rc;
	if (!c->r.lock || !c->r.have_threads || c->read_pct < 0 || !c->r.have_hold)
		return usage_error("bench: --workload rw needs --lock, --threads, --read-pct and "
				   "--hold-ns");
	return check_run_opts(&c->r);
}

struct class_result {
	struct spread ops;      /* the threads' operations of the class in the window */
	uint64_t samples, wait_p50, wait_p99, wait_max, runq_at_max, wait_max_off_runq;
	double ns_per_op;
};

struct rw_result {
	struct window win;
	struct rates rate;      /* per operation, both classes */
	struct class_result cls[2];
	uint64_t violations;
	int64_t unscheduled;           /* threads never on a CPU in the window; -1: unknown */
	int exclusion_ok, drained;
};

/* window: thread i's operations of class k in the window at [i * 2 + k]. */
static void summarise_class(const struct rw_config *c, struct rw_worker *w,
			    const uint64_t *window, int k, struct class_result *r)
{
	double ns = 0;
	uint64_t *hist = calloc(HIST_BUCKETS, sizeof(uint64_t));
	for (int64_t i = 0; i < c->r.threads; i++) {
		spread_add(&r->ops, window[i * 2 + k]);
		r->samples += w[i].samples[k];
		ns += (double)w[i].sampled_ns[k];
		if (w[i].wait_max[k] > r->wait_max) {
			r->wait_max = w[i].wait_max[k];
			r->runq_at_max = w[i].runq_at_max[k];
		}
		if (w[i].wait_max_off_runq[k] > r->wait_max_off_runq)
			r->wait_max_off_runq = w[i].wait_max_off_runq[k];
		for (unsigned b = 0; b < HIST_BUCKETS; b++)
			hist[b] += w[i].hist[k][b];
	}
	r->ns_per_op = r->samples ? ns / (double)r->samples : 0;
	r->wait_p50 = hist_quantile(hist, r->samples, r->wait_max, 0.50);
	r->wait_p99 = hist_quantile(hist, r->samples, r->wait_max, 0.99);
	free(hist);
}

static void summarise(const struct rw_config *c, struct rw_worker *w, const uint64_t *window,
		      const struct snapshot *a, const struct snapshot *b, struct rw_result *r)
{
	uint64_t writes = 0;
	for (int k = RD; k <= WR; k++)
		summarise_class(c, w, window, k, &r->cls[k]);
	for (int64_t i = 0; i < c->r.threads; i++) {
		r->violations += w[i].violations;
		writes += atomic_load(&w[i].ops[WR]);
	}
	r->exclusion_ok = r->violations == 0;
	if (r->violations)
		fprintf(stderr, "locklab: rwlock exclusion violated: %" PRIu64 " sections saw a "
			"writer beside them\n", r->violations);
	uint64_t end = atomic_load(&g.end);
	if (r->drained && end != writes) {
		fprintf(stderr, "locklab: rwlock exclusion violated: %" PRIu64 " writes counted, "
			"the threads made %" PRIu64 "\n", end, writes);
		r->exclusion_ok = 0;
	}
	window_between(a, b, &r->win);
	window_rates(&r->win, r->cls[RD].ops.total + r->cls[WR].ops.total, &r->rate);
}

static void print_json(const struct rw_config *c, const struct rw_result *r)
{
	fputs("{\"workload\":\"rw\",\"lock\":", stdout);
	json_string(stdout, c->r.lock);
	fputs(",\"lock_opts\":", stdout);
	json_string(stdout, c->r.lock_opts ? c->r.lock_opts : "");
	printf(",\"threads\":%" PRId64 ",\"read_pct\":%g,\"hold_ns\":%" PRId64 ",\"outside_ns\":%"
	       PRId64 ",\"mode\":\"%s\",\"duration_s\":%.6f,\"ns_per_op\":%.3f,\"ops_per_sec\":%.1f"
	       ",\"cpu_user_pct\":%.2f,\"cpu_sys_pct\":%.2f,\"cpu_idle_pct\":%.2f,\"cs_per_sec\":%.1f"
	       ",\"cpu_ns_per_op\":%.3f,\"sample_every\":%" PRId64,
	       c->r.threads, c->read_pct, c->r.hold_ns, c->r.outside_ns,
	       c->r.iterations ? "iterations" : "duration", r->win.duration_s, r->rate.ns_per_op,
	       r->rate.ops_per_sec, r->win.cpu_user_pct, r->win.cpu_sys_pct, r->win.cpu_idle_pct,
	       r->win.cs_per_sec, r->rate.cpu_ns_per_op, c->r.sample_every);
	for (int k = RD; k <= WR; k++) {
		const struct class_result *cr = &r->cls[k];
		const char *n = class_name[k];
		printf(",\"%s_ops\":%" PRIu64 ",\"%s_ns_per_op\":%.3f,\"%s_wait_ns_p50\":%" PRIu64
		       ",\"%s_wait_ns_p99\":%" PRIu64 ",\"%s_wait_ns_max\":%" PRIu64
		       ",\"%s_samples\":%" PRIu64 ",\"%s_jain\":%.5f", n, cr->ops.total, n, cr->ns_per_op,
		       n, cr->wait_p50, n, cr->wait_p99, n, cr->wait_max, n, cr->samples, n,
		       spread_jain(&cr->ops));
		if (c->runqueue)
			printf(",\"%s_runq_ns_at_max\":%" PRIu64 ",\"%s_wait_ns_max_off_runq\":%" PRIu64,
			       n, cr->runq_at_max, n, cr->wait_max_off_runq);
	}
	if (c->runqueue) {
		if (r->unscheduled >= 0)
			printf(",\"threads_unscheduled\":%" PRId64, r->unscheduled);
		else
			fputs(",\"threads_unscheduled\":null", stdout);
	}
	printf(",\"exclusion_ok\":%s,\"drained\":%s,\"version\":\"%s\"}\n",
	       r->exclusion_ok ? "true" : "false", r->drained ? "true" : "false", LL_VERSION);
}

static void print_text(const struct rw_config *c, const struct rw_result *r)
{
	printf("rwlock %s%s%s threads=%" PRId64 " read_pct=%g hold_ns=%" PRId64 " outside_ns=%"
	       PRId64 ": %.1f ns/op, %.0f ops/s, us/sy/id %.0f/%.0f/%.0f, %.0f cs/s, exclusion %s\n",
	       c->r.lock, c->r.lock_opts ? " " : "", c->r.lock_opts ? c->r.lock_opts : "", c->r.threads,
	       c->read_pct, c->r.hold_ns, c->r.outside_ns, r->rate.ns_per_op, r->rate.ops_per_sec,
	       r->win.cpu_user_pct, r->win.cpu_sys_pct, r->win.cpu_idle_pct, r->win.cs_per_sec,
	       r->exclusion_ok ? "ok" : "VIOLATED");
	for (int k = RD; k <= WR; k++) {
		const struct class_result *cr = &r->cls[k];
		printf("  %-5s %" PRIu64 " ops, %.1f ns per sampled op, wait p50/p99/max %" PRIu64
		       "/%" PRIu64 "/%" PRIu64 " ns, jain %.3f\n", class_name[k], cr->ops.total,
		       cr->ns_per_op, cr->wait_p50, cr->wait_p99, cr->wait_max, spread_jain(&cr->ops));
		if (c->runqueue)
			printf("        longest wait %" PRIu64 " ns of which %" PRIu64 " runnable, not "
			       "running; longest wait less that time %" PRIu64 " ns\n", cr->wait_max,
			       cr->runq_at_max, cr->wait_max_off_runq);
	}
	if (r->unscheduled > 0)
		printf("  %" PRId64 " of %" PRId64 " threads never got a CPU in the window: it measured "
		       "fewer threads (a longer --duration covers the scheduler's round)\n",
		       r->unscheduled, c->r.threads);
}

/* The run as run_window's hooks see it. */
struct rw_run {
	const struct rw_config *c;
	struct rw_worker *w;
	struct rw_result *r;
	int watch;             /* --runqueue and every thread's CPU time read as the window opened */
};

/*
 * --runqueue: every thread opened its schedstat before the start barrier;
 * one that could not would report no runqueue time as if it had none.
 */
static void need_schedstat(void *ctx)
{
	const struct rw_run *run = ctx;
	for (int64_t i = 0; run->c->runqueue && i < run->c->r.threads; i++)
		if (run->w[i].schedstat_fd < 0) {
			fprintf(stderr, "locklab: bench: --runqueue: cannot open the schedstat of "
				"thread %" PRId64 " of %" PRId64 "\n", i + 1, run->c->r.threads);
			_exit(EXIT_USAGE);
		}
}

/* Read before the window opens and after it closes: what ran in it ran between. */
static void watch_open(void *ctx)
{
	struct rw_run *run = ctx;
	run->watch = run->c->runqueue;
	for (int64_t i = 0; run->watch && i < run->c->r.threads; i++)
		run->watch = schedstat_read(run->w[i].schedstat_fd, &run->w[i].run_ns_at_start, NULL);
}

/*
 * The threads whose time on a CPU has not moved since the window opened and
 * that are runnable now: kept out by the scheduler, not asleep on the lock
 * (schedstat's wait for a CPU grows only once the thread runs, so it is the
 * state that tells them apart).  -1 if a thread could not be read.
 */
static int64_t count_unscheduled(const struct rw_worker *w, int64_t n)
{
	int64_t count = 0;
	for (int64_t i = 0; i < n; i++) {
		uint64_t run;
		if (!schedstat_read(w[i].schedstat_fd, &run, NULL))
			return -1;
		if (run == w[i].run_ns_at_start) {
			int runnable = thread_runnable(w[i].tid);
			if (runnable < 0)
				return -1;
			count += runnable;
		}
	}
	return count;
}

static void watch_closed(void *ctx)
{
	struct rw_run *run = ctx;
	if (run->watch)
		run->r->unscheduled = count_unscheduled(run->w, run->c->r.threads);
}

int cmd_bench_rw(int argc, char **argv)
{
	struct rw_config c;
	struct ll_error err;
	int rc = parse_args(argc, argv, &c);
	if (rc)
		return rc;
	if (ll_rwlock_init(&g.rw, c.r.lock, c.r.lock_opts, &err))
		return usage_error("%s", err.msg);
	struct rw_worker *w = aligned_alloc(64, sizeof(struct rw_worker) * (size_t)c.r.threads);
	pthread_t *tids = calloc((size_t)c.r.threads, sizeof(pthread_t));
	uint64_t *window = calloc((size_t)c.r.threads * 2, sizeof(uint64_t));
	if (!w || !tids || !window)
		return usage_error("bench: out of memory for %" PRId64 " threads", c.r.threads);
	memset(w, 0, sizeof(struct rw_worker) * (size_t)c.r.threads);

	ll_spin_calibrate();
	work_calibrate();
	g.hold_loops = work_loops_for_ns(c.r.hold_ns);
	g.outside_loops = work_loops_for_ns(c.r.outside_ns);
	g.iterations = (uint64_t)c.r.iterations;
	g.sample_mask = (uint64_t)c.r.sample_every - 1;
	g.runqueue = c.runqueue;
	/* A read when the top 32 bits of a draw fall below read_pct % of 2^32. */
	g.read_below = (uint64_t)llround(c.read_pct / 100.0 * 4294967296.0);
	atomic_store(&g.phase, c.r.iterations ? PHASE_MEASURE : PHASE_WARMUP);
	pthread_barrier_init(&g.start, NULL, (unsigned)c.r.threads + 1);
	for (int64_t i = 0; i < c.r.threads; i++)
		w[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) | 1;
	if (c.runqueue)
		fd_limit_at_least(c.r.threads + 64);   /* a schedstat per thread, and the rest */
	start_threads(tids, c.r.threads, rw_main, w, sizeof(*w), "thread");

	struct snapshot a, b;
	struct rw_result r = { .unscheduled = -1 };
	struct rw_run run = { .c = &c, .w = w, .r = &r };
	const struct run_window measured = {
		.opts = &c.r, .tids = tids, .threads = c.r.threads, .start = &g.start,
		.phase = &g.phase, .counters = w[0].ops, .stride = sizeof(*w), .per_thread = 2,
		.drain_s = 1.0, .released = need_schedstat, .opening = watch_open,
		.closed = watch_closed, .ctx = &run,
	};
	r.drained = run_window(&measured, window, &a, &b);
	summarise(&c, w, window, &a, &b, &r);
	if (c.r.json)
		print_json(&c, &r);
	else
		print_text(&c, &r);
	exit_if_undrained(r.drained, r.exclusion_ok);
	ll_rwlock_destroy(&g.rw);
	free(window);
	free(tids);
	free(w);
	return r.exclusion_ok ? 0 : 1;
}
