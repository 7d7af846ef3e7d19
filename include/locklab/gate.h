/*
 * gate.h: admission control, InnoDB's innodb_thread_concurrency (the
 * innodb_thread_concurrency study, docs/background.md).
 *
 * At most N threads are inside the gate at once.  A thread that takes a
 * slot gets T tickets (innodb_concurrency_tickets): each later enter spends
 * one instead of checking, and its exits keep the slot while tickets last,
 * so a transaction's many short visits pay for one admission.  A thread
 * that must block inside (I/O, a condition variable, another gate) steps
 * out with ll_gate_suspend and back with ll_gate_resume: sleepers hold no
 * slot.
 *
 *	ll_gate_t *g = ll_gate_create("fifo", "n=8", &err);
 *	ll_gate_thread_t me = { 0 };       // per thread, like InnoDB's trx_t
 *	ll_gate_enter(g, &me);
 *	...                                // at most N threads here
 *	ll_gate_suspend(g, &me); read(); ll_gate_resume(g, &me);
 *	ll_gate_exit(g, &me);              // keeps the slot while tickets last
 *	ll_gate_leave(g, &me);             // gives it back now (commit, thread end)
 *
 * Policies, chosen by name with "k=v,..." options (ll_gate_policy_at()):
 *   innodb  InnoDB 5.6's srv_conc_enter_innodb: an atomic count; over the
 *           limit, sleep thread_sleep_delay us and retry, the delay adapted
 *           as innodb_adaptive_max_sleep_delay does.
 *   fifo    a FIFO queue, wake-one direct handoff of the slot, no polling;
 *           a running thread may take a free slot ahead of the sleepers
 *           until the oldest has waited barge_us (default 100000); overdue
 *           sleepers then get slots in order, one per calm spell.
 *   auto    fifo's queue with N sized by a feedback loop on what it measures
 *           (throughput, idle CPUs, the queue): docs/admission.md.
 * Every policy has the knobs n (N; auto: where it starts, 0 = from the CPU
 * count) and tickets.
 */
#ifndef LOCKLAB_GATE_H
#define LOCKLAB_GATE_H

#include "locklab/bits/api.h"

#include <stddef.h>
#include <stdint.h>

#include "locklab/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ll_gate ll_gate_t;

/* A thread's standing at one gate; zero-initialise before the first enter. */
typedef struct ll_gate_thread {
	int64_t tickets;      /* enters left that need no check */
	uint8_t inside;       /* holds a slot */
	uint8_t suspended;    /* gave its slot back in ll_gate_suspend */
	uint64_t admissions;  /* slots taken through the policy (enters and resumes) */
	uint64_t enters;      /* ll_gate_enter calls */
} ll_gate_thread_t;

/*
 * NULL with a one-line message in *err for an unknown (or NULL) policy or a
 * bad option; opts NULL: none.  The calls below take the gate and the thread
 * as given (locklab.h: the contract): NULL is undefined but where said.
 */
LL_API ll_gate_t *ll_gate_create(const char *policy, const char *opts, struct ll_error *err);
/* Every thread must have left (no slot held, none waiting).  NULL: nothing to do. */
LL_API void ll_gate_destroy(ll_gate_t *g);

LL_API void ll_gate_enter(ll_gate_t *g, ll_gate_thread_t *t);
LL_API void ll_gate_exit(ll_gate_t *g, ll_gate_thread_t *t);
/* Give the slot back whatever tickets remain (InnoDB's srv_conc_force_exit_innodb). */
LL_API void ll_gate_leave(ll_gate_t *g, ll_gate_thread_t *t);
/* Inside: give the slot back before blocking; keeps the tickets.  No-op outside. */
LL_API void ll_gate_suspend(ll_gate_t *g, ll_gate_thread_t *t);
/* After ll_gate_suspend: wait for a slot again as the policy admits.  No-op otherwise. */
LL_API void ll_gate_resume(ll_gate_t *g, ll_gate_thread_t *t);

LL_API const char *ll_gate_policy(const ll_gate_t *g);
/* The current limit N (auto changes it as it runs). */
LL_API int64_t ll_gate_limit(const ll_gate_t *g);

struct ll_gate_stats {
	int64_t limit;             /* N now */
	int64_t limit_min, limit_max;  /* the extremes N took */
	double limit_mean;         /* N averaged over time since create or the last reset */
	uint64_t waits;            /* admissions that could not go straight in */
	uint64_t waiting;          /* threads waiting for a slot now */
	uint64_t sleeps;           /* innodb: sleep-and-retry rounds */
	uint64_t adjustments;      /* auto: times N changed */
	uint64_t handoffs;         /* fifo, auto: slots handed to a sleeping waiter */
	uint64_t barges;           /* fifo, auto: admissions that passed a sleeping waiter */
	uint64_t spinning;         /* fifo, auto: threads back from a suspend spinning for a slot now */
};
/* s NULL: nothing written. */
LL_API void ll_gate_get_stats(ll_gate_t *g, struct ll_gate_stats *s);
/* Restart the statistics (the benchmark calls it when its measured window opens). */
LL_API void ll_gate_reset_stats(ll_gate_t *g);

/* auto's decisions, one per control interval: what it measured and the N it chose. */
struct ll_gate_sample {
	uint64_t t_ns;             /* since ll_gate_create */
	double per_sec;            /* exits per second in the interval */
	double cpus;               /* the process's CPU time in the interval / its length */
	double idle;               /* idle CPUs, system-wide, over the last few intervals */
	uint32_t queued, inside;   /* at the end of the interval */
	int32_t limit;             /* N from here on */
};
/* Copy up to max of the latest samples, oldest first; how many were copied (0 unless auto,
 * or out NULL). */
LL_API size_t ll_gate_trace(ll_gate_t *g, struct ll_gate_sample *out, size_t max);

/* The policies, in ll_gate_policy_at() order; NULL past the end. */
struct ll_gate_policy_info {
	const char *name;
	const char *summary;
	const struct ll_knob *knobs;
	size_t nknobs;
};
LL_API const struct ll_gate_policy_info *ll_gate_policy_at(size_t i);

#ifdef __cplusplus
}
#endif
#endif
