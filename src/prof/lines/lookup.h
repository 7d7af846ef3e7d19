/*
 * lookup.h: file:line (and inlined calls) of code addresses, from the
 * objects' DWARF by elfutils' libdwfl: for locklab-lines, which the CLI runs
 * after a profiled program exits, and for locklab-attach, which annotates
 * its own text report.
 */
#ifndef LOCKLAB_LINES_LOOKUP_H
#define LOCKLAB_LINES_LOOKUP_H

#include <stdint.h>

/* One function of a frame: its name as linked (C++: mangled, for the caller to
 * demangle), else its source name; file NULL and line 0 where not known. */
typedef void (*ll_line_fn)(void *arg, const char *function, const char *file, int line);

/*
 * Calls fn for the function holding `addr` (as linked in the object at `path`:
 * a return address - 1 for a call) and then for each function it is inlined
 * into, innermost first.  Returns how many calls it made: 0 when nothing is
 * known.  Each object is opened once, on first use, and kept.
 */
int ll_lines_lookup(const char *path, uint64_t addr, ll_line_fn fn, void *arg);

#endif
