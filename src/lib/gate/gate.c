/*
 * gate.c: the admission gate's policy-independent part: the table of
 * policies, options, tickets and suspend/resume (see gate.h).
 *
 * A thread's standing (ll_gate_thread_t), as InnoDB's trx_t keeps it:
 *
 *   outside --enter: policy admits--> inside, tickets = T
 *   inside  --enter--> inside, tickets - 1            (no check at all)
 *   inside  --exit, tickets > 0--> inside             (the slot is kept)
 *   inside  --exit, tickets == 0 / leave--> outside   (slot back to the policy)
 *   inside  --suspend--> suspended                    (slot back, tickets kept)
 *   suspended --resume: policy admits--> inside
 *
 * Only the thread itself reads or writes its ll_gate_thread_t.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate/gate_impl.h"

static const struct ll_gate_policy *const policies[] = {
	&ll_gate_innodb_policy,
	&ll_gate_fifo_policy,
	&ll_gate_auto_policy,
};
#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

struct ll_gate {
	const struct ll_gate_policy *policy;
	void *state;
	int64_t tickets;
	/* Only admissions that had to wait touch it: off the fast path. */
	alignas(64) atomic_uint_fast64_t waits;
};

const struct ll_gate_policy_info *ll_gate_policy_at(size_t i)
{
	return i < NPOLICIES ? &policies[i]->info : NULL;
}

static const char *policy_name(size_t i, const void *ctx)
{
	(void)ctx;
	return policies[i]->info.name;
}

ll_gate_t *ll_gate_create(const char *policy, const char *opts, struct ll_error *err)
{
	const struct ll_gate_policy *p = NULL;
	int64_t config[LL_CONFIG_MAX];

	for (size_t i = 0; i < NPOLICIES && policy; i++)
		if (!strcmp(policies[i]->info.name, policy))
			p = policies[i];
	if (!p) {
		ll_error_unknown(err, "gate policy", policy ? policy : "", NULL, NPOLICIES,
				 policy_name, NULL);
		return NULL;
	}
	ll_knobs_defaults(p->info.knobs, p->info.nknobs, config, p->config_size);
	if (ll_knobs_parse("gate", p->info.name, p->info.knobs, p->info.nknobs, opts, config, err))
		return NULL;

	ll_gate_t *g = aligned_alloc(64, sizeof(*g));
	void *state = g ? p->create(config) : NULL;
	if (!state) {
		free(g);
		if (err)
			snprintf(err->msg, sizeof(err->msg), "gate '%s': %s", p->info.name,
				 strerror(ENOMEM));
		return NULL;
	}
	memset(g, 0, sizeof(*g));
	g->policy = p;
	g->state = state;
	g->tickets = ((const struct ll_gate_common_config *)config)->tickets;
	atomic_init(&g->waits, 0);
	return g;
}

void ll_gate_destroy(ll_gate_t *g)
{
	if (!g)
		return;
	g->policy->destroy(g->state);
	free(g);
}

static void take_slot(ll_gate_t *g, ll_gate_thread_t *t, int back)
{
	if (g->policy->acquire(g->state, back))
		atomic_fetch_add_explicit(&g->waits, 1, memory_order_relaxed);
	t->admissions++;
	t->inside = 1;
}

/* away: the thread is about to block (suspend), not coming straight back. */
static void give_slot(ll_gate_t *g, ll_gate_thread_t *t, int away)
{
	t->inside = 0;
	g->policy->release(g->state, away);
}

void ll_gate_enter(ll_gate_t *g, ll_gate_thread_t *t)
{
	t->enters++;
	if (t->inside) {
		/* Still holding the slot of an earlier admission: spend a ticket. */
		if (t->tickets > 0)
			t->tickets--;
		return;
	}
	take_slot(g, t, 0);
	t->tickets = g->tickets;
}

void ll_gate_exit(ll_gate_t *g, ll_gate_thread_t *t)
{
	if (g->policy->exited)
		g->policy->exited(g->state);
	if (t->inside && t->tickets <= 0)
		give_slot(g, t, 0);
}

void ll_gate_leave(ll_gate_t *g, ll_gate_thread_t *t)
{
	if (t->inside)
		give_slot(g, t, 0);
	t->tickets = 0;
	t->suspended = 0;
}

void ll_gate_suspend(ll_gate_t *g, ll_gate_thread_t *t)
{
	if (!t->inside)
		return;
	give_slot(g, t, 1);
	t->suspended = 1;
}

void ll_gate_resume(ll_gate_t *g, ll_gate_thread_t *t)
{
	if (!t->suspended)
		return;
	t->suspended = 0;
	take_slot(g, t, 1);
}

const char *ll_gate_policy(const ll_gate_t *g)
{
	return g->policy->info.name;
}

int64_t ll_gate_limit(const ll_gate_t *g)
{
	return g->policy->limit(g->state);
}

void ll_gate_get_stats(ll_gate_t *g, struct ll_gate_stats *s)
{
	if (!s)
		return;
	memset(s, 0, sizeof(*s));
	g->policy->stats(g->state, s);
	s->waits = atomic_load_explicit(&g->waits, memory_order_relaxed);
}

void ll_gate_reset_stats(ll_gate_t *g)
{
	atomic_store_explicit(&g->waits, 0, memory_order_relaxed);
	if (g->policy->reset_stats)
		g->policy->reset_stats(g->state);
}

size_t ll_gate_trace(ll_gate_t *g, struct ll_gate_sample *out, size_t max)
{
	return g->policy->trace && out ? g->policy->trace(g->state, out, max) : 0;
}
