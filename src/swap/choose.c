/*
 * choose.c: which class serves a mutex (LOCKLAB_SWAP_LOCK_FOR).
 *
 * With sites, a mutex is named as the profiler names it, by the same code
 * (src/preload/symbols.c), once, when it gets its class: a static mutex (in
 * an object's data) by its symbol, "object`symbol" or "object`symbol+0x40",
 * at its pthread_mutex_init or, for a static initializer, at its first use;
 * a heap mutex by the call site of its pthread_mutex_init,
 * "object`function+0x1a2", the decision cached per call site address.  A
 * heap mutex no pthread_mutex_init made (zeroed memory) has no site: the
 * profiler names it by its first contended caller, unknown when its lock
 * must be chosen, so it gets the rest's.
 *
 * Naming runs inside whatever called us (an allocator, say): no malloc (the
 * symbol tables live in an arena, the files are mmap'd), no loader lock
 * (objects are found with _dl_find_object), and one namer at a time behind a
 * test-and-set guard (a forked child whose copy was taken with it held
 * starts afresh: swap_choose_after_fork).
 */
#include <dlfcn.h>
#include <sched.h>
#include <string.h>

#include "swap.h"

#include "preload/symbols.h"

static struct pl_arena name_arena;
static struct pl_syms names = { .arena = &name_arena };
static atomic_flag name_guard = ATOMIC_FLAG_INIT;

#define SITE_CACHE 4096   /* call sites remembered (a power of two) */
#define SITE_PROBES 16
static struct {
	_Atomic uintptr_t pc;                /* 0: free; set once, after cls */
	struct swap_class *_Atomic cls;
} site_cache[SITE_CACHE];

static void name_lock(void)
{
	/* Acquire pairs with name_unlock's release: the symbol tables and the cache. */
	while (atomic_flag_test_and_set_explicit(&name_guard, memory_order_acquire))
		sched_yield();
	swap_tls.busy++;   /* a mutex call from in here (none expected) is glibc's */
}

static void name_unlock(void)
{
	swap_tls.busy--;
	atomic_flag_clear_explicit(&name_guard, memory_order_release);
}

static struct swap_class *class_named(const char *name)
{
	for (int i = 1; i <= swap_nsites; i++)
		if (!strcmp(swap_classes[i].site, name))
			return &swap_classes[i];
	return swap_rest;
}

static inline uint32_t site_hash(uintptr_t pc)
{
	return (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> 40) & (SITE_CACHE - 1);
}

static struct swap_class *site_class(uintptr_t pc)
{
	uint32_t h = site_hash(pc);
	for (uint32_t k = 0; k < SITE_PROBES; k++) {
		/* Acquire pairs with the release store of pc below: cls is set. */
		uintptr_t cur = atomic_load_explicit(&site_cache[(h + k) & (SITE_CACHE - 1)].pc,
						     memory_order_acquire);
		if (cur == pc)
			return atomic_load_explicit(&site_cache[(h + k) & (SITE_CACHE - 1)].cls,
						    memory_order_relaxed);
		if (!cur)
			break;
	}
	char name[SWAP_SITE_LEN + 64];
	name_lock();
	pl_syms_know(&names, pc - 1);
	pl_sym_code(&names, pc, name, sizeof(name));
	struct swap_class *c = class_named(name);
	for (uint32_t k = 0; k < SITE_PROBES; k++) {
		uint32_t i = (h + k) & (SITE_CACHE - 1);
		uintptr_t cur = atomic_load_explicit(&site_cache[i].pc, memory_order_relaxed);
		if (cur == pc)
			break;   /* another namer was here first */
		if (cur)
			continue;
		atomic_store_explicit(&site_cache[i].cls, c, memory_order_relaxed);
		/* Release: cls before the key that makes it found. */
		atomic_store_explicit(&site_cache[i].pc, pc, memory_order_release);
		break;
	}   /* full: named again next time, the same way */
	name_unlock();
	return c;
}

static struct swap_class *static_class(const void *m)
{
	char name[SWAP_SITE_LEN + 64];
	struct swap_class *c = swap_rest;
	name_lock();
	if (pl_syms_know(&names, (uintptr_t)m) && pl_sym_data(&names, (uintptr_t)m, name, sizeof(name)))
		c = class_named(name);
	name_unlock();
	return c;
}

struct swap_class *swap_choose(const void *m, uintptr_t pc)
{
	if (!swap_nsites)
		return swap_rest;
	struct dl_find_object fo;
	if (_dl_find_object((void *)m, &fo) == 0)
		return static_class(m);
	return pc ? site_class(pc) : swap_rest;
}

void swap_chosen(struct swap_class *c)
{
	if (swap_nsites)   /* relaxed: a count read at exit */
		atomic_fetch_add_explicit(&c->matched, 1, memory_order_relaxed);
}

/*
 * The guard is not taken before fork: other prepare handlers may still name
 * mutexes after ours.  A child whose copy was taken with it held starts new
 * symbol tables (the old ones leak; the call-site cache's entries are each
 * whole).
 */
void swap_choose_after_fork(void)
{
	if (atomic_flag_test_and_set_explicit(&name_guard, memory_order_relaxed)) {
		memset(&name_arena, 0, sizeof(name_arena));
		memset(&names, 0, sizeof(names));
		names.arena = &name_arena;
	}
	atomic_flag_clear_explicit(&name_guard, memory_order_relaxed);
}
