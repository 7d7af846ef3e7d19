/*
 * registry.c: test_monitor registry, concurrent create/destroy against dumps
 * and switches (run under ThreadSanitizer).
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "bench/locks.h"

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

int test_registry(void)
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
