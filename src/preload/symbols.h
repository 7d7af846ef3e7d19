/*
 * symbols.h: names for code and static data inside the running process, as
 * plockstat prints them ("object`symbol+0x1c"), for the preloaded libraries:
 * the profiler names locks and frames with it at report time, the lock
 * swapper names a mutex the same way to decide whether it is one the user
 * chose (`locklab run --lock-for`).  Same code, so the same name; and the
 * same again for locklab-attach, which names another process's locks and
 * frames from its /proc/PID/maps (pl_syms_begin_pid).
 *
 * No malloc anywhere (the object list and symbol tables live in the owner's
 * arena, the files are mmap'd) unless the owner gives it __cxa_demangle, which
 * mallocs, and no lock but the loader's in pl_syms_begin.  Not thread-safe: one caller at
 * a time per struct pl_syms.
 */
#ifndef LOCKLAB_PRELOAD_SYMBOLS_H
#define LOCKLAB_PRELOAD_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arena.h"

struct pl_obj;

struct pl_syms {
	/* The owner's: */
	struct pl_arena *arena;
	/* C++ names: libstdc++'s __cxa_demangle, found by the owner (it mallocs).
	 * NULL: every name as linked. */
	char *(*cxa_demangle)(const char *name, char *buf, size_t *len, int *status);
	/* symbols.c's: */
	struct pl_obj *objs;
	int nobjs;
};

/* The loaded objects, afresh (their symbols are read when first asked for):
 * dl_iterate_phdr, which takes the loader's lock. */
void pl_syms_begin(struct pl_syms *s);
/* The objects mapped in another process, from /proc/PID/maps; each one's file is
 * read as that process mapped it (/proc/PID/map_files, else its path under
 * /proc/PID/root).  Uses stdio: not for inside a program.  0, or -1 (errno set)
 * when the maps cannot be read. */
int pl_syms_begin_pid(struct pl_syms *s, pid_t pid);
/* Make sure the object holding addr is known, by _dl_find_object (no lock, no
 * malloc: safe where the loader's lock may be held by someone waiting on the
 * caller); 0 when no object holds addr (the heap, a stack). */
int pl_syms_know(struct pl_syms *s, uintptr_t addr);
/* Unmap the files read; the arena is the owner's to reset. */
void pl_syms_end(struct pl_syms *s);

/* "object`symbol+0x1c" for a code address (a return address: looked up at pc-1);
 * returns 1 when a symbol named it, 0 for "object`+0xOFF" or a bare address. */
int pl_sym_code(struct pl_syms *s, uintptr_t pc, char *buf, size_t len);
/* Static data: "object`symbol+0x8"; returns 0 when addr is not in any object's data. */
int pl_sym_data(struct pl_syms *s, uintptr_t addr, char *buf, size_t len);
/* A symbol's name as printed: C++ names demangled, the parameter list dropped
 * (plockstat prints ha_innobase::rnd_next); others as they are. */
void pl_sym_demangle(struct pl_syms *s, const char *name, char *buf, size_t len);

/* Where a code address lies, for a symboliser outside the process: the object
 * (its index among those known, stable until pl_syms_end), its file, its load
 * bias (link-time address = pc - bias), its (first) executable segment as mapped, and
 * its GNU build-id in hex ("" when it has none).  Returns -1 when no object
 * holds pc. */
struct pl_where {
	const char *path;
	uintptr_t bias, start, limit, offset;
	char build_id[41];
};
int pl_sym_where(struct pl_syms *s, uintptr_t pc, struct pl_where *w);
/* The same for the object of that index; -1 when there is none. */
int pl_sym_object(struct pl_syms *s, int index, struct pl_where *w);

/* The running program's path (/proc/self/exe), read once; forget it after an exec. */
const char *pl_exe_name(void);
void pl_exe_forget(void);

#endif
