/*
 * mem.h: the algorithms' memory beyond their state, from the allocator the
 * host installed (ll_set_allocator in locklab/ops.h) or malloc.
 */
#ifndef LOCKLAB_CORE_MEM_H
#define LOCKLAB_CORE_MEM_H

#include <stddef.h>

/* Zeroed, 64-byte aligned; NULL when out of memory. */
void *ll_mem_alloc(size_t size);
/* size: as given to ll_mem_alloc. */
void ll_mem_free(void *p, size_t size);

#endif
