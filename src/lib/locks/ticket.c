/*
 * ticket.c: slow paths of the ticket spinlock (word drawn in locklab/locks/ticket.h).
 */
#include "locklab/locks/ticket.h"
#include "core/futex_sys.h"
#include "locks/algo.h"

int ll_ticket_init(ll_ticket_t *l, const struct ll_ticket_config *cfg)
{
	atomic_init(&l->next, 0);
	atomic_init(&l->owner, 0);
	atomic_init(&l->sleepers, 0);
	struct ll_ticket_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(ticket, cfg, def);
	l->spin = (uint8_t)cfg->spin;
	l->backoff = ll_spin_iters(l->spin, cfg->backoff_ns);
	return 0;
}

/* A ticket's bit in the futex bitset: the waiters an unlock wakes are those of the next ticket. */
static unsigned ticket_bit(unsigned ticket)
{
	return 1u << (ticket % 32);
}

/*
 * Sleep until owner moves past o (spin=auto, a crowded core).  seq_cst on
 * both sides: our increment of sleepers precedes our look at owner, the
 * unlocker's store to owner precedes its look at sleepers (ll_ticket_wake).
 */
static void sleep_on_owner(ll_ticket_t *l, unsigned ticket, unsigned o)
{
	atomic_fetch_add_explicit(&l->sleepers, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&l->owner, memory_order_seq_cst) == o)
		ll_sys_futex_wait_bits(&l->owner, o, NULL, ticket_bit(ticket));
	atomic_fetch_sub_explicit(&l->sleepers, 1, memory_order_relaxed);
}

void ll_ticket_wake(ll_ticket_t *l, unsigned next)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&l->sleepers, memory_order_relaxed))
		ll_sys_futex_wake_bits(&l->owner, INT32_MAX, ticket_bit(next));
}

int ll_ticket_take_passed(ll_ticket_t *l, unsigned o, unsigned n)
{
	/*
	 * owner only moves when a holder unlocks, and a PASSED lock has none:
	 * o stays the ticket being served until this CAS (or a rival's) draws it.
	 * Acquire: pairs with the release of owner, as trylock's.
	 */
	while ((int)(n - o) < 0)
		if (atomic_compare_exchange_weak_explicit(&l->next, &n, o + 1, memory_order_acquire,
							  memory_order_relaxed))
			return 0;
	return EBUSY;
}

void ll_ticket_wait(ll_ticket_t *l, unsigned ticket)
{
	struct ll_spinner s = ll_spinner_start(l->spin);
	for (;;) {
		unsigned o = atomic_load_explicit(&l->owner, memory_order_acquire);
		if (o == ticket)
			return;
		if ((int)(ticket - o) < 0) {
			/* Owner passed our ticket: PASSED (ticket.h).  Take it, or draw again. */
			unsigned n = atomic_load_explicit(&l->next, memory_order_relaxed);
			if (ll_ticket_take_passed(l, o, n) == 0)
				return;
			ticket = atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed);
			continue;
		}
		if (ll_spinner_parks(&s)) {
			sleep_on_owner(l, ticket, o);
			continue;
		}
		/* Proportional backoff: the head is (ticket - o) handoffs away. */
		uint32_t n = l->backoff ? l->backoff * (ticket - o) : 1;
		for (uint32_t i = 0; i < n; i++)
			ll_spinner_wait(&s);
	}
}

static int try_fn(void *l) { return ll_ticket_trylock(l); }

int ll_ticket_timedlock(ll_ticket_t *l, const struct timespec *abs_mono)
{
	return ll_spin_poll_until(try_fn, l, l->spin, abs_mono);
}

static const struct ll_knob knobs[] = {
	LL_KNOB_INT(struct ll_ticket_config, backoff_ns, 0, 0, 1000000,
		    "proportional backoff per waiter ahead, ns (0: poll)"),
	LL_KNOB_SPIN(struct ll_ticket_config),
};

LL_OPS_ADAPTERS(ticket, ll_ticket_t)

const struct ll_lock_ops ll_ticket_ops = {
	.name = "ticket",
	.summary = "ticket spinlock: FIFO by fetch-and-add, optional proportional backoff",
	.flags = LL_ALGO_FIFO | LL_ALGO_SPINS,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_ticket_config),
	LL_OPS_FUNCS(ticket, ll_ticket_t),
};
