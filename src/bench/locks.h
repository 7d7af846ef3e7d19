/*
 * locks.h: every lock the benchmark can run: the library's algorithms,
 * then the peers (public locks from other projects, src/bench/peers/), so
 * that a sweep compares them all in one run.
 */
#ifndef LOCKLAB_BENCH_LOCKS_H
#define LOCKLAB_BENCH_LOCKS_H

#include <stddef.h>

#include "locklab/locklab.h"

size_t bench_lock_count(void);
const struct ll_lock_ops *bench_lock_at(size_t i);
/* NULL with "unknown lock 'x' (valid: every name)" in err, or for a peer this
 * build left out, "lock 'x' not built: why". */
const struct ll_lock_ops *bench_lock_find(const char *name, struct ll_error *err);
/* 1 when OPS is one of liblocklab's algorithms, 0 for a peer. */
int bench_lock_is_library(const struct ll_lock_ops *ops);

/* bench_lock_find + ll_config_parse + ll_mutex_init_config: 0 or EINVAL/errno with err set. */
int bench_mutex_init(ll_mutex_t *m, const char *name, const char *opts, struct ll_error *err);

/* Defined by src/bench/peers/peers.c. */
extern const struct ll_lock_ops *const ll_peer_locks[];
extern const size_t ll_peer_lock_count;

/* A peer lock this build left out (its library was not found, or an option
 * said so), and why: `list` shows them; bench_lock_find refuses them. */
struct bench_unbuilt_lock {
	const char *name;
	const char *why;
};
extern const struct bench_unbuilt_lock bench_unbuilt_locks[];
extern const size_t bench_unbuilt_lock_count;

#endif
