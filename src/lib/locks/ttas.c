/*
 * ttas.c: slow path of the TTAS spinlock with bounded exponential backoff
 * (word drawn in locklab/locks/ttas.h).
 */
#include "locklab/locks/ttas.h"
#include "locks/algo.h"

int ll_ttas_init(ll_ttas_t *l, const struct ll_ttas_config *cfg)
{
	struct ll_ttas_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(ttas, cfg, def);
	atomic_init(&l->word, 0);
	l->spin = (uint8_t)cfg->spin;
	l->backoff_min = ll_spin_iters(l->spin, cfg->backoff_min_ns);
	l->backoff_max = ll_spin_iters(l->spin, cfg->backoff_max_ns);
	if (l->backoff_max < l->backoff_min)
		l->backoff_max = l->backoff_min;
	return 0;
}

int ll_ttas_lock_slow(ll_ttas_t *l, const struct timespec *abs_mono)
{
	uint32_t delay = l->backoff_min;
	struct ll_spinner s = ll_spinner_start(l->spin);

	for (;;) {
		/* Test: spin on a shared copy of the line until the holder releases. */
		for (unsigned i = 0; atomic_load_explicit(&l->word, memory_order_relaxed); i++) {
			if (abs_mono && (i & 63) == 63 && ll_deadline_passed(abs_mono))
				return ETIMEDOUT;
			ll_spinner_wait(&s);
		}
		/* Test-and-set: many waiters saw the release; one wins. */
		if (atomic_exchange_explicit(&l->word, 1, memory_order_acquire) == 0)
			return 0;
		if (abs_mono && ll_deadline_passed(abs_mono))
			return ETIMEDOUT;
		/* Lost the race: stay off the line for a random [delay/2, delay]. */
		uint32_t wait = delay ? delay / 2 + ll_rand32() % (delay / 2 + 1) : 0;
		for (uint32_t i = 0; i < wait; i++)
			ll_spinner_wait(&s);
		if (delay < l->backoff_max)
			delay = delay * 2 > l->backoff_max ? l->backoff_max : delay * 2;
	}
}

static const struct ll_knob knobs[] = {
	LL_KNOB_INT(struct ll_ttas_config, backoff_min_ns, 100, 0, 100000000,
		    "first backoff after a lost test-and-set, ns"),
	LL_KNOB_INT(struct ll_ttas_config, backoff_max_ns, 12800, 0, 100000000,
		    "bound of the doubling backoff, ns"),
	LL_KNOB_SPIN(struct ll_ttas_config),
};

LL_OPS_ADAPTERS(ttas, ll_ttas_t)

const struct ll_lock_ops ll_ttas_ops = {
	.name = "ttas",
	.summary = "test-and-test-and-set spinlock, randomised bounded exponential backoff",
	.flags = LL_ALGO_SPINS,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_ttas_config),
	LL_OPS_FUNCS(ttas, ll_ttas_t),
};
