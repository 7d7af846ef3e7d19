/*
 * test_monitor.c: the lock monitor (locklab/monitor.h), in scenarios whose
 * answers are known exactly: no timing thresholds, waits are made certain
 * by holding a lock on purpose and polling the registry until the waiter is
 * listed.
 *
 *   test_monitor counts LOCK     exact counters: uncontended and contended
 *                                acquisitions, trylock failures, time-outs,
 *                                the wait histogram, sampled holds, last
 *                                locker, holder, waiters
 *   test_monitor watchdog LOCK   a held lock: the watchdog reports the
 *                                waiter, the holder and its file:line
 *   test_monitor dump            JSON (checked by a parser) and text, from
 *                                the API and on a signal
 *   test_monitor registry        concurrent create/destroy against dumps
 *                                and switches (run under ThreadSanitizer)
 *   test_monitor toggle          on/off at run time, per lock, and call
 *                                sites built without the monitor
 *
 * Exit 77 (skipped) when the library was built with LL_MONITOR=OFF.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "bench/locks.h"
#include "test_monitor.h"

enum { TEST_SKIPPED = 77 };

static const char *algo;

static void init_named(ll_mutex_t *m, const char *name, const char *lock_name)
{
	struct ll_error err;
	int rc = bench_mutex_init(m, name, NULL, &err);
	CHECK(rc == 0, "init %s: %s", name, err.msg);
	CHECK(ll_mutex_set_name(m, lock_name) == 0, "set_name on %s", name);
}

static struct ll_mutex_stats stats_of(const ll_mutex_t *m)
{
	struct ll_mutex_stats s;
	CHECK(ll_mutex_stats(m, &s) == 0, "no monitor record");
	return s;
}

static void pause_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts))
		;
}

/* Locks whose waits run in code that does not report spins and OS waits. */
static int waits_opaque(const char *name)
{
	return !ll_algo_find(name, NULL) || !strncmp(name, "pthread", 7);
}

static int parks(const char *name)
{
	return (bench_lock_find(name, NULL)->flags & LL_ALGO_PARKS) != 0;
}

/* ---- a helper thread that waits on the lock ---- */

enum { DO_LOCK, DO_TRYLOCKS, DO_TIMEOUTS };

struct helper {
	pthread_t thread;
	ll_mutex_t *m;
	int what, times;
	const char *name;          /* thread name, or NULL */
	atomic_int tid;            /* published before it waits */
	int line;                  /* the line of its lock call */
	int results[8];
};

static void *helper_main(void *p)
{
	struct helper *h = p;
	if (h->name)
		pthread_setname_np(pthread_self(), h->name);
	atomic_store(&h->tid, ll_monitor_thread_id());
	switch (h->what) {
	case DO_LOCK:
		h->line = __LINE__ + 1;
		ll_mutex_lock(h->m);
		ll_mutex_unlock(h->m);
		break;
	case DO_TRYLOCKS:
		for (int i = 0; i < h->times; i++)
			h->results[i] = ll_mutex_trylock(h->m);
		break;
	case DO_TIMEOUTS:
		for (int i = 0; i < h->times; i++) {
			if (i % 2) {
				struct timespec dl = ll_deadline_after_ns(1000000);
				h->results[i] = ll_mutex_timedlock(h->m, &dl);
			} else {
				h->results[i] = ll_mutex_timedlock_ns(h->m, 1000000);
			}
		}
		break;
	}
	return NULL;
}

static void helper_start(struct helper *h, ll_mutex_t *m, int what, int times, const char *name)
{
	memset(h, 0, sizeof(*h));
	h->m = m;
	h->what = what;
	h->times = times;
	h->name = name;
	atomic_init(&h->tid, 0);
	CHECK(pthread_create(&h->thread, NULL, helper_main, h) == 0, "pthread_create");
}

/*
 * Poll until the helper is listed as the one waiter on m; with `active`,
 * until it has also spun or parked at least once.  Returns its entry.
 */
