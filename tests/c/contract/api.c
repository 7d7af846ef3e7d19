/*
 * api.c: test_api_contract api, every entry point of the five entry headers
 * with NULL where it takes a pointer: the documented answer, never a crash.
 *
 * Skipped, as the headers document them undefined (locklab.h: the lock calls
 * take their lock as given; a check would cost every acquisition):
 *   locklab.h  ll_mutex_lock, _trylock, _unlock, _timedlock, _timedlock_ns,
 *              ll_mutex_algo, ll_mutex_ops, ll_mutex_mon_word with m NULL
 *   rwlock.h   ll_rwlock_rdlock, _tryrdlock, _timedrdlock, _wrlock,
 *              _trywrlock, _timedwrlock, _unlock, _clockrdlock,
 *              _clockwrlock, _timed{rd,wr}lock_ns, ll_rwlock_algo with rw NULL
 *   gate.h     ll_gate_enter, _exit, _leave, _suspend, _resume, _policy,
 *              _limit, _get_stats, _reset_stats, _trace with g or t NULL
 *   monitor.h  ll_mon_wait, ll_mon_trylock_failed, ll_mon_hold_start,
 *              ll_mon_acquired, ll_mon_hot_of (the inline paths' own)
 *   ops.h      ll_error_set with fmt NULL (a printf format)
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "suite.h"
#include "locklab/gate.h"
#include "locklab/locklab.h"
#include "locklab/monitor.h"
#include "locklab/ops.h"
#include "locklab/rwlock.h"

static const char *name_of(size_t i, const void *ctx)
{
	(void)i;
	return ctx;
}

static void ops_h(void)
{
	struct ll_error err;
	int64_t config[LL_CONFIG_MAX];
	char buf[32];
	const struct ll_lock_ops *ops = ll_algo_at(0);

	ll_error_set(NULL, "nothing %d", 1);
	ll_error_unknown(NULL, "lock", "x", NULL, 1, name_of, "a");
	ll_error_unknown(&err, NULL, NULL, NULL, 3, NULL, NULL);
	CHECK(!strcmp(err.msg, "unknown  '' (valid: none)"), "unknown of NULLs: %s", err.msg);
	ll_error_unknown(&err, "lock", "x", "here", 1, name_of, "a");
	CHECK(!strcmp(err.msg, "unknown lock 'x' here (valid: a)"), "unknown: %s", err.msg);

	CHECK(ll_algo_at(ll_algo_count()) == NULL, "ll_algo_at past the end");
	CHECK(ll_algo_find(NULL, NULL) == NULL, "ll_algo_find(NULL)");
	CHECK(ll_algo_find(NULL, &err) == NULL && strstr(err.msg, "unknown lock ''"),
	      "ll_algo_find(NULL): %s", err.msg);

	memset(config, 0x5a, sizeof(config));
	ll_config_defaults(NULL, config);
	CHECK(config[0] == 0x5a5a5a5a5a5a5a5a, "ll_config_defaults(NULL ops) wrote");
	ll_config_defaults(ops, NULL);
	CHECK(ll_config_parse(NULL, "a=1", config, &err) == EINVAL && strstr(err.msg, "NULL"),
	      "ll_config_parse(NULL ops): %s", err.msg);
	CHECK(ll_config_parse(ops, "a=1", NULL, NULL) == EINVAL, "ll_config_parse(NULL config)");
	CHECK(ll_config_parse(ops, NULL, config, NULL) == 0, "ll_config_parse(NULL opts)");

	ll_knobs_defaults(NULL, 3, config, sizeof(config));
	CHECK(config[0] == 0, "ll_knobs_defaults(NULL knobs) did not clear");
	ll_knobs_defaults(NULL, 3, NULL, sizeof(config));
	CHECK(ll_knobs_parse(NULL, NULL, NULL, 3, "a=1", config, &err) == EINVAL &&
	      strstr(err.msg, "unknown option 'a'"), "ll_knobs_parse(NULL...): %s", err.msg);
	CHECK(ll_knobs_parse("k", "o", NULL, 0, NULL, NULL, &err) == EINVAL,
	      "ll_knobs_parse(NULL config)");

	/* The first knob with choices among the algorithms (spin=...), formatted. */
	const struct ll_knob *k = NULL;
	for (size_t i = 0; i < ll_algo_count() && !k; i++)
		for (size_t j = 0; j < ll_algo_at(i)->nknobs && !k; j++)
			if (ll_algo_at(i)->knobs[j].choices)
				k = &ll_algo_at(i)->knobs[j];
	CHECK(k, "no knob with choices");
	memset(config, 0, sizeof(config));
	ll_config_format(NULL, config, buf, sizeof(buf));
	CHECK(buf[0] == '\0', "ll_config_format(NULL knob): '%s'", buf);
	ll_config_format(k, NULL, buf, sizeof(buf));
	CHECK(buf[0] == '\0', "ll_config_format(NULL config): '%s'", buf);
	ll_config_format(k, config, NULL, 8);
	config[k->offset / sizeof(int64_t)] = 1000;
	ll_config_format(k, config, buf, sizeof(buf));
	CHECK(!strcmp(buf, "1000"), "a value past the choices: '%s'", buf);

	ll_set_allocator(NULL);
}

