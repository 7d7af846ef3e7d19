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

/* glibc's rwlock kinds by knob value (LL_RW_PREFER_*, locklab/rwlocks/pthread.h),
 * NULL-terminated. */
extern const char *const ll_rw_prefer_names[];
#define LL_RW_KNOB_PREFER(type, help_) \
	{ "prefer", help_, offsetof(type, prefer), 0, 0, 1, ll_rw_prefer_names }

/*
 * The ops table's entry points from a file's static rd(l, dl, try), wr(l, dl,
 * try) and unlock(l), plus its init and destroy: LL_RW_STATIC_ADAPTERS once,
 * LL_RW_STATIC_FUNCS in the table.  The table calls the static functions, not
 * the exported names: calls to an exported function of a shared library go
 * through its PLT, a few ns on the read path.
 */
#define LL_RW_STATIC_ADAPTERS(init_, destroy_)                                          \
	static int op_init(void *s, const void *c) { return init_(s, c); }              \
	static void op_destroy(void *s) { destroy_(s); }                                \
	static int op_rdlock(void *s) { return rd(s, NULL, 0); }                        \
	static int op_tryrdlock(void *s) { return rd(s, NULL, 1); }                     \
	static int op_timedrdlock(void *s, const struct timespec *t) { return rd(s, t, 0); } \
	static int op_wrlock(void *s) { return wr(s, NULL, 0); }                        \
	static int op_trywrlock(void *s) { return wr(s, NULL, 1); }                     \
	static int op_timedwrlock(void *s, const struct timespec *t) { return wr(s, t, 0); } \
	static int op_unlock(void *s) { return unlock(s); }
#define LL_RW_STATIC_FUNCS(type)                                                          \
	.state_size = sizeof(type), .init = op_init, .destroy = op_destroy,               \
	.rdlock = op_rdlock, .tryrdlock = op_tryrdlock, .timedrdlock = op_timedrdlock,    \
	.wrlock = op_wrlock, .trywrlock = op_trywrlock, .timedwrlock = op_timedwrlock,    \
	.unlock = op_unlock

#endif
