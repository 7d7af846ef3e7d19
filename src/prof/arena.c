/*
 * arena.c: memory for the reporter, which runs at exit, on a signal or on a
 * timer, possibly while the allocator's own locks are held by the program:
 * a bump allocator over one reserved mapping, and growing text buffers,
 * neither of which calls malloc.  Only the reporter uses them, one report at
 * a time (control.c serialises reports).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "prof.h"
#include "../lib/core/json.h"

#define ARENA_BYTES (1ull << 30)

static char *arena;
static size_t arena_top;

void *prof_map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void *prof_arena_alloc(size_t bytes)
{
	if (!arena && !(arena = prof_map(ARENA_BYTES)))
		return NULL;
	bytes = (bytes + 15) & ~(size_t)15;
	if (bytes > ARENA_BYTES - arena_top)
		return NULL;
	void *p = arena + arena_top;
	arena_top += bytes;
	return p;
}

void prof_arena_reset(void)
{
	if (arena && arena_top)
		madvise(arena, arena_top, MADV_DONTNEED);   /* back to zero pages */
	arena_top = 0;
}

static int buf_reserve(struct prof_buf *b, size_t more)
{
	if (b->failed)
		return 0;
	if (b->len + more + 1 <= b->cap)
		return 1;
	size_t cap = b->cap ? b->cap : 1u << 16;
	while (cap < b->len + more + 1)
		cap *= 2;
	char *p = b->p ? mremap(b->p, b->cap, cap, MREMAP_MAYMOVE)
		       : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		b->failed = 1;
		return 0;
	}
	b->p = p;
	b->cap = cap;
	return 1;
}

void prof_buf_printf(struct prof_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char small[512];
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0 || !buf_reserve(b, (size_t)n))
		return;
	if ((size_t)n < sizeof(small)) {
		memcpy(b->p + b->len, small, (size_t)n + 1);
	} else {
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

static void buf_sink(void *ctx, const char *p, size_t n)
{
	struct prof_buf *b = ctx;
	if (!buf_reserve(b, n))
		return;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = 0;
}

void prof_buf_json_str(struct prof_buf *b, const char *s)
{
	ll_json_string(s, buf_sink, b);
}

void prof_buf_free(struct prof_buf *b)
{
	if (b->p)
		munmap(b->p, b->cap);
	*b = (struct prof_buf){ 0 };
}
