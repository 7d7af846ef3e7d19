/*
 * report.c: every thread's records, merged by lock name, as plockstat-style
 * text and as JSON (which the CLI turns into folded stacks and pprof).
 *
 * Locks are merged by name: a static lock is its symbol, so it is one lock;
 * heap locks are named by the site that initialised (or first used) them, so
 * all the locks one site makes (memcached's item locks, a buffer pool's page
 * latches) add up to one entry, with the number of instances.  Stable across
 * runs, and the way InnoDB's SHOW ENGINE INNODB MUTEX groups by creation site.
 *
 * Interval dumps report what happened since the previous interval dump: each
 * record keeps the values that dump saw (its base_*), which only this code
 * writes.  Exit and signal dumps report the whole run.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "prof.h"
#include "preload/handoff.h"
#include "preload/symbols.h"

/* liblocklab-swap.so's, when it is loaded behind us (locklab profile --lock). */
#pragma weak locklab_swap_describe
#define SWAP_DESCRIBED (1u << 17)   /* its longest description (64 sites) fits */

int prof_exit_signal;

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

struct item {
	const struct prof_rec *r;
	const struct prof_thread *t;
	uint64_t count, total, max;
	uint32_t hist[PROF_HIST];
};

#define BUCKETS (1u << 16)

#define MAX_OBJECTS 1024           /* as src/preload/symbols.c keeps at most */

struct ctx {
	struct group **bucket;
	struct group *top[G_NTAGS];   /* groups not under a lock: locks, threads */
	struct strnode **strings;     /* interned lock names and frames */
	int delta;
	uint8_t object_used[MAX_OBJECTS]; /* JSON: objects its frames lie in */
};

/* Memo keys (key, addr, site): a frame (pc, 0, 1), an interned string (hash, 0, 2),
 * a site named by its caller (pc, 0, 3), a lock (addr ^ site..., addr, site | 4). */
struct strnode {
	struct strnode *next;
	uint64_t key;                 /* a pc, or (addr ^ site) for lock names */
	uintptr_t addr, site;
	int is_static;                /* a lock: static; a frame: a symbol named it */
	const char *s;
	uint64_t weight;              /* a caller's name for a site: the waits behind it */
	struct strnode *best;         /* a site named by its caller: the heaviest name */
};

static const char *event_name[PROF_NEVENTS] = { "mutex", "cond", "read", "write", "futex",
						 "hold", "blame" };
static const char *event_title[PROF_NEVENTS] = {
	"Mutex block",
	"Mutex block after a condvar wakeup (reacquiring the mutex)",
	"R/W reader block",
	"R/W writer block",
	"Futex wait (syscall(SYS_futex))",
	"", ""
};
static const char *kind_name[PROF_NKINDS] = { "mutex", "rwlock", "futex" };

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = prof_arena_alloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* Names, memoised: symbol lookups are the expensive part of a report. */
static struct strnode *str_slot(struct ctx *c, uint64_t key, uintptr_t addr, uintptr_t site)
{
	struct strnode **b = &c->strings[(mix(key, site) >> 7) & (BUCKETS - 1)];
	for (struct strnode *n = *b; n; n = n->next)
		if (n->key == key && n->addr == addr && n->site == site)
			return n;
	struct strnode *n = prof_arena_alloc(sizeof(*n));
	if (!n)
		return NULL;
	*n = (struct strnode){ *b, key, addr, site, 0, NULL, 0, NULL };
	*b = n;
	return n;
}

static struct strnode *frame(struct ctx *c, uintptr_t pc)
{
	struct strnode *n = str_slot(c, pc, 0, 1);
	if (n && !n->s) {
		char buf[512];
		n->is_static = prof_sym_code(pc, buf, sizeof(buf));
		n->s = dup_str(buf);
	}
	return n;
}

static const char *frame_name(struct ctx *c, uintptr_t pc)
{
	if (!pc)
		return "(unknown)";
	struct strnode *n = frame(c, pc);
	return n && n->s ? n->s : "?";
}

/* Whether a symbol names the code at pc (not "object`+0xOFF"). */
static int frame_named(struct ctx *c, uintptr_t pc)
{
	struct strnode *n = pc ? frame(c, pc) : NULL;
	return n && n->is_static;
}

/* Interned: equal names are the same pointer, so groups compare pointers. */
static const char *intern(struct ctx *c, const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *p = s; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	struct strnode **b = &c->strings[(h >> 9) & (BUCKETS - 1)];
	for (struct strnode *n = *b; n; n = n->next)
		if (n->key == h && n->site == 2 && !strcmp(n->s, s))
			return n->s;
	struct strnode *n = prof_arena_alloc(sizeof(*n));
	const char *d = dup_str(s);
	if (!n || !d)
		return "?";
	*n = (struct strnode){ *b, h, 0, 2, 0, d, 0, NULL };
	*b = n;
	return d;
}

