/*
 * swap.h: the lock swapper's shared state (liblocklab-swap.so): every
 * pthread_mutex_t of an unmodified program served by the algorithm
 * LOCKLAB_SWAP_LOCK names (or those LOCKLAB_SWAP_LOCK_FOR names by theirs),
 * and with LOCKLAB_SWAP_RWLOCK every pthread_rwlock_t by that rwlock (or
 * those LOCKLAB_SWAP_RWLOCK_FOR names by theirs) (docs/swap.md).
 *
 * The configuration these parts read (the classes, swap_hot) is config.h's.
 *
 * Who touches what, from where:
 *
 *   fast path (lock and unlock of a   the mutex's words (__kind, gen, slot,
 *   normal mutex, its slot made and   class), swap_hot, swap_tls.busy: no
 *   current, stats off: mutex.c)      table, no guard, no syscall
 *   slow path (first use, other       + the class's algorithm, the slab
 *   types, try, timed, stats on;      (slab guard: slab.c), the naming tables
 *   every rwlock call: mutex.c,       (name guard: choose.c), the lock's
 *   rwlock.c, slot.c)                 fork generation (slot.c), counts
 *                                     (swap_tls, then totals: report.c)
 *   condvar waits and wakes (cond.c)  a guard mutex and the regain queues,
 *                                     glibc's mutexes that no program sees
 *   set-up (constructor, or the       swap_real (real.c), the classes and
 *   first call: config.c)             rwlock classes, swap_hot: written once,
 *                                     read-only after (but matched counts)
 *   fork, in the child (fork.c)       every process-wide word: guards, lists,
 *                                     totals, swap_hot.fork_gen; one thread
 *   reporter (exit, the profiler's    totals, gauges and classes, read only
 *   describe: report.c)
 *
 * A swapped mutex keeps glibc's 40 bytes and reuses them (x86-64 glibc layout):
 *
 *   offset  glibc's field   ours
 *    0      __lock          untouched (0)
 *    4      __count         recursion depth, written by the owner only
 *    8      __owner         owner's swap thread id (recursive and errorcheck
 *                           types), 0 when free; written by the owner only
 *   12      __nusers        fork generation the state was last used in
 *                           (slot.c: a forked child's first use)
 *   16      __kind          glibc's type and flags, as pthread_mutex_init or a
 *                           static initializer left them: never written
 *   24      __list.__prev   the lock: NULL until first use, then a slot of the
 *                           slab, CASed in once (two first lockers of a static
 *                           mutex agree on the winner's slot)
 *   32      __list.__next   its class: NULL until chosen, then the algorithm
 *                           serving it, or glibc's mark (LOCKLAB_SWAP_LOCK_FOR:
 *                           not one of the chosen locks, glibc's for its life)
 *
 *   slab slot   the algorithm's state (ops->state_size): one 64-byte line
 *               (every registered algorithm fits LL_STATE_LINE_BYTES), whole
 *               lines for a larger state
 *
 * Mutexes glibc must keep (process-shared, robust, priority-inheritance or
 * -protect: flags in __kind) go to glibc's own functions, as does a mutex
 * glibc destroyed (__kind -1).  Calls made from inside an algorithm (the
 * pthread algorithms' own mutex, innodb56's events) go to glibc too: a
 * thread-local flag is up around every call into the ops table.
 *
 * Nothing here calls malloc: slots and the algorithms' memory come from the
 * slab, the naming tables from an arena, the reports' text from static
 * buffers, so the swapper cannot deadlock against an allocator that itself
 * takes pthread mutexes (jemalloc).
 */
#ifndef LOCKLAB_SWAP_H
#define LOCKLAB_SWAP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "locklab/ops.h"
#include "locklab/rwlock.h"
#include "preload/glibc.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define EXPORT __attribute__((visibility("default")))
#ifdef LL_SWAP_DIRECT
#include "swap_direct.h"
#define SWAPPED(f) swap_##f
#else
#define SWAPPED(f) f   /* the entry points glibc's names: preloaded, they interpose */
#endif

/* Everything below binds inside the library: no GOT load on the fast path. */
#pragma GCC visibility push(hidden)

/* ------------------------------------------------------------ the overlay */

struct swap_class;

struct swap_mutex {
	int glibc_lock;
	unsigned count;
	unsigned owner;
	unsigned gen;
	int kind;
	int spins;
	void *slot;
	struct swap_class *cls;
};
_Static_assert(sizeof(struct swap_mutex) == sizeof(pthread_mutex_t), "glibc's mutex layout");
_Static_assert(offsetof(struct swap_mutex, kind) == offsetof(pthread_mutex_t, __data.__kind),
	       "__kind where glibc keeps it");

