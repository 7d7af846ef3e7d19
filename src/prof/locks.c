/*
 * locks.c: the table of lock addresses, and who is charged for waiting.
 *
 * Open addressing over one anonymous mapping; a slot is claimed by CAS of its
 * address from 0 and is never freed (a destroyed lock's slot forgets its
 * sites, so the next lock at that address is named afresh).  The table is
 * touched on init/destroy, on the slow path and at contended releases only.
 *
 * Blame.  Each lock keeps the integral of its waiters over time: nwaiting
 * and the waiter-ns accumulated since the last charge.  A release that finds
 * waiters takes the integral so far (the waiting that piled up while this
 * holder held the lock, times the number of waiters) and charges it to the
 * releasing stack.  What is left when the last waiter leaves (the hand-over
 * after the final release) goes to the last charged holder.  So the blame of
 * all holders adds up to the waits of all waiters.
 */
#include <dlfcn.h>
#include <sys/mman.h>

#include "prof.h"

#define LOCK_BITS 18
#define LOCK_SLOTS (1u << LOCK_BITS)
#define LOCK_PROBES 64

static _Atomic(struct prof_lock *) table;
/* Slot indexes in claim order: for fork, and for the report's instance count. */
static _Atomic(atomic_uint *) claimed;
static atomic_uint nclaimed;
static atomic_ullong dropped;

static struct prof_lock *table_get(void)
{
	/* Acquire: pairs with the release CAS that published the mapping. */
	struct prof_lock *t = atomic_load_explicit(&table, memory_order_acquire);
	if (likely(t))
		return t;
	struct prof_lock *fresh = pl_map(LOCK_SLOTS * sizeof(struct prof_lock));
	atomic_uint *list = pl_map(LOCK_SLOTS * sizeof(atomic_uint));
	if (!fresh || !list)
		return NULL;
	struct prof_lock *expect = NULL;
	atomic_store_explicit(&claimed, list, memory_order_relaxed);
	/* Release: the zeroed table and the claim list are visible before the pointer.
	 * A loser of the race leaks its mapping (once, at start-up). */
	if (atomic_compare_exchange_strong_explicit(&table, &expect, fresh, memory_order_acq_rel,
						    memory_order_acquire))
		return fresh;
	return expect;
}

static inline uint32_t slot_of(uintptr_t a)
{
	return (uint32_t)(((a >> 3) * 0x9e3779b97f4a7c15ull) >> (64 - LOCK_BITS));
}

struct prof_lock *prof_lock_find(const void *addr, int create)
{
	struct prof_lock *t = table_get();
	uintptr_t a = (uintptr_t)addr;
	if (!t || !a)
		return NULL;
	uint32_t i = slot_of(a);
	for (int p = 0; p < LOCK_PROBES; p++, i = (i + 1) & (LOCK_SLOTS - 1)) {
		/* Relaxed: the address is the whole key; the other fields start zeroed. */
		uintptr_t cur = atomic_load_explicit(&t[i].addr, memory_order_relaxed);
		if (cur == a)
			return &t[i];
		if (cur)
			continue;
		if (!create)
			return NULL;
		/* Claim the empty slot; a racer may claim it first, for this address or another. */
		if (atomic_compare_exchange_strong_explicit(&t[i].addr, &cur, a, memory_order_relaxed,
							    memory_order_relaxed)) {
			/* Relaxed: a reporter that reads an entry before it is written sees
			 * slot 0, which it checks like any other (see prof_lock_each_sampled). */
			uint32_t n = atomic_fetch_add_explicit(&nclaimed, 1, memory_order_relaxed);
			atomic_store_explicit(&atomic_load_explicit(&claimed, memory_order_relaxed)[n],
					      i, memory_order_relaxed);
			return &t[i];
		}
		if (cur == a)
			return &t[i];
	}
	/* Relaxed: a statistic. */
	atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
	return NULL;
}

uint64_t prof_lock_dropped(void)
{
	return atomic_load_explicit(&dropped, memory_order_relaxed);
}

void prof_lock_note_init(const void *addr, uintptr_t pc)
{
	struct prof_lock *l = prof_lock_find(addr, 1);
	if (!l)
		return;
	/* Relaxed: naming hints, read at report time. */
	atomic_store_explicit(&l->init_pc, pc, memory_order_relaxed);
	atomic_store_explicit(&l->first_pc, 0, memory_order_relaxed);
}

void prof_lock_note_destroy(const void *addr)
{
	struct prof_lock *l = prof_lock_find(addr, 0);
	if (!l)
		return;
	/* Relaxed: as above; the next lock at this address is named by its own init. */
	atomic_store_explicit(&l->init_pc, 0, memory_order_relaxed);
	atomic_store_explicit(&l->first_pc, 0, memory_order_relaxed);
}

uintptr_t prof_lock_site(struct prof_lock *l, uintptr_t pc)
{
	/* Relaxed throughout: the first caller to get here names the lock; any winner will do. */
	uintptr_t site = atomic_load_explicit(&l->init_pc, memory_order_relaxed);
	if (site)
		return site;
	site = atomic_load_explicit(&l->first_pc, memory_order_relaxed);
	if (site || !pc)
		return site;
	if (atomic_compare_exchange_strong_explicit(&l->first_pc, &site, pc, memory_order_relaxed,
						    memory_order_relaxed))
		return pc;
	return site;
}