static void locklab_h(void)
{
	ll_mutex_t m;
	struct ll_error err;
	const struct ll_lock_ops *ops = ll_algo_at(0);

	CHECK(ll_mutex_init(NULL, NULL, NULL, NULL) == EINVAL, "ll_mutex_init(NULL)");
	CHECK(ll_mutex_init(NULL, NULL, NULL, &err) == EINVAL && strstr(err.msg, "NULL"),
	      "ll_mutex_init(NULL): %s", err.msg);
	CHECK((ll_mutex_init)(NULL, "ll", NULL, NULL) == EINVAL, "ll_mutex_init function");
	CHECK(ll_mutex_init_opts(NULL, ops, NULL, NULL) == EINVAL, "ll_mutex_init_opts(NULL m)");
	CHECK(ll_mutex_init_opts(&m, NULL, NULL, NULL) == EINVAL, "ll_mutex_init_opts(NULL ops)");
	CHECK(ll_mutex_init_opts(&m, NULL, NULL, &err) == EINVAL && strstr(err.msg, "ops"),
	      "ll_mutex_init_opts(NULL ops): %s", err.msg);
	CHECK((ll_mutex_init_opts)(&m, NULL, NULL, NULL) == EINVAL, "ll_mutex_init_opts function");
	CHECK(ll_mutex_init_config(NULL, ops, NULL) == EINVAL, "ll_mutex_init_config(NULL m)");
	CHECK(ll_mutex_init_config(&m, NULL, NULL) == EINVAL, "ll_mutex_init_config(NULL ops)");
	CHECK((ll_mutex_init_config)(&m, NULL, NULL) == EINVAL, "ll_mutex_init_config function");
	CHECK(ll_mutex_init_at(&m, NULL, NULL, NULL, NULL, 0) == 0, "init at no place");
	CHECK(ll_mutex_timedlock(&m, NULL) == EINVAL, "ll_mutex_timedlock(NULL deadline)");
	ll_mutex_destroy(&m);
	CHECK(ll_mutex_init_config(&m, ops, NULL) == 0, "ll_mutex_init_config(NULL config)");
	ll_mutex_destroy(&m);
	ll_mutex_destroy(NULL);
}

static void rwlock_h(void)
{
	ll_rwlock_t rw;
	struct ll_error err;
	int64_t config[LL_CONFIG_MAX];
	struct timespec ts = { 1, 0 };
	const struct ll_rwlock_ops *ops = ll_rwlock_algo_at(0);

	CHECK(ll_rwlock_algo_at(ll_rwlock_algo_count()) == NULL, "ll_rwlock_algo_at past the end");
	CHECK(ll_rwlock_algo_find(NULL, NULL) == NULL, "ll_rwlock_algo_find(NULL)");
	CHECK(ll_rwlock_algo_find(NULL, &err) == NULL && strstr(err.msg, "unknown rwlock ''"),
	      "ll_rwlock_algo_find(NULL): %s", err.msg);
	memset(config, 0x5a, sizeof(config));
	ll_rwlock_config_defaults(NULL, config);
	CHECK(config[0] == 0x5a5a5a5a5a5a5a5a, "ll_rwlock_config_defaults(NULL ops) wrote");
	ll_rwlock_config_defaults(ops, NULL);
	CHECK(ll_rwlock_config_parse(NULL, NULL, config, &err) == EINVAL && strstr(err.msg, "NULL"),
	      "ll_rwlock_config_parse(NULL ops): %s", err.msg);
	CHECK(ll_rwlock_config_parse(ops, "a=1", NULL, NULL) == EINVAL,
	      "ll_rwlock_config_parse(NULL config)");

	CHECK(ll_rwlock_init(NULL, NULL, NULL, NULL) == EINVAL, "ll_rwlock_init(NULL)");
	CHECK(ll_rwlock_init(NULL, NULL, NULL, &err) == EINVAL && strstr(err.msg, "NULL"),
	      "ll_rwlock_init(NULL): %s", err.msg);
	CHECK(ll_rwlock_init_opts(NULL, ops, NULL, NULL) == EINVAL, "ll_rwlock_init_opts(NULL rw)");
	CHECK(ll_rwlock_init_opts(&rw, NULL, NULL, NULL) == EINVAL, "ll_rwlock_init_opts(NULL ops)");
	CHECK(ll_rwlock_init_config(NULL, ops, NULL) == EINVAL, "ll_rwlock_init_config(NULL rw)");
	CHECK(ll_rwlock_init_config(&rw, NULL, NULL) == EINVAL, "ll_rwlock_init_config(NULL ops)");
	CHECK(ll_rwlock_init_config(&rw, ops, NULL) == 0, "ll_rwlock_init_config(NULL config)");
	ll_rwlock_destroy(&rw);
	ll_rwlock_destroy(NULL);

	CHECK(ll_clock_to_mono(CLOCK_MONOTONIC, NULL, &ts) == EINVAL, "ll_clock_to_mono(NULL abs)");
	CHECK(ll_clock_to_mono(CLOCK_REALTIME, &ts, NULL) == EINVAL, "ll_clock_to_mono(NULL out)");
	(void)ll_deadline_after_ns(-1);
}

