/*
 * auto.c: the `auto` policy: fifo's queue (gate_queue) with N chosen
 * by a feedback loop instead of by the administrator.  This file measures;
 * auto_ctl.c decides, as stated here.
 *
 * What it measures, every `interval_us` (default 10 ms), with no thread of
 * its own (the exit that finds the interval over runs the controller under
 * a trylock; a busy controller is skipped, never waited for):
 *   X     exits per second, the throughput N is judged by (per-CPU
 *         counters, so counting adds no shared cache line to the exit)
 *   idle  idle CPUs, system-wide, from /proc/stat over the last 16
 *         intervals (its ticks are 4-10 ms, so only the sum of several
 *         intervals means anything); system-wide, not this process's CPU
 *         time, so that CPUs busy with other programs do not look free
 *   Q     whether anybody queued: came out of the queue, or is in it at the
 *         interval's end; if nobody did, N does not bind
 *   U     this process's CPU time per second (in the trace only)
 *
 * How it chooses: hill climbing on X in steps of 2x (N is a count whose
 * right value spans 2 to 100s: equal ratios, not equal differences; a
 * smaller step changes X by less than a probe can tell), with the idle CPUs
 * as a shortcut:
 *   N starts at twice the CPU count (one thread per CPU, plus a spare set to
 *           cover the time a handed-over slot waits for its thread to run)
 *   hold:   stay at N for 2 intervals, twice as long per failed probe in a
 *           row, up to 64 (a stable N is probed rarely: each probe spends
 *           half its time at an N that is usually worse)
 *   probe:  a paired test.  N' and N take turns in blocks of 2 intervals;
 *           the first interval of a block is thrown away (it carries what the
 *           other N left behind: threads still to leave, waiters parked in a
 *           lock's queue, and which N it hurts depends on the order); each
 *           pair of blocks gives log(X at N' / X at N), clamped to +-15%.  See
 *           verdict(): after 2 to 8 pairs, up (N' = 2 N) is kept for a gain
 *           of 1% beyond one standard error, down (N' = N / 2) unless it
 *           costs 2% beyond one; in doubt N stays as it was.  Pairing cancels
 *           the machine's drift over the probe; intervals that dip deep (a
 *           holder preempted), whatever N is, are what the clamp keeps from
 *           deciding alone and from drowning gains of a few percent in the
 *           standard error.  A kept probe goes on the same way at once; a
 *           failed one leaves N where it was, and the next probe goes the
 *           other way
 *   starved (threads queue while at least 0.25 CPUs idle: admitted threads
 *           block inside, in I/O, on a parked lock, on any wait not wrapped
 *           in suspend/resume, as a comment on the innodb_thread_concurrency
 *           study said of disk-bound servers): probe 4 N at once, without
 *           waiting out the hold; once that fails, the idle
 *           CPUs are not what N can fix (a lock that parks its waiters idles
 *           the CPUs whatever N is) and the shortcut is off until the idle
 *           CPUs have gone once
 *   nobody queued: N does not bind. If it is above 1.5x the most threads seen
 *           inside, it comes down to that (nothing changes now; a change of
 *           the workload is then seen at once).  It is never probed below the
 *           threads seen inside: that could only throttle them, and N got
 *           above them by an up-probe that paid (or started there)
 *   N stays within [min, max]; min defaults to the start, twice the CPU
 *           count (or n or max, if lower): with N at the CPU count, every
 *           admitted thread that blocks (on a lock that parks, preempted
 *           holding a lock) leaves a CPU idle, so probes down there cost
 *           more than they can find.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cpus.h"
#include "gate/gate_impl.h"
#include "locklab/bits/spin.h"

#define SHARDS 16
#define TRACE_LEN 4096
#define IDLE_WINDOW 16

struct auto_config {
	struct ll_gate_common_config common;
	int64_t min, max;
	int64_t interval_us;
	struct gate_queue_config queue;
};

struct auto_gate {
	struct gate_queue q;
	struct {
		alignas(64) atomic_uint_fast64_t n;
	} exits[SHARDS];
	alignas(64) atomic_uint_fast64_t next_ns;   /* when the next interval ends */
	atomic_int contended;                       /* someone queued this interval */

	/* The controller: everything below is guarded by ctl. */
	alignas(64) pthread_mutex_t ctl;
	int64_t n;                   /* the N applied to the queue */
	struct auto_ctl c;           /* the decisions (auto_ctl.c) */
	uint64_t interval_ns, created_ns, last_ns, last_exits, last_cpu_ns;
	int stat_fd;                                 /* /proc/stat, kept open */
	unsigned long long last_idle, last_total;
	unsigned long long idle_ring[IDLE_WINDOW], total_ring[IDLE_WINDOW];
	unsigned ring_pos;
	/* Statistics: the integral of N over time, its extremes, changes. */
	uint64_t stats_ns, mean_from_ns;
	double n_time;
	int64_t n_min, n_max;
	uint64_t adjustments;
	struct ll_gate_sample trace[TRACE_LEN];
	size_t ntrace;
};

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ll_timespec_ns(&ts);
}