static const char *lock_name(struct ctx *c, uintptr_t addr, uintptr_t site, int *is_static)
{
	struct strnode *n = str_slot(c, addr ^ (site << 1) ^ 3, addr, site | 4);
	if (n && n->s) {
		*is_static = n->is_static;
		return n->s;
	}
	char buf[512];
	*is_static = prof_sym_data(addr, buf, sizeof(buf));
	struct strnode *by_caller = NULL;
	if (!*is_static && site && !frame_named(c, site))
		by_caller = str_slot(c, site, 0, 3);
	if (by_caller && by_caller->s)
		snprintf(buf, sizeof(buf), "%s", by_caller->s);
	else if (!*is_static && site)
		snprintf(buf, sizeof(buf), "%s", frame_name(c, site));
	else if (!*is_static)
		snprintf(buf, sizeof(buf), "0x%lx", (unsigned long)addr);
	const char *s = intern(c, buf);
	if (n) {
		n->s = s;
		n->is_static = *is_static;
	}
	return s;
}

/*
 * A lock with no symbol of its own (heap memory, an anonymous futex word) is
 * named by the site that made or first used it; when no symbol covers that
 * site either (a stripped program's internal function: mariadbd's InnoDB), by
 * the innermost named function on the stack of a wait made at that site,
 * "futex in mariadbd`trx_sys_t::register_rw+0x45": the code that took it.
 * Called for every record before any lock is named, so that every record of
 * the site finds the same name; where the waits at the site came through
 * several named callers, the one with the most waiting behind it wins.
 */
static void name_site_by_caller(struct ctx *c, const struct prof_rec *r)
{
	if (!PROF_EV_IS_WAIT(r->event) || !r->site || r->caller != r->site ||
	    frame_named(c, r->site))
		return;
	struct strnode *n = str_slot(c, r->site, 0, 3);
	int depth = 0;
	const uintptr_t *pcs = prof_stack_get(r->stack, &depth);
	if (!n || !depth || pcs[0] != r->site)
		return;
	for (int k = 1; k < depth; k++)
		if (frame_named(c, pcs[k])) {
			char buf[600];
			snprintf(buf, sizeof(buf), "%s in %s", kind_name[r->kind],
				 frame_name(c, pcs[k]));
			const char *name = intern(c, buf);
			struct strnode *cand = str_slot(c, r->site, (uintptr_t)name, 6);
			if (!cand)
				return;
			cand->s = name;
			/* Relaxed: a snapshot, as take() reads it. */
			cand->weight += atomic_load_explicit(&r->total_ns, memory_order_relaxed) + 1;
			if (!n->best || (n->best != cand && cand->weight > n->best->weight))
				n->best = cand;
			n->s = n->best->s;
			return;
		}
}

static void stats_add(struct stats *s, const struct item *it)
{
	s->count += it->count;
	s->total += it->total;
	if (it->max > s->max)
		s->max = it->max;
	for (int b = 0; b < PROF_HIST; b++)
		s->hist[b] += it->hist[b];
}

static uint64_t group_hash(uint8_t tag, uint8_t event, const char *lock,
			   const struct prof_thread *t, const uintptr_t *pcs, int npcs, uintptr_t addr)
{
	uint64_t h = mix(mix(mix(mix(tag, event), (uintptr_t)lock), (uintptr_t)t), addr);
	for (int i = 0; i < npcs; i++)
		h = mix(h, pcs[i]);
	return h;
}

static struct group *group_find(struct ctx *c, uint64_t h, uint8_t tag, uint8_t event,
				const char *lock, const struct prof_thread *t, const uintptr_t *pcs,
				int npcs, uintptr_t addr)
{
	for (struct group *g = c->bucket[h & (BUCKETS - 1)]; g; g = g->chain)
		if (g->hash == h && g->tag == tag && g->event == event && g->lock == lock &&
		    g->thread == t && g->addr == addr && g->npcs == npcs &&
		    !memcmp(g->pcs, pcs, sizeof(*pcs) * (size_t)npcs))
			return g;
	return NULL;
}

static struct group *group_get(struct ctx *c, uint8_t tag, uint8_t event, const char *lock,
			       const struct prof_thread *t, const uintptr_t *pcs, int npcs,
			       uintptr_t addr, struct group *parent, int *fresh)
{
	uint64_t h = group_hash(tag, event, lock, t, pcs, npcs, addr);
	struct group *g = group_find(c, h, tag, event, lock, t, pcs, npcs, addr);
	if (g)
		return g;
	struct group **b = &c->bucket[h & (BUCKETS - 1)];
	g = prof_arena_alloc(sizeof(*g));
	if (!g)
		return NULL;
	memset(g, 0, sizeof(*g));
	*g = (struct group){ .chain = *b, .hash = h, .tag = tag, .event = event, .lock = lock,
			     .thread = t, .pcs = pcs, .npcs = npcs, .addr = addr };
	*b = g;
	struct group **list = parent ? &parent->child[tag] : &c->top[tag];
	g->sibling = *list;
	*list = g;
	if (fresh)
		*fresh = 1;
	return g;
}