static struct ll_waiter wait_listed(ll_mutex_t *m, struct helper *h, int active)
{
	struct ll_waiter w[4];
	for (;;) {
		size_t n = ll_mutex_waiters(m, w, 4);
		CHECK(n <= 1, "%zu waiters listed, one thread waits", n);
		if (n == 1 && (!active || w[0].spins + w[0].parks > 0))
			break;
		sched_yield();
	}
	CHECK(w[0].tid == atomic_load(&h->tid), "waiter tid %d, helper %d", w[0].tid,
	      atomic_load(&h->tid));
	return w[0];
}

/* ---- counts ---- */

enum { UNCONTENDED = 1000, CONTENDED = 20, TRYLOCK_FAILS = 5, TIMEOUTS = 3, TRYLOCK_OK = 2 };

static int test_counts(void)
{
	ll_mutex_t m;
	int opaque = waits_opaque(algo), parking = parks(algo);
	int me = ll_monitor_thread_id();

	test_watchdog("counts", 600);
	ll_monitor_set_enabled(1);
	init_named(&m, algo, "counted");
	struct ll_mutex_stats s = stats_of(&m);
	CHECK(s.monitored && s.acquisitions == 0 && s.contended == 0 && !s.last_file,
	      "%s: a new lock has counts", algo);
	CHECK(!strcmp(s.name, "counted") && !strcmp(s.algo, algo), "name '%s' algo '%s'", s.name,
	      s.algo);
	CHECK(s.created_file && strstr(s.created_file, "locks.c") && s.created_tid == me,
	      "created at %s by %d", s.created_file ? s.created_file : "?", s.created_tid);

	/* Contended: the helper waits while we hold, is listed, then gets the lock. */
	for (int round = 0; round < CONTENDED; round++) {
		struct helper h;
		ll_mutex_lock(&m); const int held_line = __LINE__;
		helper_start(&h, &m, DO_LOCK, 0, NULL);
		struct ll_waiter w = wait_listed(&m, &h, !opaque);
		CHECK(w.file && !strcmp(w.file, __FILE__) && w.line > 0, "waiter at %s:%d",
		      w.file ? w.file : "?", w.line);
		s = stats_of(&m);
		CHECK(s.holder_tid == me && s.last_tid == me && s.last_line == held_line &&
		      !strcmp(s.last_file, __FILE__), "%s: holder %d at %s:%d, expected %d at line %d",
		      algo, s.holder_tid, s.last_file, s.last_line, me, held_line);
		CHECK(s.waiters == 1, "stats count %zu waiters", s.waiters);
		ll_mutex_unlock(&m);
		pthread_join(h.thread, NULL);
		CHECK(w.line == h.line, "waiter line %d, helper locked at %d", w.line, h.line);
		s = stats_of(&m);
		CHECK(s.holder_tid == 0 && s.last_tid == atomic_load(&h.tid) && s.last_line == h.line,
		      "%s: after the helper: holder %d, last %d at %d", algo, s.holder_tid,
		      s.last_tid, s.last_line);
		CHECK(ll_mutex_waiters(&m, &w, 1) == 0, "a waiter listed after the wait");
	}
	s = stats_of(&m);
	CHECK(s.acquisitions == 2 * CONTENDED && s.contended == CONTENDED,
	      "%s: %llu acquisitions, %llu contended; expected %d and %d", algo,
	      (unsigned long long)s.acquisitions, (unsigned long long)s.contended, 2 * CONTENDED,
	      CONTENDED);
	uint64_t in_hist = 0;
	for (int b = 0; b < LL_MON_HIST_BUCKETS; b++)
		in_hist += s.wait_hist[b];
	CHECK(in_hist == CONTENDED && s.wait_ns_max > 0 && s.wait_ns_sum >= s.wait_ns_max,
	      "%s: histogram holds %llu waits", algo, (unsigned long long)in_hist);
	if (opaque) {
		/* glibc's or a peer's wait: one OS wait per wait when the lock parks. */
		CHECK(s.spins == 0 && s.parks == (parking ? CONTENDED : 0),
		      "%s: spins %llu parks %llu", algo, (unsigned long long)s.spins,
		      (unsigned long long)s.parks);
	} else {
		/* Each helper was seen spinning or parked before the release. */
		CHECK(s.spins + s.parks >= CONTENDED, "%s: %llu spins + %llu parks for %d waits",
		      algo, (unsigned long long)s.spins, (unsigned long long)s.parks, CONTENDED);
		if (!parking)
			CHECK(s.parks == 0 && s.spins >= CONTENDED, "%s: spinlock parked", algo);
	}
	uint64_t spins = s.spins, parks_seen = s.parks;

	/* Uncontended. */
	for (int i = 0; i < UNCONTENDED; i++) {
		ll_mutex_lock(&m);
		ll_mutex_unlock(&m);
	}
	for (int i = 0; i < TRYLOCK_OK; i++) {
		CHECK(ll_mutex_trylock(&m) == 0, "%s: trylock of a free lock failed", algo);
		ll_mutex_unlock(&m);
	}
	s = stats_of(&m);
	CHECK(s.acquisitions == 2 * CONTENDED + UNCONTENDED + TRYLOCK_OK &&
	      s.contended == CONTENDED && s.spins == spins && s.parks == parks_seen,
	      "%s: after uncontended pairs: %llu acquisitions, %llu contended", algo,
	      (unsigned long long)s.acquisitions, (unsigned long long)s.contended);

	/* Failures while we hold it: trylocks and timed waits of the helper. */
	struct helper h;
	ll_mutex_lock(&m); const int held_line = __LINE__;
	helper_start(&h, &m, DO_TRYLOCKS, TRYLOCK_FAILS, NULL);
	pthread_join(h.thread, NULL);
	for (int i = 0; i < TRYLOCK_FAILS; i++)
		CHECK(h.results[i] == EBUSY, "%s: trylock on a held lock returned %d", algo,
		      h.results[i]);
	helper_start(&h, &m, DO_TIMEOUTS, TIMEOUTS, NULL);
	pthread_join(h.thread, NULL);
	for (int i = 0; i < TIMEOUTS; i++)
		CHECK(h.results[i] == ETIMEDOUT, "%s: timedlock on a held lock returned %d", algo,
		      h.results[i]);
	s = stats_of(&m);
	CHECK(s.holder_tid == me && s.last_line == held_line, "%s: holder %d at line %d", algo,
	      s.holder_tid, s.last_line);
	ll_mutex_unlock(&m);
	/* A timedlock of a free lock, deadline passed: taken, not contended. */
	struct timespec past = ll_deadline_after_ns(0);
	CHECK(ll_mutex_timedlock(&m, &past) == 0, "%s: timedlock of a free lock", algo);
	ll_mutex_unlock(&m); const int last_line = __LINE__ - 1;

	s = stats_of(&m);
	uint64_t expect = 2 * CONTENDED + UNCONTENDED + TRYLOCK_OK + 2;
	CHECK(s.acquisitions == expect && s.contended == CONTENDED &&
	      s.trylock_failures == TRYLOCK_FAILS && s.timeouts == TIMEOUTS,
	      "%s: acquisitions %llu (expected %llu), contended %llu, trylock failures %llu (%d), "
	      "timeouts %llu (%d)", algo, (unsigned long long)s.acquisitions,
	      (unsigned long long)expect, (unsigned long long)s.contended,
	      (unsigned long long)s.trylock_failures, TRYLOCK_FAILS,
	      (unsigned long long)s.timeouts, TIMEOUTS);
	CHECK(s.last_tid == me && s.last_line == last_line && s.holder_tid == 0,
	      "%s: last locker %d at line %d, holder %d", algo, s.last_tid, s.last_line,
	      s.holder_tid);
	/* One acquisition in LL_MON_HOLD_SAMPLE, and every one was released through the monitor. */
	CHECK(s.hold_samples == expect / LL_MON_HOLD_SAMPLE && s.hold_ns_sum >= s.hold_ns_max,
	      "%s: %llu hold samples of %llu acquisitions", algo,
	      (unsigned long long)s.hold_samples, (unsigned long long)expect);
	ll_mutex_destroy(&m);
	printf("counts %s: %llu acquisitions, %d contended (spins %llu, os waits %llu), %d trylock "
	       "failures, %d time-outs, %llu hold samples: exact\n", algo,
	       (unsigned long long)expect, CONTENDED, (unsigned long long)s.spins,
	       (unsigned long long)s.parks, TRYLOCK_FAILS, TIMEOUTS,
	       (unsigned long long)s.hold_samples);
	return 0;
}

