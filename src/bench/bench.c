/*
 * bench.c: `locklab-bench bench`, innotsim's loop in a fresh process.
 *
 * N threads, M mutexes, thread i on mutex i mod M.  Each iteration: lock,
 * increment the mutex's counter, work hold_ns, unlock, work outside_ns.
 * All threads start at a barrier.  With --duration the main thread lets
 * them warm up, then snapshots iteration counts, /proc/stat and rusage at
 * the start and end of the measured window; with --iterations every thread
 * does J iterations and the window is the whole run.  Afterwards each
 * mutex's counter must equal the iterations of its threads.  A strict FIFO
 * spinlock with hundreds of threads per core can take minutes to let every
 * thread finish its last acquisition: the drain is bounded, and when it runs
 * out the counters cannot be compared, so each critical section also checks
 * an `inside` flag (a second thread inside is counted as a violation).
 *
 * Wait latency: every sample_every-th acquisition in the window is timed
 * (two vDSO clock reads) into a per-thread log-linear histogram.
 *
 * --instrument turns the lock monitor on (locklab/monitor.h) for the run:
 * the point then costs what monitored locks cost, the monitor's counters
 * are summed into the result, and its acquisitions must equal each mutex's
 * counter; --dump text|json prints the monitor's dump to stderr at the end.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "json.h"
#include "locks.h"
#include "measure.h"
#include "slot.h"
#include "stats.h"
#include "work.h"

struct worker {
	alignas(64) atomic_uint_fast64_t iters;   /* written by the worker, read by main */
	struct slot *slot;
	uint64_t samples;
	uint64_t wait_max;
	uint64_t hist[HIST_BUCKETS];
};

struct config {
	int64_t mutexes;
	struct run_opts r;      /* the lock, threads, work, the run's length (options.h) */
	int instrument, dump;   /* dump: -1, LL_DUMP_TEXT or LL_DUMP_JSON */
};

static struct {
	alignas(64) atomic_int phase;
	uint64_t hold_loops, outside_loops, iterations;
	uint64_t sample_mask;
	pthread_barrier_t start;
} run;

static void *worker_main(void *p)
{
	struct worker *w = p;
	struct slot *s = w->slot;
	uint64_t hold = run.hold_loops, outside = run.outside_loops, mask = run.sample_mask;

	pthread_barrier_wait(&run.start);
	for (uint64_t i = 0;; i++) {
		/* One relaxed load of a line nobody writes until the phase changes. */
		int phase = atomic_load_explicit(&run.phase, memory_order_relaxed);
		if (run.iterations ? i == run.iterations : phase == PHASE_STOP)
			break;
		int sample = phase == PHASE_MEASURE && (i & mask) == 0;
		uint64_t t0 = sample ? ll_now_ns() : 0;
		ll_mutex_lock(&s->m);
		if (sample) {
			uint64_t wait = ll_now_ns() - t0;
			w->hist[hist_bucket(wait)]++;
			w->samples++;
			if (wait > w->wait_max)
				w->wait_max = wait;
		}
		slot_enter(s);
		work_loops(hold);
		slot_leave(s);
		ll_mutex_unlock(&s->m);
		atomic_store_explicit(&w->iters, i + 1, memory_order_relaxed);
		work_loops(outside);
	}
	return NULL;
}

static void usage(FILE *f)
{
	fputs("usage: locklab-bench bench --lock L [--lock-opts K=V,...] --threads N --mutexes M\n"
	      "         --hold-ns H [--outside-ns O] (--duration S | --iterations J)\n"
	      "         [--warmup S] [--sample-every K] [--instrument] [--dump text|json] [--json]\n"
	      "One point of the mutex workload, in this process: N threads, thread i on mutex\n"
	      "i mod M, each iteration lock, H ns of work, unlock, O ns of work.\n"
	      "  --workload W        mutex (this one), server (a database server's clients) or\n"
	      "                      rw (one rwlock): `bench --workload W --help`\n",
	      f);
	usage_run_options(f, "iterations");
	fputs("  --mutexes M         mutexes, the threads spread evenly over them, 1..100000\n"
	      "  --hold-ns H         ns of work with the lock held, 0..1000000000\n"
	      "  --outside-ns O      ns of work between unlock and the next lock (0)\n"
	      "  --sample-every K    time one acquisition's wait in K, a power of two (16)\n"
	      "  --instrument        with the lock monitor's statistics on; its counters join\n"
	      "                      the result\n"
	      "  --dump text|json    print the lock monitor's status dump to stderr at the end\n",
	      f);
}