/* The values this report covers: the whole run, or the interval since the last one. */
static int take(struct ctx *c, struct prof_rec *r, struct item *it)
{
	/* Relaxed: counters the owner thread keeps bumping; a report is a snapshot. */
	uint64_t count = atomic_load_explicit(&r->count, memory_order_relaxed);
	uint64_t total = atomic_load_explicit(&r->total_ns, memory_order_relaxed);
	it->r = r;
	it->max = atomic_load_explicit(&r->max_ns, memory_order_relaxed);
	it->count = count;
	it->total = total;
	for (int b = 0; b < PROF_HIST; b++)
		it->hist[b] = atomic_load_explicit(&r->hist[b], memory_order_relaxed);
	if (c->delta) {
		it->count -= r->base_count;
		it->total -= r->base_total;
		/* Relaxed exchange: the interval's max restarts; a racing update lands in one side. */
		it->max = atomic_exchange_explicit(&r->imax_ns, 0, memory_order_relaxed);
		r->base_count = count;
		r->base_total = total;
		for (int b = 0; b < PROF_HIST; b++) {
			uint32_t now = it->hist[b];
			it->hist[b] -= r->base_hist[b];
			r->base_hist[b] = now;
		}
	}
	return it->count || it->total;
}

static void add_item(struct ctx *c, struct item *it)
{
	const struct prof_rec *r = it->r;
	int is_static = 0;
	const char *name = lock_name(c, r->addr, r->site, &is_static);
	int depth = 0;
	const uintptr_t *stack = prof_stack_get(r->stack, &depth);
	if (!depth) {
		stack = &r->caller;
		depth = 1;
	}
	int row_depth = prof_cfg.show_depth > 0 ? (depth < prof_cfg.show_depth ? depth
									       : prof_cfg.show_depth)
						: 1;
	const uintptr_t *row = prof_cfg.show_depth > 0 ? stack : &r->caller;
	int fresh = 0;

	struct group *l = group_get(c, G_LOCK, 0, name, NULL, NULL, 0, 0, NULL, &fresh);
	if (!l)
		return;
	if (fresh) {
		l->kind = r->kind;
		l->is_static = (uint8_t)is_static;
		l->site = is_static ? 0 : r->site;
		l->ev = prof_arena_alloc(sizeof(struct stats) * PROF_NEVENTS);
		if (!l->ev)
			return;
		memset(l->ev, 0, sizeof(struct stats) * PROF_NEVENTS);
	}
	fresh = 0;
	/* Address 0: a sampled hold of a heap lock, whose instances the lock table counts. */
	if (r->addr && group_get(c, G_INST, 0, name, NULL, NULL, 0, r->addr, l, &fresh) && fresh)
		l->instances++;
	stats_add(&l->ev[r->event], it);

	struct group *g;
	if (PROF_EV_IS_WAIT(r->event)) {
		stats_add(&l->s, it);
		if ((g = group_get(c, G_ROW, r->event, name, NULL, row, row_depth, 0, l, NULL)))
			stats_add(&g->s, it);
		if ((g = group_get(c, G_SITE, r->event, name, NULL, stack, depth, 0, l, NULL))) {
			stats_add(&g->s, it);
			struct group *st = group_get(c, G_SITE_THREAD, r->event, name, it->t, stack,
						     depth, 0, g, NULL);
			if (st)
				stats_add(&st->s, it);
		}
		if ((g = group_get(c, G_THREAD_LOCK, 0, name, it->t, NULL, 0, 0, l, NULL)))
			stats_add(&g->s, it);
		if ((g = group_get(c, G_THREAD, 0, NULL, it->t, NULL, 0, 0, NULL, NULL)))
			stats_add(&g->s, it);
	} else if (r->event == PROF_EV_BLAME) {
		if ((g = group_get(c, G_HOLDER_ROW, 0, name, NULL, row, row_depth, 0, l, NULL)))
			stats_add(&g->s, it);
		if ((g = group_get(c, G_HOLDER_SITE, 0, name, NULL, stack, depth, 0, l, NULL)))
			stats_add(&g->s, it);
	} else if (r->event == PROF_EV_HOLD) {
		if ((g = group_get(c, G_HOLD_ROW, 0, name, NULL, &r->caller, 1, 0, l, NULL)))
			stats_add(&g->s, it);
	}
}

/* A lock whose hold was sampled: one more instance of its name, if the report has it. */
static void add_sampled_instance(void *arg, uintptr_t addr, uintptr_t site)
{
	struct ctx *c = arg;
	int is_static = 0;
	const char *name = lock_name(c, addr, site, &is_static);
	struct group *l = group_find(c, group_hash(G_LOCK, 0, name, NULL, NULL, 0, 0), G_LOCK, 0,
				     name, NULL, NULL, 0, 0);
	int fresh = 0;
	if (l && group_get(c, G_INST, 0, name, NULL, NULL, 0, addr, l, &fresh) && fresh)
		l->instances++;
}

/* ------------------------------------------------------------ ordering */

static int before(const struct group *a, const struct group *b)
{
	if (a->s.total != b->s.total)
		return a->s.total > b->s.total;
	if (a->s.count != b->s.count)
		return a->s.count > b->s.count;
	if (a->lock && b->lock && a->lock != b->lock)
		return strcmp(a->lock, b->lock) < 0;
	return a->hash < b->hash;
}

/* Max-heap where "max" is the entry that sorts last (the least waited). */
static void sift(struct group **v, size_t i, size_t n)
{
	for (;;) {
		size_t k = 2 * i + 1;
		if (k >= n)
			return;
		if (k + 1 < n && before(v[k], v[k + 1]))
			k++;
		if (!before(v[i], v[k]))
			return;
		struct group *t = v[i];
		v[i] = v[k];
		v[k] = t;
		i = k;
	}
}

