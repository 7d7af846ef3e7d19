/*
 * dump.c: test_monitor dump, JSON (checked by a parser) and text, from the
 * API and on a signal.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "bench/locks.h"

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

int test_dump(void)
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