/* One option of the mutex workload (parse_options' take). */
static int take_option(int ch, const char *arg, void *ctx)
{
	struct config *c = ctx;
	switch (ch) {
	case 'm': return parse_i64("--mutexes", arg, 1, 100000, &c->mutexes);
	case 'I': c->instrument = 1; return 0;
	case 'D':
		if (strcmp(arg, "text") && strcmp(arg, "json"))
			return usage_error("bench: --dump wants text or json, got '%s'", arg);
		c->dump = strcmp(arg, "json") ? LL_DUMP_TEXT : LL_DUMP_JSON;
		return 0;
	case 'h': usage(stdout); exit(0);
	default: return -1;
	}
}

static int parse_args(int argc, char **argv, struct config *c)
{
	static const struct option opts[] = {
		RUN_OPTIONS,
		SAMPLE_OPTION,
		{ "mutexes", required_argument, 0, 'm' },   { "help", no_argument, 0, 'h' },
		{ "instrument", no_argument, 0, 'I' },      { "dump", required_argument, 0, 'D' },
		{ 0, 0, 0, 0 },
	};
	*c = (struct config){ .dump = -1 };
	run_opts_defaults(&c->r);
	int rc = parse_options(argc, argv, opts, &c->r, take_option, c);
	if (rc)
		return rc;
	/* --mutexes is at least 1 when given. */
	if (!c->r.lock || !c->r.have_threads || !c->mutexes || !c->r.have_hold)
		return usage_error("bench: --lock, --threads, --mutexes and --hold-ns are required");
	return check_run_opts(&c->r);
}

struct result {
	struct window win;
	struct rates rate;      /* per iteration */
	struct spread iters;    /* the threads' iterations in the window */
	double calib_error_pct;
	uint64_t wait_p50, wait_p99, wait_p999, wait_max, wait_samples;
	int mutex_ok;
	int drained;      /* every thread exited: the counters could be compared */
	int instrumented; /* the monitor counted: the mon_* sums below */
	uint64_t mon_acquisitions, mon_contended, mon_spins, mon_parks, mon_wait_max;
};

/* window: each thread's iterations in the window. */
static void summarise(const struct config *c, struct worker *w, const uint64_t *window,
		      struct slot *slots, const struct snapshot *a, const struct snapshot *b,
		      struct result *r)
{
	uint64_t *hist = calloc(HIST_BUCKETS, sizeof(uint64_t));

	for (int64_t i = 0; i < c->r.threads; i++) {
		spread_add(&r->iters, window[i]);
		for (unsigned k = 0; k < HIST_BUCKETS; k++)
			hist[k] += w[i].hist[k];
		r->wait_samples += w[i].samples;
		if (w[i].wait_max > r->wait_max)
			r->wait_max = w[i].wait_max;
	}
	/* Every iteration of every thread, warm-up included, went through one counter. */
	r->mutex_ok = 1;
	for (int64_t m = 0; m < c->mutexes; m++) {
		uint64_t expect = 0;
		for (int64_t i = m; i < c->r.threads; i += c->mutexes)
			expect += atomic_load(&w[i].iters);
		r->mutex_ok &= slot_ok("", m, &slots[m], r->drained, expect);
	}

	/* The monitor counted every acquisition, warm-up included, as the counters did. */
	for (int64_t m = 0; r->instrumented && m < c->mutexes; m++) {
		struct ll_mutex_stats st;
		if (ll_mutex_stats(&slots[m].m, &st))
			continue;
		r->mon_acquisitions += st.acquisitions;
		r->mon_contended += st.contended;
		r->mon_spins += st.spins;
		r->mon_parks += st.parks;
		if (st.wait_ns_max > r->mon_wait_max)
			r->mon_wait_max = st.wait_ns_max;
		if (r->drained && st.acquisitions != slots[m].counter) {
			fprintf(stderr, "locklab: monitor counted %" PRIu64 " acquisitions of mutex %"
				PRId64 ", its counter says %" PRIu64 "\n", st.acquisitions, m,
				slots[m].counter);
			r->mutex_ok = 0;
		}
	}

	window_between(a, b, &r->win);
	window_rates(&r->win, r->iters.total, &r->rate);
	r->wait_p50 = hist_quantile(hist, r->wait_samples, r->wait_max, 0.50);
	r->wait_p99 = hist_quantile(hist, r->wait_samples, r->wait_max, 0.99);
	r->wait_p999 = hist_quantile(hist, r->wait_samples, r->wait_max, 0.999);
	free(hist);
}