/* How sort_groups() filters. */
enum { KEEP_ALL, KEEP_FILTERED, KEEP_CONTENDED };

/* Sort v[0..k) best first; unless KEEP_ALL, drop what waited less than the minimum
 * (and, for KEEP_CONTENDED, what never waited) and keep the top N.  Returns the
 * length kept. */
static size_t sort_groups(struct group **v, size_t k, int filter)
{
	size_t kept = 0;
	for (size_t i = 0; i < k; i++)
		if (filter == KEEP_ALL ||
		    (v[i]->s.total >= prof_cfg.min_wait_ns &&
		     (filter != KEEP_CONTENDED || v[i]->s.count)))
			v[kept++] = v[i];
	k = kept;
	/* Heapsort (no allocation): a max-heap on "after", so the array ends best first. */
	for (size_t i = k / 2; i-- > 0;)
		sift(v, i, k);
	for (size_t end = k; end-- > 1;) {
		struct group *t = v[0];
		v[0] = v[end];
		v[end] = t;
		sift(v, 0, end);
	}
	if (filter && prof_cfg.top > 0 && k > (size_t)prof_cfg.top)
		k = (size_t)prof_cfg.top;
	return k;
}

/* A list as a sorted array; *n gets its length. */
static struct group **sorted(struct group *list, size_t *n, int filter)
{
	size_t cnt = 0;
	for (struct group *g = list; g; g = g->sibling)
		cnt++;
	struct group **v = prof_arena_alloc((cnt + 1) * sizeof(*v));
	*n = 0;
	if (!v)
		return NULL;
	size_t k = 0;
	for (struct group *g = list; g; g = g->sibling)
		v[k++] = g;
	*n = sort_groups(v, k, filter);
	return v;
}

/* --------------------------------------------------------------- text */

static void text_hist_and_stack(struct ctx *c, struct prof_buf *b, const struct stats *s,
				const uintptr_t *pcs, int npcs)
{
	int lo = PROF_HIST, hi = -1;
	for (int i = 0; i < PROF_HIST; i++)
		if (s->hist[i]) {
			if (i < lo)
				lo = i;
			hi = i;
		}
	int nhist = hi >= lo ? hi - lo + 1 : 0;
	prof_buf_printf(b, "\n%14s ---- Time Distribution --- %6s     Stack\n", "nsec", "count");
	uint64_t sum = 0;
	for (int i = lo; i <= hi; i++)
		sum += s->hist[i];
	for (int k = 0; k < nhist || k < npcs; k++) {
		if (k < nhist) {
			uint32_t v = s->hist[lo + k];
			int at = sum ? (int)((v * 24 + sum / 2) / sum) : 0;
			char bar[25];
			memset(bar, ' ', 24);
			memset(bar, '@', (size_t)(at > 24 ? 24 : at));
			bar[24] = 0;
			prof_buf_printf(b, "%14llu |%s| %6u     ", 1ull << (lo + k), bar, v);
		} else {
			prof_buf_printf(b, "%14s  %24s  %6s     ", "", "", "");
		}
		prof_buf_printf(b, "%s\n", k < npcs ? frame_name(c, pcs[k]) : "");
	}
	prof_buf_printf(b, "\n");
}

static int lock_width(struct group **v, size_t n)
{
	size_t w = 4;
	for (size_t i = 0; i < n; i++)
		if (strlen(v[i]->lock) > w)
			w = strlen(v[i]->lock);
	return (int)(w > 60 ? 60 : w);
}

/* A section of (lock, caller) rows of one tag and event, across all locks. */
static void text_rows(struct ctx *c, struct prof_buf *b, struct group **locks, size_t nlocks,
		      int tag, int event, const char *title, const char *who)
{
	size_t cnt = 0;
	for (size_t i = 0; i < nlocks; i++)
		for (struct group *g = locks[i]->child[tag]; g; g = g->sibling)
			cnt++;
	struct group **v = prof_arena_alloc((cnt + 1) * sizeof(*v));
	if (!v)
		return;
	size_t n = 0;
	for (size_t i = 0; i < nlocks; i++)
		for (struct group *g = locks[i]->child[tag]; g; g = g->sibling)
			if (tag != G_ROW || g->event == event)
				v[n++] = g;
	n = sort_groups(v, n, tag == G_HOLD_ROW ? KEEP_ALL : KEEP_FILTERED);
	/* Every lock ever sampled has a hold row: the longest total holds are enough. */
	size_t hold_rows = prof_cfg.top > 0 ? (size_t)prof_cfg.top : 20;
	if (tag == G_HOLD_ROW && n > hold_rows)
		n = hold_rows;
	if (!n)
		return;
	int w = lock_width(v, n);
	prof_buf_printf(b, "\n%s\n\n", title);
	if (tag == G_HOLDER_ROW)
		prof_buf_printf(b, "%10s %11s %10s %-*s %s\n", "Count", "nsec", "total-ms", w, "Lock",
				who);
	else
		prof_buf_printf(b, "%10s %11s %11s %10s %-*s %s\n", "Count", "nsec", "max-nsec",
				"total-ms", w, "Lock", who);
	for (size_t i = 0; i < n; i++) {
		struct group *g = v[i];
		uint64_t avg = g->s.count ? g->s.total / g->s.count : 0;
		if (prof_cfg.show_depth > 0 && tag != G_HOLD_ROW)
			prof_buf_printf(b, "%s\n", "-------------------------------------------------"
						   "------------------------------");
		if (tag == G_HOLDER_ROW)
			prof_buf_printf(b, "%10llu %11llu %10.3f %-*s %s\n",
					(unsigned long long)g->s.count, (unsigned long long)avg,
					(double)g->s.total / 1e6, w, g->lock,
					frame_name(c, g->pcs[0]));
		else
			prof_buf_printf(b, "%10llu %11llu %11llu %10.3f %-*s %s\n",
					(unsigned long long)g->s.count, (unsigned long long)avg,
					(unsigned long long)g->s.max, (double)g->s.total / 1e6, w,
					g->lock, frame_name(c, g->pcs[0]));
		if (prof_cfg.show_depth > 0 && tag != G_HOLD_ROW)
			text_hist_and_stack(c, b, &g->s, g->pcs, g->npcs);
	}
}

