/*
 * futex.c: slow path of the three-state futex mutex (word drawn in
 * locklab/locks/futex.h).
 */
#include "locklab/locks/futex.h"
#include "locks/algo.h"
#include "core/futex_sys.h"

int ll_futex_init(ll_futex_t *l, const struct ll_futex_config *cfg)
{
	struct ll_futex_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(futex, cfg, def);
	atomic_init(&l->word, 0);
	l->spin = (uint8_t)cfg->spin;
	l->spin_iters = ll_spin_iters(l->spin, cfg->spin_ns);
	return 0;
}

void ll_futex_wake_one(ll_futex_t *l)
{
	ll_sys_futex_wake(&l->word, 1);
}

int ll_futex_lock_slow(ll_futex_t *l, const struct timespec *abs_mono)
{
	/* Optional spin: read-only polling keeps the line shared until it frees. */
	struct ll_spinner s = ll_spinner_start(l->spin);
	for (uint32_t i = 0; i < l->spin_iters; i++) {
		if (atomic_load_explicit(&l->word, memory_order_relaxed) == 0 && ll_futex_trylock(l) == 0)
			return 0;
		ll_spinner_wait(&s);
	}
	/*
	 * Announce a sleeper by swapping in 2.  If the old value was 0 the lock
	 * was free and is now ours (in state 2: one spare wake at unlock, the
	 * price of not knowing whether others sleep).
	 */
	while (atomic_exchange_explicit(&l->word, 2, memory_order_acquire) != 0) {
		int rc = ll_sys_futex_wait(&l->word, 2, abs_mono);
		if (rc == EINVAL)
			return EINVAL;
		if (rc == ETIMEDOUT) {
			/* One last try: the unlock may have raced with the timeout. */
			unsigned expect = 0;
			if (atomic_compare_exchange_strong_explicit(&l->word, &expect, 2,
								    memory_order_acquire,
								    memory_order_relaxed))
				return 0;
			return ETIMEDOUT;
		}
	}
	return 0;
}

static const struct ll_knob knobs[] = {
	LL_KNOB_INT(struct ll_futex_config, spin_ns, 0, 0, 100000000,
		    "nanoseconds to spin before sleeping (0: sleep at once)"),
	LL_KNOB_SPIN(struct ll_futex_config),
};

LL_OPS_ADAPTERS(futex, ll_futex_t)

const struct ll_lock_ops ll_futex_ops = {
	.name = "futex",
	.summary = "three-state futex mutex (0 free, 1 held, 2 held+sleepers), wake one",
	.flags = LL_ALGO_PARKS | LL_ALGO_PREEMPT_SAFE,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_futex_config),
	LL_OPS_FUNCS(futex, ll_futex_t),
};