static inline struct swap_mutex *SM(pthread_mutex_t *m) { return (struct swap_mutex *)m; }

/* __kind's flags that keep a mutex with glibc, and its type bits. */
#define K_TYPE     3
#define K_ROBUST   16
#define K_PI       32
#define K_PP       64
#define K_PSHARED  128
#define K_ELISION  (256 | 512)

/* Why a mutex was left to glibc at its init (counted, reported). */
enum swap_pass { PASS_PSHARED, PASS_ROBUST, PASS_PI, PASS_PP, PASS_N };

/* How a lock call waits: not at all (try), until it has the lock, or until a deadline. */
enum swap_how { H_LOCK, H_TRY, H_TIMED };

/* ------------------------------------------------------------ thread state */

struct swap_tls {
	unsigned self;       /* this thread's id for owner fields (0: not given yet) */
	int busy;            /* inside the ops table or our own set-up: glibc serves all */
	int setup;           /* this thread is finding glibc's functions or the lock */
	uint32_t acq, cont;  /* counts not yet added to the totals */
	uint32_t rw, rwc;    /* rwlock acquisitions, and contended ones, not yet added */
	int keyed;           /* the exit flush is registered */
	int met_spinlock;    /* this thread has taken a pure spinlock (spinwatch.c) */
};
extern __thread struct swap_tls swap_tls __attribute__((tls_model("initial-exec")));

/* real.c: ids live in TLS, which fork copies: the forking thread keeps its
 * id, and with it the recursive and errorcheck mutexes it holds. */
void swap_self_assign(void);
static inline unsigned swap_self(void)
{
	if (unlikely(!swap_tls.self))
		swap_self_assign();
	return swap_tls.self;
}

/* ------------------------------------------------------- glibc's own (real.c) */

struct swap_real {
	PL_GLIBC_LOCKS(PL_GLIBC_FIELD)
	__typeof__(pthread_mutex_consistent) *mutex_consistent;
};
extern struct swap_real swap_real;
extern atomic_int swap_real_ready;
void swap_real_resolve(void);

#define REAL(f) (*(likely(atomic_load_explicit(&swap_real_ready, memory_order_acquire)) \
		   ? (void)0 : swap_real_resolve(), swap_real.f))

/*
 * The program's calls that go to glibc.  Only the thread setting us up can
 * arrive while glibc's functions are not all known (a call made from inside
 * dlsym or getenv): every other thread waits in swap_real_resolve or
 * swap_config_load, so nobody else can hold or want a mutex, and a function
 * not yet found is answered with `otherwise` (success) instead of being
 * waited for forever.
 */
static inline int swap_can_call_real(void)
{
	if (likely(atomic_load_explicit(&swap_real_ready, memory_order_acquire)))
		return 1;
	if (swap_tls.setup)
		return 0;
	swap_real_resolve();
	return 1;
}
#define GLIBC_CALL(f, otherwise, ...) \
	(swap_can_call_real() || swap_real.f ? swap_real.f(__VA_ARGS__) : (otherwise))

/* ------------------------------------------------------------ slots (slot.c) */

/*
 * A lock's algorithm state lives in a slot of the slab, one size per kind
 * of lock (mutexes, rwlocks).  What a slot of a kind costs is counted here.
 */
struct swap_slots {
	const char *what, *label;   /* "an rwlock" and "rwlock ", for messages */
	void *free;                 /* freed slots, threaded through their first word */
	size_t bytes;               /* whole 64-byte lines: no two locks share one */
	atomic_ulong in_use;        /* a gauge of this process's memory (a child keeps it) */
	atomic_ulong made;          /* locks given a slot, this process (reported) */
};
extern struct swap_slots swap_mutex_slots, swap_rw_slots;

/*
 * How one lock's slot is made and unmade: its algorithm (a mutex's, or an
 * rwlock's), that algorithm's options, and the slots it comes from.  One
 * lifecycle serves both kinds; what differs is said here.
 */
struct swap_recipe {
	const char *name;                     /* the algorithm, for messages */
	int  (*init)(void *state, const void *config);
	void (*destroy)(void *state);
	int  (*try_excl)(void *state);        /* trylock or trywrlock: 0 if it was free */
	/* The state given back without an unlock (ll_lock_ops.drop); NULL: nothing
	 * to give back. */
	void (*drop)(void *state);
	/* rwlocks: a read hold's release (ll_rwlock_ops.unlock); NULL for mutexes,
	 * whose holder holds them whole. */
	int  (*unlock_shared)(void *state);
	/* A lock held at the fork by the forking thread or by one that is gone:
	 * 1 (mutexes), nobody may use its state before its holder's unlock
	 * (waits are on the fork generation); 0 (rwlocks), it is used as it is,
	 * readers and waiters alike, as glibc's would be. */
	int held_waits;
	const int64_t *config;
	struct swap_slots *slots;
};