static void header(struct prof_buf *b, enum prof_dump_reason why, int delta, uint64_t now)
{
	static const char *reason[] = { "exit", "signal", "interval" };
	uint64_t from = delta ? prof_last_dump_ns : prof_start_ns;
	char killed[32] = "";
	if (why == PROF_DUMP_EXIT && prof_exit_signal)
		snprintf(killed, sizeof(killed), " (SIG%s)", sigabbrev_np(prof_exit_signal));
	prof_buf_printf(b, "locklab-prof: pid %d (%s), %s report%s, %.3f s%s, hold sampled 1 in %d\n",
			(int)getpid(), prof_exe_name(), reason[why], killed,
			(double)(now - from) / 1e9, delta ? " since the last interval" : "",
			prof_cfg.hold_every);
	char *what = locklab_swap_describe ? prof_arena_alloc(SWAP_DESCRIBED) : NULL;
	if (what) {
		locklab_swap_describe(0, what, SWAP_DESCRIBED);
		prof_buf_printf(b, "mutexes served by liblocklab-swap: %s\n", what);
	}
}

static void text_report(struct ctx *c, struct prof_buf *b, enum prof_dump_reason why,
			uint64_t now)
{
	size_t nlocks;
	struct group **locks = sorted(c->top[G_LOCK], &nlocks, KEEP_CONTENDED);
	header(b, why, c->delta, now);
	uint64_t events = 0, waited = 0;
	for (size_t i = 0; i < nlocks; i++) {
		events += locks[i]->s.count;
		waited += locks[i]->s.total;
	}
	if (!events) {
		prof_buf_printf(b, "no lock contention%s\n",
				prof_cfg.min_wait_ns ? " above the minimum wait" : "");
	} else {
		prof_buf_printf(b, "%llu contention events, %.3f ms waited in all\n",
				(unsigned long long)events, (double)waited / 1e6);
	}
	if (nlocks)
		prof_buf_printf(b, "\nLocks, by total wait\n\n%10s %11s %11s %10s %10s %-6s %-6s %6s %s\n",
			"Count", "nsec", "max-nsec", "total-ms", "hold-nsec", "Kind", "Where",
			"Inst", "Lock");
	for (size_t i = 0; i < nlocks; i++) {
		struct group *l = locks[i];
		const struct stats *h = &l->ev[PROF_EV_HOLD];
		char hold[24] = "-";
		if (h->count)
			snprintf(hold, sizeof(hold), "%llu", (unsigned long long)(h->total / h->count));
		prof_buf_printf(b, "%10llu %11llu %11llu %10.3f %10s %-6s %-6s %6u %s\n",
				(unsigned long long)l->s.count,
				(unsigned long long)(l->s.count ? l->s.total / l->s.count : 0),
				(unsigned long long)l->s.max, (double)l->s.total / 1e6, hold,
				kind_name[l->kind], l->is_static ? "static" : "heap", l->instances,
				l->lock);
	}
	for (int e = 0; e <= PROF_EV_FUTEX; e++)
		text_rows(c, b, locks, nlocks, G_ROW, e, event_title[e], "Caller");
	char title[128];
	snprintf(title, sizeof(title),
		 "Holders: waiting charged to the holder's release (waiter-ns, all waiters)");
	text_rows(c, b, locks, nlocks, G_HOLDER_ROW, 0, title, "Holder");
	snprintf(title, sizeof(title), "Lock hold (sampled, 1 acquisition in %d; longest in all)",
		 prof_cfg.hold_every);
	size_t nall;
	struct group **all = sorted(c->top[G_LOCK], &nall, KEEP_ALL);
	text_rows(c, b, all, nall, G_HOLD_ROW, 0, title, "Caller (of unlock)");

	if (prof_cfg.per_thread) {
		size_t nt;
		struct group **th = sorted(c->top[G_THREAD], &nt, KEEP_FILTERED);
		if (th && nt) {
			prof_buf_printf(b, "\nPer thread\n\n%10s %-16s %10s %10s %s\n", "TID", "Name",
					"Count", "total-ms", "Lock");
			for (size_t i = 0; i < nt; i++) {
				prof_buf_printf(b, "%10d %-16s %10llu %10.3f %s\n",
						(int)th[i]->thread->tid, th[i]->thread->name,
						(unsigned long long)th[i]->s.count,
						(double)th[i]->s.total / 1e6, "(all)");
				for (size_t k = 0; k < nlocks; k++)
					for (struct group *g = locks[k]->child[G_THREAD_LOCK]; g;
					     g = g->sibling)
						if (g->thread == th[i]->thread && g->s.count)
							prof_buf_printf(
								b, "%10s %-16s %10llu %10.3f %s\n", "",
								"", (unsigned long long)g->s.count,
								(double)g->s.total / 1e6, g->lock);
			}
		}
	}
	uint64_t lost_locks = prof_lock_dropped(), lost_stacks = prof_stack_dropped(), lost_recs = 0;
	for (const struct prof_thread *t = prof_threads(); t; t = t->next)
		lost_recs += t->dropped;
	if (lost_locks || lost_stacks || lost_recs)
		prof_buf_printf(b, "\nnot counted (tables full): %llu lock lookups, %llu stacks, "
				   "%llu records\n",
				(unsigned long long)lost_locks, (unsigned long long)lost_stacks,
				(unsigned long long)lost_recs);
}

