/*
 * report.h: the report's merged view, shared by its three files:
 *
 *   report_dump.c  prof_report(), the entry: one report from start to end
 *   report.c       every thread's records merged into groups by lock name
 *                  (names, groups, ordering)
 *   report_text.c  the plockstat-style text
 *   report_json.c  the JSON report and the timeline of recent waits
 *
 * All of it runs in the reporter only (prof.h's table), on memory from the
 * report arena, freed when the report is done.
 */
#ifndef LOCKLAB_PROF_REPORT_H
#define LOCKLAB_PROF_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "prof.h"
#include "preload/handoff.h"

/* liblocklab-swap.so's, when it is loaded behind us (locklab profile --lock). */
#pragma weak locklab_swap_describe
#define SWAP_DESCRIBED (1u << 17)   /* its longest description (64 sites) fits */

struct stats {
	uint64_t count, total, max;
	uint32_t hist[PROF_HIST];
};

enum tag { G_LOCK, G_INST, G_ROW, G_SITE, G_SITE_THREAD, G_HOLDER_ROW, G_HOLDER_SITE, G_HOLD_ROW, G_THREAD_LOCK,
	   G_THREAD, G_NTAGS };

struct group {
	struct group *chain;      /* hash bucket */
	struct group *sibling;    /* the next child of the same lock (or of the report) */
	uint64_t hash;
	uint8_t tag, event, kind, is_static;
	const char *lock;         /* interned name */
	const struct prof_thread *thread;
	const uintptr_t *pcs;
	int npcs;
	uintptr_t addr;
	struct stats s;
	/* G_LOCK only: */
	uint32_t instances;
	uintptr_t site;           /* a heap lock's naming site (JSON) */
	struct stats *ev;         /* per event */
	struct group *child[G_NTAGS];
};

#define REPORT_BUCKETS (1u << 16)  /* hash buckets of groups and of strings */
#define MAX_OBJECTS 1024           /* as src/preload/symbols.c keeps at most */

struct ctx {
	struct group **bucket;
	struct group *top[G_NTAGS];   /* groups not under a lock: locks, threads */
	struct strnode **strings;     /* interned lock names and frames */
	int delta;
	uint8_t object_used[MAX_OBJECTS]; /* JSON: objects its frames lie in */
};

/* Memo keys (key, addr, site): a frame (pc, 0, 1), an interned string (hash, 0, 2),
 * a site named by its caller (pc, 0, 3), a lock (addr ^ site..., addr, site | 4),
 * the timeline's lock index (name, 0, 5). */
struct strnode {
	struct strnode *next;
	uint64_t key;                 /* a pc, or (addr ^ site) for lock names */
	uintptr_t addr, site;
	int is_static;                /* a lock: static; a frame: a symbol named it */
	const char *s;
	uint64_t weight;              /* a caller's name for a site: the waits behind it */
	struct strnode *best;         /* a site named by its caller: the heaviest name */
};

extern const char *const report_event_name[PROF_NEVENTS];
extern const char *const report_kind_name[PROF_NKINDS];
extern const char *const report_reason_name[];   /* by enum prof_dump_reason */

/* Whose report (prof_subject): its process, and the tool that writes it. */
pid_t report_pid(void);
pid_t report_ppid(void);
const char *report_tool(void);

/* Every thread's records, and the sampled instances, merged into c's groups. */
void report_merge(struct ctx *c);

/* Names, memoised: symbol lookups are the expensive part of a report. */
struct strnode *report_str_slot(struct ctx *c, uint64_t key, uintptr_t addr, uintptr_t site);
/* The code at pc as "object`symbol+0xOFF" ("(unknown)" for 0). */
const char *report_frame_name(struct ctx *c, uintptr_t pc);
/* The name a lock is merged under; *is_static: a symbol names it. */
const char *report_lock_name(struct ctx *c, uintptr_t addr, uintptr_t site, int *is_static);

/* How report_sort_groups() filters. */
enum { KEEP_ALL, KEEP_FILTERED, KEEP_CONTENDED };
/* Sort v[0..k) best first; unless KEEP_ALL, drop what waited less than the minimum
 * (and, for KEEP_CONTENDED, what never waited) and keep the top N.  Returns the
 * length kept. */
size_t report_sort_groups(struct group **v, size_t k, int filter);
/* A list as a sorted array; *n gets its length. */
struct group **report_sorted(struct group *list, size_t *n, int filter);

/* The sections a report can have, from the merged view (report_text.c, report_json.c). */
void report_text(struct ctx *c, struct prof_buf *b, enum prof_dump_reason why, uint64_t now);
void report_json(struct ctx *c, struct prof_buf *b, enum prof_dump_reason why, uint64_t now,
		 unsigned seq);
void report_trace(struct ctx *c, struct prof_buf *b);

#endif
