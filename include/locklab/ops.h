/*
 * ops.h: the one table every algorithm fills in.
 *
 * The generic ll_mutex_t, the benchmark, the tests (and later the swapper)
 * are written once against struct ll_lock_ops.  Adding an algorithm is one
 * file that defines `const struct ll_lock_ops ll_<algo>_ops` plus one line in
 * src/lib/locks/algorithms.def.
 *
 * Knobs: an algorithm's configuration is a struct of int64_t fields, each
 * described by a struct ll_knob (name, default, bounds, or a list of choice
 * names for enum knobs).  ll_config_parse() turns "k=v,k=v" into that struct
 * with one-line errors, so no algorithm parses strings itself.
 */
#ifndef LOCKLAB_OPS_H
#define LOCKLAB_OPS_H

#include "locklab/bits/api.h"

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ll_knob {
	const char *name;
	const char *help;
	size_t offset;               /* of an int64_t inside the config struct */
	int64_t def, min, max;
	const char *const *choices;  /* NULL-terminated names for enum knobs, else NULL */
};

/*
 * Properties of an algorithm, in its table's flags: the benchmark, the tests,
 * the monitor, the lock swapper and `locklab list` read them, never the name.
 * A lock that waits sets one of PARKS and SPINS.
 */
enum {
	LL_ALGO_PARKS = 1u << 0,     /* may sleep in the kernel while waiting */
	LL_ALGO_FIFO  = 1u << 1,     /* grants the lock in arrival order */
	LL_ALGO_SPINS = 1u << 2,     /* waits by spinning (or yielding) alone, never sleeps */
	/*
	 * The state is glibc's own lock (a pthread_mutex_t, or a pthread_rwlock_t
	 * for an rwlock) at its start, and lock and unlock are glibc's calls on it:
	 * a host that interposes those calls may make them on the state itself,
	 * and the library's helpers see none of its waits.
	 */
	LL_ALGO_GLIBC = 1u << 3,
	/*
	 * Survives threads outnumbering CPUs whatever its options: a waiter that
	 * is not running never holds up the others for long (it parks, or the
	 * lock passes it by).  A lock without the flag may still survive with
	 * some option values (ll_config_preempt_safe).
	 */
	LL_ALGO_PREEMPT_SAFE = 1u << 4,
};

/* Bytes of algorithm state inside every ll_mutex_t (128 less ops and the monitor word). */
#define LL_MUTEX_STATE_BYTES 112

/*
 * One cache line: the state budget of every registered algorithm (the lock
 * swapper gives each swapped mutex a slot of this size; test_locks' config
 * case holds every algorithm of the table to it).  A caller's own ops table
 * may be larger, up to LL_MUTEX_STATE_BYTES.
 */
#define LL_STATE_LINE_BYTES 64

/*
 * The most int64_t fields a config struct may have: config_size is at most
 * LL_CONFIG_MAX * 8 bytes and every knob's field lies inside it.  An ops table
 * that asks for more is refused (EINVAL) before anything is written; a caller
 * filling a config itself declares `int64_t config[LL_CONFIG_MAX]`.
 */
#define LL_CONFIG_MAX 16

struct ll_lock_ops {
	const char *name;
	const char *summary;
	unsigned flags;
	const struct ll_knob *knobs;
	size_t nknobs;
	size_t config_size;          /* <= LL_CONFIG_MAX * sizeof(int64_t) */
	size_t state_size;           /* <= LL_MUTEX_STATE_BYTES */
	/* config: fully defaulted and validated; returns 0 or an errno value. */
	int  (*init)(void *state, const void *config);
	void (*destroy)(void *state);
	void (*lock)(void *state);
	int  (*trylock)(void *state);                  /* 0 or EBUSY */
	/* Any tv_sec, however far or negative; tv_nsec in [0, 1e9) (ll_mutex_timedlock checks). */
	int  (*timedlock)(void *state, const struct timespec *abs_mono); /* 0 or ETIMEDOUT */
	/*
	 * The caller holds the lock.  Called on a lock that nobody holds (a
	 * double unlock, a lock never taken) it must leave the lock free and
	 * usable, at no cost to the release of a held lock (locklab.h: the
	 * contract; tests/c/contract/ holds every registered algorithm to it).
	 */
	void (*unlock)(void *state);
	/*
	 * Optional (NULL: holding the lock takes nothing from the thread).  The
	 * state, held by the calling thread, is dropped without an unlock, which
	 * could wait for threads that are gone (the lock swapper, in a forked
	 * child).  Give back what holding took from the thread (mcs: its queue
	 * node), touch nothing else, wait for nobody.
	 */
	void (*drop)(void *state);
};

/* A one-line, human-readable error. */
struct ll_error {
	char msg[512];
};

