/*
 * innodb.c: InnoDB 5.6's innodb_thread_concurrency, the atomics
 * variant of srv_conc_enter_innodb, step by step.
 *
 *   n_active   slots taken; racing enterers may push it past N for a moment
 *              (an overbooked increment is taken back at once)
 *   n_waiting  threads between their first failed check and their admission
 *   delay_us   srv_thread_sleep_delay: one value shared by every waiter,
 *              adapted without a lock (InnoDB's plain ++/-- are relaxed
 *              atomic read-modify-writes here)
 *
 *   enter: repeat
 *            if n_active < N:
 *              if ++n_active <= N: admitted; adapt the delay; done
 *              --n_active                    (overbooked: hand it back)
 *            first failure: ++n_waiting
 *            us = delay_us, clamped to max_sleep_delay when adaptive
 *            sleep us microseconds; ++sleeps
 *            adaptive and sleeps > 1: ++delay_us
 *   on admission, adaptive only:
 *            delay_us > 20 and exactly one sleep: --delay_us
 *            nobody waiting: delay_us /= 2
 *   exit:  --n_active
 *
 * Nobody is ever woken: a waiter sees a free slot only when its sleep ends,
 * and a thread that leaves and comes straight back (the next transaction)
 * finds the slot it freed before any sleeper does.  That barging keeps the
 * same few threads circulating, which is what lifts throughput (the innodb_thread_concurrency study),
 * and lets the sleepers wait for as long as the others keep coming back.
 *
 * Knobs: InnoDB 5.6's defaults: innodb_thread_sleep_delay=10000 us,
 * innodb_adaptive_max_sleep_delay=150000 us (0 turns adaptation off),
 * innodb_concurrency_tickets=5000.
 */
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "gate/gate_impl.h"

struct innodb_config {
	struct ll_gate_common_config common;
	int64_t thread_sleep_delay;
	int64_t adaptive_max_sleep_delay;
};

struct innodb_gate {
	alignas(64) atomic_long n_active;
	alignas(64) atomic_long n_waiting;
	atomic_long delay_us;
	alignas(64) atomic_uint_fast64_t sleeps;
	long n;
	long max_delay_us;
};

static void *innodb_create(const void *config)
{
	const struct innodb_config *c = config;
	struct innodb_gate *g = aligned_alloc(64, sizeof(*g));
	if (!g)
		return NULL;
	atomic_init(&g->n_active, 0);
	atomic_init(&g->n_waiting, 0);
	atomic_init(&g->delay_us, (long)c->thread_sleep_delay);
	atomic_init(&g->sleeps, 0);
	g->n = (long)c->common.n;
	g->max_delay_us = (long)c->adaptive_max_sleep_delay;
	return g;
}

static void innodb_destroy(void *state)
{
	free(state);
}

static void sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };
	/* os_thread_sleep: a signal only shortens one sleep, as in InnoDB. */
	nanosleep(&ts, NULL);
}

static void adapt_on_admission(struct innodb_gate *g, unsigned sleeps)
{
	if (g->max_delay_us <= 0)
		return;
	if (sleeps == 1 && atomic_load_explicit(&g->delay_us, memory_order_relaxed) > 20)
		atomic_fetch_sub_explicit(&g->delay_us, 1, memory_order_relaxed);
	if (atomic_load_explicit(&g->n_waiting, memory_order_relaxed) == 0) {
		long d = atomic_load_explicit(&g->delay_us, memory_order_relaxed);
		atomic_store_explicit(&g->delay_us, d / 2, memory_order_relaxed);
	}
}

static int innodb_acquire(void *state, int back)
{
	(void)back;   /* a resume polls as an enter does */
	struct innodb_gate *g = state;
	unsigned sleeps = 0;
	int waiting = 0;

	for (;;) {
		if (atomic_load_explicit(&g->n_active, memory_order_relaxed) < g->n) {
			/* acquire: what the last thread out did inside happens before us. */
			long now = atomic_fetch_add_explicit(&g->n_active, 1, memory_order_acquire) + 1;
			if (now <= g->n) {
				if (waiting)
					atomic_fetch_sub_explicit(&g->n_waiting, 1, memory_order_relaxed);
				adapt_on_admission(g, sleeps);
				return waiting;
			}
			atomic_fetch_sub_explicit(&g->n_active, 1, memory_order_relaxed);
		}
		if (!waiting) {
			atomic_fetch_add_explicit(&g->n_waiting, 1, memory_order_relaxed);
			waiting = 1;
		}
		long us = atomic_load_explicit(&g->delay_us, memory_order_relaxed);
		if (g->max_delay_us > 0 && us > g->max_delay_us) {
			us = g->max_delay_us;
			atomic_store_explicit(&g->delay_us, us, memory_order_relaxed);
		}
		sleep_us(us);
		atomic_fetch_add_explicit(&g->sleeps, 1, memory_order_relaxed);
		if (g->max_delay_us > 0 && ++sleeps > 1)
			atomic_fetch_add_explicit(&g->delay_us, 1, memory_order_relaxed);
	}
}

static void innodb_release(void *state, int away)
{
	(void)away;   /* InnoDB's exit is the same whatever the thread does next */
	struct innodb_gate *g = state;
	atomic_fetch_sub_explicit(&g->n_active, 1, memory_order_release);
}

static int64_t innodb_limit(void *state)
{
	return ((struct innodb_gate *)state)->n;
}

static void innodb_stats(void *state, struct ll_gate_stats *s)
{
	struct innodb_gate *g = state;
	s->limit = s->limit_min = s->limit_max = g->n;
	s->limit_mean = (double)g->n;
	s->sleeps = atomic_load_explicit(&g->sleeps, memory_order_relaxed);
	s->waiting = (uint64_t)atomic_load_explicit(&g->n_waiting, memory_order_relaxed);
}

static void innodb_reset_stats(void *state)
{
	atomic_store_explicit(&((struct innodb_gate *)state)->sleeps, 0, memory_order_relaxed);
}

static const struct ll_knob innodb_knobs[] = {
	LL_GATE_KNOB_N(struct innodb_config, 8, 1, "threads inside at once (innodb_thread_concurrency)"),
	LL_GATE_KNOB_TICKETS(struct innodb_config),
	LL_KNOB_INT(struct innodb_config, thread_sleep_delay, 10000, 0, 10000000,
		    "us a thread sleeps before it checks again (innodb_thread_sleep_delay)"),
	LL_KNOB_INT(struct innodb_config, adaptive_max_sleep_delay, 150000, 0, 10000000,
		    "cap of the adapted sleep in us, 0 = fixed (innodb_adaptive_max_sleep_delay)"),
};

const struct ll_gate_policy ll_gate_innodb_policy = {
	.info = { "innodb", "InnoDB 5.6: atomic count, sleep and retry over the limit",
		  innodb_knobs, LL_COUNT(innodb_knobs) },
	.config_size = sizeof(struct innodb_config),
	.create = innodb_create,
	.destroy = innodb_destroy,
	.acquire = innodb_acquire,
	.release = innodb_release,
	.limit = innodb_limit,
	.stats = innodb_stats,
	.reset_stats = innodb_reset_stats,
};
