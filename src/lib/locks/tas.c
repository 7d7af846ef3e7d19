/*
 * tas.c: test-and-set spinlock (word drawn in locklab/locks/tas.h).
 */
#include "locklab/locks/tas.h"
#include "locks/algo.h"

int ll_tas_init(ll_tas_t *l, const struct ll_tas_config *cfg)
{
	struct ll_tas_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(tas, cfg, def);
	atomic_init(&l->word, 0);
	l->spin = (uint8_t)cfg->spin;
	return 0;
}

static int try_fn(void *l) { return ll_tas_trylock(l); }

int ll_tas_timedlock(ll_tas_t *l, const struct timespec *abs_mono)
{
	return ll_spin_poll_until(try_fn, l, l->spin, abs_mono);
}

static const struct ll_knob knobs[] = {
	LL_KNOB_SPIN(struct ll_tas_config),
};

LL_OPS_ADAPTERS(tas, ll_tas_t)

const struct ll_lock_ops ll_tas_ops = {
	.name = "tas",
	.summary = "test-and-set spinlock: XCHG until it succeeds",
	.flags = LL_ALGO_SPINS,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_tas_config),
	LL_OPS_FUNCS(tas, ll_tas_t),
};
