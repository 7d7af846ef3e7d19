/*
 * report.c: every thread's records, merged by lock name, as plockstat-style
 * text and as JSON (which the CLI turns into folded stacks and pprof): the
 * merging, and the entry (report.h: the files of the report).
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
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "report.h"

int prof_exit_signal;
struct prof_subject prof_subject;

const char *const report_reason_name[] = { "exit", "signal", "interval", "detach" };

pid_t report_pid(void)
{
	return prof_subject.pid ? prof_subject.pid : getpid();
}

pid_t report_ppid(void)
{
	return prof_subject.pid ? prof_subject.ppid : getppid();
}

const char *report_tool(void)
{
	return prof_subject.tool ? prof_subject.tool : "locklab-prof";
}

struct item {
	const struct prof_rec *r;
	const struct prof_thread *t;
	uint64_t count, total, max;
	uint32_t hist[PROF_HIST];
};

#define BUCKETS (1u << 16)

const char *const report_event_name[PROF_NEVENTS] = { "mutex", "cond", "read", "write",
							"futex", "signal", "hold", "blame" };
const char *const report_kind_name[PROF_NKINDS] = { "mutex", "rwlock", "futex", "condvar" };

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

struct strnode *report_str_slot(struct ctx *c, uint64_t key, uintptr_t addr, uintptr_t site)
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
	struct strnode *n = report_str_slot(c, pc, 0, 1);
	if (n && !n->s) {
		char buf[512];
		n->is_static = prof_sym_code(pc, buf, sizeof(buf));
		n->s = dup_str(buf);
	}
	return n;
}

const char *report_frame_name(struct ctx *c, uintptr_t pc)
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

const char *report_lock_name(struct ctx *c, uintptr_t addr, uintptr_t site, int *is_static)
{
	struct strnode *n = report_str_slot(c, addr ^ (site << 1) ^ 3, addr, site | 4);
	if (n && n->s) {
		*is_static = n->is_static;
		return n->s;
	}
	char buf[512];
	*is_static = prof_sym_data(addr, buf, sizeof(buf));
	struct strnode *by_caller = NULL;
	if (!*is_static && site && !frame_named(c, site))
		by_caller = report_str_slot(c, site, 0, 3);
	if (by_caller && by_caller->s)
		snprintf(buf, sizeof(buf), "%s", by_caller->s);
	else if (!*is_static && site)
		snprintf(buf, sizeof(buf), "%s", report_frame_name(c, site));
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
	struct strnode *n = report_str_slot(c, r->site, 0, 3);
	int depth = 0;
	const uintptr_t *pcs = prof_stack_get(r->stack, &depth);
	if (!n || !depth || pcs[0] != r->site)
		return;
	for (int k = 1; k < depth; k++)
		if (frame_named(c, pcs[k])) {
			char buf[600];
			snprintf(buf, sizeof(buf), "%s in %s", report_kind_name[r->kind],
				 report_frame_name(c, pcs[k]));
			const char *name = intern(c, buf);
			struct strnode *cand = report_str_slot(c, r->site, (uintptr_t)name, 6);
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
		/* No stack (npcs 0) may have no array either: memcmp wants one. */
		if (g->hash == h && g->tag == tag && g->event == event && g->lock == lock &&
		    g->thread == t && g->addr == addr && g->npcs == npcs &&
		    (npcs == 0 || !memcmp(g->pcs, pcs, sizeof(*pcs) * (size_t)npcs)))
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
	const char *name = report_lock_name(c, r->addr, r->site, &is_static);
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
	const char *name = report_lock_name(c, addr, site, &is_static);
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

size_t report_sort_groups(struct group **v, size_t k, int filter)
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

struct group **report_sorted(struct group *list, size_t *n, int filter)
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
	*n = report_sort_groups(v, k, filter);
	return v;
}

/* ---------------------------------------------------------------- entry */

/* Threads often name themselves after their first event: read the names again. */
static void refresh_names(void)
{
	for (struct prof_thread *t = prof_threads(); t; t = t->next) {
		char path[64], name[16];
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)report_pid(), (int)t->tid);
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
	uint64_t now = prof_subject.end_ns ? prof_subject.end_ns : prof_now();
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
		report_text(&c, text, why, now);
	if (json)
		report_json(&c, json, why, now, seq);
	if (trace)
		report_trace(&c, trace);
	seq++;
	if (c.delta)
		prof_last_dump_ns = now;
	prof_sym_end();
	prof_arena_reset();
}
