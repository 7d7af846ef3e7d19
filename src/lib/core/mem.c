/*
 * mem.c: the algorithms' memory beyond their state (mem.h), malloc's unless
 * the host installed an allocator (ll_set_allocator).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "locklab/ops.h"

static void *heap_alloc(size_t size)
{
	size = (size + 63) & ~(size_t)63;   /* aligned_alloc wants a multiple of the alignment */
	void *p = aligned_alloc(64, size);
	if (p)
		memset(p, 0, size);
	return p;
}

static void heap_release(void *p, size_t size)
{
	(void)size;
	free(p);
}

static const struct ll_allocator heap = { heap_alloc, heap_release };
/* Set before the first lock exists; relaxed: the host orders it before any use. */
static _Atomic(const struct ll_allocator *) current = &heap;

void ll_set_allocator(const struct ll_allocator *a)
{
	atomic_store_explicit(&current, a && a->alloc && a->release ? a : &heap,
			      memory_order_relaxed);
}

void *ll_mem_alloc(size_t size)
{
	return atomic_load_explicit(&current, memory_order_relaxed)->alloc(size);
}

void ll_mem_free(void *p, size_t size)
{
	if (p)
		atomic_load_explicit(&current, memory_order_relaxed)->release(p, size);
}