/* ---- watchdog ---- */

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

static int test_watchdog_fires(void)
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
	CHECK(r.wait_file && !strcmp(r.wait_file, __FILE__) && r.wait_line == h.line,
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

/* ---- a JSON checker (RFC 8259 syntax) ---- */

struct json {
	const char *p;
	int depth;
};

static void json_ws(struct json *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static int json_value(struct json *j);

static int json_string(struct json *j)
{
	if (*j->p++ != '"')
		return 0;
	for (;;) {
		unsigned char c = (unsigned char)*j->p++;
		if (c == '"')
			return 1;
		if (c < 0x20)
			return 0;   /* control characters must be escaped (and NUL ends the text) */
		if (c != '\\')
			continue;
		c = (unsigned char)*j->p++;
		if (c == 'u') {
			for (int k = 0; k < 4; k++, j->p++)
				if (!strchr("0123456789abcdefABCDEF", *j->p) || !*j->p)
					return 0;
		} else if (!c || !strchr("\"\\/bfnrt", c)) {
			return 0;
		}
	}
}

static int json_digits(struct json *j)
{
	const char *start = j->p;
	while (*j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > start;
}

static int json_number(struct json *j)
{
	if (*j->p == '-')
		j->p++;
	if (*j->p == '0')
		j->p++;
	else if (!json_digits(j))
		return 0;
	if (*j->p == '.') {
		j->p++;
		if (!json_digits(j))
			return 0;
	}
	if (*j->p == 'e' || *j->p == 'E') {
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		if (!json_digits(j))
			return 0;
	}
	return 1;
}

static int json_word(struct json *j, const char *w)
{
	size_t n = strlen(w);
	if (strncmp(j->p, w, n))
		return 0;
	j->p += n;
	return 1;
}

static int json_items(struct json *j, char close, int keyed)
{
	j->p++;
	json_ws(j);
	if (*j->p == close) {
		j->p++;
		return 1;
	}
	for (;;) {
		if (keyed) {
			if (!json_string(j))
				return 0;
			json_ws(j);
			if (*j->p++ != ':')
				return 0;
		}
		if (!json_value(j))
			return 0;
		json_ws(j);
		if (*j->p == close) {
			j->p++;
			return 1;
		}
		if (*j->p++ != ',')
			return 0;
		json_ws(j);
	}
}

static int json_value(struct json *j)
{
	int ok;
	json_ws(j);
	if (++j->depth > 64)
		return 0;
	switch (*j->p) {
	case '{': ok = json_items(j, '}', 1); break;
	case '[': ok = json_items(j, ']', 0); break;
	case '"': ok = json_string(j); break;
	case 't': ok = json_word(j, "true"); break;
	case 'f': ok = json_word(j, "false"); break;
	case 'n': ok = json_word(j, "null"); break;
	default: ok = json_number(j); break;
	}
	j->depth--;
	json_ws(j);
	return ok;
}

/* 1 when text is one JSON value and nothing else. */
static int json_valid(const char *text)
{
	struct json j = { text, 0 };
	return json_value(&j) && *j.p == '\0';
}

static size_t count_of(const char *text, const char *what)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* A dump into a string (free it). */
static char *dump_string(enum ll_dump_format format)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f, "open_memstream");
	CHECK(ll_monitor_dump(f, format) == 0, "dump failed");
	fclose(f);
	return buf;
}

/* ---- dump ---- */

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0, len = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = 2 * cap + 8192;
			buf = realloc(buf, cap);
			CHECK(buf, "realloc");
		}
		size_t got = fread(buf + len, 1, 4096, f);
		len += got;
		if (got == 0)
			break;
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/* Poll the file until it holds `lines` complete lines; its text. */
static char *wait_for_lines(const char *path, size_t lines, const char *must)
{
	for (;;) {
		char *text = read_file(path);
		if (text && count_of(text, "\n") >= lines && (!must || strstr(text, must)))
			return text;
		free(text);
		pause_ms(1);
	}
}

