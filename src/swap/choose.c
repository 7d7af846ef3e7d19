/*
 * choose.c: which class serves a mutex (LOCKLAB_SWAP_LOCK_FOR), and which
 * rwlock class an rwlock (LOCKLAB_SWAP_RWLOCK_FOR): both kinds named alike.
 *
 * With sites, a mutex (an rwlock alike, at its pthread_rwlock_init) is
 * named as the profiler names it, by the same code
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

#define SITE_CACHE 4096   /* call sites remembered, per kind of lock (a power of two) */
#define SITE_PROBES 16
struct site_cache {
	_Atomic uintptr_t pc;                /* 0: free; set once, after cls */
	void *_Atomic cls;
};
static struct site_cache mutex_sites[SITE_CACHE], rwlock_sites[SITE_CACHE];

/* A kind of lock's sites, as the naming below sees them: the class a name
 * picks (NULL: none of the sites), the rest's, and the call sites' cache. */
struct kind_sites {
	void *(*named)(const char *name);
	void *rest;
	struct site_cache *cache;
};

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

static void *class_named(const struct kind_sites *k, const char *name)
{
	void *c = k->named(name);
	return c ? c : k->rest;
}

static inline uint32_t site_hash(uintptr_t pc)
{
	return (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> 40) & (SITE_CACHE - 1);
}

static void *site_class(const struct kind_sites *k, uintptr_t pc)
{
	struct site_cache *cache = k->cache;
	uint32_t h = site_hash(pc);
	for (uint32_t i = 0; i < SITE_PROBES; i++) {
		/* Acquire pairs with the release store of pc below: cls is set. */
		uintptr_t cur = atomic_load_explicit(&cache[(h + i) & (SITE_CACHE - 1)].pc,
						     memory_order_acquire);
		if (cur == pc)
			return atomic_load_explicit(&cache[(h + i) & (SITE_CACHE - 1)].cls,
						    memory_order_relaxed);
		if (!cur)
			break;
	}
	char name[SWAP_SITE_LEN + 64];
	name_lock();
	pl_syms_know(&names, pc - 1);
	pl_sym_code(&names, pc, name, sizeof(name));
	void *c = class_named(k, name);
	for (uint32_t i = 0; i < SITE_PROBES; i++) {
		uint32_t j = (h + i) & (SITE_CACHE - 1);
		uintptr_t cur = atomic_load_explicit(&cache[j].pc, memory_order_relaxed);
		if (cur == pc)
			break;   /* another namer was here first */
		if (cur)
			continue;
		atomic_store_explicit(&cache[j].cls, c, memory_order_relaxed);
		/* Release: cls before the key that makes it found. */
		atomic_store_explicit(&cache[j].pc, pc, memory_order_release);
		break;
	}   /* full: named again next time, the same way */
	name_unlock();
	return c;
}

static void *static_class(const struct kind_sites *k, const void *lock)
{
	char name[SWAP_SITE_LEN + 64];
	void *c = k->rest;
	name_lock();
	if (pl_syms_know(&names, (uintptr_t)lock) &&
	    pl_sym_data(&names, (uintptr_t)lock, name, sizeof(name)))
		c = class_named(k, name);
	name_unlock();
	return c;
}

/* A static lock (in an object's data) by its symbol, a heap one by its init's
 * call site (none: the rest's). */
static void *choose(const struct kind_sites *k, const void *lock, uintptr_t pc)
{
	struct dl_find_object fo;
	if (_dl_find_object((void *)lock, &fo) == 0)
		return static_class(k, lock);
	return pc ? site_class(k, pc) : k->rest;
}

static void *mutex_named(const char *name)
{
	for (int i = 1; i <= swap_nsites; i++)
		if (!strcmp(swap_classes[i].site, name))
			return &swap_classes[i];
	return NULL;
}

static void *rwlock_named(const char *name)
{
	for (int i = 1; i <= swap_hot.rw_nsites; i++)
		if (!strcmp(swap_rwclasses[i].site, name))
			return &swap_rwclasses[i];
	return NULL;
}

struct swap_class *swap_choose(const void *m, uintptr_t pc)
{
	if (!swap_nsites)
		return swap_rest;
	const struct kind_sites k = { mutex_named, swap_rest, mutex_sites };
	return choose(&k, m, pc);
}

void swap_chosen(struct swap_class *c)
{
	if (swap_nsites)   /* relaxed: a count read at exit */
		atomic_fetch_add_explicit(&c->matched, 1, memory_order_relaxed);
}

struct swap_rwclass *swap_rw_choose(const void *l, uintptr_t pc)
{
	if (!swap_hot.rw_nsites)
		return swap_hot.rw_rest;
	const struct kind_sites k = { rwlock_named, swap_hot.rw_rest, rwlock_sites };
	return choose(&k, l, pc);
}

void swap_rw_chosen(struct swap_rwclass *c)
{
	if (swap_hot.rw_nsites)   /* relaxed: a count read at exit */
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
