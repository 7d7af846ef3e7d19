/*
 * config.h: the swapper's configuration (config.c): the classes of mutexes
 * and rwlocks, what every lock call reads besides its lock (swap_hot), and
 * what the reports write.  Set once from the environment, by the constructor
 * or by the first call that comes before it; read-only after, but for the
 * counts and a forked child's generation.
 */
#ifndef LOCKLAB_SWAP_CONFIG_H
#define LOCKLAB_SWAP_CONFIG_H

#include "swap.h"

#pragma GCC visibility push(hidden)

/*
 * A class: one algorithm with its options, and the mutexes it serves.
 * swap_classes[0] is LOCKLAB_SWAP_LOCK's, for every mutex no site chose;
 * swap_classes[1..swap_nsites] are LOCKLAB_SWAP_LOCK_FOR's sites, in the
 * order given.  With sites and no LOCKLAB_SWAP_LOCK, the mutexes no site
 * chose get swap_glibc_class: glibc's, for their whole life.  All set once by
 * swap_config_load, then read-only but for the counts.
 */
#define SWAP_SITES 64
#define SWAP_SITE_LEN 512
struct swap_class {
	/* The fast path's: ops' lock and unlock, or glibc's on the state (LL_ALGO_GLIBC). */
	void (*lock)(void *);
	void (*unlock)(void *);
	const struct ll_lock_ops *ops;
	struct swap_recipe recipe;
	int64_t config[LL_CONFIG_MAX];
	char name[64], opts[256];
	char site[SWAP_SITE_LEN];   /* "" for swap_classes[0] */
	int pure_spin;              /* spins and does not survive preemption with its options */
	atomic_ulong matched;       /* mutexes given this class (sites and glibc's) */
};
extern struct swap_class swap_classes[1 + SWAP_SITES], swap_glibc_class;
extern int swap_nsites;
extern struct swap_class *swap_rest;   /* swap_classes[0], or swap_glibc_class */
#define GLIBC_CLASS (&swap_glibc_class)

/* What every lock and unlock reads besides the lock's class, on one line:
 * set by swap_config_load (fork_gen by a forked child, alone), read-only
 * otherwise. */
struct swap_hot {
	/* Why lock and unlock take the general path (0: neither), one word so that
	 * the fast path tests one: SWAP_COUNTING, stats on (set once); SWAP_WATCHING,
	 * a class is a pure spinlock and nobody has been warned yet, its threads are
	 * counted there (spinwatch.c), cleared once warned. */
	int general;
	unsigned fork_gen;       /* forks since the first process (slot.c) */
	/* The rwlocks' classes: NULL, every rwlock glibc's (neither
	 * LOCKLAB_SWAP_RWLOCK nor _FOR); else the class of those no site chose
	 * (swap_rwclasses[0], or glibc's mark). */
	struct swap_rwclass *rw_rest;
	int rw_nsites;           /* LOCKLAB_SWAP_RWLOCK_FOR's sites: swap_rwclasses[1..] */
};
extern struct swap_hot swap_hot __attribute__((aligned(64)));
#define SWAP_COUNTING 1
#define SWAP_WATCHING 2

/* Relaxed: SWAP_WATCHING is cleared while others read the word. */
static inline int swap_general(void)
{
	return __atomic_load_n(&swap_hot.general, __ATOMIC_RELAXED);
}

/* Whether the lock was last used before a fork (acquire: a repair's slot is
 * seen with the gen that publishes it). */
static inline int swap_stale(const unsigned *gen)
{
	return unlikely(__atomic_load_n(gen, __ATOMIC_ACQUIRE) != swap_hot.fork_gen);
}

/*
 * An rwlock class: one rwlock algorithm with its options, and the rwlocks it
 * serves, as a mutex class is for mutexes.  swap_rwclasses[0] is
 * LOCKLAB_SWAP_RWLOCK's, for every rwlock no site chose;
 * swap_rwclasses[1..swap_hot.rw_nsites] are LOCKLAB_SWAP_RWLOCK_FOR's sites.
 * With sites and no LOCKLAB_SWAP_RWLOCK, the rwlocks no site chose get
 * swap_rw_glibc_class: glibc's for their whole life.  recipe[1] (config[1])
 * serves the locks of glibc's writer-nonrecursive kind.
 */
struct swap_rwclass {
	const struct ll_rwlock_ops *ops;
	int64_t config[2][LL_CONFIG_MAX];
	struct swap_recipe recipe[2];
	char name[64], opts[256];
	char site[SWAP_SITE_LEN];   /* "" for swap_rwclasses[0] */
	atomic_ulong matched;       /* rwlocks given this class (sites and glibc's) */
};
extern struct swap_rwclass swap_rwclasses[1 + SWAP_SITES], swap_rw_glibc_class;
#define RW_GLIBC_CLASS (&swap_rw_glibc_class)

/* What the reports write, and where (LOCKLAB_SWAP_STATS*, _SITES_JSON). */
struct swap_outputs {
	int stats_line;
	char stats_json[512], sites_json[512];
};
extern struct swap_outputs swap_out;

extern atomic_int swap_config_ready;
void swap_config_load(void);   /* the environment; once, safe anywhere */
static inline void swap_configured(void)
{
	if (unlikely(!atomic_load_explicit(&swap_config_ready, memory_order_acquire)))
		swap_config_load();
}
/* One line on stderr, by write(): no stdio buffer, no malloc. */
void swap_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline int swap_counting(void) { return swap_general() & SWAP_COUNTING; }

/* swap_glibcs() (swap.h), or a mutex whose class is glibc's (relaxed: set once, at init
 * or first use).  Lock and unlock leave the class to their general path. */
#define GLIBC(m) (swap_glibcs(swap_kind_of(m)) || \
		  unlikely(__atomic_load_n(&SM(m)->cls, __ATOMIC_RELAXED) == GLIBC_CLASS))

/* ------------------------------------------------------------- spinwatch.c */

/*
 * A thread's first acquisition of a pure spinlock's mutex (class c): once
 * the live threads outnumber the CPUs, one warning on stderr naming the
 * locks that survive that, and the watch ends.
 */
void swap_spin_meet(const struct swap_class *c);
static inline int swap_watching(void)
{
	return swap_general() & SWAP_WATCHING;
}

#pragma GCC visibility pop

#endif
