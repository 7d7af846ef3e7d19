/*
 * arena.c: memory for the reporter, which runs at exit, on a signal or on a
 * timer, possibly while the allocator's own locks are held by the program:
 * a bump arena (src/preload/arena.c), and growing text buffers, neither of
 * which calls malloc.  Only the reporter uses them, one report at
 * a time (control.c serialises reports).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "prof.h"
#include "core/json.h"

/* The report's memory: reset after each report. */
struct pl_arena prof_report_arena;

void *prof_arena_alloc(size_t bytes)
{
	return pl_arena_alloc(&prof_report_arena, bytes);
}

void prof_arena_reset(void)
{
	pl_arena_reset(&prof_report_arena);
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
