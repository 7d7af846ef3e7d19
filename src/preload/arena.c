/*
 * arena.c: anonymous mappings and bump arenas for the preloaded libraries
 * (arena.h).  No malloc, no lock: an arena belongs to one caller at a time.
 */
#include <sys/mman.h>

#include "arena.h"

#define ARENA_DEFAULT (1ull << 30)

void *pl_map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void *pl_arena_alloc(struct pl_arena *a, size_t bytes)
{
	size_t cap = a->reserve ? a->reserve : ARENA_DEFAULT;
	if (!a->base && !(a->base = pl_map(cap)))
		return NULL;
	bytes = (bytes + 15) & ~(size_t)15;
	if (bytes > cap - a->top)
		return NULL;
	void *p = a->base + a->top;
	a->top += bytes;
	return p;
}

void pl_arena_reset(struct pl_arena *a)
{
	if (a->base && a->top)
		madvise(a->base, a->top, MADV_DONTNEED);   /* back to zero pages */
	a->top = 0;
}
