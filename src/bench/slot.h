/*
 * slot.h: a benchmark mutex and what it guards, and the exclusion check both
 * workloads (bench.c's lock loop, server.c's queries) run on it.
 *
 * Two checks, because a point that stops by time leaves threads parked inside
 * lock(): their iterations never finish, so the counters can be compared only
 * when every thread has exited (drained); the `inside` flag catches a second
 * thread in the critical section on every entry, drained or not.
 */
#ifndef LOCKLAB_BENCH_SLOT_H
#define LOCKLAB_BENCH_SLOT_H

#include <stdalign.h>
#include <stdint.h>

#include "locklab/locklab.h"

struct slot {
	ll_mutex_t m;
	/* Guarded by m, on a line of their own apart from the lock word. */
	alignas(64) uint64_t counter;
	int inside;
	uint64_t violations;
};

/* With s->m held: count the entry, and any overlap with another thread. */
static inline void slot_enter(struct slot *s)
{
	if (s->inside)
		s->violations++;
	s->inside = 1;
	s->counter++;
}

/* With s->m held, before unlocking. */
static inline void slot_leave(struct slot *s)
{
	s->inside = 0;
}

/*
 * 1 when exclusion held on s: no overlap seen and, when drained, the counter
 * equals `expect`, the entries the threads made; else 0 after one line on
 * stderr naming the mutex ("hot mutex 0", "mutex 3").
 */
int slot_ok(const char *kind, int64_t i, const struct slot *s, int drained, uint64_t expect);

#endif