/* --------------------------------------------------------------- JSON */

static void json_stats(struct prof_buf *b, const struct stats *s, const char *total_key)
{
	prof_buf_printf(b, "\"count\":%llu,\"%s\":%llu,\"max_ns\":%llu,\"hist\":[",
			(unsigned long long)s->count, total_key, (unsigned long long)s->total,
			(unsigned long long)s->max);
	int first = 1;
	for (int i = 0; i < PROF_HIST; i++)
		if (s->hist[i]) {
			prof_buf_printf(b, "%s[%llu,%u]", first ? "" : ",", 1ull << i, s->hist[i]);
			first = 0;
		}
	prof_buf_printf(b, "]");
}

/* [object, "0xLINK"]: where a return address lies, for symbolisers outside the
 * process (python/locklab/lines.py): the object's index in "objects" and the
 * address as linked (pc - bias); [-1, "0xPC"] in no known object. */
static void json_at(struct ctx *c, struct prof_buf *b, uintptr_t pc)
{
	struct pl_where w;
	int obj = pc ? prof_sym_where(pc, &w) : -1;
	if (obj >= 0 && obj < MAX_OBJECTS) {
		c->object_used[obj] = 1;
		prof_buf_printf(b, "[%d,\"0x%lx\"]", obj, (unsigned long)(pc - w.bias));
	} else {
		prof_buf_printf(b, "[-1,\"0x%lx\"]", (unsigned long)pc);
	}
}

static void json_stack(struct ctx *c, struct prof_buf *b, const uintptr_t *pcs, int n)
{
	prof_buf_printf(b, "\"stack\":[");
	for (int i = 0; i < n; i++) {
		if (i)
			prof_buf_printf(b, ",");
		prof_buf_json_str(b, frame_name(c, pcs[i]));
	}
	prof_buf_printf(b, "],\"at\":[");
	for (int i = 0; i < n; i++) {
		if (i)
			prof_buf_printf(b, ",");
		json_at(c, b, pcs[i]);
	}
	prof_buf_printf(b, "]");
}

/* ,"objects":[...]: the loaded objects the report's frames lie in. */
static void json_objects(struct ctx *c, struct prof_buf *b)
{
	prof_buf_printf(b, ",\"objects\":[");
	int first = 1;
	for (int i = 0; i < MAX_OBJECTS; i++) {
		if (!c->object_used[i])
			continue;
		struct pl_where w;
		if (prof_sym_object(i, &w) < 0)
			continue;
		prof_buf_printf(b, "%s{\"index\":%d,\"path\":", first ? "" : ",", i);
		prof_buf_json_str(b, w.path);
		prof_buf_printf(b, ",\"build_id\":\"%s\",\"bias\":\"0x%lx\",\"start\":\"0x%lx\","
				   "\"limit\":\"0x%lx\",\"offset\":\"0x%lx\"}",
				w.build_id, (unsigned long)w.bias, (unsigned long)w.start,
				(unsigned long)w.limit, (unsigned long)w.offset);
		first = 0;
	}
	prof_buf_printf(b, "]");
}

/* ,"threads":[{tid, name, count, wait_ns}...] for a list of per-thread groups. */
static void json_threads(struct prof_buf *b, struct group *list)
{
	size_t n;
	struct group **v = sorted(list, &n, KEEP_ALL);
	prof_buf_printf(b, ",\"threads\":[");
	for (size_t k = 0; v && k < n; k++) {
		prof_buf_printf(b, "%s{\"tid\":%d,\"name\":", k ? "," : "", (int)v[k]->thread->tid);
		prof_buf_json_str(b, v[k]->thread->name);
		prof_buf_printf(b, ",\"count\":%llu,\"wait_ns\":%llu}",
				(unsigned long long)v[k]->s.count, (unsigned long long)v[k]->s.total);
	}
	prof_buf_printf(b, "]");
}

