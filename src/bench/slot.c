/*
 * slot.c: the exclusion check on a benchmark mutex (slot.h).
 */
#include <inttypes.h>
#include <stdio.h>

#include "slot.h"

int slot_ok(const char *kind, int64_t i, const struct slot *s, int drained, uint64_t expect)
{
	const char *sep = *kind ? " " : "";
	if (s->violations) {
		fprintf(stderr, "locklab: mutual exclusion violated on %s%smutex %" PRId64 ": %" PRIu64
			" entries while another thread was inside\n", kind, sep, i, s->violations);
		return 0;
	}
	if (drained && s->counter != expect) {
		fprintf(stderr, "locklab: mutual exclusion violated on %s%smutex %" PRId64
			": counter %" PRIu64 ", threads did %" PRIu64 "\n", kind, sep, i, s->counter,
			expect);
		return 0;
	}
	return 1;
}
