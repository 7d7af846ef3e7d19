/*
 * server.c: `locklab-bench bench --workload server`, the server of the
 * innodb_thread_concurrency study:
 * C client threads (one per connection, as MySQL runs them), each looping
 * over queries.  One query:
 *
 *   1. outside_ns of work outside the gate (the SQL layer: parse, send);
 *   2. enter the admission gate, if any (ll_gate_enter: a ticket or a slot);
 *   3. the hot global mutex (kernel_mutex) for hold_ns;
 *   4. inside_ns of work holding no lock (reading rows);
 *   5. one of M secondary mutexes, chosen at random (a page, a hash cell),
 *      for sec_hold_ns;
 *   6. optionally I/O: a sleep of io_us (a disk read), outside the locks;
 *      with suspend=1 the thread steps out of the gate around it
 *      (ll_gate_suspend/resume) as a thread-pool-aware server would;
 *   7. exit the gate (ll_gate_exit: the slot is kept while tickets last);
 *      every trx queries the transaction ends and the slot goes back
 *      (ll_gate_leave, as InnoDB's commit does).
 *
 * The defaults model a CPU-bound OLTP read; every step is an option.
 * Measured as `bench` measures (warm-up, window, /proc/stat, rusage), plus
 * query latency (from step 1 to step 7) and the wait at the gate (step 2),
 * every query, into log-linear histograms.  Mutual exclusion is checked on
 * every mutex as `bench` does.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "json.h"
#include "locklab/gate.h"
#include "locks.h"
#include "measure.h"
#include "slot.h"
#include "stats.h"
#include "work.h"

/* Options of the workload beyond bench's own (--workload-opts K=V,...). */
struct server_opts {
	int64_t inside_ns, sec_hold_ns, io_us, io_every, suspend, trx, io_phase_ms;
};

static const struct ll_knob server_knobs[] = {
	LL_KNOB_INT(struct server_opts, inside_ns, 500, 0, 1000000000,
		    "ns of work inside the gate between the two mutexes"),
	LL_KNOB_INT(struct server_opts, sec_hold_ns, 2000, 0, 1000000000,
		    "ns the secondary mutex is held"),
	LL_KNOB_INT(struct server_opts, io_us, 0, 0, 10000000,
		    "us of I/O (a sleep, outside the locks) per I/O query; 0 = none"),
	LL_KNOB_INT(struct server_opts, io_every, 1, 1, 1000000, "one query in io_every does I/O"),
	LL_KNOB_INT(struct server_opts, suspend, 0, 0, 1,
		    "1: leave the gate around the I/O (ll_gate_suspend/resume)"),
	LL_KNOB_INT(struct server_opts, trx, 10, 1, 1000000,
		    "queries per transaction; its end gives the gate slot back"),
	LL_KNOB_INT(struct server_opts, io_phase_ms, 0, 0, 1000000,
		    "0: I/O all along; P: I/O only in every other P ms (a changing workload)"),
};

struct config {
	const char *gate, *gate_opts, *workload_opts;
	int64_t mutexes;
	struct run_opts r;      /* the lock, clients, work, the run's length (options.h) */
	struct server_opts o;
	int trace;
};

struct client {
	alignas(64) atomic_uint_fast64_t queries;   /* written by the client, read by main */
	ll_gate_thread_t gate;
	uint64_t samples, latency_max, wait_max;
	uint64_t *latency_hist, *wait_hist;
};

static struct {
	alignas(64) atomic_int phase;
	uint64_t hold, inside, sec_hold, outside;   /* work loops */
	uint64_t iterations, start_ns, io_phase_ns;
	struct server_opts o;
	ll_gate_t *gate;
	struct slot *hot, *sec;
	int64_t nsec;
	pthread_barrier_t start;
} srv;

static void critical(struct slot *s, uint64_t loops)
{
	ll_mutex_lock(&s->m);
	slot_enter(s);
	work_loops(loops);
	slot_leave(s);
	ll_mutex_unlock(&s->m);
}

static int io_now(uint64_t q, uint64_t now)
{
	if (!srv.o.io_us || q % (uint64_t)srv.o.io_every)
		return 0;
	return !srv.io_phase_ns || ((now - srv.start_ns) / srv.io_phase_ns) % 2 == 1;
}

