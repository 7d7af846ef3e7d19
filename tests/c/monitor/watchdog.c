/*
 * watchdog.c: test_monitor watchdog LOCK, a held lock: the watchdog reports
 * the waiter, the holder and its file:line.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

struct reports {
	pthread_mutex_t mu;
	int count;
	struct ll_watchdog_report first;
};

static void on_report(const struct ll_watchdog_report *r, void *arg)
{
	struct reports *box = arg;
	pthread_mutex_lock(&box->mu);
	if (box->count++ == 0)
		box->first = *r;
	pthread_mutex_unlock(&box->mu);
}

static int reports_seen(struct reports *box, struct ll_watchdog_report *first)
{
	pthread_mutex_lock(&box->mu);
	int n = box->count;
	if (n && first)
		*first = box->first;
	pthread_mutex_unlock(&box->mu);
	return n;
}

enum { THRESHOLD_MS = 30, PERIOD_MS = 10 };

int test_watchdog_fires(void)
{
	ll_mutex_t m;
	struct reports box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct ll_error err;
	struct helper h;
	int me = ll_monitor_thread_id();

	test_watchdog("watchdog", 600);
	ll_monitor_set_enabled(1);
	init_named(&m, algo, "watched");
	struct ll_watchdog_config cfg = {
		.threshold_ns = THRESHOLD_MS * 1000000ull, .period_ns = PERIOD_MS * 1000000ull,
		.fn = on_report, .arg = &box,
	};
	CHECK(ll_watchdog_start(&cfg, &err) == 0, "start: %s", err.msg);
	CHECK(ll_watchdog_start(&cfg, &err) == EBUSY, "a second watchdog started");

	ll_mutex_lock(&m); const int held_line = __LINE__;
	helper_start(&h, &m, DO_LOCK, 0, "victim");
	wait_listed(&m, &h, 0);
	struct ll_watchdog_report r;
	while (!reports_seen(&box, &r))
		pause_ms(1);
	/* Reported while it still waits: we hold the lock until now. */
	CHECK(ll_mutex_waiters(&m, NULL, 0) == 1, "the waiter left before the report");
	CHECK(!strcmp(r.lock_name, "watched") && !strcmp(r.algo, algo), "lock '%s' (%s)",
	      r.lock_name, r.algo);
	CHECK(r.waiter_tid == atomic_load(&h.tid) && !strcmp(r.waiter_name, "victim"),
	      "waiter %d (%s), expected %d (victim)", r.waiter_tid, r.waiter_name,
	      atomic_load(&h.tid));
	CHECK(r.wait_file && !strcmp(r.wait_file, h.file) && r.wait_line == h.line,
	      "waits at %s:%d", r.wait_file ? r.wait_file : "?", r.wait_line);
	CHECK(r.waited_ns >= cfg.threshold_ns, "reported after %llu ns, threshold %llu",
	      (unsigned long long)r.waited_ns, (unsigned long long)cfg.threshold_ns);
	CHECK(r.holder_tid == me && r.holder_file && !strcmp(r.holder_file, __FILE__) &&
	      r.holder_line == held_line, "holder %d at %s:%d, expected %d at line %d",
	      r.holder_tid, r.holder_file ? r.holder_file : "?", r.holder_line, me, held_line);
	/* Once per wait: more periods pass, no second report of the same wait. */
	pause_ms(4 * PERIOD_MS);
	CHECK(reports_seen(&box, NULL) == 1, "%d reports of one wait", reports_seen(&box, NULL));
	ll_mutex_unlock(&m);
	pthread_join(h.thread, NULL);
	ll_watchdog_stop();

	/* Without a callback: one line of text, naming the holder's file:line. */
	FILE *out = tmpfile();
	CHECK(out, "tmpfile");
	cfg.fn = NULL;
	cfg.out = out;
	CHECK(ll_watchdog_start(&cfg, &err) == 0, "restart: %s", err.msg);
	ll_mutex_lock(&m); const int held_again = __LINE__;
	helper_start(&h, &m, DO_LOCK, 0, "victim2");
	wait_listed(&m, &h, 0);
	char line[1024] = "", expect[512];
	snprintf(expect, sizeof(expect), "locked at %s:%d", __FILE__, held_again);
	for (;;) {
		pause_ms(1);
		/* The watchdog writes whole lines and flushes; read what is there. */
		fflush(out);
		rewind(out);
		if (fgets(line, sizeof(line), out) && strchr(line, '\n'))
			break;
	}
	ll_mutex_unlock(&m);
	pthread_join(h.thread, NULL);
	ll_watchdog_stop();
	CHECK(strstr(line, "'watched'") && strstr(line, "(victim2)") && strstr(line, expect),
	      "report line: %s", line);
	fclose(out);
	ll_mutex_destroy(&m);
	printf("watchdog %s: reported after %.1f ms (threshold %d, period %d): %s", algo,
	       (double)r.waited_ns / 1e6, THRESHOLD_MS, PERIOD_MS, line);
	return 0;
}
