/*
 * suite.c: what test_monitor's cases share (suite.h): locks made and named,
 * their statistics, a helper thread that waits on a lock, and dumps.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "bench/locks.h"

const char *algo;

void init_named(ll_mutex_t *m, const char *name, const char *lock_name)
{
	struct ll_error err;
	int rc = bench_mutex_init(m, name, NULL, &err);
	CHECK(rc == 0, "init %s: %s", name, err.msg);
	CHECK(ll_mutex_set_name(m, lock_name) == 0, "set_name on %s", name);
}

struct ll_mutex_stats stats_of(const ll_mutex_t *m)
{
	struct ll_mutex_stats s;
	CHECK(ll_mutex_stats(m, &s) == 0, "no monitor record");
	return s;
}

void pause_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts))
		;
}

/* Locks whose waits run in code that does not report spins and OS waits. */
int waits_opaque(const char *name)
{
	return !ll_algo_find(name, NULL) || !strncmp(name, "pthread", 7);
}

int parks(const char *name)
{
	return (bench_lock_find(name, NULL)->flags & LL_ALGO_PARKS) != 0;
}

/* ---- a helper thread that waits on the lock ---- */

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

void helper_start(struct helper *h, ll_mutex_t *m, int what, int times, const char *name)
{
	memset(h, 0, sizeof(*h));
	h->m = m;
	h->what = what;
	h->times = times;
	h->name = name;
	h->file = __FILE__;
	atomic_init(&h->tid, 0);
	CHECK(pthread_create(&h->thread, NULL, helper_main, h) == 0, "pthread_create");
}

/*
 * Poll until the helper is listed as the one waiter on m; with `active`,
 * until it has also spun or parked at least once.  Returns its entry.
 */
struct ll_waiter wait_listed(ll_mutex_t *m, struct helper *h, int active)
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

size_t count_of(const char *text, const char *what)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* A dump into a string (free it). */
char *dump_string(enum ll_dump_format format)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f, "open_memstream");
	CHECK(ll_monitor_dump(f, format) == 0, "dump failed");
	fclose(f);
	return buf;
}