/* System-wide idle and total ticks (idle + iowait count as idle); 0 if unreadable. */
static int read_ticks(int fd, unsigned long long *idle, unsigned long long *total)
{
	char buf[256];
	unsigned long long v[8] = { 0 };
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) < 5)
		return 0;
	*idle = v[3] + v[4];
	*total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	return 1;
}

static uint64_t total_exits(struct auto_gate *g)
{
	uint64_t sum = 0;
	for (int i = 0; i < SHARDS; i++)
		sum += atomic_load_explicit(&g->exits[i].n, memory_order_relaxed);
	return sum;
}

static void *auto_create(const void *config)
{
	const struct auto_config *c = config;
	struct auto_gate *g = aligned_alloc(64, sizeof(*g));
	if (!g)
		return NULL;
	memset(g, 0, sizeof(*g));
	int cpus = ll_cpus_usable();
	int64_t start = c->common.n ? c->common.n : 2 * cpus;
	/* The floor: min, else twice the CPUs, lowered to a smaller start or max. */
	int64_t lowest = c->min ? c->min : 2 * (int64_t)cpus;
	if (!c->min && (start < lowest || c->max < lowest))
		lowest = start < c->max ? start : c->max;
	auto_ctl_init(&g->c, start, lowest, c->max);
	g->n = g->c.n;
	gate_queue_init(&g->q, g->n, &c->queue);
	for (int i = 0; i < SHARDS; i++)
		atomic_init(&g->exits[i].n, 0);
	atomic_init(&g->contended, 0);
	pthread_mutex_init(&g->ctl, NULL);
	g->interval_ns = (uint64_t)c->interval_us * 1000u;
	g->created_ns = g->last_ns = g->stats_ns = g->mean_from_ns = ll_now_ns();
	atomic_init(&g->next_ns, g->created_ns + g->interval_ns);
	g->last_cpu_ns = process_cpu_ns();
	g->stat_fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	if (!read_ticks(g->stat_fd, &g->last_idle, &g->last_total))
		g->last_idle = g->last_total = 0;
	g->n_min = g->n_max = g->n;
	return g;
}

static void auto_destroy(void *state)
{
	struct auto_gate *g = state;
	if (g->stat_fd >= 0)
		close(g->stat_fd);
	pthread_mutex_destroy(&g->ctl);
	gate_queue_destroy(&g->q);
	free(g);
}

/* Account N's time up to now (ctl held). */
static void account(struct auto_gate *g, uint64_t now)
{
	g->n_time += (double)g->n * (double)(now - g->stats_ns);
	g->stats_ns = now;
}

static void set_n(struct auto_gate *g, int64_t n, uint64_t now)
{
	if (n == g->n)
		return;
	account(g, now);
	g->n = n;
	g->adjustments++;
	if (n < g->n_min)
		g->n_min = n;
	if (n > g->n_max)
		g->n_max = n;
	gate_queue_set_limit(&g->q, n);
}

static void trace(struct auto_gate *g, uint64_t now, double x, double cpus, double idle)
{
	if (g->ntrace >= TRACE_LEN)
		return;
	uint64_t w = atomic_load_explicit(&g->q.word, memory_order_relaxed);
	g->trace[g->ntrace++] = (struct ll_gate_sample){
		.t_ns = now - g->created_ns, .per_sec = x, .cpus = cpus, .idle = idle,
		.queued = GATE_QUEUED(w),
		.inside = GATE_INSIDE(w), .limit = (int32_t)g->n,
	};
}

/* Idle CPUs on average over the last IDLE_WINDOW intervals, this one included. */
static double idle_cpus(struct auto_gate *g)
{
	unsigned long long idle = 0, total = 0, i, t;
	if (read_ticks(g->stat_fd, &i, &t) && g->last_total) {
		g->idle_ring[g->ring_pos % IDLE_WINDOW] = i - g->last_idle;
		g->total_ring[g->ring_pos % IDLE_WINDOW] = t - g->last_total;
		g->ring_pos++;
		g->last_idle = i;
		g->last_total = t;
	}
	for (int k = 0; k < IDLE_WINDOW; k++) {
		idle += g->idle_ring[k];
		total += g->total_ring[k];
	}
	return total ? (double)idle / (double)total * g->q.cpus : 0;
}