static void json_report(struct ctx *c, struct prof_buf *b, enum prof_dump_reason why,
			uint64_t now, unsigned seq)
{
	static const char *reason[] = { "exit", "signal", "interval" };
	size_t nlocks;
	struct group **locks = sorted(c->top[G_LOCK], &nlocks, KEEP_FILTERED);
	uint64_t lost_recs = 0;
	for (const struct prof_thread *t = prof_threads(); t; t = t->next)
		lost_recs += t->dropped;
	prof_buf_printf(b, "{\"tool\":\"locklab-prof\",\"format\":1,\"pid\":%d,\"ppid\":%d,\"exe\":",
			(int)getpid(), (int)getppid());
	prof_buf_json_str(b, prof_exe_name());
	prof_buf_printf(b, ",\"signal\":%d", why == PROF_DUMP_EXIT ? prof_exit_signal : 0);
	/* Which locks served the mutexes: null when glibc's did (no swapper loaded). */
	char *swap = locklab_swap_describe ? prof_arena_alloc(SWAP_DESCRIBED) : NULL;
	if (swap)
		locklab_swap_describe(1, swap, SWAP_DESCRIBED);
	prof_buf_printf(b, ",\"swap\":%s", swap ? swap : "null");
	prof_buf_printf(b, ",\"reason\":\"%s\",\"seq\":%u,\"delta\":%s,\"start_ns\":%llu,"
			   "\"end_ns\":%llu,\"hold_every\":%d,\"depth\":%d,"
			   "\"dropped\":{\"locks\":%llu,\"stacks\":%llu,\"records\":%llu},\"locks\":[",
			reason[why], seq, c->delta ? "true" : "false",
			(unsigned long long)(c->delta ? prof_last_dump_ns : prof_start_ns),
			(unsigned long long)now, prof_cfg.hold_every, prof_cfg.depth,
			(unsigned long long)prof_lock_dropped(), (unsigned long long)prof_stack_dropped(),
			(unsigned long long)lost_recs);
	for (size_t i = 0; locks && i < nlocks; i++) {
		struct group *l = locks[i];
		prof_buf_printf(b, "%s\n{\"name\":", i ? "," : "");
		prof_buf_json_str(b, l->lock);
		prof_buf_printf(b, ",\"kind\":\"%s\",\"where\":\"%s\",\"instances\":%u,",
				kind_name[l->kind], l->is_static ? "static" : "heap", l->instances);
		if (l->site) {   /* the site it is named after, as a frame */
			prof_buf_printf(b, "\"site\":");
			prof_buf_json_str(b, frame_name(c, l->site));
			prof_buf_printf(b, ",\"site_at\":");
			json_at(c, b, l->site);
			prof_buf_printf(b, ",");
		}
		json_stats(b, &l->s, "wait_ns");
		const struct stats *h = &l->ev[PROF_EV_HOLD];
		prof_buf_printf(b, ",\"hold\":{\"samples\":%llu,\"total_ns\":%llu,\"max_ns\":%llu}",
				(unsigned long long)h->count, (unsigned long long)h->total,
				(unsigned long long)h->max);
		size_t n;
		struct group **v = sorted(l->child[G_SITE], &n, KEEP_FILTERED);
		prof_buf_printf(b, ",\"events\":[");
		for (size_t k = 0; v && k < n; k++) {
			prof_buf_printf(b, "%s{\"event\":\"%s\",", k ? "," : "", event_name[v[k]->event]);
			json_stats(b, &v[k]->s, "wait_ns");
			prof_buf_printf(b, ",");
			json_stack(c, b, v[k]->pcs, v[k]->npcs);
			json_threads(b, v[k]->child[G_SITE_THREAD]);
			prof_buf_printf(b, "}");
		}
		v = sorted(l->child[G_HOLDER_SITE], &n, KEEP_FILTERED);
		prof_buf_printf(b, "],\"holders\":[");
		for (size_t k = 0; v && k < n; k++) {
			prof_buf_printf(b, "%s{\"count\":%llu,\"blame_ns\":%llu,", k ? "," : "",
					(unsigned long long)v[k]->s.count,
					(unsigned long long)v[k]->s.total);
			json_stack(c, b, v[k]->pcs, v[k]->npcs);
			prof_buf_printf(b, "}");
		}
		prof_buf_printf(b, "]");
		json_threads(b, l->child[G_THREAD_LOCK]);
		prof_buf_printf(b, "}");
	}
	prof_buf_printf(b, "]");
	json_threads(b, c->top[G_THREAD]);
	json_objects(c, b);
	prof_buf_printf(b, "}\n");
}

/* ------------------------------------------------------------ timeline */

/* A lock's index in the trace's "locks" list: one entry per name. */
static uint32_t trace_lock_index(struct ctx *c, struct prof_buf *names, uint32_t *nnames,
				 uintptr_t addr, uintptr_t site)
{
	int is_static;
	const char *name = lock_name(c, addr, site, &is_static);
	struct strnode *n = str_slot(c, (uintptr_t)name, 0, 5);
	if (!n)
		return 0;
	if (!n->is_static) {
		prof_buf_printf(names, "%s", *nnames ? "," : "");
		prof_buf_json_str(names, name);
		n->is_static = (int)++*nnames;
	}
	return (uint32_t)n->is_static - 1;
}