static int test_dump(void)
{
	ll_mutex_t plain, odd, unnamed, quiet;
	struct helper h;
	struct ll_error err;

	test_watchdog("dump", 600);
	ll_monitor_set_enabled(1);
	size_t before = ll_monitor_lock_count();
	init_named(&plain, "futex", "plain");
	/* Quote, backslash, newline, tab, UTF-8, a byte that is not UTF-8, DEL. */
	init_named(&odd, "ttas", "q\"b\\n\n\tt\xc3\xa9x\xff\x7f");
	CHECK(bench_mutex_init(&unnamed, "mcs", NULL, &err) == 0, "%s", err.msg);
	init_named(&quiet, "pthread", "quiet");
	CHECK(ll_mutex_monitor(&quiet, 0) == 0, "switch off");
	CHECK(ll_monitor_lock_count() == before + 4, "%zu locks registered, expected %zu",
	      ll_monitor_lock_count(), before + 4);

	for (int i = 0; i < 300; i++) {
		ll_mutex_lock(&plain);
		ll_mutex_unlock(&plain);
	}
	ll_mutex_lock(&odd);
	ll_mutex_lock(&plain);
	helper_start(&h, &plain, DO_LOCK, 0, "dump-waiter");
	wait_listed(&plain, &h, 0);

	char *json = dump_string(LL_DUMP_JSON);
	char *text = dump_string(LL_DUMP_TEXT);
	ll_mutex_unlock(&plain);
	pthread_join(h.thread, NULL);
	ll_mutex_unlock(&odd);

	CHECK(json_valid(json), "invalid JSON: %s", json);
	CHECK(count_of(json, "\n") == 1, "the JSON dump is not one line");
	char expect[256];
	snprintf(expect, sizeof(expect), "\"lock_count\":%zu,", before + 4);
	CHECK(strstr(json, expect), "no %s in %s", expect, json);
	CHECK(count_of(json, "\"id\":") == before + 4, "lock entries do not match the count");
	CHECK(strstr(json, "\"name\":\"q\\\"b\\\\n\\n\\tt\xc3\xa9x\\ufffd\\u007f\""),
	      "name not escaped as expected: %s", json);
	snprintf(expect, sizeof(expect), "\"waiters\":[{\"tid\":%d,\"thread\":\"dump-waiter\"",
		 atomic_load(&h.tid));
	CHECK(strstr(json, expect), "no %s in %s", expect, json);
	CHECK(strstr(json, "\"name\":\"plain\",\"algo\":\"futex\"") &&
	      strstr(json, "\"acquisitions\":301,"), "plain's entry: %s", json);
	CHECK(strstr(json, "\"name\":\"quiet\",\"algo\":\"pthread\"") &&
	      strstr(json, "\"monitored\":false"), "quiet's entry: %s", json);

	CHECK(!strncmp(text, "LOCKLAB MONITOR: pid ", 21), "text header: %.80s", text);
	CHECK(strstr(text, "id  name") && strstr(text, "os_waits") && strstr(text, "last_locker"),
	      "column names: %s", text);
	snprintf(expect, sizeof(expect), "    waiting: thread %d (dump-waiter) for ",
		 atomic_load(&h.tid));
	CHECK(strstr(text, expect), "no waiter line in %s", text);
	CHECK(strstr(text, "q\"b\\n??t"), "control bytes of the name not replaced: %s", text);
	fputs(text, stdout);
	free(json);
	free(text);

	/* On a signal, into a file: JSON, then text. */
	char path[] = "/tmp/locklab-dump-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	CHECK(ll_monitor_dump_on_signal(SIGUSR2, path, LL_DUMP_JSON, &err) == 0, "%s", err.msg);
	raise(SIGUSR2);
	json = wait_for_lines(path, 1, NULL);
	CHECK(json_valid(json), "invalid JSON from the signal: %s", json);
	CHECK(strstr(json, "\"name\":\"plain\""), "signal dump lacks a lock: %s", json);
	CHECK(ll_monitor_dump_on_signal(SIGUSR2, path, LL_DUMP_TEXT, &err) == 0, "%s", err.msg);
	raise(SIGUSR2);
	text = wait_for_lines(path, 3, "LOCKLAB MONITOR");
	CHECK(strstr(text, "quiet"), "text dump from the signal: %s", text);
	CHECK(ll_monitor_dump_on_signal(0, NULL, LL_DUMP_TEXT, &err) == 0, "%s", err.msg);
	CHECK(ll_monitor_dump_on_signal(SIGKILL, NULL, LL_DUMP_TEXT, &err) == EINVAL,
	      "SIGKILL accepted");
	CHECK(ll_monitor_dump_on_signal(SIGSEGV, NULL, LL_DUMP_TEXT, &err) == EINVAL,
	      "SIGSEGV accepted (a dump per fault, forever)");
	CHECK(ll_monitor_dump_on_signal(SIGTERM, NULL, LL_DUMP_TEXT, &err) == EINVAL,
	      "SIGTERM accepted (the program would ignore it)");
	unlink(path);
	free(json);
	free(text);

	ll_mutex_destroy(&plain);
	ll_mutex_destroy(&odd);
	ll_mutex_destroy(&unnamed);
	ll_mutex_destroy(&quiet);
	CHECK(ll_monitor_lock_count() == before, "%zu locks left registered, expected %zu",
	      ll_monitor_lock_count(), before);
	printf("dump: JSON valid (API and signal), text table and waiter lines ok\n");
	return 0;
}