static void gate_h(void)
{
	struct ll_error err;
	struct ll_gate_sample sample;

	CHECK(ll_gate_create(NULL, NULL, NULL) == NULL, "ll_gate_create(NULL)");
	CHECK(ll_gate_create(NULL, NULL, &err) == NULL && strstr(err.msg, "unknown gate policy"),
	      "ll_gate_create(NULL): %s", err.msg);
	CHECK(ll_gate_policy_at((size_t)-1) == NULL, "ll_gate_policy_at past the end");
	for (size_t i = 0; ll_gate_policy_at(i); i++) {
		ll_gate_t *g = ll_gate_create(ll_gate_policy_at(i)->name, NULL, NULL);
		CHECK(g, "ll_gate_create(%s, NULL opts, NULL err)", ll_gate_policy_at(i)->name);
		ll_gate_get_stats(g, NULL);
		CHECK(ll_gate_trace(g, NULL, 4) == 0, "ll_gate_trace(NULL out)");
		CHECK(ll_gate_trace(g, &sample, 0) == 0, "ll_gate_trace(max 0)");
		ll_gate_destroy(g);
	}
	ll_gate_destroy(NULL);
}

static void monitor_h(void)
{
	ll_mutex_t m;
	struct ll_mutex_stats st;
	struct ll_error err;

	CHECK(ll_mutex_monitor(NULL, 1) == EINVAL, "ll_mutex_monitor(NULL)");
	CHECK(ll_mutex_set_name(NULL, "x") == EINVAL, "ll_mutex_set_name(NULL)");
	CHECK(ll_mutex_stats(NULL, &st) == EINVAL, "ll_mutex_stats(NULL m)");
	CHECK(ll_mutex_waiters(NULL, NULL, 4) == 0, "ll_mutex_waiters(NULL)");
	CHECK(ll_monitor_dump(NULL, LL_DUMP_TEXT) == EINVAL, "ll_monitor_dump(NULL)");
	CHECK(ll_watchdog_start(NULL, NULL) == EINVAL, "ll_watchdog_start(NULL)");
	int rc = ll_watchdog_start(NULL, &err);
	CHECK((rc == EINVAL && strstr(err.msg, "NULL")) || (rc == ENOSYS && !ll_monitor_available()),
	      "ll_watchdog_start(NULL): %d %s", rc, err.msg);

	CHECK(ll_mutex_init(&m, NULL, NULL, NULL) == 0, "init");
	int want = ll_monitor_available() ? 0 : ENOENT;
	CHECK(ll_mutex_stats(&m, NULL) == EINVAL, "ll_mutex_stats(NULL out)");
	CHECK(ll_mutex_set_name(&m, NULL) == want, "ll_mutex_set_name(NULL name)");
	CHECK(ll_mutex_stats(&m, &st) == want && st.name[0] == '\0', "a NULL name is no name");
	CHECK(ll_mutex_waiters(&m, NULL, 4) == 0, "ll_mutex_waiters(NULL out)");
	ll_mutex_destroy(&m);
	rc = ll_monitor_dump_on_signal(SIGUSR2, NULL, LL_DUMP_TEXT, NULL);
	CHECK(rc == 0 || (rc == ENOSYS && !ll_monitor_available()), "dump on signal to stderr");
	ll_monitor_dump_on_signal(0, NULL, LL_DUMP_TEXT, NULL);
}

int test_api(void)
{
	ops_h();
	locklab_h();
	rwlock_h();
	gate_h();
	monitor_h();
	printf("api: every entry point with NULL as documented (undefined ones skipped: "
	       "tests/c/contract/api.c names them)\n");
	return 0;
}