static void print_json(const struct config *c, const struct result *r)
{
	fputs("{\"lock\":", stdout);
	json_string(stdout, c->r.lock);
	fputs(",\"lock_opts\":", stdout);
	json_string(stdout, c->r.lock_opts ? c->r.lock_opts : "");
	printf(",\"threads\":%" PRId64 ",\"mutexes\":%" PRId64 ",\"hold_ns\":%" PRId64
	       ",\"outside_ns\":%" PRId64 ",\"mode\":\"%s\",\"warmup_s\":%g,\"duration_s\":%.6f"
	       ",\"iterations\":%" PRIu64 ",\"ns_per_iter\":%.3f,\"ops_per_sec\":%.1f"
	       ",\"cpu_user_pct\":%.2f,\"cpu_sys_pct\":%.2f,\"cpu_idle_pct\":%.2f"
	       ",\"cs_per_sec\":%.1f,\"vcsw\":%" PRIu64 ",\"ivcsw\":%" PRIu64
	       ",\"cpu_ns_per_iter\":%.3f,\"jain\":%.5f,\"min_thread_iters\":%" PRIu64
	       ",\"max_thread_iters\":%" PRIu64 ",\"wait_ns_p50\":%" PRIu64 ",\"wait_ns_p99\":%" PRIu64
	       ",\"wait_ns_p999\":%" PRIu64 ",\"wait_ns_max\":%" PRIu64 ",\"wait_samples\":%" PRIu64
	       ",\"sample_every\":%" PRId64 ",\"mutex_ok\":%s,\"drained\":%s,\"calib_error_pct\":%.2f"
	       ",\"calib_ns_per_loop\":%.4f,\"pause_ns\":%.2f,\"version\":\"%s\"",
	       c->r.threads, c->mutexes, c->r.hold_ns, c->r.outside_ns,
	       c->r.iterations ? "iterations" : "duration", c->r.iterations ? 0 : c->r.warmup_s,
	       r->win.duration_s, r->iters.total, r->rate.ns_per_op, r->rate.ops_per_sec,
	       r->win.cpu_user_pct, r->win.cpu_sys_pct, r->win.cpu_idle_pct, r->win.cs_per_sec,
	       r->win.vcsw, r->win.ivcsw, r->rate.cpu_ns_per_op, spread_jain(&r->iters),
	       r->iters.min, r->iters.max, r->wait_p50,
	       r->wait_p99, r->wait_p999, r->wait_max, r->wait_samples, c->r.sample_every,
	       r->mutex_ok ? "true" : "false", r->drained ? "true" : "false", r->calib_error_pct, work_calibrate(),
	       ll_spin_ns(LL_SPIN_PAUSE), LL_VERSION);
	printf(",\"instrument\":%s", r->instrumented ? "true" : "false");
	if (r->instrumented)
		printf(",\"mon_acquisitions\":%" PRIu64 ",\"mon_contended\":%" PRIu64
		       ",\"mon_spins\":%" PRIu64 ",\"mon_os_waits\":%" PRIu64
		       ",\"mon_wait_ns_max\":%" PRIu64, r->mon_acquisitions, r->mon_contended,
		       r->mon_spins, r->mon_parks, r->mon_wait_max);
	fputs("}\n", stdout);
}

static void print_text(const struct config *c, const struct result *r)
{
	printf("%s%s%s threads=%" PRId64 " mutexes=%" PRId64 " hold_ns=%" PRId64
	       " outside_ns=%" PRId64 ": %.1f ns/iter, %.0f ops/s, us/sy/id %.0f/%.0f/%.0f,"
	       " %.0f cs/s, %.0f cpu-ns/iter, jain %.3f, wait p50/p99/max %" PRIu64 "/%" PRIu64
	       "/%" PRIu64 " ns, mutex %s\n",
	       c->r.lock, c->r.lock_opts ? " " : "", c->r.lock_opts ? c->r.lock_opts : "", c->r.threads,
	       c->mutexes, c->r.hold_ns, c->r.outside_ns, r->rate.ns_per_op, r->rate.ops_per_sec,
	       r->win.cpu_user_pct, r->win.cpu_sys_pct, r->win.cpu_idle_pct, r->win.cs_per_sec,
	       r->rate.cpu_ns_per_op, spread_jain(&r->iters), r->wait_p50, r->wait_p99, r->wait_max,
	       r->mutex_ok ? "ok" : "VIOLATED");
	if (r->instrumented)
		printf("  monitor: %" PRIu64 " acquisitions, %" PRIu64 " contended, %" PRIu64
		       " spins, %" PRIu64 " os waits, longest wait %" PRIu64 " ns\n",
		       r->mon_acquisitions, r->mon_contended, r->mon_spins, r->mon_parks,
		       r->mon_wait_max);
}