/* ---- registry under concurrent create/destroy ---- */

enum { REG_WORKERS = 4, REG_KEEP = 3 };

static atomic_int reg_running;

struct reg_arg {
	int id;
	long iters;
};

static void *reg_worker(void *p)
{
	struct reg_arg *a = p;
	/* Locks are never copied once made (the registry points at them): juggle pointers. */
	ll_mutex_t *keep[REG_KEEP];
	int alive = 0;
	char name[LL_MON_NAME_MAX];

	for (long i = 0; i < a->iters; i++) {
		const char *lock = bench_lock_at((size_t)(a->id + i) % bench_lock_count())->name;
		snprintf(name, sizeof(name), "w%d-%ld", a->id, i);
		if (alive == REG_KEEP) {
			/* Destroy one of the kept locks, not always the oldest. */
			int k = (int)(i % REG_KEEP);
			ll_mutex_destroy(keep[k]);
			free(keep[k]);
			keep[k] = keep[--alive];
		}
		ll_mutex_t *m = aligned_alloc(64, sizeof(*m));
		CHECK(m, "aligned_alloc");
		init_named(m, lock, name);
		ll_mutex_lock(m);
		ll_mutex_unlock(m);
		if (ll_mutex_trylock(m) == 0)
			ll_mutex_unlock(m);
		keep[alive++] = m;
	}
	while (alive) {
		ll_mutex_destroy(keep[--alive]);
		free(keep[alive]);
	}
	return NULL;
}

