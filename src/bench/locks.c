/*
 * locks.c: the benchmark's view of every runnable lock (library + peers).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "locks.h"

size_t bench_lock_count(void)
{
	return ll_algo_count() + ll_peer_lock_count;
}

const struct ll_lock_ops *bench_lock_at(size_t i)
{
	size_t n = ll_algo_count();
	if (i < n)
		return ll_algo_at(i);
	return i - n < ll_peer_lock_count ? ll_peer_locks[i - n] : NULL;
}

int bench_lock_is_library(const struct ll_lock_ops *ops)
{
	for (size_t i = 0; i < ll_algo_count(); i++)
		if (ll_algo_at(i) == ops)
			return 1;
	return 0;
}

static const char *lock_name(size_t i, const void *ctx)
{
	(void)ctx;
	return bench_lock_at(i)->name;
}

const struct ll_lock_ops *bench_lock_find(const char *name, struct ll_error *err)
{
	for (size_t i = 0; i < bench_lock_count(); i++)
		if (!strcmp(bench_lock_at(i)->name, name))
			return bench_lock_at(i);
	for (size_t i = 0; i < bench_unbuilt_lock_count; i++) {
		if (strcmp(bench_unbuilt_locks[i].name, name))
			continue;
		if (err)
			snprintf(err->msg, sizeof(err->msg), "lock '%s' not built: %s", name,
				 bench_unbuilt_locks[i].why);
		return NULL;
	}
	ll_error_unknown(err, "lock", name, NULL, bench_lock_count(), lock_name, NULL);
	return NULL;
}

int bench_mutex_init(ll_mutex_t *m, const char *name, const char *opts, struct ll_error *err)
{
	const struct ll_lock_ops *ops = bench_lock_find(name ? name : LL_DEFAULT_ALGO, err);
	return ops ? ll_mutex_init_opts(m, ops, opts, err) : EINVAL;
}