static void io_sleep(void)
{
	struct timespec ts = { .tv_sec = srv.o.io_us / 1000000,
			       .tv_nsec = (long)(srv.o.io_us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

static void *client_main(void *p)
{
	struct client *c = p;
	ll_gate_t *g = srv.gate;
	uint64_t in_trx = 0;

	pthread_barrier_wait(&srv.start);
	for (uint64_t q = 0;; q++) {
		int phase = atomic_load_explicit(&srv.phase, memory_order_relaxed);
		if (srv.iterations ? q == srv.iterations : phase == PHASE_STOP)
			break;
		uint64_t t0 = ll_now_ns();
		work_loops(srv.outside);
		uint64_t t1 = ll_now_ns();
		if (g)
			ll_gate_enter(g, &c->gate);
		uint64_t t2 = ll_now_ns();
		critical(srv.hot, srv.hold);
		work_loops(srv.inside);
		critical(&srv.sec[ll_rand32() % (uint64_t)srv.nsec], srv.sec_hold);
		if (io_now(q, t2)) {
			if (g && srv.o.suspend)
				ll_gate_suspend(g, &c->gate);
			io_sleep();
			if (g && srv.o.suspend)
				ll_gate_resume(g, &c->gate);
		}
		if (g) {
			ll_gate_exit(g, &c->gate);
			if (++in_trx == (uint64_t)srv.o.trx) {
				ll_gate_leave(g, &c->gate);
				in_trx = 0;
			}
		}
		if (phase == PHASE_MEASURE) {
			uint64_t latency = ll_now_ns() - t0, wait = t2 - t1;
			c->latency_hist[hist_bucket(latency)]++;
			c->wait_hist[hist_bucket(wait)]++;
			c->samples++;
			if (latency > c->latency_max)
				c->latency_max = latency;
			if (wait > c->wait_max)
				c->wait_max = wait;
		}
		atomic_store_explicit(&c->queries, q + 1, memory_order_relaxed);
	}
	if (g)
		ll_gate_leave(g, &c->gate);
	return NULL;
}

static void usage(FILE *f)
{
	fputs("usage: locklab-bench bench --workload server --lock L [--lock-opts K=V,...]\n"
	      "         --threads CLIENTS [--mutexes M] [--hold-ns H] [--outside-ns O]\n"
	      "         [--gate POLICY [--gate-opts K=V,...]] [--workload-opts K=V,...]\n"
	      "         (--duration S | --iterations J) [--warmup S] [--gate-trace] [--json]\n"
	      "One point of the server workload: CLIENTS threads run queries, each through an\n"
	      "admission gate, on a hot mutex and secondary ones (docs/admission.md).\n"
	      "  --workload server   this workload; --threads counts its clients\n", f);
	usage_run_options(f, "queries");
	fputs("  --mutexes M         secondary mutexes (4)\n"
	      "  --hold-ns H         ns of work on the hot mutex in each query (1000)\n"
	      "  --outside-ns O      ns of work outside the gate between queries (500)\n"
	      "  --gate POLICY       the admission gate: innodb, fifo, auto, or none (no gate)\n"
	      "  --gate-opts K=V,... the gate's options: innodb and fifo n=N, the threads let in;\n"
	      "                      auto min=, max=, interval_us= (its bounds on N, its pace)\n"
	      "  --gate-trace        add the gate's recent decisions to the JSON line\n"
	      "  --instrument        refused: this workload runs without the lock monitor\n"
	      "  --workload-opts K=V,... the query's shape:\n", f);
	for (size_t i = 0; i < LL_COUNT(server_knobs); i++)
		fprintf(f, "    %-12s %s (%" PRId64 ")\n", server_knobs[i].name, server_knobs[i].help,
			server_knobs[i].def);
}

/* One option of the server workload (parse_options' take). */
static int take_option(int ch, const char *arg, void *ctx)
{
	struct config *c = ctx;
	switch (ch) {
	case 'W': return 0;   /* "server": how we got here */
	case 'm': return parse_i64("--mutexes", arg, 1, 100000, &c->mutexes);
	case 'g': c->gate = arg; return 0;
	case 'G': c->gate_opts = arg; return 0;
	case 'X': c->workload_opts = arg; return 0;
	case 'T': c->trace = 1; return 0;
	case 'h': usage(stdout); exit(0);
	case 'I': return usage_error("bench: --instrument is not available with --workload server");
	default: return -1;
	}
}

static int parse_args(int argc, char **argv, struct config *c)
{
	static const struct option opts[] = {
		RUN_OPTIONS,
		{ "workload", required_argument, 0, 'W' },  { "mutexes", required_argument, 0, 'm' },
		{ "gate", required_argument, 0, 'g' },      { "gate-opts", required_argument, 0, 'G' },
		{ "workload-opts", required_argument, 0, 'X' },
		{ "gate-trace", no_argument, 0, 'T' },      { "help", no_argument, 0, 'h' },
		{ "instrument", no_argument, 0, 'I' },      { 0, 0, 0, 0 },
	};
	*c = (struct config){ .mutexes = 4 };
	run_opts_defaults(&c->r);
	c->r.hold_ns = 1000;
	c->r.outside_ns = 500;
	int rc = parse_options(argc, argv, opts, &c->r, take_option, c);
	if (rc)
		return rc;
	if (!c->r.lock || !c->r.have_threads)
		return usage_error("bench: --workload server needs --lock and --threads");
	if ((rc = check_run_opts(&c->r)))
		return rc;
	if (c->gate && !strcmp(c->gate, "none"))
		c->gate = NULL;
	if (c->gate_opts && !c->gate && *c->gate_opts)
		return usage_error("bench: --gate-opts without --gate");
	struct ll_error err;
	ll_knobs_defaults(server_knobs, LL_COUNT(server_knobs), &c->o, sizeof(c->o));
	if (ll_knobs_parse("workload", "server", server_knobs, LL_COUNT(server_knobs),
			   c->workload_opts, &c->o, &err))
		return usage_error("%s", err.msg);
	return 0;
}

struct result {
	struct window win;
	struct rates rate;      /* per query */
	struct spread queries;  /* the clients' queries in the window */
	double calib_error_pct;
	uint64_t samples;
	uint64_t latency_p50, latency_p99, latency_p999, latency_max;
	uint64_t wait_p50, wait_p99, wait_p999, wait_max;
	struct ll_gate_stats gate;
	int mutex_ok, drained;
};

/* window: each client's queries in the window. */
static void summarise(const struct config *c, struct client *cl, const uint64_t *window,
		      const struct snapshot *a, const struct snapshot *b, struct result *r)
{
	uint64_t *lat = calloc(HIST_BUCKETS, sizeof(uint64_t));
	uint64_t *wait = calloc(HIST_BUCKETS, sizeof(uint64_t));
	uint64_t all = 0;

	for (int64_t i = 0; i < c->r.threads; i++) {
		spread_add(&r->queries, window[i]);
		for (unsigned k = 0; k < HIST_BUCKETS; k++) {
			lat[k] += cl[i].latency_hist[k];
			wait[k] += cl[i].wait_hist[k];
		}
		r->samples += cl[i].samples;
		r->latency_max = cl[i].latency_max > r->latency_max ? cl[i].latency_max : r->latency_max;
		r->wait_max = cl[i].wait_max > r->wait_max ? cl[i].wait_max : r->wait_max;
		all += atomic_load(&cl[i].queries);
	}

	/* Every query of every client, warm-up included, went through the hot mutex
	 * and one secondary mutex. */
	uint64_t sec_total = 0;
	r->mutex_ok = slot_ok("hot", 0, srv.hot, r->drained, all);
	for (int64_t m = 0; m < srv.nsec; m++) {
		r->mutex_ok &= slot_ok("secondary", m, &srv.sec[m], 0, 0);
		sec_total += srv.sec[m].counter;
	}
	if (r->drained && sec_total != all) {
		fprintf(stderr, "locklab: mutual exclusion violated on the secondary mutexes: "
			"counters add up to %" PRIu64 ", threads did %" PRIu64 "\n", sec_total, all);
		r->mutex_ok = 0;
	}

	window_between(a, b, &r->win);
	window_rates(&r->win, r->queries.total, &r->rate);
	r->latency_p50 = hist_quantile(lat, r->samples, r->latency_max, 0.50);
	r->latency_p99 = hist_quantile(lat, r->samples, r->latency_max, 0.99);
	r->latency_p999 = hist_quantile(lat, r->samples, r->latency_max, 0.999);
	r->wait_p50 = hist_quantile(wait, r->samples, r->wait_max, 0.50);
	r->wait_p99 = hist_quantile(wait, r->samples, r->wait_max, 0.99);
	r->wait_p999 = hist_quantile(wait, r->samples, r->wait_max, 0.999);
	free(lat);
	free(wait);
}

static void print_trace(void)
{
	enum { MAX = 4096 };
	struct ll_gate_sample *s = malloc(MAX * sizeof(*s));
	size_t n = s ? ll_gate_trace(srv.gate, s, MAX) : 0;
	fputs(",\"gate_trace\":[", stdout);
	for (size_t i = 0; i < n; i++)
		printf("%s[%.1f,%d,%.0f,%.2f,%.2f,%u,%u]", i ? "," : "", (double)s[i].t_ns / 1e6,
		       s[i].limit, s[i].per_sec, s[i].cpus, s[i].idle, s[i].queued, s[i].inside);
	fputs("]", stdout);
	free(s);
}

static void print_json(const struct config *c, const struct result *r)
{
	const struct window *w = &r->win;
	fputs("{\"workload\":\"server\",\"lock\":", stdout);
	json_string(stdout, c->r.lock);
	fputs(",\"lock_opts\":", stdout);
	json_string(stdout, c->r.lock_opts ? c->r.lock_opts : "");
	fputs(",\"gate\":", stdout);
	json_string(stdout, c->gate ? c->gate : "");
	fputs(",\"gate_opts\":", stdout);
	json_string(stdout, c->gate_opts ? c->gate_opts : "");
	fputs(",\"workload_opts\":", stdout);
	json_string(stdout, c->workload_opts ? c->workload_opts : "");
	printf(",\"threads\":%" PRId64 ",\"mutexes\":%" PRId64 ",\"hold_ns\":%" PRId64
	       ",\"outside_ns\":%" PRId64 ",\"inside_ns\":%" PRId64 ",\"sec_hold_ns\":%" PRId64
	       ",\"io_us\":%" PRId64 ",\"io_every\":%" PRId64 ",\"suspend\":%" PRId64
	       ",\"trx\":%" PRId64 ",\"io_phase_ms\":%" PRId64,
	       c->r.threads, c->mutexes, c->r.hold_ns, c->r.outside_ns, c->o.inside_ns, c->o.sec_hold_ns,
	       c->o.io_us, c->o.io_every, c->o.suspend, c->o.trx, c->o.io_phase_ms);
	printf(",\"mode\":\"%s\",\"warmup_s\":%g,\"duration_s\":%.6f,\"iterations\":%" PRIu64
	       ",\"ns_per_iter\":%.3f,\"ops_per_sec\":%.1f,\"qps\":%.1f,\"ns_per_query\":%.3f"
	       ",\"cpu_user_pct\":%.2f,\"cpu_sys_pct\":%.2f,\"cpu_idle_pct\":%.2f,\"cs_per_sec\":%.1f"
	       ",\"vcsw\":%" PRIu64 ",\"ivcsw\":%" PRIu64 ",\"cpu_ns_per_iter\":%.3f,\"jain\":%.5f"
	       ",\"min_thread_iters\":%" PRIu64 ",\"max_thread_iters\":%" PRIu64,
	       c->r.iterations ? "iterations" : "duration", c->r.iterations ? 0 : c->r.warmup_s,
	       w->duration_s, r->queries.total, r->rate.ns_per_op, r->rate.ops_per_sec,
	       r->rate.ops_per_sec, r->rate.ns_per_op, w->cpu_user_pct, w->cpu_sys_pct,
	       w->cpu_idle_pct, w->cs_per_sec, w->vcsw, w->ivcsw, r->rate.cpu_ns_per_op,
	       spread_jain(&r->queries), r->queries.min, r->queries.max);
	printf(",\"latency_ns_p50\":%" PRIu64 ",\"latency_ns_p99\":%" PRIu64
	       ",\"latency_ns_p999\":%" PRIu64 ",\"latency_ns_max\":%" PRIu64
	       ",\"wait_ns_p50\":%" PRIu64 ",\"wait_ns_p99\":%" PRIu64 ",\"wait_ns_p999\":%" PRIu64
	       ",\"wait_ns_max\":%" PRIu64 ",\"wait_samples\":%" PRIu64 ",\"sample_every\":1",
	       r->latency_p50, r->latency_p99, r->latency_p999, r->latency_max, r->wait_p50,
	       r->wait_p99, r->wait_p999, r->wait_max, r->samples);
	printf(",\"gate_limit\":%" PRId64 ",\"gate_limit_mean\":%.2f,\"gate_limit_min\":%" PRId64
	       ",\"gate_limit_max\":%" PRId64 ",\"gate_waits\":%" PRIu64 ",\"gate_sleeps\":%" PRIu64
	       ",\"gate_adjustments\":%" PRIu64 ",\"gate_handoffs\":%" PRIu64
	       ",\"gate_barges\":%" PRIu64,
	       r->gate.limit, r->gate.limit_mean, r->gate.limit_min, r->gate.limit_max,
	       r->gate.waits, r->gate.sleeps, r->gate.adjustments, r->gate.handoffs,
	       r->gate.barges);
	if (c->trace && srv.gate)
		print_trace();
	printf(",\"mutex_ok\":%s,\"drained\":%s,\"calib_error_pct\":%.2f,\"calib_ns_per_loop\":%.4f"
	       ",\"pause_ns\":%.2f,\"version\":\"%s\"}\n",
	       r->mutex_ok ? "true" : "false", r->drained ? "true" : "false", r->calib_error_pct,
	       work_calibrate(), ll_spin_ns(LL_SPIN_PAUSE), LL_VERSION);
}

static void print_text(const struct config *c, const struct result *r)
{
	const struct window *w = &r->win;
	printf("server %s%s%s gate %s%s%s clients=%" PRId64 ": %.0f qps, %.0f ns/query,"
	       " latency p50/p99/max %" PRIu64 "/%" PRIu64 "/%" PRIu64 " ns, gate wait p99 %" PRIu64
	       " ns, N %.1f, handoffs/barges %" PRIu64 "/%" PRIu64 ", us/sy/id %.0f/%.0f/%.0f,"
	       " %.0f cs/s, jain %.3f, mutex %s\n",
	       c->r.lock, c->r.lock_opts ? " " : "", c->r.lock_opts ? c->r.lock_opts : "",
	       c->gate ? c->gate : "none", c->gate_opts ? " " : "", c->gate_opts ? c->gate_opts : "",
	       c->r.threads, r->rate.ops_per_sec, r->rate.ns_per_op, r->latency_p50, r->latency_p99,
	       r->latency_max, r->wait_p99, r->gate.limit_mean, r->gate.handoffs, r->gate.barges,
	       w->cpu_user_pct, w->cpu_sys_pct, w->cpu_idle_pct, w->cs_per_sec,
	       spread_jain(&r->queries),
	       r->mutex_ok ? "ok" : "VIOLATED");
}

static int init_slot(struct slot *s, const struct config *c)
{
	struct ll_error err;
	memset(s, 0, sizeof(*s));
	if (bench_mutex_init(&s->m, c->r.lock, c->r.lock_opts, &err))
		return usage_error("%s", err.msg);
	return 0;
}

/* The gate's statistics cover the window: reset as it opens, read as it closes. */
static void gate_window_opens(void *ctx)
{
	(void)ctx;
	if (srv.gate)
		ll_gate_reset_stats(srv.gate);
}

static void gate_window_closed(void *ctx)
{
	if (srv.gate)
		ll_gate_get_stats(srv.gate, ctx);
}

int cmd_server(int argc, char **argv)
{
	struct config c;
	struct ll_error err;
	int rc = parse_args(argc, argv, &c);
	if (rc)
		return rc;

	srv.nsec = c.mutexes;
	srv.hot = aligned_alloc(64, sizeof(struct slot));
	srv.sec = aligned_alloc(64, sizeof(struct slot) * (size_t)c.mutexes);
	struct client *cl = aligned_alloc(64, sizeof(struct client) * (size_t)c.r.threads);
	pthread_t *tids = calloc((size_t)c.r.threads, sizeof(pthread_t));
	uint64_t *window = calloc((size_t)c.r.threads, sizeof(uint64_t));
	if (!srv.hot || !srv.sec || !cl || !tids || !window)
		return usage_error("bench: out of memory for %" PRId64 " clients", c.r.threads);
	if ((rc = init_slot(srv.hot, &c)))
		return rc;
	for (int64_t m = 0; m < c.mutexes; m++)
		if ((rc = init_slot(&srv.sec[m], &c)))
			return rc;
	if (c.gate && !(srv.gate = ll_gate_create(c.gate, c.gate_opts, &err)))
		return usage_error("%s", err.msg);
	memset(cl, 0, sizeof(struct client) * (size_t)c.r.threads);
	for (int64_t i = 0; i < c.r.threads; i++) {
		cl[i].latency_hist = calloc(HIST_BUCKETS, sizeof(uint64_t));
		cl[i].wait_hist = calloc(HIST_BUCKETS, sizeof(uint64_t));
		if (!cl[i].latency_hist || !cl[i].wait_hist)
			return usage_error("bench: out of memory for %" PRId64 " clients", c.r.threads);
	}

	ll_spin_calibrate();
	work_calibrate();
	struct result r = { 0 };
	r.calib_error_pct = work_calibration_error_pct(c.o.inside_ns > 0 ? c.o.inside_ns : 1000);
	srv.hold = work_loops_for_ns(c.r.hold_ns);
	srv.inside = work_loops_for_ns(c.o.inside_ns);
	srv.sec_hold = work_loops_for_ns(c.o.sec_hold_ns);
	srv.outside = work_loops_for_ns(c.r.outside_ns);
	srv.o = c.o;
	srv.iterations = (uint64_t)c.r.iterations;
	srv.io_phase_ns = (uint64_t)c.o.io_phase_ms * 1000000u;
	atomic_store(&srv.phase, c.r.iterations ? PHASE_MEASURE : PHASE_WARMUP);
	pthread_barrier_init(&srv.start, NULL, (unsigned)c.r.threads + 1);

	start_threads(tids, c.r.threads, client_main, cl, sizeof(*cl), "client");

	struct snapshot a, b;
	const struct run_window measured = {
		.opts = &c.r, .tids = tids, .threads = c.r.threads, .start = &srv.start,
		.phase = &srv.phase, .counters = &cl[0].queries, .stride = sizeof(*cl),
		.per_thread = 1, .drain_s = 2.0, .opening = gate_window_opens,
		.closed = gate_window_closed, .ctx = &r.gate,
	};
	srv.start_ns = ll_now_ns();
	r.drained = run_window(&measured, window, &a, &b);
	summarise(&c, cl, window, &a, &b, &r);
	if (c.r.json)
		print_json(&c, &r);
	else
		print_text(&c, &r);

	exit_if_undrained(r.drained, r.mutex_ok);
	ll_gate_destroy(srv.gate);
	ll_mutex_destroy(&srv.hot->m);
	for (int64_t m = 0; m < c.mutexes; m++)
		ll_mutex_destroy(&srv.sec[m].m);
	for (int64_t i = 0; i < c.r.threads; i++) {
		free(cl[i].latency_hist);
		free(cl[i].wait_hist);
	}
	free(window);
	free(tids);
	free(cl);
	free(srv.sec);
	free(srv.hot);
	return r.mutex_ok ? 0 : 1;
}

/*
 * `bench` comes here first: --workload server runs the server, rw the
 * rwlock workload (rw.c); mutex (the
 * default) runs bench's own loop, without the option it does not know.
 */
int cmd_bench_workload(int argc, char **argv)
{
	char **rest = calloc((size_t)argc + 1, sizeof(char *));
	int n = 0;
	if (!rest)
		return usage_error("bench: out of memory");
	for (int i = 0; i < argc; i++) {
		const char *v = NULL;
		int skip = 0;
		if (i > 0 && !strcmp(argv[i], "--workload") && i + 1 < argc)
			v = argv[i + 1], skip = 2;
		else if (i > 0 && !strncmp(argv[i], "--workload=", 11))
			v = argv[i] + 11, skip = 1;
		if (!v) {
			rest[n++] = argv[i];
			continue;
		}
		if (!strcmp(v, "server")) {
			free(rest);
			return cmd_server(argc, argv);
		}
		if (!strcmp(v, "rw")) {
			free(rest);
			return cmd_bench_rw(argc, argv);
		}
		if (strcmp(v, "mutex")) {
			free(rest);
			return usage_error("bench: unknown workload '%s' (valid: mutex, server, rw)", v);
		}
		i += skip - 1;
	}
	int rc = cmd_bench(n, rest);
	free(rest);
	return rc;
}
