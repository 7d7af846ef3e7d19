/*
 * config.c: test_rwlocks config, the registry and option errors.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "locklab/rwlocks/ll.h"

int test_config(void)
{
	struct ll_error err;
	ll_rwlock_t rw;

	CHECK(ll_rwlock_init(&rw, NULL, NULL, &err) == 0, "default init: %s", err.msg);
	CHECK(!strcmp(ll_rwlock_algo(&rw), LL_DEFAULT_RWLOCK), "default is %s", ll_rwlock_algo(&rw));
	ll_rwlock_destroy(&rw);

	CHECK(ll_rwlock_init(&rw, "nope", NULL, &err) == EINVAL, "unknown rwlock accepted");
	CHECK(strstr(err.msg, "unknown rwlock 'nope' (valid: pthread, ll, partitioned"),
	      "message: %s", err.msg);
	/* A mutex's name that is no rwlock's. */
	CHECK(ll_rwlock_init(&rw, "innodb56", NULL, &err) == EINVAL, "mutex name accepted");
	CHECK(ll_rwlock_init(&rw, "ll", "bogus=1", &err) == EINVAL, "unknown knob accepted");
	CHECK(strstr(err.msg, "rwlock 'll'") && strstr(err.msg, "inhibit"), "message: %s", err.msg);
	CHECK(ll_rwlock_init(&rw, "pthread", "prefer=writer", &err) == EINVAL, "bad choice accepted");
	CHECK(strstr(err.msg, "reader, writer-nonrecursive"), "message: %s", err.msg);
	CHECK(ll_rwlock_init(&rw, "partitioned", "n=0", &err) == EINVAL, "n=0 accepted");
	CHECK(ll_rwlock_init(&rw, "partitioned", "n=1025", &err) == EINVAL, "n=1025 accepted");
	CHECK(ll_rwlock_init(&rw, "ll", "inhibit=9,inhibit=3", &err) == EINVAL &&
	      strstr(err.msg, "option 'inhibit' of rwlock 'll' given twice"), "%s", err.msg);
	CHECK(ll_rwlock_init(&rw, "ll", "bias=0,", &err) == EINVAL &&
	      strstr(err.msg, "(empty item)"), "%s", err.msg);

	/* Options reach the lock: partitioned with one partition, ll without bias, still lock. */
	static const char *const good[][2] = {
		{ "partitioned", "n=1,prefer=writer-nonrecursive" }, { "ll", "bias=0,spin_ns=0" },
		{ "ll", "inhibit=0" }, { "pthread", "prefer=writer-nonrecursive" },
	};
	for (size_t i = 0; i < LL_COUNT(good); i++) {
		CHECK(ll_rwlock_init(&rw, good[i][0], good[i][1], &err) == 0, "%s %s: %s", good[i][0],
		      good[i][1], err.msg);
		CHECK(ll_rwlock_wrlock(&rw) == 0 && ll_rwlock_tryrdlock(&rw) == EBUSY, "%s %s: "
		      "read beside the writer", good[i][0], good[i][1]);
		CHECK(ll_rwlock_unlock(&rw) == 0 && ll_rwlock_rdlock(&rw) == 0, "%s %s: read after "
		      "the writer", good[i][0], good[i][1]);
		ll_rwlock_unlock(&rw);
		ll_rwlock_destroy(&rw);
	}

	/* ll: a reader's own write lock would wait for itself; an unheld unlock is refused. */
	CHECK(ll_rwlock_init(&rw, "ll", NULL, &err) == 0, "%s", err.msg);
	CHECK(ll_rwlock_unlock(&rw) == EPERM, "ll: unlock of a free lock accepted");
	CHECK(ll_rwlock_rdlock(&rw) == 0, "rdlock");
	CHECK(ll_rwlock_trywrlock(&rw) == EDEADLK && ll_rwlock_wrlock(&rw) == EDEADLK,
	      "ll: write lock by a reader of the lock not refused");
	ll_rwlock_unlock(&rw);
	ll_rwlock_destroy(&rw);

	/* A caller's table that does not fit is refused before anything is written. */
	struct ll_rwlock_ops big = *ll_rwlock_algo_find("ll", NULL);
	big.name = "too-big";
	big.state_size = LL_RWLOCK_STATE_BYTES + 8;
	CHECK(ll_rwlock_init_opts(&rw, &big, NULL, &err) == EINVAL &&
	      strstr(err.msg, "rwlock 'too-big': state of 128 bytes is larger than "
		     "LL_RWLOCK_STATE_BYTES (120)"), "oversized state: %s", err.msg);
	CHECK(ll_rwlock_init_config(&rw, &big, NULL) == EINVAL, "oversized state accepted");

	/* rwlocks.def's names are the ops tables'; states fit a line; defaults in range. */
	static const char *const registered[] = {
#define LL_RWLOCK(id, name) name,
#include "rwlocks/rwlocks.def"
#undef LL_RWLOCK
	};
	CHECK(LL_COUNT(registered) == ll_rwlock_algo_count(), "%zu registered, %zu in the table",
	      LL_COUNT(registered), ll_rwlock_algo_count());
	for (size_t i = 0; i < ll_rwlock_algo_count(); i++) {
		const struct ll_rwlock_ops *ops = ll_rwlock_algo_at(i);
		CHECK(!strcmp(registered[i], ops->name), "rwlocks.def names '%s' where its ops table "
		      "says '%s'", registered[i], ops->name);
		CHECK(ops->state_size <= LL_STATE_LINE_BYTES, "%s state %zu bytes, over the %d-byte "
		      "line", ops->name, ops->state_size, LL_STATE_LINE_BYTES);
		for (size_t k = 0; k < ops->nknobs; k++)
			CHECK(ops->knobs[k].def >= ops->knobs[k].min &&
			      ops->knobs[k].def <= ops->knobs[k].max, "%s.%s default out of range",
			      ops->name, ops->knobs[k].name);
		CHECK(ll_rwlock_algo_find(ops->name, NULL) == ops, "%s not found by name", ops->name);
	}
	CHECK(ll_rwlock_algo_find("ll", NULL)->state_size == sizeof(ll_rw_ll_t) &&
	      sizeof(ll_rw_ll_t) == 48, "ll_rw_ll_t is %zu bytes, drawn as 48", sizeof(ll_rw_ll_t));
	printf("config: ok\n");
	return 0;
}