struct reader_arg {
	ll_mutex_t *shared;
	long dumps;
	size_t baseline;
};

static void *reg_reader(void *p)
{
	struct reader_arg *r = p;
	for (long i = 0; atomic_load(&reg_running); i++) {
		char *json = dump_string(i % 3 ? LL_DUMP_JSON : LL_DUMP_TEXT);
		if (i % 3) {
			CHECK(json_valid(json), "invalid JSON under churn: %s", json);
			/* The count and the entries come from one snapshot. */
			const char *c = strstr(json, "\"lock_count\":");
			CHECK(c && (size_t)atol(c + 13) == count_of(json, "\"id\":"),
			      "lock_count does not match the entries");
		}
		free(json);
		size_t n = ll_monitor_lock_count();
		CHECK(n >= r->baseline && n <= r->baseline + REG_WORKERS * REG_KEEP,
		      "%zu locks registered, between %zu and %zu expected", n, r->baseline,
		      r->baseline + REG_WORKERS * REG_KEEP);
		ll_monitor_set_enabled((int)(i & 1));
		struct ll_mutex_stats s;
		CHECK(ll_mutex_stats(r->shared, &s) == 0, "stats of a live lock");
		ll_mutex_lock(r->shared);
		ll_mutex_unlock(r->shared);
		r->dumps++;
	}
	return NULL;
}