/* The lock words the lifecycle reads and writes: the slot pointer and the
 * fork generation (a mutex's __list.__prev and __nusers, an rwlock's own). */
struct swap_lockref {
	void **slot;
	unsigned *gen;
};

/* The slot made now at a first use: this one, or a racing first user's. */
void *swap_slot_create(struct swap_lockref l, const struct swap_recipe *r);
/* pthread_*_destroy: the slot given back (and its state destroyed, if current). */
void swap_slot_destroy(struct swap_lockref l, const struct swap_recipe *r);
/* The lock's first use since a fork: 0, or EBUSY / ETIMEDOUT / EINVAL while it
 * stays held from before the fork (held_waits recipes only). */
int swap_slot_repair(struct swap_lockref l, const struct swap_recipe *r, enum swap_how how,
		     clockid_t clk, const struct timespec *abs);
/* An unlock of a lock not used since the fork, by a holder from before it:
 * -1, it is current after all (the usual unlock serves); else the unlock's
 * result.  exclusive: the caller holds the old state whole (a mutex, a write
 * hold); else a read hold, released on the old state. */
int swap_slot_release_stale(struct swap_lockref l, const struct swap_recipe *r, int exclusive);

/* The fork generation word: the generation the lock was last used in, with
 * GEN_REPAIR while one thread looks at it, GEN_HELD while it stays held from
 * before the fork (slot.c draws the states). */
#define GEN_REPAIR (1u << 31)
#define GEN_HELD   (1u << 30)
#define GEN_MASK   (GEN_HELD - 1)

/* --------------------------------------------------------------- slab.c */

void *swap_slab_take(struct swap_slots *k);
void swap_slab_put(struct swap_slots *k, void *p);
extern const struct ll_allocator swap_blocks;   /* the algorithms' own memory */
struct swap_slab_gauges {
	unsigned long blocks, block_bytes;
};
struct swap_slab_gauges swap_slab_gauges(void);
void swap_slab_after_fork(void);

/* ------------------------------------------------------------- choose.c */

/* The class of a mutex getting one now: at its init (pc: the program's call
 * site) or at its first use (pc 0); and of an rwlock, by its sites. */
struct swap_class *swap_choose(const void *m, uintptr_t pc);
void swap_chosen(struct swap_class *c);
struct swap_rwclass *swap_rw_choose(const void *l, uintptr_t pc);
void swap_rw_chosen(struct swap_rwclass *c);
void swap_choose_after_fork(void);

/* -------------------------------------------------------------- mutex.c */

/* Any lock of a mutex not glibc's by its kind (the regain of a condvar wait). */
int swap_acquire(pthread_mutex_t *m, int kind, enum swap_how how, clockid_t clk,
		 const struct timespec *abs);
int swap_release(pthread_mutex_t *m, int kind);
struct swap_class *swap_class_of(struct swap_mutex *s);

/* __kind is written by init (or the initializer) before the mutex is shared. */
static inline int swap_kind_of(pthread_mutex_t *m)
{
	return __atomic_load_n(&SM(m)->kind, __ATOMIC_RELAXED);
}

/* Inside an algorithm or our set-up, or a mutex glibc keeps by its kind. */
static inline int swap_glibcs(int kind)
{
	return unlikely(swap_tls.busy | (kind & ~(K_TYPE | K_ELISION)));
}

/* Owner fields: only the owner writes them; a thread reading its own id back
 * can only have written it itself, so a relaxed read is enough for "is it mine". */
static inline unsigned swap_owner_of(const struct swap_mutex *s)
{
	return __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
}

/* --------------------------------------------------------------- cond.c */

void swap_cond_after_fork(void);

/* ------------------------------------------------------------- report.c */

void swap_count(int contended);        /* one acquisition of a mutex, stats on */
void swap_rw_count(int contended);     /* one of an rwlock */
void swap_waiting_enter(void);         /* stats only: a thread waits inside a swapped lock */
void swap_waiting_leave(void);
/* Totals made at a mutex's init and at condvar waits. */
void swap_note_passthrough(enum swap_pass why);
void swap_note_cond_wait(void);
void swap_note_rwlock_init(int pshared);
void swap_report_after_fork(void);

/* ---------------------------------------------------------------- fork.c */

void swap_after_fork_child(void);

#pragma GCC visibility pop

#endif