int prof_lock_is_static(struct prof_lock *l)
{
	/* Relaxed: an address's answer never changes while its object stays loaded, so
	 * racing threads store the same value. */
	unsigned char w = atomic_load_explicit(&l->where, memory_order_relaxed);
	if (unlikely(!w)) {
		/* _dl_find_object takes no lock and allocates nothing (glibc 2.35+), so it
		 * is safe here even inside malloc.  An object's range covers its .data and
		 * .bss; the heap, mmap'd memory and stacks lie outside every object. */
		struct dl_find_object o;
		void *a = (void *)atomic_load_explicit(&l->addr, memory_order_relaxed);
		w = _dl_find_object(a, &o) == 0 ? PROF_WHERE_STATIC : PROF_WHERE_HEAP;
		atomic_store_explicit(&l->where, w, memory_order_relaxed);
	}
	return w == PROF_WHERE_STATIC;
}

void prof_lock_mark_sampled(struct prof_lock *l, uintptr_t site)
{
	/* Relaxed: a naming hint for the report; read first so that the line stays clean. */
	if (atomic_load_explicit(&l->sampled_site, memory_order_relaxed) != site)
		atomic_store_explicit(&l->sampled_site, site, memory_order_relaxed);
}

void prof_lock_each_sampled(void (*fn)(void *, uintptr_t, uintptr_t), void *arg)
{
	/* Acquire: pairs with the release CAS that published the table and its claim list. */
	struct prof_lock *t = atomic_load_explicit(&table, memory_order_acquire);
	if (!t)
		return;
	atomic_uint *list = atomic_load_explicit(&claimed, memory_order_relaxed);
	uint32_t n = atomic_load_explicit(&nclaimed, memory_order_relaxed);
	for (uint32_t k = 0; k < n && k < LOCK_SLOTS; k++) {
		/* Relaxed: a slot claimed a moment ago may still read 0 here; slot 0 is then
		 * looked at twice, which the caller's count of distinct addresses absorbs. */
		struct prof_lock *l = &t[atomic_load_explicit(&list[k], memory_order_relaxed)];
		uintptr_t site = atomic_load_explicit(&l->sampled_site, memory_order_relaxed);
		if (site)
			fn(arg, atomic_load_explicit(&l->addr, memory_order_relaxed), site);
	}
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void guard_lock(struct prof_lock *l)
{
	/* Acquire: the integral fields were last written under the guard by its previous owner. */
	while (atomic_exchange_explicit(&l->guard, 1, memory_order_acquire)) {
		/* Read-only spin keeps the line shared until the guard frees (held for a few stores). */
		while (atomic_load_explicit(&l->guard, memory_order_relaxed))
			cpu_relax();
	}
}

static void guard_unlock(struct prof_lock *l)
{
	/* Release: publish the integral fields to the next owner of the guard. */
	atomic_store_explicit(&l->guard, 0, memory_order_release);
}

/* Under the guard: bring the integral up to `now` (clock reads from other
 * threads may arrive slightly out of order; time never runs backwards here). */
static void integ_advance(struct prof_lock *l, uint64_t now)
{
	if (now <= l->integ_ts)
		return;
	l->integ_ns += (uint64_t)l->nwaiting * (now - l->integ_ts);
	l->integ_ts = now;
}

void prof_lock_wait_begin(struct prof_lock *l, uint64_t now)
{
	guard_lock(l);
	integ_advance(l, now);
	l->nwaiting++;
	guard_unlock(l);
}

uint64_t prof_lock_wait_end(struct prof_lock *l, uint64_t now)
{
	uint64_t left = 0;
	guard_lock(l);
	integ_advance(l, now);
	if (l->nwaiting)
		l->nwaiting--;
	if (!l->nwaiting) {
		left = l->integ_ns;
		l->integ_ns = 0;
	}
	guard_unlock(l);
	return left;
}

uint64_t prof_lock_take_blame(struct prof_lock *l, uint64_t now)
{
	guard_lock(l);
	integ_advance(l, now);
	uint64_t b = l->nwaiting ? l->integ_ns : 0;
	if (b)
		l->integ_ns = 0;
	guard_unlock(l);
	return b;
}

void prof_lock_after_fork(void)
{
	/* Only the forking thread exists now: the waiters counted in the parent are
	 * gone, and a guard they held would never be released. */
	struct prof_lock *t = atomic_load_explicit(&table, memory_order_relaxed);
	atomic_uint *list = atomic_load_explicit(&claimed, memory_order_relaxed);
	if (!t || !list)
		return;
	uint32_t n = atomic_load_explicit(&nclaimed, memory_order_relaxed);
	for (uint32_t k = 0; k < n && k < LOCK_SLOTS; k++) {
		struct prof_lock *l = &t[atomic_load_explicit(&list[k], memory_order_relaxed)];
		atomic_store_explicit(&l->guard, 0, memory_order_relaxed);
		/* The child counts the instances it samples itself. */
		atomic_store_explicit(&l->sampled_site, 0, memory_order_relaxed);
		l->nwaiting = 0;
		l->integ_ns = 0;
		l->integ_ts = 0;
	}
}
