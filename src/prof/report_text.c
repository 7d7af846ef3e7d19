/*
 * report_text.c: the profile as plockstat prints it: the locks by total
 * wait, the callers that waited per event, the holders that made them wait,
 * sampled holds, and per thread (report.h).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

static const char *const event_title[PROF_NEVENTS] = {
	"Mutex block",
	"Mutex block after a condvar wakeup (reacquiring the mutex)",
	"R/W reader block",
	"R/W writer block",
	"Futex wait (syscall(SYS_futex))",
	"Condvar wait for a signal (pthread_cond_wait: not lock contention)",
	"", ""
};

/* A frame ending a line: its name, and where the subject knows it, "  at FILE:LINE". */
static void text_frame(struct ctx *c, struct prof_buf *b, uintptr_t pc)
{
	const char *where = prof_subject.text_where && pc ? prof_subject.text_where(pc) : "";
	prof_buf_printf(b, "%s%s%s\n", report_frame_name(c, pc), *where ? "  at " : "", where);
}

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
		if (k < npcs)
			text_frame(c, b, pcs[k]);
		else
			prof_buf_printf(b, "\n");
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
	n = report_sort_groups(v, n, tag == G_HOLD_ROW ? KEEP_ALL : KEEP_FILTERED);
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
			prof_buf_printf(b, "%10llu %11llu %10.3f %-*s ",
					(unsigned long long)g->s.count, (unsigned long long)avg,
					(double)g->s.total / 1e6, w, g->lock);
		else
			prof_buf_printf(b, "%10llu %11llu %11llu %10.3f %-*s ",
					(unsigned long long)g->s.count, (unsigned long long)avg,
					(unsigned long long)g->s.max, (double)g->s.total / 1e6, w,
					g->lock);
		text_frame(c, b, g->pcs[0]);
		if (prof_cfg.show_depth > 0 && tag != G_HOLD_ROW)
			text_hist_and_stack(c, b, &g->s, g->pcs, g->npcs);
	}
}

static void header(struct prof_buf *b, enum prof_dump_reason why, int delta, uint64_t now)
{
	uint64_t from = delta ? prof_last_dump_ns : prof_start_ns;
	char killed[32] = "", holds[64];
	if (why == PROF_DUMP_EXIT && prof_exit_signal)
		snprintf(killed, sizeof(killed), " (SIG%s)", sigabbrev_np(prof_exit_signal));
	if (prof_subject.traced)
		snprintf(holds, sizeof(holds), "futex waits traced (hold times are not seen)");
	else
		snprintf(holds, sizeof(holds), "hold sampled 1 in %d", prof_cfg.hold_every);
	prof_buf_printf(b, "%s: pid %d (%s), %s report%s, %.3f s%s, %s\n", report_tool(),
			(int)report_pid(), prof_exe_name(), report_reason_name[why], killed,
			(double)(now - from) / 1e9, delta ? " since the last interval" : "", holds);
	if (prof_subject.text_notes)
		prof_subject.text_notes(b);
	char *what = locklab_swap_describe ? prof_arena_alloc(SWAP_DESCRIBED) : NULL;
	if (what) {
		locklab_swap_describe(0, what, SWAP_DESCRIBED);
		prof_buf_printf(b, "mutexes served by liblocklab-swap: %s\n", what);
	}
}

void report_text(struct ctx *c, struct prof_buf *b, enum prof_dump_reason why, uint64_t now)
{
	size_t nlocks;
	struct group **locks = report_sorted(c->top[G_LOCK], &nlocks, KEEP_CONTENDED);
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
		prof_buf_printf(b, "%10llu %11llu %11llu %10.3f %10s %-6s %-6s %6u ",
				(unsigned long long)l->s.count,
				(unsigned long long)(l->s.count ? l->s.total / l->s.count : 0),
				(unsigned long long)l->s.max, (double)l->s.total / 1e6, hold,
				report_kind_name[l->kind], l->is_static ? "static" : "heap",
				l->instances);
		/* A heap lock named by its site is that frame. */
		if (!l->is_static && l->site && !strcmp(l->lock, report_frame_name(c, l->site)))
			text_frame(c, b, l->site);
		else
			prof_buf_printf(b, "%s\n", l->lock);
	}
	for (int e = 0; PROF_EV_IS_WAIT(e); e++)
		text_rows(c, b, locks, nlocks, G_ROW, e, event_title[e], "Caller");
	char title[128];
	if (prof_subject.traced)
		text_rows(c, b, locks, nlocks, G_HOLDER_ROW, 0,
			  "Wakers: waiting charged to the wake that ended it (waiter-ns, all waiters)",
			  "Waker");
	else
		text_rows(c, b, locks, nlocks, G_HOLDER_ROW, 0,
			  "Holders: waiting charged to the holder's release (waiter-ns, all waiters)",
			  "Holder");
	snprintf(title, sizeof(title), "Lock hold (sampled, 1 acquisition in %d; longest in all)",
		 prof_cfg.hold_every);
	size_t nall;
	struct group **all = report_sorted(c->top[G_LOCK], &nall, KEEP_ALL);
	text_rows(c, b, all, nall, G_HOLD_ROW, 0, title, "Caller (of unlock)");

	if (prof_cfg.per_thread) {
		size_t nt;
		struct group **th = report_sorted(c->top[G_THREAD], &nt, KEEP_FILTERED);
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
