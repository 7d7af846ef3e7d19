/*
 * locklab-lines: file:line (and inlined calls) for code addresses, from the
 * objects' DWARF by elfutils' libdwfl, for `locklab profile`.
 *
 * It runs after the profiled program, never inside it: libdw allocates,
 * reads whole debug files and may take seconds on a large server, none of
 * which may happen in a process whose malloc or loader locks another thread
 * may hold (docs/profiler.md, "Names and lines").
 *
 *   stdin:  PATH <TAB> ADDRESS            one per line; ADDRESS in hex, as linked
 *                                         (the address to look up: a return address - 1)
 *   stdout: one line per input line: FUNCTION <TAB> FILE <TAB> LINE, then the same
 *           three fields for each function it is inlined into, innermost first;
 *           an empty line when nothing is known.
 *
 * The lookup itself is lookup.c's, which locklab-attach shares.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lookup.h"

static void field(const char *s)
{
	for (; s && *s; s++)
		putchar(*s == '\t' || *s == '\n' ? ' ' : *s);
}

static void frame(void *arg, const char *fn, const char *file, int line)
{
	int *first = arg;
	if (!*first)
		putchar('\t');
	*first = 0;
	field(fn);
	putchar('\t');
	field(file);
	printf("\t%d", line > 0 ? line : 0);
}

int main(void)
{
	char buf[8192];
	while (fgets(buf, sizeof(buf), stdin)) {
		char *tab = strchr(buf, '\t');
		if (!tab) {
			putchar('\n');
			continue;
		}
		*tab = 0;
		int first = 1;
		ll_lines_lookup(buf, strtoull(tab + 1, NULL, 16), frame, &first);
		putchar('\n');
		fflush(stdout);
	}
	return 0;
}
