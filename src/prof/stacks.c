/*
 * stacks.c: call stacks, captured on the slow path and stored once each.
 *
 * Capture uses libgcc's DWARF unwinder (_Unwind_Backtrace), linked directly
 * so that no dlopen happens on first use: distribution binaries are built
 * without frame pointers.  It starts at the frame that called the
 * interposed function, so the profiler's own frames never show.
 *
 * Storage (prof_stack_intern, which locklab-attach also uses for the stacks
 * it unwinds from the kernel's samples): open addressing keyed by a hash of
 * the return addresses.  A slot is claimed by CAS of its hash, filled, then
 * published by a release store of `ready`.  A reader that finds a slot
 * claimed but not ready moves on (it may store the same stack twice; ids
 * differ, frames do not), so nobody ever waits here, and a fork in the middle
 * of a store leaves no one stuck.
 */
#include <string.h>
#include <unwind.h>

#include "prof.h"

#define STACK_BITS 15
#define STACK_SLOTS (1u << STACK_BITS)
#define STACK_PROBES 64

struct prof_stack {
	_Atomic uint64_t hash;   /* 0: free */
	atomic_uint ready;
	uint32_t depth;
	uintptr_t pc[PROF_MAX_DEPTH];
};

static _Atomic(struct prof_stack *) table;
static atomic_ullong dropped;

static struct prof_stack *table_get(void)
{
	/* Acquire: pairs with the release CAS that published the zeroed mapping. */
	struct prof_stack *t = atomic_load_explicit(&table, memory_order_acquire);
	if (likely(t))
		return t;
	struct prof_stack *fresh = pl_map(STACK_SLOTS * sizeof(struct prof_stack));
	if (!fresh)
		return NULL;
	struct prof_stack *expect = NULL;
	if (atomic_compare_exchange_strong_explicit(&table, &expect, fresh, memory_order_acq_rel,
						    memory_order_acquire))
		return fresh;
	return expect;
}

struct walk {
	uintptr_t from;
	int started, n, max;
	uintptr_t *pc;
};

static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
	if (!ip)
		return _URC_END_OF_STACK;
	if (!w->started) {
		if (ip != w->from)
			return _URC_NO_REASON;
		w->started = 1;
	}
	w->pc[w->n++] = ip;
	return w->n == w->max ? _URC_END_OF_STACK : _URC_NO_REASON;
}

static uint64_t hash_pcs(const uintptr_t *pc, int n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;
	for (int i = 0; i < n; i++) {
		h ^= pc[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

uint32_t prof_stack_capture(uintptr_t from_pc)
{
	uintptr_t pc[PROF_MAX_DEPTH];
	struct walk w = { from_pc, 0, 0, prof_cfg.depth, pc };
	if (w.max < 1 || w.max > PROF_MAX_DEPTH)
		w.max = PROF_MAX_DEPTH;
	_Unwind_Backtrace(walk_frame, &w);
	if (!w.n) {   /* the caller's frame was not found (no unwind info): keep the caller */
		pc[0] = from_pc;
		w.n = 1;
	}
	return prof_stack_intern(pc, w.n);
}

uint32_t prof_stack_intern(const uintptr_t *pc, int n)
{
	struct prof_stack *t = table_get();
	if (!t || n < 1)
		return 0;
	if (n > PROF_MAX_DEPTH)
		n = PROF_MAX_DEPTH;
	uint64_t h = hash_pcs(pc, n);
	uint32_t i = (uint32_t)(h >> (64 - STACK_BITS));
	for (int p = 0; p < STACK_PROBES; p++, i = (i + 1) & (STACK_SLOTS - 1)) {
		struct prof_stack *s = &t[i];
		/* Relaxed: compared with the hash only; frames are read after `ready`. */
		uint64_t cur = atomic_load_explicit(&s->hash, memory_order_relaxed);
		if (cur == h) {
			/* Acquire: pairs with the release of `ready`, making the frames visible. */
			if (atomic_load_explicit(&s->ready, memory_order_acquire) &&
			    s->depth == (uint32_t)n && !memcmp(s->pc, pc, sizeof(pc[0]) * (size_t)n))
				return i + 1;
			continue;
		}
		if (cur)
			continue;
		/* Claim the free slot (relaxed: the frames are published by `ready`). */
		if (!atomic_compare_exchange_strong_explicit(&s->hash, &cur, h, memory_order_relaxed,
							     memory_order_relaxed))
			continue;
		s->depth = (uint32_t)n;
		memcpy(s->pc, pc, sizeof(pc[0]) * (size_t)n);
		/* Release: depth and frames are complete before anyone compares them. */
		atomic_store_explicit(&s->ready, 1, memory_order_release);
		return i + 1;
	}
	/* Relaxed: a statistic. */
	atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
	return 0;
}

const uintptr_t *prof_stack_get(uint32_t id, int *depth)
{
	struct prof_stack *t = atomic_load_explicit(&table, memory_order_acquire);
	*depth = 0;
	if (!t || !id || id > STACK_SLOTS)
		return NULL;
	struct prof_stack *s = &t[id - 1];
	/* Acquire: pairs with the release of `ready`. */
	if (!atomic_load_explicit(&s->ready, memory_order_acquire))
		return NULL;
	*depth = (int)s->depth;
	return s->pc;
}

uint64_t prof_stack_dropped(void)
{
	return atomic_load_explicit(&dropped, memory_order_relaxed);
}