/* err->msg from a printf format; err may be NULL (fmt may not). */
LL_API void ll_error_set(struct ll_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * The one way a name is refused: "unknown KIND 'name' [WHERE] (valid: a, b, c)",
 * the n valid names given by name_at(i, ctx); kind, name, where and name_at
 * may be NULL (an empty word; no valid names).
 */
LL_API void ll_error_unknown(struct ll_error *err, const char *kind, const char *name,
			     const char *where, size_t n,
			     const char *(*name_at)(size_t i, const void *ctx), const void *ctx);

/* The table of algorithms (src/lib/locks/algorithms.def, in that order). */
LL_API size_t ll_algo_count(void);
LL_API const struct ll_lock_ops *ll_algo_at(size_t i);
/* NULL and err filled ("unknown lock 'x' (valid: ...)") when not found (or name is NULL). */
LL_API const struct ll_lock_ops *ll_algo_find(const char *name, struct ll_error *err);

/* Fill config with every knob's default (ops or config NULL: nothing). */
LL_API void ll_config_defaults(const struct ll_lock_ops *ops, void *config);
/*
 * Apply "k=v,k=v" (NULL or "" for none) on top of config; 0 or EINVAL with
 * err set (also for ops or config NULL).  Each knob at most once, no empty
 * item (`a=1,` is refused).
 */
LL_API int ll_config_parse(const struct ll_lock_ops *ops, const char *opts, void *config,
			   struct ll_error *err);
/*
 * The same for any knob table (admission gates, the server workload): kind
 * and owner name what the options belong to in errors ("gate 'fifo'"; NULL:
 * empty).  knobs NULL: none; config NULL: nothing written (parse: EINVAL).
 */
LL_API void ll_knobs_defaults(const struct ll_knob *knobs, size_t nknobs, void *config,
			      size_t size);
LL_API int ll_knobs_parse(const char *kind, const char *owner, const struct ll_knob *knobs,
			  size_t nknobs, const char *opts, void *config, struct ll_error *err);
/*
 * The choices of knob k (a bit per choice's index) that make a lock survive
 * threads outnumbering CPUs: the spin policy's yield and auto, which give the
 * core away when a wait is long; 0 for every other knob.
 */
LL_API unsigned ll_knob_preempt_safe_choices(const struct ll_knob *k);
/*
 * 1 if a lock of these flags and knobs survives threads outnumbering CPUs
 * with config's values: LL_ALGO_PREEMPT_SAFE, or a knob set to a choice
 * that makes it so.  For mutexes and rwlocks alike.
 */
LL_API int ll_config_preempt_safe(unsigned flags, const struct ll_knob *knobs, size_t nknobs,
				  const void *config);
/* Print knob k's value in config ("pause", "30") into buf (k or config NULL: ""). */
LL_API void ll_config_format(const struct ll_knob *k, const void *config, char *buf, size_t len);

/*
 * Memory an algorithm takes besides its state: innodb56's event and sync arrays,
 * mcs's queue nodes past a thread's pool.  malloc by default.  A host that must
 * not call malloc where the program's allocator may hold its own locks (the lock
 * swapper, inside a program whose allocator is built on pthread mutexes)
 * installs its own, once, before the first lock is initialised; NULL puts malloc
 * back; the table is kept, not copied.  alloc returns zeroed memory aligned to
 * 64 bytes, or NULL; release gets the size that was asked for.
 */
struct ll_allocator {
	void *(*alloc)(size_t size);
	void (*release)(void *p, size_t size);
};
LL_API void ll_set_allocator(const struct ll_allocator *a);

/* Knob table helpers for algorithm files. */
#define LL_KNOB_INT(type, field, def_, min_, max_, help_) \
	{ #field, help_, offsetof(type, field), def_, min_, max_, NULL }
#define LL_KNOB_SPIN(type) LL_KNOB_SPIN_DEFAULT(type, LL_SPIN_PAUSE)
#define LL_KNOB_SPIN_DEFAULT(type, def_) \
	{ "spin", "spin-wait: pause, none, a dummy test-and-set (tas), sched_yield (yield), " \
	  "or auto (pause, then yield once the wait is long)", \
	  offsetof(type, spin), def_, 0, LL_SPIN_AUTO, ll_spin_policy_names }
#define LL_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The ops table's void * entry points, generated from an algorithm's direct
 * functions ll_<algo>_{init,destroy,lock,trylock,timedlock,unlock}(type *, ...).
 * Use LL_OPS_ADAPTERS once in the algorithm's file and LL_OPS_FUNCS in its
 * struct ll_lock_ops initialiser.
 */
#define LL_OPS_ADAPTERS(algo, type)                                                     \
	static int algo##_op_init(void *s, const void *c) { return ll_##algo##_init((type *)s, c); } \
	static void algo##_op_destroy(void *s) { ll_##algo##_destroy((type *)s); }       \
	static void algo##_op_lock(void *s) { ll_##algo##_lock((type *)s); }             \
	static int algo##_op_trylock(void *s) { return ll_##algo##_trylock((type *)s); } \
	static int algo##_op_timedlock(void *s, const struct timespec *t)                \
	{ return ll_##algo##_timedlock((type *)s, t); }                                   \
	static void algo##_op_unlock(void *s) { ll_##algo##_unlock((type *)s); }
#define LL_OPS_FUNCS(algo, type)                                             \
	.state_size = sizeof(type),                                          \
	.init = algo##_op_init, .destroy = algo##_op_destroy, .lock = algo##_op_lock, \
	.trylock = algo##_op_trylock, .timedlock = algo##_op_timedlock, .unlock = algo##_op_unlock

#ifdef __cplusplus
}
#endif
#endif