static int test_registry(void)
{
	ll_mutex_t shared;
	struct reg_arg args[REG_WORKERS];
	pthread_t reader;

	test_watchdog("registry", 600);
	ll_monitor_set_enabled(1);
	init_named(&shared, "futex", "shared");
	struct reader_arg rd = { &shared, 0, ll_monitor_lock_count() };
	for (int i = 0; i < REG_WORKERS; i++)
		args[i] = (struct reg_arg){ i, test_scaled(3000) };
	atomic_store(&reg_running, 1);
	CHECK(pthread_create(&reader, NULL, reg_reader, &rd) == 0, "pthread_create");
	test_run_threads(REG_WORKERS, reg_worker, args, sizeof(args[0]));
	atomic_store(&reg_running, 0);
	pthread_join(reader, NULL);
	CHECK(ll_monitor_lock_count() == rd.baseline, "%zu locks registered after the churn, "
	      "expected %zu", ll_monitor_lock_count(), rd.baseline);
	char *json = dump_string(LL_DUMP_JSON);
	CHECK(json_valid(json) && count_of(json, "\"id\":") == rd.baseline, "final dump: %s", json);
	free(json);
	ll_mutex_destroy(&shared);
	printf("registry: %d threads x %ld create/destroy, %ld dumps meanwhile: consistent\n",
	       REG_WORKERS, args[0].iters, rd.dumps);
	return 0;
}

/* ---- on and off ---- */

static int test_toggle(void)
{
	ll_mutex_t m, n;

	ll_monitor_set_enabled(0);
	init_named(&m, "futex", "toggled");
	for (int i = 0; i < 10; i++) {
		ll_mutex_lock(&m);
		ll_mutex_unlock(&m);
	}
	struct ll_mutex_stats s = stats_of(&m);
	CHECK(!s.monitored && s.acquisitions == 0, "counted while off: %llu",
	      (unsigned long long)s.acquisitions);

	CHECK(ll_mutex_monitor(&m, 1) == 0, "per-lock switch");
	for (int i = 0; i < 10; i++) {
		ll_mutex_lock(&m);
		ll_mutex_unlock(&m);
	}
	CHECK(stats_of(&m).monitored && stats_of(&m).acquisitions == 10, "per-lock on: %llu",
	      (unsigned long long)stats_of(&m).acquisitions);

	/* Call sites built with LL_MONITOR=0 never reach the monitor, on or not. */
	off_lock_unlock(&m, 10);
	CHECK(stats_of(&m).acquisitions == 10, "a unit built without the monitor was counted");

	CHECK(ll_monitor_set_enabled(1) == 0, "the global switch was on");
	init_named(&n, "ticket", "born-on");
	ll_mutex_lock(&n);
	ll_mutex_unlock(&n);
	CHECK(stats_of(&n).acquisitions == 1 && stats_of(&n).monitored, "a new lock is not on");

	CHECK(ll_monitor_set_enabled(0) == 1, "the global switch was off");
	ll_mutex_lock(&m);
	ll_mutex_unlock(&m);
	ll_mutex_lock(&n);
	ll_mutex_unlock(&n);
	CHECK(!stats_of(&m).monitored && stats_of(&m).acquisitions == 10 &&
	      stats_of(&n).acquisitions == 1, "counted after the global switch went off");
	/* Held across a switch: the counters stay consistent. */
	ll_mutex_lock(&m);
	ll_monitor_set_enabled(1);
	ll_mutex_unlock(&m);
	ll_mutex_lock(&m);
	ll_monitor_set_enabled(0);
	ll_mutex_unlock(&m);
	s = stats_of(&m);
	CHECK(s.acquisitions == 11 && s.holder_tid == 0, "across switches: %llu, holder %d",
	      (unsigned long long)s.acquisitions, s.holder_tid);
	ll_mutex_destroy(&m);
	ll_mutex_destroy(&n);
	CHECK(ll_mutex_stats(&m, &s) == ENOENT, "stats of a destroyed lock");
	printf("toggle: global, per lock, across a held lock, and built-out call sites: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		{ "counts", test_counts, 1 },     { "watchdog", test_watchdog_fires, 1 },
		{ "dump", test_dump, 0 },         { "registry", test_registry, 0 },
		{ "toggle", test_toggle, 0 },
	};
	pthread_setname_np(pthread_self(), "test_monitor");
	const struct test_case *t = test_pick(argc, argv, tests, sizeof(tests) / sizeof(tests[0]),
					      "counts|watchdog LOCK | dump | registry | toggle", &algo);
	if (!t)
		return 2;
	if (!ll_monitor_available()) {
		printf("%s: skipped: the library was built with LL_MONITOR=OFF\n", argv[1]);
		return TEST_SKIPPED;
	}
	return t->run();
}