/*
 * {"pid", "locks": [names], "threads": [{tid, name, waits, dropped, "events":
 * [[start_ns, wait_ns, lock, "event"], ...]}]}: each thread's last waits, oldest
 * first, for python/locklab/profile.py to turn into a Chrome trace.
 */
static void trace_report(struct ctx *c, struct prof_buf *b)
{
	struct prof_buf names = { 0 };
	uint32_t nnames = 0;
	prof_buf_printf(b, "{\"pid\":%d,\"capacity\":%u,\"threads\":[", (int)getpid(),
			prof_cfg.trace);
	int first = 1;
	for (struct prof_thread *t = prof_threads(); t; t = t->next) {
		if (!t->trace)
			continue;
		/* Acquire: pairs with the owner's release; slots below n are complete. */
		uint64_t n = atomic_load_explicit(&t->trace_n, memory_order_acquire);
		uint64_t lo = n > t->trace_cap ? n - t->trace_cap : 0;
		prof_buf_printf(b, "%s\n{\"tid\":%d,\"name\":", first ? "" : ",", (int)t->tid);
		prof_buf_json_str(b, t->name);
		prof_buf_printf(b, ",\"events\":[");
		first = 0;
		uint64_t kept = 0;
		for (uint64_t k = lo; k < n; k++) {
			const struct prof_trace_ev *e = &t->trace[k % t->trace_cap];
			uint64_t t0 = atomic_load_explicit(&e->t0, memory_order_relaxed);
			uint64_t ns = atomic_load_explicit(&e->ns, memory_order_relaxed);
			uintptr_t addr = atomic_load_explicit(&e->addr, memory_order_relaxed);
			uintptr_t site = atomic_load_explicit(&e->site, memory_order_relaxed);
			uint32_t what = atomic_load_explicit(&e->what, memory_order_relaxed);
			/* The slot is still wait k unless the thread has gone a whole ring on. */
			atomic_thread_fence(memory_order_acquire);
			uint64_t now_n = atomic_load_explicit(&t->trace_n, memory_order_relaxed);
			if (now_n - k > t->trace_cap || (what & 0xff) >= PROF_NEVENTS)
				continue;
			uint32_t lock = trace_lock_index(c, &names, &nnames, addr, site);
			prof_buf_printf(b, "%s[%llu,%llu,%u,\"%s\"]", kept ? "," : "",
					(unsigned long long)t0, (unsigned long long)ns, lock,
					event_name[what & 0xff]);
			kept++;
		}
		prof_buf_printf(b, "],\"waits\":%llu,\"dropped\":%llu}", (unsigned long long)n,
				(unsigned long long)(n - kept));
	}
	prof_buf_printf(b, "],\"locks\":[%s]}\n", names.p && !names.failed ? names.p : "");
	if (names.failed)
		b->failed = 1;
	prof_buf_free(&names);
}

/* ---------------------------------------------------------------- entry */

/* Threads often name themselves after their first event: read the names again. */
static void refresh_names(void)
{
	for (struct prof_thread *t = prof_threads(); t; t = t->next) {
		char path[64], name[16];
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)t->tid);
		int n = prof_read_file(path, name, sizeof(name));
		if (n > 0 && name[n - 1] == '\n')
			n--;
		if (n > 0) {
			name[n] = 0;
			memcpy(t->name, name, (size_t)n + 1);
		}
	}
}

void prof_report(enum prof_dump_reason why, struct prof_buf *text, struct prof_buf *json,
		 struct prof_buf *trace)
{
	static unsigned seq;
	struct ctx c = { 0 };
	uint64_t now = prof_now();
	c.delta = why == PROF_DUMP_INTERVAL;
	c.bucket = prof_arena_alloc(BUCKETS * sizeof(*c.bucket));
	c.strings = prof_arena_alloc(BUCKETS * sizeof(*c.strings));
	if (!c.bucket || !c.strings) {
		prof_arena_reset();
		return;
	}
	memset(c.bucket, 0, BUCKETS * sizeof(*c.bucket));
	memset(c.strings, 0, BUCKETS * sizeof(*c.strings));
	prof_sym_begin();
	refresh_names();
	for (struct prof_thread *t = prof_threads(); t; t = t->next) {
		/* Acquire: as below. */
		uint32_t n = atomic_load_explicit(&t->nrec, memory_order_acquire);
		for (uint32_t k = 0; k < n; k++)
			name_site_by_caller(&c, &t->recs[t->used[k]]);
	}
	for (struct prof_thread *t = prof_threads(); t; t = t->next) {
		/* Acquire: pairs with the owner's release of nrec: the keys of used[0..n)
		 * are complete.  Only the records in use are read (see prof.h). */
		uint32_t n = atomic_load_explicit(&t->nrec, memory_order_acquire);
		for (uint32_t k = 0; k < n; k++) {
			struct prof_rec *r = &t->recs[t->used[k]];
			struct item it;
			it.t = t;
			if (take(&c, r, &it))
				add_item(&c, &it);
		}
	}
	prof_lock_each_sampled(add_sampled_instance, &c);
	if (text)
		text_report(&c, text, why, now);
	if (json)
		json_report(&c, json, why, now, seq);
	if (trace)
		trace_report(&c, trace);
	seq++;
	if (c.delta)
		prof_last_dump_ns = now;
	prof_sym_end();
	prof_arena_reset();
}
