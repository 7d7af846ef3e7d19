/*
 * spin_trylock.c: innotsim's spin-then-block mutex (drawn in
 * locklab/locks/spin_trylock.h).
 */
#include <unistd.h>

#include "locklab/locks/spin_trylock.h"
#include "locks/algo.h"

static const char *const limit_names[] = { "none", "global", "mutex", NULL };

/* limit=global: every spin_trylock mutex of the process shares it. */
static atomic_int global_spinners;

int ll_spin_trylock_init(ll_spin_trylock_t *l, const struct ll_spin_trylock_config *cfg)
{
	struct ll_spin_trylock_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(spin_trylock, cfg, def);
	int rc = pthread_mutex_init(&l->m, NULL);
	if (rc)
		return rc;
	atomic_init(&l->spinners, 0);
	l->spin = (uint8_t)cfg->spin;
	l->limit = (uint8_t)cfg->limit;
	l->spin_loops = (uint32_t)cfg->spin_loops;
	l->round_iters = ll_spin_iters(l->spin, cfg->round_ns);
	l->max_spinners = cfg->max_spinners ? (int32_t)cfg->max_spinners
					    : (int32_t)sysconf(_SC_NPROCESSORS_ONLN);
	return 0;
}

/* The counter this mutex's spinners are limited by, or NULL. */
static atomic_int *spinner_counter(ll_spin_trylock_t *l)
{
	if (l->limit == LL_SPINNER_LIMIT_GLOBAL)
		return &global_spinners;
	return l->limit == LL_SPINNER_LIMIT_MUTEX ? &l->spinners : NULL;
}

/* Spin rounds of (wait, trylock); 0 when the lock was taken. */
static int spin_phase(ll_spin_trylock_t *l)
{
	struct ll_spinner s = ll_spinner_start(l->spin);
	for (uint32_t r = 0; r < l->spin_loops; r++) {
		for (uint32_t i = 0; i < l->round_iters; i++)
			ll_spinner_wait(&s);
		if (pthread_mutex_trylock(&l->m) == 0)
			return 0;
	}
	return EBUSY;
}

int ll_spin_trylock_lock_slow(ll_spin_trylock_t *l, const struct timespec *abs_mono)
{
	atomic_int *counter = spinner_counter(l);
	int admitted = 1;

	if (counter) {
		/* Over the limit: go straight to sleep, leave the CPU to the holder. */
		admitted = atomic_fetch_add_explicit(counter, 1, memory_order_relaxed) <
			   l->max_spinners;
		if (!admitted)
			atomic_fetch_sub_explicit(counter, 1, memory_order_relaxed);
	}
	if (admitted) {
		int got = spin_phase(l) == 0;
		if (counter)
			atomic_fetch_sub_explicit(counter, 1, memory_order_relaxed);
		if (got)
			return 0;
	}
	ll_mon_note_park();   /* glibc's wait: one OS wait for the monitor */
	if (abs_mono)
		return ll_pthread_mutex_clocklock(&l->m, abs_mono);
	pthread_mutex_lock(&l->m);
	return 0;
}

static const struct ll_knob knobs[] = {
	LL_KNOB_INT(struct ll_spin_trylock_config, spin_loops, 100, 0, 100000000,
		    "spin rounds (wait, then trylock) before blocking"),
	LL_KNOB_INT(struct ll_spin_trylock_config, round_ns, 200, 0, 100000000,
		    "busy-wait per round, ns"),
	{ "limit", "spinner limit: none, one global counter, or a per-mutex counter",
	  offsetof(struct ll_spin_trylock_config, limit), 0, 0, 2, limit_names },
	LL_KNOB_INT(struct ll_spin_trylock_config, max_spinners, 0, 0, 1000000,
		    "most threads spinning at once under a limit (0: online CPUs)"),
	LL_KNOB_SPIN(struct ll_spin_trylock_config),
};

LL_OPS_ADAPTERS(spin_trylock, ll_spin_trylock_t)

const struct ll_lock_ops ll_spin_trylock_ops = {
	.name = "spin-trylock",
	.summary = "innotsim's mutex: spin rounds of trylock, then pthread_mutex_lock; spinner limit",
	.flags = LL_ALGO_PARKS | LL_ALGO_PREEMPT_SAFE,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_spin_trylock_config),
	LL_OPS_FUNCS(spin_trylock, ll_spin_trylock_t),
};
