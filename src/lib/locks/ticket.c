/*
 * ticket.c: slow paths of the ticket spinlock (word drawn in locklab/locks/ticket.h).
 */
#include "locklab/locks/ticket.h"
#include "locks/algo.h"

int ll_ticket_init(ll_ticket_t *l, const struct ll_ticket_config *cfg)
{
	atomic_init(&l->next, 0);
	atomic_init(&l->owner, 0);
	struct ll_ticket_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(ticket, cfg, def);
	l->spin = (uint8_t)cfg->spin;
	l->backoff = ll_spin_iters(l->spin, cfg->backoff_ns);
	return 0;
}

void ll_ticket_wait(ll_ticket_t *l, unsigned ticket)
{
	struct ll_spinner s = ll_spinner_start(l->spin);
	for (;;) {
		unsigned o = atomic_load_explicit(&l->owner, memory_order_acquire);
		if (o == ticket)
			return;
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
