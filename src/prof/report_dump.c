/*
 * report_dump.c: prof_report(), one report from start to end: the report
 * arena, the thread names read again, the merge (report.c), then each
 * format asked for (report_text.c, report_json.c), and the interval's mark.
 */
#include <stdio.h>
#include <string.h>

#include "report.h"

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
	c.bucket = prof_arena_alloc(REPORT_BUCKETS * sizeof(*c.bucket));
	c.strings = prof_arena_alloc(REPORT_BUCKETS * sizeof(*c.strings));
	if (!c.bucket || !c.strings) {
		prof_arena_reset();
		return;
	}
	memset(c.bucket, 0, REPORT_BUCKETS * sizeof(*c.bucket));
	memset(c.strings, 0, REPORT_BUCKETS * sizeof(*c.strings));
	prof_sym_begin();
	refresh_names();
	report_merge(&c);
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
