/*
 * arena.h: memory for code that runs inside someone else's process and must
 * not call malloc there (the allocator may be the caller, holding its own
 * locks): anonymous mappings, and a bump allocator over one reserved mapping.
 * Shared by the preloaded libraries (liblocklab-prof.so, liblocklab-swap.so),
 * each with arenas of its own.  Not thread-safe: the owner serialises.
 */
#ifndef LOCKLAB_PRELOAD_ARENA_H
#define LOCKLAB_PRELOAD_ARENA_H

#include <stddef.h>

struct pl_arena {
	size_t reserve;   /* bytes of address space reserved at first use (0: 1 GiB) */
	char *base;
	size_t top;
};

/* Zeroed anonymous memory (MAP_NORESERVE), NULL on failure. */
void *pl_map(size_t bytes);
/* 16-byte aligned, zeroed the first time the arena hands it out; NULL when full. */
void *pl_arena_alloc(struct pl_arena *a, size_t bytes);
/* Everything handed out is free again (its pages go back to the kernel). */
void pl_arena_reset(struct pl_arena *a);

#endif