/* One interval's measurements in; the decision (ctl held). */
static void control(struct auto_gate *g, uint64_t now)
{
	double dt = (double)(now - g->last_ns) / 1e9;
	uint64_t exits = total_exits(g), cpu = process_cpu_ns();
	double x = (double)(exits - g->last_exits) / dt;
	double cpus = (double)(cpu - g->last_cpu_ns) / 1e9 / dt;
	double idle = idle_cpus(g);
	/* Queued: a thread came out of the queue this interval, or threads are in it
	 * now.  The second matters: running threads barge for up to barge_us, so a
	 * queue can fill and stay full for that long with nobody yet out of it. */
	uint64_t w = atomic_load_explicit(&g->q.word, memory_order_relaxed);
	int queued = atomic_exchange_explicit(&g->contended, 0, memory_order_relaxed) ||
		     GATE_QUEUED(w) > 0;
	uint32_t inside = GATE_INSIDE(w);

	g->last_ns = now;
	g->last_exits = exits;
	g->last_cpu_ns = cpu;
	set_n(g, auto_ctl_step(&g->c, x, idle, queued, inside), now);
	trace(g, now, x, cpus, idle);
}

static int auto_acquire(void *state, int back)
{
	struct auto_gate *g = state;
	int waited = gate_queue_acquire(&g->q, back);
	if (waited)
		atomic_store_explicit(&g->contended, 1, memory_order_relaxed);
	return waited;
}

static void auto_release(void *state, int away)
{
	gate_queue_release(&((struct auto_gate *)state)->q, away);
}

static void auto_exited(void *state)
{
	struct auto_gate *g = state;
	int cpu = sched_getcpu();
	atomic_fetch_add_explicit(&g->exits[(unsigned)(cpu < 0 ? 0 : cpu) % SHARDS].n, 1,
				  memory_order_relaxed);
	uint64_t now = ll_now_ns();
	if (now < atomic_load_explicit(&g->next_ns, memory_order_relaxed))
		return;
	if (pthread_mutex_trylock(&g->ctl))
		return;
	/* Re-read under ctl: another exit may have just run this interval. */
	if (now >= atomic_load_explicit(&g->next_ns, memory_order_relaxed)) {
		atomic_store_explicit(&g->next_ns, now + g->interval_ns, memory_order_relaxed);
		control(g, now);
	}
	pthread_mutex_unlock(&g->ctl);
}

static int64_t auto_limit(void *state)
{
	return atomic_load_explicit(&((struct auto_gate *)state)->q.limit, memory_order_relaxed);
}

static void auto_stats(void *state, struct ll_gate_stats *s)
{
	struct auto_gate *g = state;
	pthread_mutex_lock(&g->ctl);
	uint64_t now = ll_now_ns();
	account(g, now);
	double span = (double)(now - g->mean_from_ns);
	s->limit = g->n;
	s->limit_min = g->n_min;
	s->limit_max = g->n_max;
	s->adjustments = g->adjustments;
	s->limit_mean = span > 0 ? g->n_time / span : (double)g->n;
	pthread_mutex_unlock(&g->ctl);
	gate_queue_stats(&g->q, s);
}

static void auto_reset_stats(void *state)
{
	struct auto_gate *g = state;
	pthread_mutex_lock(&g->ctl);
	uint64_t now = ll_now_ns();
	/* The mean is taken from here: restart both the integral and its origin. */
	g->n_time = 0;
	g->stats_ns = g->mean_from_ns = now;
	g->n_min = g->n_max = g->n;
	g->adjustments = 0;
	pthread_mutex_unlock(&g->ctl);
	gate_queue_reset_stats(&g->q);
}

static size_t auto_trace(void *state, struct ll_gate_sample *out, size_t max)
{
	struct auto_gate *g = state;
	pthread_mutex_lock(&g->ctl);
	size_t n = g->ntrace < max ? g->ntrace : max;
	memcpy(out, g->trace + (g->ntrace - n), n * sizeof(*out));
	pthread_mutex_unlock(&g->ctl);
	return n;
}

static const struct ll_knob auto_knobs[] = {
	LL_GATE_KNOB_N(struct auto_config, 0, 0, "N to start from, 0 = twice the CPUs this process may use"),
	LL_GATE_KNOB_TICKETS(struct auto_config),
	LL_KNOB_INT(struct auto_config, min, 0, 0, 1 << 20,
		    "lowest N, 0 = twice the CPUs (n or max if lower)"),
	LL_KNOB_INT(struct auto_config, max, 1024, 1, 1 << 20, "highest N"),
	LL_KNOB_INT(struct auto_config, interval_us, 10000, 100, 10000000,
		    "us between two decisions (one measurement interval)"),
	LL_GATE_KNOBS_QUEUE(struct auto_config),
};

const struct ll_gate_policy ll_gate_auto_policy = {
	.info = { "auto", "fifo's queue with N found by hill climbing on throughput and CPU use",
		  auto_knobs, LL_COUNT(auto_knobs) },
	.config_size = sizeof(struct auto_config),
	.create = auto_create,
	.destroy = auto_destroy,
	.acquire = auto_acquire,
	.release = auto_release,
	.exited = auto_exited,
	.limit = auto_limit,
	.stats = auto_stats,
	.reset_stats = auto_reset_stats,
	.trace = auto_trace,
};
