/*
 * innodb56.c: the InnoDB 5.6 mutex's slow path (the mutex is drawn in
 * locklab/locks/innodb56.h; its os_events and the process-wide sync arrays, shared
 * with innodb56-rw, are innodb56_sync.c's).
 */
#include <sched.h>

#include "locklab/locks/innodb56.h"
#include "locks/algo.h"
#include "locks/innodb56_sync.h"

int ll_innodb56_init(ll_innodb56_t *l, const struct ll_innodb56_config *cfg)
{
	struct ll_innodb56_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(innodb56, cfg, def);
	atomic_init(&l->lock_word, 0);
	atomic_init(&l->waiters, 0);
	LL_IB_SPIN_SET(&l->s, cfg);
	return 0;
}

/* The lock's event is the table's: nothing of the lock's to free. */
void ll_innodb56_destroy(ll_innodb56_t *l)
{
	(void)l;
}

void ll_innodb56_signal(ll_innodb56_t *l)
{
	atomic_store_explicit(&l->waiters, 0, memory_order_seq_cst);
	ll_ib_event_set(ll_ib_event_of(l));
}

/* The spin phase of mutex_spin_wait(): 0 when the word was taken. */
static int spin_phase(ll_innodb56_t *l, const struct timespec *abs_mono)
{
	uint32_t i = 0;
	struct ll_spinner sp = ll_spinner_start(l->s.spin);

	for (;;) {
		while (atomic_load_explicit(&l->lock_word, memory_order_relaxed) &&
		       i < l->s.spin_loops) {
			ll_ib_spin_delay(&l->s, &sp);
			i++;
		}
		if (i >= l->s.spin_loops)
			sched_yield();
		if (ll_innodb56_trylock(l) == 0)
			return 0;
		if (abs_mono && ll_deadline_passed(abs_mono))
			return ETIMEDOUT;
		if (++i >= l->s.spin_loops)
			return EBUSY;
	}
}

int ll_innodb56_lock_slow(ll_innodb56_t *l, const struct timespec *abs_mono)
{
	for (;;) {
		int rc = spin_phase(l, abs_mono);
		if (rc != EBUSY)
			return rc;

		struct ll_ib_array *a;
		struct ll_ib_cell *cell = ll_ib_reserve_cell(&l->s, l, ll_ib_event_of(l), &a);
		if (!cell)
			continue;   /* every cell taken: it yielded, spin again */
		/* seq_cst: our flag is visible before the TASs below read the word. */
		atomic_store_explicit(&l->waiters, 1, memory_order_seq_cst);
		for (int k = 0; k < 4; k++) {
			if (ll_innodb56_trylock(l) == 0) {
				ll_ib_free_cell(a, cell);
				return 0;
			}
		}
		if (ll_ib_wait_in_cell(a, cell, abs_mono) == ETIMEDOUT)
			return ll_innodb56_trylock(l) ? ETIMEDOUT : 0;
	}
}

static const struct ll_knob knobs[] = {
	LL_IB_SPIN_KNOBS(struct ll_innodb56_config),
};

LL_OPS_ADAPTERS(innodb56, ll_innodb56_t)

const struct ll_lock_ops ll_innodb56_ops = {
	.name = "innodb56",
	.summary = "InnoDB 5.6 mutex: TAS, random ut_delay spin, sync array, broadcast on unlock",
	.flags = LL_ALGO_PARKS | LL_ALGO_PREEMPT_SAFE,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_innodb56_config),
	LL_OPS_FUNCS(innodb56, ll_innodb56_t),
};
