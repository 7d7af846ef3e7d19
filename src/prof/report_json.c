/*
 * report_json.c: the profile as JSON, which the CLI turns into folded stacks
 * and pprof, with where each frame lies for symbolisers outside the process;
 * and the timeline of each thread's last waits (report.h).
 */
#include <stdio.h>

#include "preload/symbols.h"
#include "report.h"

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
 * process (python/locklab/profile/lines.py): the object's index in "objects" and the
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
		prof_buf_json_str(b, report_frame_name(c, pcs[i]));
	}
	prof_buf_printf(b, "],\"at\":[");
	for (int i = 0; i < n; i++) {
		if (i)
			prof_buf_printf(b, ",");
		json_at(c, b, pcs[i]);
	}
	prof_buf_printf(b, "]");
	if (!prof_subject.json_lines)
		return;
	prof_buf_printf(b, ",\"lines\":[");
	for (int i = 0; i < n; i++) {
		if (i)
			prof_buf_printf(b, ",");
		prof_subject.json_lines(b, pcs[i]);
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
	struct group **v = report_sorted(list, &n, KEEP_ALL);
	prof_buf_printf(b, ",\"threads\":[");
	for (size_t k = 0; v && k < n; k++) {
		prof_buf_printf(b, "%s{\"tid\":%d,\"name\":", k ? "," : "", (int)v[k]->thread->tid);
		prof_buf_json_str(b, v[k]->thread->name);
		prof_buf_printf(b, ",\"count\":%llu,\"wait_ns\":%llu}",
				(unsigned long long)v[k]->s.count, (unsigned long long)v[k]->s.total);
	}
	prof_buf_printf(b, "]");
}

void report_json(struct ctx *c, struct prof_buf *b, enum prof_dump_reason why, uint64_t now,
		 unsigned seq)
{
	size_t nlocks;
	struct group **locks = report_sorted(c->top[G_LOCK], &nlocks, KEEP_FILTERED);
	uint64_t lost_recs = 0;
	for (const struct prof_thread *t = prof_threads(); t; t = t->next)
		lost_recs += t->dropped;
	prof_buf_printf(b, "{\"tool\":\"%s\",\"format\":1,\"pid\":%d,\"ppid\":%d,\"exe\":",
			report_tool(), (int)report_pid(), (int)report_ppid());
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
			report_reason_name[why], seq, c->delta ? "true" : "false",
			(unsigned long long)(c->delta ? prof_last_dump_ns : prof_start_ns),
			(unsigned long long)now, prof_cfg.hold_every, prof_cfg.depth,
			(unsigned long long)prof_lock_dropped(), (unsigned long long)prof_stack_dropped(),
			(unsigned long long)lost_recs);
	for (size_t i = 0; locks && i < nlocks; i++) {
		struct group *l = locks[i];
		prof_buf_printf(b, "%s\n{\"name\":", i ? "," : "");
		prof_buf_json_str(b, l->lock);
		prof_buf_printf(b, ",\"kind\":\"%s\",\"where\":\"%s\",\"instances\":%u,",
				report_kind_name[l->kind], l->is_static ? "static" : "heap", l->instances);
		if (l->site) {   /* the site it is named after, as a frame */
			prof_buf_printf(b, "\"site\":");
			prof_buf_json_str(b, report_frame_name(c, l->site));
			prof_buf_printf(b, ",\"site_at\":");
			json_at(c, b, l->site);
			if (prof_subject.json_lines) {
				prof_buf_printf(b, ",\"site_lines\":");
				prof_subject.json_lines(b, l->site);
			}
			prof_buf_printf(b, ",");
		}
		json_stats(b, &l->s, "wait_ns");
		const struct stats *h = &l->ev[PROF_EV_HOLD];
		prof_buf_printf(b, ",\"hold\":{\"samples\":%llu,\"total_ns\":%llu,\"max_ns\":%llu}",
				(unsigned long long)h->count, (unsigned long long)h->total,
				(unsigned long long)h->max);
		size_t n;
		struct group **v = report_sorted(l->child[G_SITE], &n, KEEP_FILTERED);
		prof_buf_printf(b, ",\"events\":[");
		for (size_t k = 0; v && k < n; k++) {
			prof_buf_printf(b, "%s{\"event\":\"%s\",", k ? "," : "", report_event_name[v[k]->event]);
			json_stats(b, &v[k]->s, "wait_ns");
			prof_buf_printf(b, ",");
			json_stack(c, b, v[k]->pcs, v[k]->npcs);
			json_threads(b, v[k]->child[G_SITE_THREAD]);
			prof_buf_printf(b, "}");
		}
		v = report_sorted(l->child[G_HOLDER_SITE], &n, KEEP_FILTERED);
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
	if (prof_subject.json_members)
		prof_subject.json_members(b);
	prof_buf_printf(b, "}\n");
}

/* ------------------------------------------------------------ timeline */

/* A lock's index in the trace's "locks" list: one entry per name. */
static uint32_t trace_lock_index(struct ctx *c, struct prof_buf *names, uint32_t *nnames,
				 uintptr_t addr, uintptr_t site)
{
	int is_static;
	const char *name = report_lock_name(c, addr, site, &is_static);
	struct strnode *n = report_str_slot(c, (uintptr_t)name, 0, 5);
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
 * first, for python/locklab/profile/trace.py to turn into a Chrome trace.
 */
void report_trace(struct ctx *c, struct prof_buf *b)
{
	struct prof_buf names = { 0 };
	uint32_t nnames = 0;
	prof_buf_printf(b, "{\"pid\":%d,\"capacity\":%u,\"threads\":[", (int)report_pid(),
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
					report_event_name[what & 0xff]);
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
