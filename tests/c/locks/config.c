/*
 * config.c: test_locks config, the registry and option errors.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include <limits.h>

#include "locklab/gate.h"
#include "locklab/locks/ll.h"
#include "bench/locks.h"

/* A knob table of its own, as the benchmark's workloads have: "a" is a prefix of "ab". */
struct pair_config {
	int64_t a, ab;
};

static const struct ll_knob pair_knobs[] = {
	LL_KNOB_INT(struct pair_config, a, 1, 0, 9, "a"),
	LL_KNOB_INT(struct pair_config, ab, 2, 0, 9, "ab"),
};

static int parse_pair(const char *opts, struct pair_config *cfg, struct ll_error *err)
{
	return ll_knobs_parse("workload", "pair", pair_knobs, LL_COUNT(pair_knobs), opts, cfg, err);
}

int test_config(void)
{
	struct ll_error err;
	ll_mutex_t m;

	CHECK(ll_mutex_init(&m, NULL, NULL, &err) == 0, "default init: %s", err.msg);
	CHECK(!strcmp(ll_mutex_algo(&m), LL_DEFAULT_ALGO), "default is %s", ll_mutex_algo(&m));
	ll_mutex_destroy(&m);

	CHECK(ll_mutex_init(&m, "nope", NULL, &err) == EINVAL, "unknown algorithm accepted");
	CHECK(strstr(err.msg, "unknown lock 'nope'") && strstr(err.msg, "innodb56"),
	      "message: %s", err.msg);
	CHECK(ll_mutex_init(&m, "ttas", "bogus=1", &err) == EINVAL, "unknown knob accepted");
	CHECK(strstr(err.msg, "backoff_min_ns"), "message does not list knobs: %s", err.msg);
	CHECK(ll_mutex_init(&m, "innodb56", "sync_spin_loops=-1", &err) == EINVAL,
	      "negative spin loops accepted");
	CHECK(ll_mutex_init(&m, "innodb56", "sync_spin_loops=12x", &err) == EINVAL,
	      "trailing garbage accepted");
	CHECK(ll_mutex_init(&m, "futex", "spin=wfe", &err) == EINVAL, "bad choice accepted");
	CHECK(strstr(err.msg, "pause, none, tas, yield, auto"), "message: %s", err.msg);
	CHECK(ll_mutex_init(&m, "futex", "spin_ns", &err) == EINVAL, "missing '=' accepted");
	CHECK(ll_mutex_init(&m, "futex", "", &err) == 0, "empty options: %s", err.msg);
	ll_mutex_destroy(&m);

	/*
	 * Each knob once, no empty item anywhere: lock, gate and workload options
	 * all go through ll_knobs_parse, so the lock's and a bare table's cover them.
	 */
	static const struct {
		const char *opts, *want;
	} refused[] = {
		{ "sync_spin_loops=5,sync_spin_loops=7",
		  "option 'sync_spin_loops' of lock 'innodb56' given twice in "
		  "'sync_spin_loops=5,sync_spin_loops=7'" },
		{ "spin=tas,sync_spin_loops=5,spin=pause", "option 'spin' of lock 'innodb56' given twice" },
		{ "sync_spin_loops=5,", "malformed options 'sync_spin_loops=5,' for lock 'innodb56' "
		  "(empty item)" },
		{ ",sync_spin_loops=5", "(empty item)" },
		{ "sync_spin_loops=5,,spin=tas", "(empty item)" },
		{ ",", "(empty item)" },
	};
	for (size_t i = 0; i < LL_COUNT(refused); i++) {
		err.msg[0] = '\0';
		CHECK(ll_mutex_init(&m, "innodb56", refused[i].opts, &err) == EINVAL,
		      "innodb56 options '%s' accepted", refused[i].opts);
		CHECK(strstr(err.msg, refused[i].want) && !strchr(err.msg, '\n'),
		      "options '%s': got '%s', wanted '%s'", refused[i].opts, err.msg, refused[i].want);
	}
	/*
	 * Keys and values of any length: taken for what they are or refused for
	 * what is wrong with them, a long one quoted cut and marked as cut.
	 */
	char long_opts[256];
	snprintf(long_opts, sizeof(long_opts), "spin=%0100d", 0);
	CHECK(ll_mutex_init(&m, "futex", long_opts, &err) == EINVAL &&
	      strstr(err.msg, "unknown value '0000") && strstr(err.msg, "... (100 bytes)'") &&
	      strstr(err.msg, "pause, none, tas, yield") && !strstr(err.msg, "empty"),
	      "a long choice: %s", err.msg);
	CHECK(ll_mutex_init(&m, "futex", "spin=", &err) == EINVAL &&
	      strstr(err.msg, "option 'spin' of lock 'futex' has an empty value"), "%s", err.msg);
	snprintf(long_opts, sizeof(long_opts), "sync_spin_loops=%080d", 80);
	CHECK(ll_mutex_init(&m, "innodb56", long_opts, &err) == 0, "80 written in 80 digits: %s",
	      err.msg);
	ll_mutex_destroy(&m);
	snprintf(long_opts, sizeof(long_opts), "sync_spin_loops=9%079d", 0);
	CHECK(ll_mutex_init(&m, "innodb56", long_opts, &err) == EINVAL &&
	      strstr(err.msg, "wants an integer in [") && strstr(err.msg, "... (80 bytes)'"),
	      "a long integer: %s", err.msg);
	CHECK(ll_mutex_init(&m, "innodb56", "sync_spin_loops=", &err) == EINVAL &&
	      strstr(err.msg, "got ''"), "an empty integer: %s", err.msg);
	snprintf(long_opts, sizeof(long_opts), "%0100d=1", 0);
	CHECK(ll_mutex_init(&m, "innodb56", long_opts, &err) == EINVAL &&
	      strstr(err.msg, "unknown option '0000") && strstr(err.msg, "... (100 bytes)'"),
	      "a long key: %s", err.msg);

	/* A key that only begins like another is not the same key. */
	CHECK(ll_mutex_init(&m, "ttas", "backoff_min_ns=50,backoff_max_ns=500", &err) == 0, "%s",
	      err.msg);
	ll_mutex_destroy(&m);

	struct pair_config cfg;
	ll_knobs_defaults(pair_knobs, LL_COUNT(pair_knobs), &cfg, sizeof(cfg));
	CHECK(parse_pair("ab=3,a=4", &cfg, &err) == 0 && cfg.a == 4 && cfg.ab == 3, "%s", err.msg);
	CHECK(parse_pair("a=1,ab=3,a=2", &cfg, &err) == EINVAL &&
	      strstr(err.msg, "option 'a' of workload 'pair' given twice"), "%s", err.msg);
	CHECK(parse_pair("a=1,", &cfg, &err) == EINVAL && strstr(err.msg, "(empty item)"), "%s",
	      err.msg);
	ll_gate_t *g = ll_gate_create("fifo", "n=2,n=3", &err);
	CHECK(!g && strstr(err.msg, "option 'n' of gate 'fifo' given twice"), "gate: %s", err.msg);
	g = ll_gate_create("fifo", "n=2,", &err);
	CHECK(!g && strstr(err.msg, "(empty item)"), "gate: %s", err.msg);

	/* Options reach the algorithm: spin-trylock with no spin rounds still locks. */
	CHECK(ll_mutex_init(&m, "spin-trylock", "spin_loops=0,limit=mutex,spin=tas", &err) == 0,
	      "%s", err.msg);
	ll_mutex_lock(&m);
	CHECK(ll_mutex_trylock(&m) == EBUSY, "held spin-trylock taken again");
	ll_mutex_unlock(&m);
	ll_mutex_destroy(&m);

	/*
	 * A caller's own ops table that asks for a larger config than any buffer
	 * holds, or puts a knob outside its config, is refused before anything is
	 * written (the ASan build of this test sees any write past the buffer).
	 */
	struct ll_lock_ops big = *ll_algo_find("innodb56", NULL);
	big.name = "too-big";
	big.config_size = (LL_CONFIG_MAX + 4) * sizeof(int64_t);
	err.msg[0] = '\0';
	CHECK(ll_mutex_init_opts(&m, &big, NULL, &err) == EINVAL, "oversized config accepted");
	CHECK(strstr(err.msg, "lock 'too-big': config of 160 bytes is larger than LL_CONFIG_MAX"),
	      "oversized config: %s", err.msg);
	CHECK(ll_mutex_init_config(&m, &big, NULL) == EINVAL, "oversized config accepted");
	static const struct ll_knob stray[] = {
		{ "far", "a knob past the config", 15 * sizeof(int64_t), 1, 0, 9, NULL },
	};
	struct ll_lock_ops astray = *ll_algo_find("tas", NULL);
	astray.name = "astray";
	astray.knobs = stray;
	astray.nknobs = 1;
	astray.config_size = 2 * sizeof(int64_t);
	CHECK(ll_mutex_init_opts(&m, &astray, "far=3", &err) == EINVAL &&
	      strstr(err.msg, "knob 'far' lies outside its 16-byte config"), "stray knob: %s",
	      err.msg);

	/*
	 * ll keeps its durations in 32 bits: past LL_LL_MAX_NS a knob is refused
	 * in one line, and a config built by hand is refused, never truncated.
	 */
	static const char *const ll_durations[] = { "handoff_ns", "rotation_ns", "min_turn_ns" };
	for (size_t i = 0; i < LL_COUNT(ll_durations); i++) {
		char opts[64], want[128];
		snprintf(opts, sizeof(opts), "%s=%lld", ll_durations[i], (long long)LL_LL_MAX_NS + 1);
		snprintf(want, sizeof(want), "option '%s' of lock 'll' wants an integer in [0, %lld]",
			 ll_durations[i], (long long)LL_LL_MAX_NS);
		err.msg[0] = '\0';
		CHECK(ll_mutex_init(&m, "ll", opts, &err) == EINVAL, "ll options '%s' accepted", opts);
		CHECK(strstr(err.msg, want) && !strchr(err.msg, '\n'), "'%s': got '%s'", opts, err.msg);
		snprintf(opts, sizeof(opts), "%s=%lld", ll_durations[i], (long long)LL_LL_MAX_NS);
		CHECK(ll_mutex_init(&m, "ll", opts, &err) == 0, "'%s': %s", opts, err.msg);
		ll_mutex_destroy(&m);
	}
	const struct ll_lock_ops *ll_ops = ll_algo_find("ll", NULL);
	int64_t raw[LL_CONFIG_MAX];
	ll_config_defaults(ll_ops, raw);
	struct ll_ll_config *ll_cfg = (struct ll_ll_config *)(void *)raw;
	ll_cfg->rotation_ns = (int64_t)UINT32_MAX + 1;  /* 0 once truncated */
	CHECK(ll_mutex_init_config(&m, ll_ops, raw) == EINVAL, "ll rotation_ns 2^32 accepted");
	ll_cfg->rotation_ns = LL_LL_MAX_NS;
	ll_cfg->handoff_ns = -1;
	CHECK(ll_mutex_init_config(&m, ll_ops, raw) == EINVAL, "ll handoff_ns -1 accepted");

	/* A C caller's ll_ll_t need not be zeroed: init sets every field. */
	ll_ll_t dirty, clean;
	memset(&dirty, 0xa5, sizeof(dirty));
	memset(&clean, 0, sizeof(clean));
	CHECK(ll_ll_init(&dirty, NULL) == 0 && ll_ll_init(&clean, NULL) == 0, "ll_ll_init");
	CHECK(!memcmp(&dirty, &clean, sizeof(dirty)), "ll_ll_init left a field of dirty "
	      "memory as it was");

	/* algorithms.def's names are the ops tables' (the ctests run by those names). */
	static const char *const registered[] = {
#define LL_ALGO(id, name) name,
#include "locks/algorithms.def"
#undef LL_ALGO
	};
	CHECK(LL_COUNT(registered) == ll_algo_count(), "%zu registered, %zu in the table",
	      LL_COUNT(registered), ll_algo_count());
	for (size_t i = 0; i < LL_COUNT(registered); i++)
		CHECK(!strcmp(registered[i], ll_algo_at(i)->name), "algorithms.def names '%s' where "
		      "its ops table says '%s'", registered[i], ll_algo_at(i)->name);

	/*
	 * Every algorithm's state fits one cache line (the swapper's slot, and
	 * so the inline storage); every knob default is in range.
	 */
	for (size_t i = 0; i < ll_algo_count(); i++) {
		const struct ll_lock_ops *ops = ll_algo_at(i);
		CHECK(ops->state_size <= LL_STATE_LINE_BYTES, "%s state %zu bytes, over the %d-byte line",
		      ops->name, ops->state_size, LL_STATE_LINE_BYTES);
		for (size_t k = 0; k < ops->nknobs; k++)
			CHECK(ops->knobs[k].def >= ops->knobs[k].min &&
			      ops->knobs[k].def <= ops->knobs[k].max, "%s.%s default out of range",
			      ops->name, ops->knobs[k].name);
		CHECK(ll_algo_find(ops->name, NULL) == ops, "%s not found by name", ops->name);
	}

	/* Calibration: positive costs, budgets that grow with the time asked for. */
	for (unsigned p = 0; p < LL_SPIN_POLICIES; p++) {
		CHECK(ll_spin_ns(p) > 0, "policy %u costs %f ns", p, ll_spin_ns(p));
		CHECK(ll_spin_iters(p, 0) == 0, "zero budget gives iterations");
		CHECK(ll_spin_iters(p, 1) >= 1, "tiny budget gives none");
		CHECK(ll_spin_iters(p, 100000) >= ll_spin_iters(p, 1000), "budgets not monotonic");
	}
	printf("config: ok (pause %.2f ns, none %.2f ns, tas %.2f ns, yield %.0f ns per wait)\n",
	       ll_spin_ns(LL_SPIN_PAUSE), ll_spin_ns(LL_SPIN_NONE), ll_spin_ns(LL_SPIN_TAS),
	       ll_spin_ns(LL_SPIN_YIELD));
	return 0;
}
