/*
 * slab.c: the memory of swapped locks.
 *
 * Slots, and the algorithms' own memory (ll_set_allocator: innodb56's sync
 * arrays, mcs's queue nodes past a thread's pool; no algorithm takes any per
 * lock, so a swapped lock costs its slot), come from anonymous mappings,
 * never malloc: a lock may be made, or an algorithm may want memory, inside
 * an allocator that holds its own pthread mutexes (jemalloc).  Slots are
 * their kind's bytes each (struct swap_slots); the algorithms' blocks are
 * rounded up to a power of two from 64 to 4096 bytes, and larger ones are
 * mappings of their own.  A freed slot or block goes on its size's list,
 * threaded through its first word.  slab_guard is a test-and-set flag, held
 * for a few instructions (or one mmap); a forked child whose copy was taken
 * with it held starts afresh (swap_slab_after_fork).
 */
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "swap.h"

#define SLAB_CHUNK (256u << 10)
#define BLOCK_CLASSES 7   /* 64, 128, ... 4096 bytes */

struct swap_slots swap_mutex_slots = { .what = "a lock", .label = "" };
struct swap_slots swap_rw_slots = { .what = "an rwlock", .label = "rwlock " };
static atomic_flag slab_guard = ATOMIC_FLAG_INIT;
static char *slab_next, *slab_end;
static void *block_free[BLOCK_CLASSES];
/* The algorithms' blocks handed out and not had back, with their bytes as
 * rounded here: gauges of this process's memory, so a forked child keeps the
 * parent's (its copy).  Relaxed: read at exit. */
static atomic_ulong blocks_in_use, block_bytes_in_use;

static void slab_lock(void)
{
	/* Acquire pairs with slab_unlock's release: the lists and bump pointer. */
	while (atomic_flag_test_and_set_explicit(&slab_guard, memory_order_acquire))
		sched_yield();
}

static void slab_unlock(void)
{
	atomic_flag_clear_explicit(&slab_guard, memory_order_release);
}

/* size bytes at an align boundary of the current chunk, or of a new one; guard held. */
static void *slab_carve(size_t size, size_t align)
{
	uintptr_t at = ((uintptr_t)slab_next + align - 1) & ~(uintptr_t)(align - 1);
	if (!slab_next || at + size > (uintptr_t)slab_end) {
		void *c = mmap(NULL, SLAB_CHUNK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED)
			return NULL;
		slab_end = (char *)c + SLAB_CHUNK;
		at = (uintptr_t)c;
	}
	slab_next = (char *)(at + size);
	return (void *)at;
}

/* One item of a free list, or a carved one, zeroed, 64-byte aligned; NULL when
 * out of memory. */
static void *slab_take(void **list, size_t size)
{
	slab_lock();
	void *p = *list;
	if (p)
		*list = *(void **)p;
	else
		p = slab_carve(size, 64);
	slab_unlock();
	if (p)
		memset(p, 0, size);
	return p;
}

static void slab_put(void **list, void *p)
{
	slab_lock();
	*(void **)p = *list;
	*list = p;
	slab_unlock();
}

void *swap_slab_take(struct swap_slots *k)
{
	void *p = slab_take(&k->free, k->bytes);
	if (p)   /* relaxed: a gauge read at exit */
		atomic_fetch_add_explicit(&k->in_use, 1, memory_order_relaxed);
	return p;
}

void swap_slab_put(struct swap_slots *k, void *p)
{
	slab_put(&k->free, p);
	atomic_fetch_sub_explicit(&k->in_use, 1, memory_order_relaxed);
}

static void blocks_count(long n, size_t bytes)
{
	atomic_fetch_add_explicit(&blocks_in_use, (unsigned long)n, memory_order_relaxed);
	atomic_fetch_add_explicit(&block_bytes_in_use, (unsigned long)n * bytes,
				  memory_order_relaxed);
}

static int block_class(size_t size)
{
	int c = 0;
	while (c < BLOCK_CLASSES && ((size_t)64 << c) < size)
		c++;
	return c;
}

static size_t block_bytes(int c, size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return c < BLOCK_CLASSES ? (size_t)64 << c : (size + page - 1) & ~(page - 1);
}

/* The algorithms' allocator (struct ll_allocator): zeroed, 64-byte aligned. */
static void *block_alloc(size_t size)
{
	int c = block_class(size);
	size_t bytes = block_bytes(c, size);
	void *p = c < BLOCK_CLASSES ? slab_take(&block_free[c], bytes)
				    : mmap(NULL, bytes, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || !p)
		return NULL;
	blocks_count(1, bytes);
	return p;
}

static void block_release(void *p, size_t size)
{
	int c = block_class(size);
	size_t bytes = block_bytes(c, size);
	if (c < BLOCK_CLASSES)
		slab_put(&block_free[c], p);
	else
		munmap(p, bytes);
	blocks_count(-1, bytes);
}

const struct ll_allocator swap_blocks = { block_alloc, block_release };

struct swap_slab_gauges swap_slab_gauges(void)
{
	return (struct swap_slab_gauges){
		atomic_load_explicit(&blocks_in_use, memory_order_relaxed),
		atomic_load_explicit(&block_bytes_in_use, memory_order_relaxed),
	};
}

/*
 * The guard is not taken before fork: other prepare handlers (an allocator's,
 * locking all its mutexes) may still make slots after ours.  A child whose
 * copy was taken with it held cannot trust the lists: it starts a new chunk
 * and new lists (the old ones leak).
 */
void swap_slab_after_fork(void)
{
	if (atomic_flag_test_and_set_explicit(&slab_guard, memory_order_relaxed)) {
		slab_next = slab_end = NULL;
		swap_mutex_slots.free = swap_rw_slots.free = NULL;
		memset(block_free, 0, sizeof(block_free));
	}
	atomic_flag_clear_explicit(&slab_guard, memory_order_relaxed);
}
