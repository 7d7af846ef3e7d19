/*
 * records.c: each thread's counts, in memory only that thread writes.
 *
 * A thread gets its table (one mapping, made on its first event, never
 * freed: a report after the thread exits still needs it) and pushes it on a
 * global list with CAS.  Records are open-addressed by their key; the owner
 * fills a free slot's key and publishes it with a release store of `used`,
 * after which the reporter may read it.  Counts are single-writer, so they
 * are bumped with a relaxed load and store (no locked instruction); relaxed
 * atomics only make the reporter's concurrent reads well defined.
 *
 * locklab-attach (src/attach/) keeps its traced threads' records here too,
 * made by prof_thread_new and fed in blocks by prof_record_add from its one
 * collecting thread: the single writer of every record it keeps.
 */
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "prof.h"

#define REC_CAP PROF_REC_CAP
#define REC_PROBES 128

static _Atomic(struct prof_thread *) threads_head;

__thread struct prof_tls prof_tls __attribute__((tls_model("initial-exec")));

struct prof_thread *prof_thread_new(pid_t tid, const char *name)
{
	/* mmap, not malloc: we may be inside the allocator (see interpose.c). Once per thread. */
	struct prof_thread *t = pl_map(sizeof(*t) + REC_CAP * sizeof(struct prof_rec));
	if (!t)
		return NULL;
	t->cap = REC_CAP;
	t->tid = tid;
	if (name)   /* no stdio: this runs inside the program's lock calls */
		memcpy(t->name, name, strnlen(name, sizeof(t->name) - 1));
	if (prof_cfg.trace) {
		/* Address space for the whole ring, pages touched as it fills. */
		t->trace = pl_map(prof_cfg.trace * sizeof(struct prof_trace_ev));
		t->trace_cap = t->trace ? prof_cfg.trace : 0;
	}
	/* Release: the thread's tid, name and zeroed records are visible to the reporter
	 * before the thread is on the list. */
	struct prof_thread *head = atomic_load_explicit(&threads_head, memory_order_relaxed);
	do
		t->next = head;
	while (!atomic_compare_exchange_weak_explicit(&threads_head, &head, t, memory_order_release,
						      memory_order_relaxed));
	return t;
}

struct prof_thread *prof_thread_get(void)
{
	struct prof_thread *t = prof_tls.thread;
	if (likely(t))
		return t;
	char name[16] = "";
	prctl(PR_GET_NAME, name, 0, 0, 0);
	t = prof_thread_new(gettid(), name);
	prof_tls.thread = t;
	return t;
}

struct prof_thread *prof_threads(void)
{
	/* Acquire: pairs with the release push above. */
	return atomic_load_explicit(&threads_head, memory_order_acquire);
}

void prof_threads_after_fork(void)
{
	/* The child reports its own events only: forget the parent's threads, and give
	 * the forking thread a fresh table on its next event. */
	atomic_store_explicit(&threads_head, NULL, memory_order_relaxed);
	prof_tls.thread = NULL;
}

static inline unsigned bucket(uint64_t ns)
{
	unsigned b = ns ? 63u - (unsigned)__builtin_clzll(ns) : 0;
	return b < PROF_HIST ? b : PROF_HIST - 1;
}

/* Single writer: a plain add is enough, kept atomic only for the reporter's reads. */
#define BUMP(field, v) \
	atomic_store_explicit(&(field), atomic_load_explicit(&(field), memory_order_relaxed) + (v), \
			      memory_order_relaxed)

/* Thread t's record of the key, claimed if new; NULL when its table is full. */
static struct prof_rec *record_of(struct prof_thread *t, uint8_t event, uint8_t kind, uintptr_t a,
				  uintptr_t site, uintptr_t caller, uint32_t stack)
{
	uint64_t h = (a >> 3) ^ (site * 31) ^ ((uint64_t)caller * 0x9e3779b97f4a7c15ull) ^
		     ((uint64_t)stack << 20) ^ event;
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	uint32_t i = (uint32_t)(h >> 40) & (t->cap - 1);
	for (int p = 0; p < REC_PROBES; p++, i = (i + 1) & (t->cap - 1)) {
		struct prof_rec *s = &t->recs[i];
		/* Relaxed: only this thread writes the slot. */
		if (!atomic_load_explicit(&s->used, memory_order_relaxed)) {
			s->event = event;
			s->kind = kind;
			s->stack = stack;
			s->addr = a;
			s->site = site;
			s->caller = caller;
			/* Relaxed: the owner's own probes read it; the reporter finds the slot
			 * through t->used, published below. */
			atomic_store_explicit(&s->used, 1, memory_order_relaxed);
			uint32_t n = atomic_load_explicit(&t->nrec, memory_order_relaxed);
			t->used[n] = i;
			/* Release: the key and the list entry are complete before the reporter
			 * sees the slot. */
			atomic_store_explicit(&t->nrec, n + 1, memory_order_release);
			return s;
		}
		if (s->addr == a && s->event == event && s->stack == stack && s->caller == caller &&
		    s->site == site)
			return s;
	}
	t->dropped++;
	return NULL;
}

/* Relaxed: single writer; the reporter may reset imax_ns (a lost max is harmless). */
static void raise_max(struct prof_rec *r, uint64_t ns)
{
	if (ns > atomic_load_explicit(&r->max_ns, memory_order_relaxed))
		atomic_store_explicit(&r->max_ns, ns, memory_order_relaxed);
	if (ns > atomic_load_explicit(&r->imax_ns, memory_order_relaxed))
		atomic_store_explicit(&r->imax_ns, ns, memory_order_relaxed);
}

void prof_record(uint8_t event, uint8_t kind, const void *addr, uintptr_t site,
		 uintptr_t caller, uint32_t stack, uint64_t ns, uint32_t count)
{
	struct prof_thread *t = prof_thread_get();
	struct prof_rec *r = t ? record_of(t, event, kind, (uintptr_t)addr, site, caller, stack)
			       : NULL;
	if (!r)
		return;
	BUMP(r->count, count);
	BUMP(r->total_ns, ns);
	raise_max(r, ns);
	/* Only waits are shown as histograms: a sampled hold leaves that line alone. */
	if (count && PROF_EV_IS_WAIT(event))
		BUMP(r->hist[bucket(ns)], 1u);
}

void prof_record_add(struct prof_thread *t, uint8_t event, uint8_t kind, uintptr_t addr,
		     uintptr_t site, uintptr_t caller, uint32_t stack, const struct prof_sum *sum)
{
	struct prof_rec *r = record_of(t, event, kind, addr, site, caller, stack);
	if (!r)
		return;
	BUMP(r->count, sum->count);
	BUMP(r->total_ns, sum->total_ns);
	raise_max(r, sum->max_ns);
	for (int b = 0; b < PROF_HIST; b++)
		if (sum->hist[b])
			BUMP(r->hist[b], sum->hist[b]);
}
