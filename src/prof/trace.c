/*
 * trace.c: the timeline of waits (`locklab profile --trace FILE`): each
 * thread keeps its last N waits (LOCKLAB_PROF_TRACE=N) in a ring of its own,
 * mapped with its records (records.c), so memory is bounded by N per thread
 * and nothing is allocated on the wait path.  When the ring is full the
 * oldest wait is overwritten; the report counts those (report.c), and the
 * CLI says how many were dropped.
 *
 * One writer per ring, the thread itself (or, for locklab-attach, its one
 * collecting thread, by prof_trace_add): it fills slot n % N with relaxed
 * stores and publishes n + 1 with a release store.  The reporter reads the
 * slots below the count it acquired, then the count again: a slot the thread
 * may have overwritten in between is left out (counted as dropped).
 */
#include "prof.h"

void prof_trace_wait(uint8_t event, uint8_t kind, const void *addr, uintptr_t site,
		     uint64_t t0, uint64_t ns)
{
	struct prof_thread *t = prof_tls.thread;
	if (likely(!t || !t->trace))
		return;
	prof_trace_add(t, event, kind, (uintptr_t)addr, site, t0, ns);
}

void prof_trace_add(struct prof_thread *t, uint8_t event, uint8_t kind, uintptr_t addr,
		    uintptr_t site, uint64_t t0, uint64_t ns)
{
	if (!t->trace)
		return;
	/* Relaxed: only this thread writes the count. */
	uint64_t n = atomic_load_explicit(&t->trace_n, memory_order_relaxed);
	struct prof_trace_ev *e = &t->trace[n % t->trace_cap];
	atomic_store_explicit(&e->t0, t0, memory_order_relaxed);
	atomic_store_explicit(&e->ns, ns, memory_order_relaxed);
	atomic_store_explicit(&e->addr, addr, memory_order_relaxed);
	atomic_store_explicit(&e->site, site, memory_order_relaxed);
	atomic_store_explicit(&e->what, (uint32_t)event | (uint32_t)kind << 8, memory_order_relaxed);
	/* Release: the slot is complete before a reporter counts it. */
	atomic_store_explicit(&t->trace_n, n + 1, memory_order_release);
}