int cmd_bench(int argc, char **argv)
{
	struct config c;
	struct ll_error err;
	int rc = parse_args(argc, argv, &c);
	if (rc)
		return rc;

	struct slot *slots = aligned_alloc(64, sizeof(struct slot) * (size_t)c.mutexes);
	struct worker *w = aligned_alloc(64, sizeof(struct worker) * (size_t)c.r.threads);
	pthread_t *tids = calloc((size_t)c.r.threads, sizeof(pthread_t));
	uint64_t *window = calloc((size_t)c.r.threads, sizeof(uint64_t));
	if (!slots || !w || !tids || !window)
		return usage_error("bench: out of memory for %" PRId64 " threads", c.r.threads);
	memset(slots, 0, sizeof(struct slot) * (size_t)c.mutexes);
	memset(w, 0, sizeof(struct worker) * (size_t)c.r.threads);
	if (c.instrument && !ll_monitor_available())
		return usage_error("bench: --instrument: the library was built without the monitor "
				   "(LL_MONITOR=OFF)");
	if (c.instrument)
		ll_monitor_set_enabled(1);
	for (int64_t m = 0; m < c.mutexes; m++) {
		char name[48];
		if (bench_mutex_init(&slots[m].m, c.r.lock, c.r.lock_opts, &err))
			return usage_error("%s", err.msg);
		snprintf(name, sizeof(name), "bench.mutex[%" PRId64 "]", m);
		ll_mutex_set_name(&slots[m].m, name);
	}

	ll_spin_calibrate();
	work_calibrate();
	struct result r = { .instrumented = ll_monitor_enabled() };
	/*
	 * A calibration taken while the CPU was shared (steal time, another
	 * job) makes every hold short: check it, and take it again, up to
	 * three times, when it is off by more than 5%.
	 */
	for (int tries = 0;; tries++) {
		r.calib_error_pct = work_calibration_error_pct(c.r.hold_ns > 0 ? c.r.hold_ns : 1000);
		if (fabs(r.calib_error_pct) <= 5.0 || tries == 3)
			break;
		work_recalibrate();
	}
	if (!c.r.json)
		fprintf(stderr, "work loop: %.3f ns/loop, calibration error %+.1f%% at %" PRId64 " ns\n",
			work_calibrate(), r.calib_error_pct, c.r.hold_ns > 0 ? c.r.hold_ns : 1000);

	run.hold_loops = work_loops_for_ns(c.r.hold_ns);
	run.outside_loops = work_loops_for_ns(c.r.outside_ns);
	run.iterations = (uint64_t)c.r.iterations;
	run.sample_mask = (uint64_t)c.r.sample_every - 1;
	atomic_store(&run.phase, c.r.iterations ? PHASE_MEASURE : PHASE_WARMUP);
	pthread_barrier_init(&run.start, NULL, (unsigned)c.r.threads + 1);

	for (int64_t i = 0; i < c.r.threads; i++)
		w[i].slot = &slots[i % c.mutexes];
	start_threads(tids, c.r.threads, worker_main, w, sizeof(*w), "thread");

	const struct run_window measured = {
		.opts = &c.r, .tids = tids, .threads = c.r.threads, .start = &run.start,
		.phase = &run.phase, .counters = &w[0].iters, .stride = sizeof(*w), .per_thread = 1,
		.drain_s = 1.0,
	};
	struct snapshot a, b;
	r.drained = run_window(&measured, window, &a, &b);
	summarise(&c, w, window, slots, &a, &b, &r);
	if (c.dump >= 0)
		ll_monitor_dump(stderr, (enum ll_dump_format)c.dump);
	if (c.r.json)
		print_json(&c, &r);
	else
		print_text(&c, &r);

	exit_if_undrained(r.drained, r.mutex_ok);
	for (int64_t m = 0; m < c.mutexes; m++)
		ll_mutex_destroy(&slots[m].m);
	free(window);
	free(tids);
	free(w);
	free(slots);
	return r.mutex_ok ? 0 : 1;
}
