/*
 * rwalgo.h: what an rwlock file needs besides its public header: the ops
 * table of every rwlock, and defaults for a NULL config.
 */
#ifndef LOCKLAB_RWALGO_H
#define LOCKLAB_RWALGO_H

#include <stddef.h>

#include "locklab/rwlock.h"

#define LL_RWLOCK(id, name) extern const struct ll_rwlock_ops ll_rw_##id##_ops;
#include "rwlocks.def"
#undef LL_RWLOCK

/* cfg itself, or `tmp` filled with the knob table's defaults when cfg is NULL. */
#define LL_RW_CONFIG_OR_DEFAULTS(algo, cfg, tmp) \
	((cfg) ? (cfg) : (ll_rwlock_config_defaults(&ll_rw_##algo##_ops, &(tmp)), &(tmp)))

/* glibc's rwlock kinds by knob value (LL_RW_PREFER_*, locklab/rw_pthread.h), NULL-terminated. */
extern const char *const ll_rw_prefer_names[];
#define LL_RW_KNOB_PREFER(type, help_) \
	{ "prefer", help_, offsetof(type, prefer), 0, 0, 1, ll_rw_prefer_names }

#endif
