/*
 * swap.c: liblocklab-swap.so, every pthread_mutex_t of an unmodified program
 * served by the algorithm LOCKLAB_SWAP_LOCK names (docs/swap.md).
 *
 * A swapped mutex keeps glibc's 40 bytes and reuses them (x86-64 glibc layout):
 *
 *   offset  glibc's field   ours
 *    0      __lock          untouched (0)
 *    4      __count         recursion depth, written by the owner only
 *    8      __owner         owner's swap thread id (recursive and errorcheck
 *                           types), 0 when free; written by the owner only
 *   12      __nusers        fork generation the state was last used in
 *                           (fork_repair: a forked child's first use)
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
 * Condvars stay glibc's.  glibc reacquires the mutex it is given inside
 * pthread_cond_wait, so the wait is done with an internal guard mutex (one of
 * SWAP_GUARDS, chosen by the condvar's address):
 *
 *   waiter:   lock G; waiters(G)++; unlock M; cond_wait(C, G); waiters(G)--;
 *             unlock G; regain M
 *   signaler: if waiters(G): lock G; cond_signal(C) or cond_broadcast(C)
 *             and broadcasts(G)++; unlock G
 *             else cond_signal(C) or cond_broadcast(C)
 *
 * A signal sent after M was released finds the waiter queued: the waiter
 * holds G from before it releases M until glibc has queued it, and a
 * signaler that could have seen M released sees waiters(G) > 0 and takes G.
 * Waiters a broadcast may have woken (broadcasts(G) moved during the wait),
 * and every woken waiter of a lock that spins, regain M one at a time, in a
 * queue (regain()): a broadcast does not send them all into M's lock at once.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "locklab/ops.h"
#include "locklab/locks/pthread.h"
#include "locklab/rwlock.h"
#include "../lib/core/futex_sys.h"
#include "../lib/core/json.h"
#include "../preload/glibc.h"
#include "../preload/handoff.h"
#include "../preload/once.h"
#include "../preload/symbols.h"

#pragma weak locklab_prof_init_caller

#define EXPORT __attribute__((visibility("default")))
#ifdef LL_SWAP_DIRECT
#include "swap_direct.h"
#define SWAPPED(f) swap_##f
#else
#define SWAPPED(f) f   /* the entry points glibc's names: preloaded, they interpose */
#endif
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

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

/* __kind's flags that keep a mutex with glibc, and its type bits. */
#define K_TYPE     3
#define K_ROBUST   16
#define K_PI       32
#define K_PP       64
#define K_PSHARED  128
#define K_ELISION  (256 | 512)

enum pass_reason { PASS_PSHARED, PASS_ROBUST, PASS_PI, PASS_PP, PASS_N };
static const char *const pass_names[PASS_N] = { "pshared", "robust", "pi", "pp" };

static inline struct swap_mutex *SM(pthread_mutex_t *m) { return (struct swap_mutex *)m; }

/* ------------------------------------------------------------ thread state */

struct swap_tls {
	unsigned self;       /* this thread's id for owner fields (0: not given yet) */
	int busy;            /* inside the ops table or our own set-up: glibc serves all */
	int setup;           /* this thread is finding glibc's functions or the lock */
	uint32_t acq, cont;  /* counts not yet added to the totals */
	uint32_t rw, rwc;    /* rwlock acquisitions, and contended ones, not yet added */
	int keyed;           /* the exit flush is registered */
};
static __thread struct swap_tls tls __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------- glibc's own */

static struct {
	PL_GLIBC_LOCKS(PL_GLIBC_FIELD)
	__typeof__(pthread_mutex_consistent) *mutex_consistent;
} real;
static atomic_int real_ready;

static void real_resolve(void)
{
	static atomic_int state;   /* one thread resolves; the others wait for it */
	if (!pl_once_claim(&state, &real_ready))
		return;
	/* dlsym may come back to us (an allocator, another preloaded library's
	 * wrapper of dl functions): those calls see setup (glibc_call). */
	tls.busy++;
	tls.setup++;
#ifdef LL_SWAP_DIRECT
#define R(field, name, ver) real.field = name;
#else
#define R(field, name, ver) real.field = (__typeof__(real.field))pl_glibc_find(#name, ver);
#endif
	PL_GLIBC_LOCKS(R)
	R(mutex_consistent, pthread_mutex_consistent, NULL)
#undef R
	tls.busy--;
	tls.setup--;
	pl_once_done(&real_ready);   /* the pointers above complete before anyone sees it */
}

#define REAL(f) (*(likely(atomic_load_explicit(&real_ready, memory_order_acquire)) \
		   ? (void)0 : real_resolve(), real.f))

/*
 * The program's calls that go to glibc.  Only the thread setting us up can
 * arrive while glibc's functions are not all known (a call made from inside
 * dlsym or getenv): every other thread waits in real_resolve or config_load,
 * so nobody else can hold or want a mutex, and a function not yet found is
 * answered with `otherwise` (success) instead of being waited for forever.
 */
static inline int can_call_real(void)
{
	if (likely(atomic_load_explicit(&real_ready, memory_order_acquire)))
		return 1;
	if (tls.setup)
		return 0;
	real_resolve();
	return 1;
}
#define GLIBC_CALL(f, otherwise, ...) \
	(can_call_real() || real.f ? real.f(__VA_ARGS__) : (otherwise))

static atomic_uint next_self;

/* Ids live in TLS, which fork copies: the forking thread keeps its id, and with
 * it the recursive and errorcheck mutexes it holds. */
static inline unsigned self_id(void)
{
	if (unlikely(!tls.self)) {
		unsigned id;
		do   /* relaxed: only uniqueness matters, nothing is published with it */
			id = atomic_fetch_add_explicit(&next_self, 1, memory_order_relaxed) + 1;
		while (!id);
		tls.self = id;
	}
	return tls.self;
}

/* ------------------------------------------------------------ configuration */

/*
 * A class: one algorithm with its options, and the mutexes it serves.
 * classes[0] is LOCKLAB_SWAP_LOCK's, for every mutex no site chose;
 * classes[1..nsites] are LOCKLAB_SWAP_LOCK_FOR's sites, in the order given.
 * With sites and no LOCKLAB_SWAP_LOCK, the mutexes no site chose get
 * glibc_class: glibc's, for their whole life.  All set once by config_load,
 * then read-only but for the counts.
 */
#define SWAP_SITES 64
#define SWAP_SITE_LEN 512
struct swap_class {
	/* The fast path's: ops' lock and unlock, or glibc_state_* (below). */
	void (*lock)(void *);
	void (*unlock)(void *);
	const struct ll_lock_ops *ops;
	int64_t config[LL_CONFIG_MAX];
	char name[64], opts[256];
	char site[SWAP_SITE_LEN];   /* "" for classes[0] */
	atomic_ulong matched;       /* mutexes given this class (sites and glibc_class) */
};
static struct swap_class classes[1 + SWAP_SITES], glibc_class;
static int nsites;
static struct swap_class *rest;   /* classes[0], or glibc_class */
#define GLIBC_CLASS (&glibc_class)

/* What every lock and unlock reads besides the mutex's class, on one line:
 * set by config_load (fork_gen by a forked child, alone), read-only otherwise. */
static struct {
	int counting;            /* stats on: count acquisitions */
	unsigned fork_gen;       /* forks since the first process (fork_repair) */
	const struct ll_rwlock_ops *rw_ops;   /* LOCKLAB_SWAP_RWLOCK's; NULL: glibc's rwlocks */
} hot __attribute__((aligned(64)));

/* LOCKLAB_SWAP_RWLOCK's algorithm (hot.rw_ops) and options: config[1] for the
 * locks of glibc's writer-nonrecursive kind (rw_config_load). */
static struct {
	int64_t config[2][LL_CONFIG_MAX];
	char name[64], opts[256];
	size_t slot_bytes;
} rwc;
static const struct ll_allocator blocks;
static size_t slot_bytes;
static int stats_line;
static char stats_json[512], sites_json[512];
static atomic_int config_ready;
static pthread_key_t flush_key;
/*
 * glibc keeps the values of a thread's first 32 keys in the thread itself;
 * pthread_setspecific on a later key callocs a block, which must not happen
 * inside a lock (the exit flush is then left out: counts of a thread that
 * exits between flushes are lost).
 */
#define KEYS_IN_THREAD 32
static int flush_keyed;

static struct {
	atomic_ulong mutexes, acquisitions, contended, conds;
	atomic_ulong rwlocks, rw_acquisitions;   /* rwlocks: inits, acquisitions */
	atomic_ulong rw_swapped, rw_contended, rw_pshared;   /* slots made, ..., left to glibc */
	atomic_ulong passthrough[PASS_N];
	atomic_uint waiting, max_waiting;   /* threads inside a contended lock: now, at most */
} totals;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[768];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	ssize_t w = write(2, buf, (size_t)n);
	(void)w;
}

static void flush_counts(void)
{
	/* Relaxed: totals are read once, at exit, after every flush we can wait for. */
	if (tls.acq)
		atomic_fetch_add_explicit(&totals.acquisitions, tls.acq, memory_order_relaxed);
	if (tls.cont)
		atomic_fetch_add_explicit(&totals.contended, tls.cont, memory_order_relaxed);
	if (tls.rw)
		atomic_fetch_add_explicit(&totals.rw_acquisitions, tls.rw, memory_order_relaxed);
	if (tls.rwc)
		atomic_fetch_add_explicit(&totals.rw_contended, tls.rwc, memory_order_relaxed);
	tls.acq = tls.cont = tls.rw = tls.rwc = 0;
}

static void flush_at_thread_exit(void *unused)
{
	(void)unused;
	flush_counts();
}

/*
 * The glibc algorithms (pthread, pthread-adaptive: a glibc mutex of their
 * type, made by their init) locked and unlocked by us, on their state:
 * liblocklab's own call would come back through our pthread_mutex_lock for
 * a second pass that ends in the same glibc call.
 */
static void glibc_state_lock(void *p)
{
	real.mutex_lock(&((ll_pthread_t *)p)->m);
}

static void glibc_state_unlock(void *p)
{
	real.mutex_unlock(&((ll_pthread_t *)p)->m);
}

/* An algorithm and its options into a class: 0, or nonzero with err filled. */
static int class_set(struct swap_class *c, const char *name, size_t nlen, const char *opts,
		     struct ll_error *err)
{
	char n[64];
	snprintf(n, sizeof(n), "%.*s", (int)(nlen < sizeof(n) ? nlen : sizeof(n) - 1), name);
	const struct ll_lock_ops *o = ll_algo_find(n, err);
	if (!o)
		return EINVAL;
	ll_config_defaults(o, c->config);
	if (ll_config_parse(o, opts, c->config, err))
		return EINVAL;
	snprintf(c->name, sizeof(c->name), "%s", o->name);
	snprintf(c->opts, sizeof(c->opts), "%s", opts ? opts : "");
	c->ops = o;
	int glibc_state = !strcmp(o->name, "pthread") || !strcmp(o->name, "pthread-adaptive");
	c->lock = glibc_state ? glibc_state_lock : o->lock;
	c->unlock = glibc_state ? glibc_state_unlock : o->unlock;
	return 0;
}

static int lock_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '-';
}

static void refuse_site(const char *entry, size_t len, const char *why)
{
	say("locklab: swap: lock-for '%.*s': %s", (int)(len < 300 ? len : 300), entry, why);
	_exit(2);
}

/*
 * LOCKLAB_SWAP_LOCK_FOR: "SITE=NAME[:OPTS];SITE=NAME..." (empty entries
 * skipped).  A site is a lock's name as `locklab profile` prints it, which may
 * hold '=' itself (C++'s operator=): the entry splits at the first '=' that a
 * lock name follows, up to its end or a ':' and the options.
 */
static void sites_parse(const char *v)
{
	while (*v) {
		const char *end = strchr(v, ';');
		size_t len = end ? (size_t)(end - v) : strlen(v);
		const char *e = v;
		v += len + (end != NULL);
		if (!len)
			continue;
		const char *eq = NULL, *name = NULL, *opts = NULL;
		size_t nlen = 0;
		for (const char *q = e; q < e + len && !eq; q++) {
			if (*q != '=')
				continue;
			const char *n = q + 1;
			while (n < e + len && lock_name_char(*n))
				n++;
			if (n > q + 1 && (n == e + len || *n == ':')) {
				eq = q;
				name = q + 1;
				nlen = (size_t)(n - name);
				opts = n < e + len ? n + 1 : NULL;
			}
		}
		if (!eq)
			refuse_site(e, len, "not SITE=LOCK or SITE=LOCK:OPTS");
		if (eq == e)
			refuse_site(e, len, "the site is empty");
		if ((size_t)(eq - e) >= SWAP_SITE_LEN)
			refuse_site(e, len, "the site is longer than 511 bytes");
		if (nsites == SWAP_SITES)
			refuse_site(e, len, "more than 64 sites");
		struct swap_class *c = &classes[1 + nsites];
		char o[256];
		size_t olen = opts ? (size_t)(e + len - opts) : 0;
		if (olen >= sizeof(o))
			refuse_site(e, len, "options longer than 255 bytes");
		snprintf(o, sizeof(o), "%.*s", (int)olen, opts ? opts : "");
		struct ll_error err;
		if (class_set(c, name, nlen, o, &err))
			refuse_site(e, len, err.msg);
		snprintf(c->site, sizeof(c->site), "%.*s", (int)(eq - e), e);
		for (int i = 1; i <= nsites; i++)
			if (!strcmp(classes[i].site, c->site))
				refuse_site(e, len, "the site is given twice");
		nsites++;
	}
}

/*
 * LOCKLAB_SWAP_RWLOCK (and _OPTS): the rwlock every pthread_rwlock_t gets.
 * An algorithm with a `prefer` knob (pthread, partitioned) serves a lock of
 * glibc's writer-nonrecursive kind with prefer=writer-nonrecursive, unless
 * the options name prefer themselves.  Unknown names and options: exit 2.
 */
static void rw_config_load(void)
{
	const char *name = getenv("LOCKLAB_SWAP_RWLOCK");
	if (!name || !*name)
		return;
	const char *opts = getenv("LOCKLAB_SWAP_RWLOCK_OPTS");
	struct ll_error err;
	const struct ll_rwlock_ops *o = ll_rwlock_algo_find(name, &err);
	if (o) {
		ll_rwlock_config_defaults(o, rwc.config[0]);
		if (ll_rwlock_config_parse(o, opts, rwc.config[0], &err))
			o = NULL;
	}
	if (!o) {
		say("locklab: swap: %s", err.msg);
		_exit(2);
	}
	memcpy(rwc.config[1], rwc.config[0], sizeof(rwc.config[1]));
	int named = 0;   /* prefer among the options */
	for (const char *q = opts; q && *q; q += strcspn(q, ","), q += *q == ',')
		named |= !strncmp(q, "prefer=", 7);
	for (size_t i = 0; i < o->nknobs && !named; i++)
		if (!strcmp(o->knobs[i].name, "prefer") &&
		    ll_rwlock_config_parse(o, "prefer=writer-nonrecursive", rwc.config[1], &err)) {
			say("locklab: swap: %s", err.msg);
			_exit(2);
		}
	snprintf(rwc.name, sizeof(rwc.name), "%s", o->name);
	snprintf(rwc.opts, sizeof(rwc.opts), "%s", opts ? opts : "");
	size_t line = LL_STATE_LINE_BYTES;
	rwc.slot_bytes = o->state_size ? (o->state_size + line - 1) / line * line : line;
	hot.rw_ops = o;
}

static void config_load(void)
{
	static atomic_int state;   /* one thread loads; the others wait for classes and config */
	if (!pl_once_claim(&state, &config_ready))
		return;
	/* liblocklab's own calls below (and getenv's, anyone's) take glibc's locks. */
	tls.busy++;
	tls.setup++;
	real_resolve();
	/* The algorithms' memory from the slab from now on: no lock of any class
	 * exists yet. */
	ll_set_allocator(&blocks);
	const char *name = getenv("LOCKLAB_SWAP_LOCK");
	const char *lock_for = getenv("LOCKLAB_SWAP_LOCK_FOR");
	if (lock_for)
		sites_parse(lock_for);
	rw_config_load();
	/* Sites alone, or an rwlock alone: every other mutex stays glibc's.
	 * None of the three: ll for all. */
	if ((!name || !*name) && (nsites || hot.rw_ops)) {
		rest = GLIBC_CLASS;
	} else {
		struct ll_error err;
		if (!name || !*name)
			name = "ll";
		if (class_set(&classes[0], name, strlen(name), getenv("LOCKLAB_SWAP_LOCK_OPTS"), &err)) {
			say("locklab: swap: %s", err.msg);
			_exit(2);
		}
		rest = &classes[0];
	}
	/* One slot size for all: the largest state of any class, in whole lines so
	 * that no two slots share one (a state over the budget still works). */
	for (int i = rest == GLIBC_CLASS; i <= nsites; i++) {
		size_t line = LL_STATE_LINE_BYTES, bytes = classes[i].ops->state_size;
		size_t need = bytes ? (bytes + line - 1) / line * line : line;
		if (need > slot_bytes)
			slot_bytes = need;
	}
	const char *s = getenv("LOCKLAB_SWAP_STATS");
	stats_line = s && *s && strcmp(s, "0");
	s = getenv("LOCKLAB_SWAP_STATS_JSON");
	if (s)
		snprintf(stats_json, sizeof(stats_json), "%s", s);
	s = getenv("LOCKLAB_SWAP_SITES_JSON");
	if (s)
		snprintf(sites_json, sizeof(sites_json), "%s", s);
	if (stats_line || stats_json[0])
		flush_keyed = !pthread_key_create(&flush_key, flush_at_thread_exit) &&
			      flush_key < KEYS_IN_THREAD;
	hot.counting = stats_line || stats_json[0];
	tls.setup--;
	tls.busy--;
	/* Release: ops, config and the settings above before anyone reads them. */
	pl_once_done(&config_ready);
}

static inline int counting(void) { return hot.counting; }

/* Stats only, contended path only: one more thread waits inside a swapped lock. */
static void waiting_enter(void)
{
	/* Relaxed: a gauge and its maximum, read at exit. */
	unsigned n = atomic_fetch_add_explicit(&totals.waiting, 1, memory_order_relaxed) + 1;
	unsigned m = atomic_load_explicit(&totals.max_waiting, memory_order_relaxed);
	while (n > m && !atomic_compare_exchange_weak_explicit(&totals.max_waiting, &m, n,
							       memory_order_relaxed,
							       memory_order_relaxed))
		;
}

static void waiting_leave(void)
{
	atomic_fetch_sub_explicit(&totals.waiting, 1, memory_order_relaxed);
}

/* The thread's first count registers its exit flush. */
static inline void count_thread(void)
{
	if (unlikely(!tls.keyed)) {
		tls.keyed = 1;
		/* A value under the key makes the thread's exit run the flush. */
		if (flush_keyed)
			pthread_setspecific(flush_key, &tls);
	}
}

static inline void count(int contended)
{
	count_thread();
	tls.acq++;
	tls.cont += (uint32_t)contended;
	if (unlikely(tls.acq >= 1024))
		flush_counts();
}

/* ------------------------------------------------------------------ slab */

/*
 * Slots, and the algorithms' own memory (ll_set_allocator: innodb56's sync
 * arrays, mcs's queue nodes past a thread's pool; no algorithm takes any per
 * lock, so a swapped lock costs its slot), come from
 * anonymous mappings, never malloc: a lock may be made, or an algorithm may
 * want memory, inside an allocator that holds its own pthread mutexes
 * (jemalloc).  Slots are slot_bytes each; the algorithms' blocks are rounded
 * up to a power of two from 64 to 4096 bytes, and larger ones are mappings
 * of their own.  A freed slot or block goes on its size's list, threaded
 * through its first word.  slab_guard is a test-and-set flag, held for a few
 * instructions (or one mmap); a forked child whose copy was taken with it
 * held starts afresh (after_fork_child).
 */
#define SLAB_CHUNK (256u << 10)
#define BLOCK_CLASSES 7   /* 64, 128, ... 4096 bytes */
static atomic_flag slab_guard = ATOMIC_FLAG_INIT;
static char *slab_next, *slab_end;
static void *slab_free;
static void *block_free[BLOCK_CLASSES];
static void *rw_slot_free;   /* rwlocks' slots (rwc.slot_bytes each) */
/* What the slab has handed out and not had back: slots, and the algorithms'
 * blocks with their bytes as rounded here.  Gauges of this process's memory,
 * so a forked child keeps the parent's (its copy).  Relaxed: read at exit. */
static struct {
	atomic_ulong slots, rw_slots, blocks, block_bytes;
} in_use;

static void slab_lock(void)
{
	/* Acquire pairs with slab_unlock's release: the lists and bump pointer. */
	while (atomic_flag_test_and_set_explicit(&slab_guard, memory_order_acquire))
		sched_yield();
}

static void slab_unlock(void)
{
	atomic_flag_clear_explicit(&slab_guard, memory_order_release);
}

/* size bytes at an align boundary of the current chunk, or of a new one; guard held. */
static void *slab_carve(size_t size, size_t align)
{
	uintptr_t at = ((uintptr_t)slab_next + align - 1) & ~(uintptr_t)(align - 1);
	if (!slab_next || at + size > (uintptr_t)slab_end) {
		void *c = mmap(NULL, SLAB_CHUNK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED)
			return NULL;
		slab_end = (char *)c + SLAB_CHUNK;
		at = (uintptr_t)c;
	}
	slab_next = (char *)(at + size);
	return (void *)at;
}

/* One item of a free list, or a carved one; NULL when out of memory. */
static void *slab_take(void **list, size_t size, size_t align)
{
	slab_lock();
	void *p = *list;
	if (p)
		*list = *(void **)p;
	else
		p = slab_carve(size, align);
	slab_unlock();
	if (p)
		memset(p, 0, size);
	return p;
}

static void slab_put(void **list, void *p)
{
	slab_lock();
	*(void **)p = *list;
	*list = p;
	slab_unlock();
}

static void *slab_alloc(void)
{
	/* Whole lines when a slot is a multiple of one, so no two locks share one. */
	void *p = slab_take(&slab_free, slot_bytes, slot_bytes % 64 ? 16 : 64);
	if (p)
		atomic_fetch_add_explicit(&in_use.slots, 1, memory_order_relaxed);
	return p;
}

static void slab_release(void *p)
{
	slab_put(&slab_free, p);
	atomic_fetch_sub_explicit(&in_use.slots, 1, memory_order_relaxed);
}

static void blocks_count(long n, size_t bytes)
{
	atomic_fetch_add_explicit(&in_use.blocks, (unsigned long)n, memory_order_relaxed);
	atomic_fetch_add_explicit(&in_use.block_bytes, (unsigned long)n * bytes, memory_order_relaxed);
}

static int block_class(size_t size)
{
	int c = 0;
	while (c < BLOCK_CLASSES && ((size_t)64 << c) < size)
		c++;
	return c;
}

static size_t page_round(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return (size + page - 1) & ~(page - 1);
}

/* The algorithms' allocator (struct ll_allocator): zeroed, 64-byte aligned. */
static void *block_alloc(size_t size)
{
	int c = block_class(size);
	size_t bytes = c < BLOCK_CLASSES ? (size_t)64 << c : page_round(size);
	void *p = c < BLOCK_CLASSES ? slab_take(&block_free[c], bytes, 64)
				    : mmap(NULL, bytes, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || !p)
		return NULL;
	blocks_count(1, bytes);
	return p;
}

static void block_release(void *p, size_t size)
{
	int c = block_class(size);
	size_t bytes = c < BLOCK_CLASSES ? (size_t)64 << c : page_round(size);
	if (c < BLOCK_CLASSES)
		slab_put(&block_free[c], p);
	else
		munmap(p, bytes);
	blocks_count(-1, bytes);
}

static const struct ll_allocator blocks = { block_alloc, block_release };

/* ------------------------------------------------- choosing a mutex's lock */

/*
 * With sites (LOCKLAB_SWAP_LOCK_FOR), a mutex is named as the profiler names
 * it, by the same code (src/preload/symbols.c), once, when it gets its
 * class: a static mutex (in an object's data) by its symbol, "object`symbol"
 * or "object`symbol+0x40", at its pthread_mutex_init or, for a static
 * initializer, at its first use; a heap mutex by the call site of its
 * pthread_mutex_init, "object`function+0x1a2", the decision cached per call
 * site address.  A heap mutex no pthread_mutex_init made (zeroed memory) has
 * no site: the profiler names it by its first contended caller, unknown when
 * its lock must be chosen, so it gets the rest's.
 *
 * Naming runs inside whatever called us (an allocator, say): no malloc (the
 * symbol tables live in an arena, the files are mmap'd), no loader lock
 * (objects are found with _dl_find_object), and one namer at a time behind a
 * test-and-set guard (a forked child whose copy was taken with it held
 * starts afresh: after_fork_child).
 */
static struct pl_arena name_arena;
static struct pl_syms names = { .arena = &name_arena };
static atomic_flag name_guard = ATOMIC_FLAG_INIT;

#define SITE_CACHE 4096   /* call sites remembered (a power of two) */
#define SITE_PROBES 16
static struct {
	_Atomic uintptr_t pc;                /* 0: free; set once, after cls */
	struct swap_class *_Atomic cls;
} site_cache[SITE_CACHE];

static void name_lock(void)
{
	/* Acquire pairs with name_unlock's release: the symbol tables and the cache. */
	while (atomic_flag_test_and_set_explicit(&name_guard, memory_order_acquire))
		sched_yield();
	tls.busy++;   /* a mutex call from in here (none expected) is glibc's */
}

static void name_unlock(void)
{
	tls.busy--;
	atomic_flag_clear_explicit(&name_guard, memory_order_release);
}

static struct swap_class *class_named(const char *name)
{
	for (int i = 1; i <= nsites; i++)
		if (!strcmp(classes[i].site, name))
			return &classes[i];
	return rest;
}

static inline uint32_t site_hash(uintptr_t pc)
{
	return (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> 40) & (SITE_CACHE - 1);
}

static struct swap_class *site_class(uintptr_t pc)
{
	uint32_t h = site_hash(pc);
	for (uint32_t k = 0; k < SITE_PROBES; k++) {
		/* Acquire pairs with the release store of pc below: cls is set. */
		uintptr_t cur = atomic_load_explicit(&site_cache[(h + k) & (SITE_CACHE - 1)].pc,
						     memory_order_acquire);
		if (cur == pc)
			return atomic_load_explicit(&site_cache[(h + k) & (SITE_CACHE - 1)].cls,
						    memory_order_relaxed);
		if (!cur)
			break;
	}
	char name[SWAP_SITE_LEN + 64];
	name_lock();
	pl_syms_know(&names, pc - 1);
	pl_sym_code(&names, pc, name, sizeof(name));
	struct swap_class *c = class_named(name);
	for (uint32_t k = 0; k < SITE_PROBES; k++) {
		uint32_t i = (h + k) & (SITE_CACHE - 1);
		uintptr_t cur = atomic_load_explicit(&site_cache[i].pc, memory_order_relaxed);
		if (cur == pc)
			break;   /* another namer was here first */
		if (cur)
			continue;
		atomic_store_explicit(&site_cache[i].cls, c, memory_order_relaxed);
		/* Release: cls before the key that makes it found. */
		atomic_store_explicit(&site_cache[i].pc, pc, memory_order_release);
		break;
	}   /* full: named again next time, the same way */
	name_unlock();
	return c;
}

static struct swap_class *static_class(const void *m)
{
	char name[SWAP_SITE_LEN + 64];
	struct swap_class *c = rest;
	name_lock();
	if (pl_syms_know(&names, (uintptr_t)m) && pl_sym_data(&names, (uintptr_t)m, name, sizeof(name)))
		c = class_named(name);
	name_unlock();
	return c;
}

/* The class of a mutex getting one now: at its init (pc: the program's call
 * site) or at its first use (pc 0). */
static struct swap_class *choose(const void *m, uintptr_t pc)
{
	if (!nsites)
		return rest;
	struct dl_find_object fo;
	if (_dl_find_object((void *)m, &fo) == 0)
		return static_class(m);
	return pc ? site_class(pc) : rest;
}

static inline void chosen(struct swap_class *c)
{
	if (nsites)   /* relaxed: a count read at exit */
		atomic_fetch_add_explicit(&c->matched, 1, memory_order_relaxed);
}

/* --------------------------------------------------------------- the lock */

/* A slot of class c with its algorithm's state initialised. */
static void *slot_new(const struct swap_class *c)
{
	void *p = slab_alloc();
	if (!p) {
		say("locklab: swap: out of memory for a lock (mmap failed)");
		abort();
	}
	tls.busy++;
	int rc = c->ops->init(p, c->config);
	tls.busy--;
	if (rc) {
		say("locklab: swap: %s: init failed (%s)", c->ops->name, strerror(rc));
		abort();
	}
	return p;
}

/* The class of a mutex whose slot is made: set before the slot, which the
 * caller loaded with acquire (slot_of_made), so relaxed. */
static inline struct swap_class *class_of_made(const struct swap_mutex *s)
{
	return __atomic_load_n(&s->cls, __ATOMIC_RELAXED);
}

/* The mutex's class, chosen now when it has none (a static initializer or
 * zeroed memory, at its first use). */
static struct swap_class *class_of(struct swap_mutex *s)
{
	/* Relaxed: a class is a pointer to configuration complete since config_load;
	 * first users that race agree by the CAS (the winner's class holds). */
	struct swap_class *c = __atomic_load_n(&s->cls, __ATOMIC_RELAXED);
	if (likely(c))
		return c;
	if (unlikely(!atomic_load_explicit(&config_ready, memory_order_acquire)))
		config_load();
	struct swap_class *mine = choose(s, 0);
	if (__atomic_compare_exchange_n(&s->cls, &c, mine, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		c = mine;
		chosen(c);
	}
	return c;
}

/* The mutex's slot, made now; NULL when its class is glibc's. */
static void *slot_create(struct swap_mutex *s)
{
	struct swap_class *c = class_of(s);
	if (c == GLIBC_CLASS)
		return NULL;
	void *p = slot_new(c);
	void *expect = NULL;
	/* Release publishes the initialised state to the acquire load in slot_of();
	 * acquire on failure pairs with the winner's release, for its slot. */
	if (__atomic_compare_exchange_n(&s->slot, &expect, p, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		atomic_fetch_add_explicit(&totals.mutexes, 1, memory_order_relaxed);
		return p;
	}
	tls.busy++;
	c->ops->destroy(p);
	tls.busy--;
	slab_release(p);
	return expect;
}

/* The slot, or NULL before the first lock.  A slot exists only once the
 * configuration is loaded: no check of it here. */
static inline void *slot_of_made(struct swap_mutex *s)
{
	/* Acquire pairs with slot_create's CAS: the slot's state is initialised. */
	return __atomic_load_n(&s->slot, __ATOMIC_ACQUIRE);
}

static inline void *slot_of(struct swap_mutex *s)
{
	void *p = slot_of_made(s);
	return likely(p != NULL) ? p : slot_create(s);
}

/* Owner fields: only the owner writes them; a thread reading its own id back
 * can only have written it itself, so a relaxed read is enough for "is it mine". */
static inline unsigned owner_of(const struct swap_mutex *s)
{
	return __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
}

static inline void set_owner(struct swap_mutex *s, unsigned id)
{
	__atomic_store_n(&s->owner, id, __ATOMIC_RELAXED);
}

enum how { H_LOCK, H_TRY, H_TIMED };

/* A deadline on clk as CLOCK_MONOTONIC (what every algorithm waits on). */
static int to_mono(clockid_t clk, const struct timespec *abs, struct timespec *out)
{
	if (!abs || abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L)
		return EINVAL;
	if (clk == CLOCK_MONOTONIC) {
		*out = *abs;
		return 0;
	}
	if (clk != CLOCK_REALTIME)
		return EINVAL;
	struct timespec now_rt, now_mono;
	clock_gettime(CLOCK_REALTIME, &now_rt);
	clock_gettime(CLOCK_MONOTONIC, &now_mono);
	/* Saturated at about 136 years: a far deadline stays far, without overflow. */
	int64_t secs = (int64_t)abs->tv_sec - now_rt.tv_sec;
	if (secs > ((int64_t)1 << 32))
		secs = (int64_t)1 << 32;
	int64_t left = secs < -1 ? 0 : secs * 1000000000LL + (abs->tv_nsec - now_rt.tv_nsec);
	if (left < 0)
		left = 0;
	int64_t ns = now_mono.tv_nsec + left % 1000000000LL;
	out->tv_sec = now_mono.tv_sec + left / 1000000000LL + ns / 1000000000LL;
	out->tv_nsec = ns % 1000000000LL;
	return 0;
}

/* ------------------------------------------------------------- after fork */

/*
 * A forked child has one thread; a swapped mutex's state may still hold the
 * parent's others: an mcs queue node, tickets taken, a waiter count.  The
 * child bumps hot.fork_gen, and the first use of a mutex whose gen differs
 * looks at it once (fork_repair):
 *
 *   never locked      gen made current, the slot made as usual
 *   free at the fork  (a trylock of the old state succeeds) a fresh slot; the
 *                     old state is dropped (ops->drop), not unlocked or
 *                     destroyed: either could wait for a thread that is gone
 *   held at the fork  by the forking thread or by one that is gone: gen is
 *                     GEN_HELD, trylock EBUSY, lock and timedlock wait on gen;
 *                     the unlock (the forking thread's) gives a fresh slot and
 *                     drops the old state
 *
 * What a dropped state holds of the parent's other threads (their queue
 * nodes) stays behind: they are gone, and their nodes lived in their own
 * thread-local pools (heap ones past a pool of 32 locks at once leak).
 *
 * GEN_REPAIR marks the one thread looking; others wait on gen for it.
 */
#define GEN_REPAIR (1u << 31)
#define GEN_HELD   (1u << 30)
#define GEN_MASK   (GEN_HELD - 1)

static inline int stale(const struct swap_mutex *s)
{
	/* Acquire: a repair's slot is seen with the gen that publishes it. */
	return unlikely(__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != hot.fork_gen);
}

/* A lock's fork generation word (a mutex's or an rwlock's) set to v, its waiters woken. */
static void gen_publish(unsigned *gen, unsigned v)
{
	int e = errno;
	__atomic_store_n(gen, v, __ATOMIC_RELEASE);
	syscall(SYS_futex, gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	errno = e;
}

/* Until *gen is no longer v: 0, or ETIMEDOUT at mono (CLOCK_MONOTONIC; NULL: none). */
static int gen_wait(unsigned *gen, unsigned v, const struct timespec *mono)
{
	int e = errno, rc = 0;
	while (__atomic_load_n(gen, __ATOMIC_ACQUIRE) == v) {
		if (syscall(SYS_futex, gen, FUTEX_WAIT_BITSET_PRIVATE, v, mono, NULL,
			    FUTEX_BITSET_MATCH_ANY) && errno == ETIMEDOUT) {
			rc = ETIMEDOUT;
			break;
		}
	}
	errno = e;
	return rc;
}

/* Replace the slot, held by this thread (its trylock, or the forking thread's
 * lock), by a fresh one of the mutex's class, free.  The old state is dropped:
 * what holding it took from this thread (an mcs queue node) comes back. */
static void fork_fresh_slot(struct swap_mutex *s, void *old)
{
	const struct swap_class *c = class_of_made(s);
	if (c->ops->drop) {
		tls.busy++;
		c->ops->drop(old);
		tls.busy--;
	}
	__atomic_store_n(&s->slot, slot_new(c), __ATOMIC_RELEASE);
	slab_release(old);
}

/* The mutex's state fit for this process: 0, or EBUSY / ETIMEDOUT / EINVAL
 * while it stays held from before the fork.  Only for a mutex of a swapped
 * class: a glibc-class mutex has no slot, and glibc keeps its __nusers. */
static int fork_repair(struct swap_mutex *s, enum how how, clockid_t clk,
		       const struct timespec *abs)
{
	unsigned cur = hot.fork_gen;
	struct timespec mono, *dl = NULL;
	for (;;) {
		unsigned v = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
		if (v == cur)
			return 0;
		if (v & GEN_REPAIR) {
			gen_wait(&s->gen, v, NULL);   /* a trylock and a slot away */
			continue;
		}
		if (v == (cur | GEN_HELD)) {
			if (how == H_TRY)
				return EBUSY;
			if (how == H_TIMED && !dl) {
				int rc = to_mono(clk, abs, &mono);
				if (rc)
					return rc;
				dl = &mono;
			}
			if (gen_wait(&s->gen, v, dl))
				return ETIMEDOUT;
			continue;
		}
		/* Never locked: nothing to look at, and nobody waits on v (waits are
		 * on a repair or on cur | GEN_HELD).  A slot appears only with a
		 * current gen, or under a claim: either fails this CAS. */
		void *p = __atomic_load_n(&s->slot, __ATOMIC_ACQUIRE);
		if (!p) {
			if (__atomic_compare_exchange_n(&s->gen, &v, cur, 0, __ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED))
				return 0;
			continue;
		}
		if (!__atomic_compare_exchange_n(&s->gen, &v, cur | GEN_REPAIR, 0,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		tls.busy++;
		int held = class_of_made(s)->ops->trylock(p);
		tls.busy--;
		if (held) {
			gen_publish(&s->gen, cur | GEN_HELD);
			continue;
		}
		fork_fresh_slot(s, p);
		gen_publish(&s->gen, cur);
		return 0;
	}
}

/* This thread's look at a lock from before the fork (GEN_REPAIR in *gen),
 * after any other thread's: 1, or 0 when the lock is current after all.  The
 * caller ends the look with gen_publish(gen, hot.fork_gen). */
static int gen_claim(unsigned *gen)
{
	unsigned cur = hot.fork_gen;
	for (;;) {
		unsigned v = __atomic_load_n(gen, __ATOMIC_ACQUIRE);
		if (v == cur)
			return 0;
		if (v & GEN_REPAIR)
			gen_wait(gen, v, NULL);
		else if (__atomic_compare_exchange_n(gen, &v, cur | GEN_REPAIR, 0, __ATOMIC_ACQUIRE,
						     __ATOMIC_RELAXED))
			return 1;
	}
}

/* An unlock of a mutex not used since the fork: its holder gives it a fresh
 * slot.  -1: it is current after all, unlock as usual. */
static int fork_release(struct swap_mutex *s)
{
	if (!gen_claim(&s->gen))
		return -1;
	void *p = __atomic_load_n(&s->slot, __ATOMIC_ACQUIRE);
	if (p)
		fork_fresh_slot(s, p);
	gen_publish(&s->gen, hot.fork_gen);
	return p ? 0 : EPERM;   /* EPERM: never locked */
}

/* --------------------------------------------------------- lock and unlock */

/* A mutex whose class is glibc's (chosen at its init, or at its first use). */
static int glibc_acquire(pthread_mutex_t *m, enum how how, clockid_t clk,
			 const struct timespec *abs)
{
	switch (how) {
	case H_TRY:
		return REAL(mutex_trylock)(m);
	case H_TIMED:
		if (clk == CLOCK_REALTIME || !real.mutex_clocklock)
			return REAL(mutex_timedlock)(m, abs);
		return REAL(mutex_clocklock)(m, clk, abs);
	default:
		return REAL(mutex_lock)(m);
	}
}

/* The call into the class's algorithm; try, timed and counted locks start
 * with a trylock. */
static int acquire_op(const struct swap_class *c, void *p, enum how how, clockid_t clk,
		      const struct timespec *abs)
{
	const struct ll_lock_ops *ops = c->ops;
	int rc = 0, contended = 0;
	tls.busy++;
	switch (how) {
	case H_TRY:
		rc = ops->trylock(p);
		break;
	case H_LOCK:
		if (!counting())
			c->lock(p);
		else if (ops->trylock(p)) {
			contended = 1;
			waiting_enter();
			c->lock(p);
			waiting_leave();
		}
		break;
	case H_TIMED:
		if (!ops->trylock(p))
			break;
		contended = 1;
		struct timespec mono;
		rc = to_mono(clk, abs, &mono);
		if (rc)
			break;
		if (counting())
			waiting_enter();
		rc = ops->timedlock(p, &mono);
		if (counting())
			waiting_leave();
		break;
	}
	tls.busy--;
	if (!rc && counting())
		count(contended);
	return rc;
}

/* Any lock of a mutex not glibc's by its kind (the entry points take the
 * common case inline). */
static __attribute__((noinline)) int acquire(pthread_mutex_t *m, int kind, enum how how,
					     clockid_t clk, const struct timespec *abs)
{
	struct swap_mutex *s = SM(m);
	/* The class first: a mutex that turns out glibc's keeps glibc's owner
	 * field and __nusers. */
	struct swap_class *c = class_of(s);
	if (unlikely(c == GLIBC_CLASS))
		return glibc_acquire(m, how, clk, abs);
	int type = kind & K_TYPE;
	unsigned me = 0;
	if (unlikely(type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK)) {
		me = self_id();
		if (owner_of(s) == me) {
			if (type == PTHREAD_MUTEX_ERRORCHECK)
				return how == H_TRY ? EBUSY : EDEADLK;
			if (s->count == UINT32_MAX)
				return EAGAIN;
			s->count++;
			return 0;
		}
	}
	if (stale(s)) {
		int rc = fork_repair(s, how, clk, abs);
		if (rc)
			return rc;
	}
	int rc = acquire_op(c, slot_of(s), how, clk, abs);
	if (rc)
		return rc;
	if (me) {
		set_owner(s, me);
		s->count = 1;
	}
	return 0;
}

static __attribute__((noinline)) int release(pthread_mutex_t *m, int kind)
{
	struct swap_mutex *s = SM(m);
	/* Relaxed: the class is set once, at init or first use (class_of). */
	struct swap_class *c = __atomic_load_n(&s->cls, __ATOMIC_RELAXED);
	if (unlikely(c == GLIBC_CLASS))
		return REAL(mutex_unlock)(m);
	int type = kind & K_TYPE;
	if (unlikely(type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK)) {
		if (owner_of(s) != self_id())
			return EPERM;
		if (--s->count)
			return 0;
		set_owner(s, 0);
	}
	if (stale(s)) {
		int rc = fork_release(s);
		if (rc >= 0)
			return rc;
	}
	void *p = slot_of_made(s);
	if (unlikely(!p))
		return EPERM;   /* never locked */
	tls.busy++;
	class_of_made(s)->unlock(p);
	tls.busy--;
	return 0;
}

/* __kind is written by init (or the initializer) before the mutex is shared. */
static inline int kind_of(pthread_mutex_t *m)
{
	return __atomic_load_n(&SM(m)->kind, __ATOMIC_RELAXED);
}

/* Inside an algorithm or our set-up, or a mutex glibc keeps by its kind. */
static inline int glibcs(int kind)
{
	return unlikely(tls.busy | (kind & ~(K_TYPE | K_ELISION)));
}

/* The above, or a mutex whose class is glibc's (relaxed: set once, at init
 * or first use).  Lock and unlock leave the class to their general path. */
#define GLIBC(m) (glibcs(kind_of(m)) || \
		  unlikely(__atomic_load_n(&SM(m)->cls, __ATOMIC_RELAXED) == GLIBC_CLASS))

/*
 * The common case, inline in lock and unlock: a normal (or adaptive) mutex,
 * its slot made and current since any fork, statistics off.  Its slot, or
 * NULL for the general path (which also serves a glibc-class mutex: it has
 * no slot).  The caller then calls its class's lock or unlock: the class
 * word (offset 32) is beside the slot's (24), one dependent load more.
 */
static inline void *fast_slot(struct swap_mutex *s, int kind)
{
	int type = kind & K_TYPE;
	if (unlikely(type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK) ||
	    stale(s) || unlikely(hot.counting))
		return NULL;
	return slot_of_made(s);
}

EXPORT int SWAPPED(pthread_mutex_init)(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	if (unlikely(tls.setup) && !real.mutex_init) {
		memset(m, 0, sizeof(*m));   /* our set-up, re-entered: a normal mutex */
		return 0;
	}
	int rc = GLIBC_CALL(mutex_init, 0, m, a);
	if (rc || tls.busy)
		return rc;
	int k = SM(m)->kind;
	/* glibc sets the process-shared bit on every robust mutex too: robust first. */
	int why = k & K_ROBUST ? PASS_ROBUST : k & K_PI ? PASS_PI : k & K_PP ? PASS_PP
		: k & K_PSHARED ? PASS_PSHARED : -1;
	if (why >= 0)   /* relaxed: a total read at exit */
		atomic_fetch_add_explicit(&totals.passthrough[why], 1, memory_order_relaxed);
	if (unlikely(!atomic_load_explicit(&config_ready, memory_order_acquire)))
		config_load();
	if (why < 0 && nsites) {
		/* Behind the profiler, our caller is the profiler: it says whose call this is. */
		uintptr_t pc = locklab_prof_init_caller ? locklab_prof_init_caller() : 0;
		struct swap_class *c = choose(m, pc ? pc : (uintptr_t)__builtin_return_address(0));
		/* Relaxed: the program publishes the mutex after its init. */
		__atomic_store_n(&SM(m)->cls, c, __ATOMIC_RELAXED);
		chosen(c);
	}
	return 0;
}

EXPORT int SWAPPED(pthread_mutex_destroy)(pthread_mutex_t *m)
{
	if (GLIBC(m))
		return GLIBC_CALL(mutex_destroy, 0, m);
	struct swap_mutex *s = SM(m);
	if (owner_of(s))
		return EBUSY;
	void *p = __atomic_exchange_n(&s->slot, NULL, __ATOMIC_ACQ_REL);
	if (p) {
		/* A state from before a fork is dropped: its destroy could wait for
		 * threads that are gone (fork_repair). */
		if (!stale(s)) {
			tls.busy++;
			class_of_made(s)->ops->destroy(p);
			tls.busy--;
		}
		slab_release(p);
	}
	return 0;
}

EXPORT int SWAPPED(pthread_mutex_lock)(pthread_mutex_t *m)
{
	int k = kind_of(m);
	if (glibcs(k))
		return GLIBC_CALL(mutex_lock, 0, m);
	struct swap_mutex *s = SM(m);
	void *p = fast_slot(s, k);
	if (unlikely(!p))
		return acquire(m, k, H_LOCK, 0, NULL);
	tls.busy++;
	class_of_made(s)->lock(p);
	tls.busy--;
	return 0;
}

EXPORT int SWAPPED(pthread_mutex_trylock)(pthread_mutex_t *m)
{
	int k = kind_of(m);
	if (glibcs(k))
		return GLIBC_CALL(mutex_trylock, 0, m);
	return acquire(m, k, H_TRY, 0, NULL);
}

EXPORT int SWAPPED(pthread_mutex_timedlock)(pthread_mutex_t *m, const struct timespec *abs)
{
	int k = kind_of(m);
	if (glibcs(k))
		return GLIBC_CALL(mutex_timedlock, 0, m, abs);
	return acquire(m, k, H_TIMED, CLOCK_REALTIME, abs);
}

EXPORT int SWAPPED(pthread_mutex_clocklock)(pthread_mutex_t *m, clockid_t clk,
					    const struct timespec *abs)
{
	int k = kind_of(m);
	if (glibcs(k))
		return GLIBC_CALL(mutex_clocklock, 0, m, clk, abs);
	return acquire(m, k, H_TIMED, clk, abs);
}

EXPORT int SWAPPED(pthread_mutex_unlock)(pthread_mutex_t *m)
{
	int k = kind_of(m);
	if (glibcs(k))
		return GLIBC_CALL(mutex_unlock, 0, m);
	struct swap_mutex *s = SM(m);
	void *p = fast_slot(s, k);
	if (unlikely(!p))
		return release(m, k);
	tls.busy++;
	class_of_made(s)->unlock(p);
	tls.busy--;
	return 0;
}

EXPORT int SWAPPED(pthread_mutex_consistent)(pthread_mutex_t *m)
{
	if (GLIBC(m))
		return GLIBC_CALL(mutex_consistent, 0, m);
	return EINVAL;   /* only robust mutexes can be made consistent, and they are glibc's */
}

/* -------------------------------------------------------------- condvars */

#define SWAP_GUARDS 256
static struct guard {
	pthread_mutex_t m;        /* glibc's, always through REAL() */
	atomic_uint waiters;      /* swapped-mutex waiters between lock G and their return */
	atomic_uint broadcasts;   /* broadcasts sent under m: changed by G's holder only */
} __attribute__((aligned(64))) guards[SWAP_GUARDS];

static inline struct guard *guard_of(const pthread_cond_t *c)
{
	uintptr_t h = (uintptr_t)c;
	h ^= h >> 7;
	h ^= h >> 13;
	return &guards[h % SWAP_GUARDS];
}

static inline int cond_pshared(pthread_cond_t *c)
{
	/* glibc keeps the process-shared flag in bit 0 of __wrefs, fixed at init. */
	return __atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) & 1;
}

/*
 * Regaining the mutex: woken waiters go for M one at a time.
 *
 * A broadcast wakes every waiter of C (glibc's), and each would go straight
 * for M: a thousand threads spinning on it or parking in it at once.  So a
 * woken waiter tries M once and, finding it busy, queues for it in a FIFO
 * regain queue (one of REGAIN_BUCKETS, by M's address; the node on its
 * stack).  Only the queue's first regainer of M, the one with the turn, calls
 * M's lock; when it has M it passes the turn to the next regainer of M, who
 * wakes while M is held and is first in line (in M's lock) when it is
 * released.  So at most one such waiter per mutex is inside its lock, and
 * the next one's wakeup overlaps the holder's critical section.
 *
 * Who queues: a waiter that a broadcast may have woken (G's broadcast count
 * moved while it waited), and any woken waiter of a lock that spins.  A
 * waiter of a lock that parks (LL_ALGO_PARKS) woken by a signal, a timeout or
 * spuriously goes into M's lock as before: signals wake one waiter each, a
 * parked thread costs nothing while it waits, and queueing those made each
 * sleep twice (for the turn, then in M's lock behind the program's own
 * lockers) on a busy producer-consumer mutex.
 *
 * No lost wakeup: a regainer of M that finds another in the queue waits for
 * the turn, and the regainer with the turn passes it as soon as it has M,
 * whatever else happens (it needs nothing but M).
 *
 * No deadlock: the bucket lock (glibc's) is a leaf, held for a list
 * operation only; its holder takes no other lock, waits for nothing and runs
 * none of the program's code.  A queued regainer waits, holding no internal
 * lock, for the regainers ahead of it to acquire M, and those wait only for
 * M.  So a regainer waits for M's holders and nothing else, as it would in
 * M's own lock: whatever other mutexes it holds (POSIX lets a waiter hold
 * others), it adds no edge to the program's own lock order.
 */
#define REGAIN_BUCKETS 256

struct regainer {
	struct regainer *prev, *next;
	const struct swap_mutex *m;
	atomic_uint turn;   /* futex word: 0 queued, 1 its turn to lock M */
};

static struct regain_bucket {
	pthread_mutex_t lock;   /* glibc's, always through REAL() */
	struct regainer *head, *tail;
} __attribute__((aligned(64))) regains[REGAIN_BUCKETS];

static inline struct regain_bucket *bucket_of(const struct swap_mutex *s)
{
	uintptr_t h = (uintptr_t)s;
	h ^= h >> 9;
	h ^= h >> 17;
	return &regains[h % REGAIN_BUCKETS];
}

/* The first regainer of M from r on (the bucket's lock held). */
static struct regainer *regainer_of(struct regainer *r, const struct swap_mutex *s)
{
	while (r && r->m != s)
		r = r->next;
	return r;
}

/* Lock M after a wait: at once if it is free (one try, no herd); else, after
 * a broadcast or for a lock that spins, in turn (above), and otherwise (woken
 * by a signal, a lock that parks) in M's lock.  Not a cancellation point;
 * errno is kept. */
static void regain(pthread_mutex_t *m, int broadcast)
{
	struct swap_mutex *s = SM(m);
	if (!acquire(m, kind_of(m), H_TRY, 0, NULL))
		return;
	int saved = errno;
	if (!broadcast && (class_of(s)->ops->flags & LL_ALGO_PARKS)) {
		while (acquire(m, kind_of(m), H_LOCK, 0, NULL))
			;
		errno = saved;
		return;
	}
	struct regain_bucket *b = bucket_of(s);
	struct regainer me = { .m = s };
	REAL(mutex_lock)(&b->lock);
	/* The first regainer of M in the queue has the turn. */
	atomic_store_explicit(&me.turn, !regainer_of(b->head, s), memory_order_relaxed);
	me.prev = b->tail;
	if (b->tail)
		b->tail->next = &me;
	else
		b->head = &me;
	b->tail = &me;
	REAL(mutex_unlock)(&b->lock);
	/* Acquire: pairs with the release store that passed us the turn. */
	while (!atomic_load_explicit(&me.turn, memory_order_acquire))
		ll_sys_futex_wait(&me.turn, 0, NULL);
	while (acquire(m, kind_of(m), H_LOCK, 0, NULL))
		;
	/* M is ours: leave the queue, and the next regainer of M has the turn. */
	REAL(mutex_lock)(&b->lock);
	struct regainer *next = regainer_of(me.next, s);
	if (me.prev)
		me.prev->next = me.next;
	else
		b->head = me.next;
	if (me.next)
		me.next->prev = me.prev;
	else
		b->tail = me.prev;
	if (next)   /* Release: pairs with next's acquire load of its turn. */
		atomic_store_explicit(&next->turn, 1, memory_order_release);
	REAL(mutex_unlock)(&b->lock);
	/* Out of the lock, which others wait for: next may be gone by now (it saw
	 * its turn, took M and left), and then the wake is a spurious one at a dead
	 * address, which every futex waiter rechecks anyway. */
	if (next)
		ll_sys_futex_wake(&next->turn, 1);
	errno = saved;
}

struct cond_wait {
	struct guard *g;
	pthread_mutex_t *m;
	unsigned depth;
	unsigned broadcasts;   /* G's count when the wait began */
};

/* G held (glibc gave it back): a broadcast on one of G's condvars since the
 * wait began may have woken a crowd, which regains M in turn. */
static void cond_regain(struct cond_wait *w)
{
	int broadcast = atomic_load_explicit(&w->g->broadcasts, memory_order_relaxed) !=
			w->broadcasts;
	atomic_fetch_sub_explicit(&w->g->waiters, 1, memory_order_relaxed);
	REAL(mutex_unlock)(&w->g->m);
	regain(w->m, broadcast);
	SM(w->m)->count = w->depth;
}

/* Cancelled inside the wait: glibc has retaken the guard; give the program its mutex. */
static void cond_cancelled(void *p)
{
	cond_regain(p);
}

enum cond_how { C_WAIT, C_TIMED, C_CLOCK };

static int cond_call(pthread_cond_t *c, pthread_mutex_t *m, enum cond_how how, clockid_t clk,
		     const struct timespec *abs)
{
	/* A wait inside our own set-up returns at once: a spurious wakeup. */
	switch (how) {
	case C_TIMED:
		return GLIBC_CALL(cond_timedwait, 0, c, m, abs);
	case C_CLOCK:
		if (can_call_real() && !real.cond_clockwait)
			return ENOSYS;
		return GLIBC_CALL(cond_clockwait, 0, c, m, clk, abs);
	default:
		return GLIBC_CALL(cond_wait, 0, c, m);
	}
}

static int cond_wait_common(pthread_cond_t *c, pthread_mutex_t *m, enum cond_how how,
			    clockid_t clk, const struct timespec *abs)
{
	if (GLIBC(m))
		return cond_call(c, m, how, clk, abs);
	struct swap_mutex *s = SM(m);
	int type = s->kind & K_TYPE;
	if ((type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK) &&
	    owner_of(s) != self_id())
		return EPERM;
	struct cond_wait w = { guard_of(c), m, s->count, 0 };
	REAL(mutex_lock)(&w.g->m);
	w.broadcasts = atomic_load_explicit(&w.g->broadcasts, memory_order_relaxed);
	/* Relaxed: signalers that must see it reach it through M's release
	 * (below) and their own acquire of M, or through G. */
	atomic_fetch_add_explicit(&w.g->waiters, 1, memory_order_relaxed);
	s->count = 1;   /* a recursive mutex is released whole */
	int r = release(m, s->kind);
	if (r) {
		s->count = w.depth;
		atomic_fetch_sub_explicit(&w.g->waiters, 1, memory_order_relaxed);
		REAL(mutex_unlock)(&w.g->m);
		return r;
	}
	if (counting())
		atomic_fetch_add_explicit(&totals.conds, 1, memory_order_relaxed);
	pthread_cleanup_push(cond_cancelled, &w);
	r = cond_call(c, &w.g->m, how, clk, abs);
	pthread_cleanup_pop(0);
	cond_regain(&w);
	return r;
}

EXPORT int SWAPPED(pthread_cond_wait)(pthread_cond_t *c, pthread_mutex_t *m)
{
	return cond_wait_common(c, m, C_WAIT, 0, NULL);
}

EXPORT int SWAPPED(pthread_cond_timedwait)(pthread_cond_t *c, pthread_mutex_t *m,
					   const struct timespec *abs)
{
	return cond_wait_common(c, m, C_TIMED, 0, abs);
}

EXPORT int SWAPPED(pthread_cond_clockwait)(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
				  const struct timespec *abs)
{
	return cond_wait_common(c, m, C_CLOCK, clk, abs);
}

static int wake(pthread_cond_t *c, int all)
{
	if (unlikely(tls.busy))
		return all ? GLIBC_CALL(cond_broadcast, 0, c) : GLIBC_CALL(cond_signal, 0, c);
	int (*f)(pthread_cond_t *) = all ? REAL(cond_broadcast) : REAL(cond_signal);
	if (cond_pshared(c))
		return f(c);
	struct guard *g = guard_of(c);
	/* Relaxed: see cond_wait_common; a stale nonzero only costs taking G. */
	if (!atomic_load_explicit(&g->waiters, memory_order_relaxed))
		return f(c);
	REAL(mutex_lock)(&g->m);
	int r = f(c);
	if (all)   /* G held: each waiter reads it before and after its wait, under G */
		atomic_store_explicit(&g->broadcasts,
				      atomic_load_explicit(&g->broadcasts, memory_order_relaxed) + 1,
				      memory_order_relaxed);
	REAL(mutex_unlock)(&g->m);
	return r;
}

EXPORT int SWAPPED(pthread_cond_signal)(pthread_cond_t *c)
{
	return wake(c, 0);
}

EXPORT int SWAPPED(pthread_cond_broadcast)(pthread_cond_t *c)
{
	return wake(c, 1);
}

/* ---------------------------------------------------------------- rwlocks */

/*
 * Without LOCKLAB_SWAP_RWLOCK, pthread_rwlock_t stays glibc's: each call goes
 * to glibc's function, and with the stats on, inits and successful
 * acquisitions are counted (per thread, like the mutexes').  With it, every
 * pthread_rwlock_t but a process-shared one is served by that rwlock of
 * liblocklab, in a slot of the slab (one 64-byte line: every rwlock's state
 * is 40 to 56 bytes, and glibc's 56 must keep room for what POSIX needs):
 *
 *   offset  glibc's field        ours
 *    0      __readers, __writers the slot: NULL until first use, CASed in once
 *    8      __wrphase_futex      fork generation (as a mutex's __nusers)
 *   24      __cur_writer         the write holder's swap thread id, 0 when none
 *                                (written by the holder only): EDEADLK, EBUSY
 *   28      __shared             glibc's, never written: a process-shared lock
 *                                is glibc's for its life
 *   48      __flags              glibc's kind, never written: a
 *                                writer-nonrecursive lock gets rwc.config[1]
 *
 * pthread_rwlock_init is glibc's (it zeroes the rest): no slot until first
 * use, so a static initializer's lock and an initialised one start alike.
 * A call from inside an algorithm (partitioned's and pthread's glibc
 * rwlocks) or our set-up is glibc's (tls.busy), the latter answered with
 * success before glibc's function is known (GLIBC_CALL).
 */
struct swap_rwlock {
	void *slot;
	unsigned gen;
	unsigned glibc_writers_futex, glibc_pad3, glibc_pad4;
	int writer;
	int shared;
	unsigned char glibc_elision[16];
	unsigned flags;
	unsigned glibc_pad5;
};
_Static_assert(sizeof(struct swap_rwlock) == sizeof(pthread_rwlock_t), "glibc's rwlock layout");
_Static_assert(offsetof(struct swap_rwlock, writer) ==
	       offsetof(pthread_rwlock_t, __data.__cur_writer), "__cur_writer where glibc keeps it");
_Static_assert(offsetof(struct swap_rwlock, shared) ==
	       offsetof(pthread_rwlock_t, __data.__shared), "__shared where glibc keeps it");
_Static_assert(offsetof(struct swap_rwlock, flags) ==
	       offsetof(pthread_rwlock_t, __data.__flags), "__flags where glibc keeps it");

static inline struct swap_rwlock *SR(pthread_rwlock_t *l) { return (struct swap_rwlock *)l; }

/* glibc's: no rwlock named, inside an algorithm or our set-up, or process-shared
 * (__shared is written by init before the lock is shared). */
static inline int rw_glibcs(pthread_rwlock_t *l)
{
	if (unlikely(!atomic_load_explicit(&config_ready, memory_order_acquire)) && !tls.busy)
		config_load();
	return !hot.rw_ops || tls.busy || __atomic_load_n(&SR(l)->shared, __ATOMIC_RELAXED);
}

static inline void rw_count(int contended)
{
	count_thread();
	tls.rwc += (uint32_t)contended;
	if (unlikely(++tls.rw >= 1024))
		flush_counts();
}

static inline int rw_counted(int r)
{
	if (r == 0 && !tls.busy && counting())   /* not an algorithm's own glibc rwlock */
		rw_count(0);
	return r;
}

/* A slot with the rwlock's state initialised, by the lock's kind. */
static void *rw_slot_new(const struct swap_rwlock *s)
{
	void *p = slab_take(&rw_slot_free, rwc.slot_bytes, 64);
	if (!p) {
		say("locklab: swap: out of memory for an rwlock (mmap failed)");
		abort();
	}
	atomic_fetch_add_explicit(&in_use.rw_slots, 1, memory_order_relaxed);
	int nonrec = __atomic_load_n(&s->flags, __ATOMIC_RELAXED) ==
		     PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
	tls.busy++;
	int rc = hot.rw_ops->init(p, rwc.config[nonrec]);
	tls.busy--;
	if (rc) {
		say("locklab: swap: rwlock %s: init failed (%s)", rwc.name, strerror(rc));
		abort();
	}
	return p;
}

static void rw_slot_release(void *p)
{
	slab_put(&rw_slot_free, p);
	atomic_fetch_sub_explicit(&in_use.rw_slots, 1, memory_order_relaxed);
}

/* The slot, made now at the first use (racing first users agree by CAS). */
static void *rw_slot_of(struct swap_rwlock *s)
{
	/* Acquire pairs with the CAS's release: the state is initialised. */
	void *p = __atomic_load_n(&s->slot, __ATOMIC_ACQUIRE);
	if (likely(p != NULL))
		return p;
	p = rw_slot_new(s);
	void *expect = NULL;
	if (__atomic_compare_exchange_n(&s->slot, &expect, p, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		atomic_fetch_add_explicit(&totals.rw_swapped, 1, memory_order_relaxed);
		return p;
	}
	tls.busy++;
	hot.rw_ops->destroy(p);
	tls.busy--;
	rw_slot_release(p);
	return expect;
}

static inline unsigned rw_writer(const struct swap_rwlock *s)
{
	return (unsigned)__atomic_load_n(&s->writer, __ATOMIC_RELAXED);
}

static inline void rw_set_writer(struct swap_rwlock *s, unsigned id)
{
	__atomic_store_n(&s->writer, (int)id, __ATOMIC_RELAXED);
}

/* Replace the state, free or this thread's write hold, by a fresh one; the old
 * is dropped, not destroyed (what it owns beyond its slot stays behind). */
static void rw_fresh_slot(struct swap_rwlock *s, void *old)
{
	__atomic_store_n(&s->slot, rw_slot_new(s), __ATOMIC_RELEASE);
	rw_slot_release(old);
}

/*
 * The first use of an rwlock in a forked child (its gen older than
 * hot.fork_gen), one thread looking at a time (GEN_REPAIR):
 *
 *   never used        gen made current
 *   free at the fork  (a trywrlock of the old state succeeds) a fresh state
 *   held at the fork  kept as it is: by a thread that is gone it stays held,
 *                     as glibc's does (try EBUSY, timed ETIMEDOUT, lock waits);
 *                     a hold of the forking thread is its own to release
 *                     (rw_fork_release)
 */
static void rw_fork_repair(struct swap_rwlock *s)
{
	if (!gen_claim(&s->gen))
		return;
	void *p = __atomic_load_n(&s->slot, __ATOMIC_ACQUIRE);
	if (p) {
		tls.busy++;
		int held = hot.rw_ops->trywrlock(p);
		tls.busy--;
		if (!held)
			rw_fresh_slot(s, p);
	}
	gen_publish(&s->gen, hot.fork_gen);
}

/*
 * An unlock in a forked child of an rwlock not used since the fork, by the
 * forking thread: a write hold gets a fresh state (gone threads queued on the
 * old one are left behind with it); a read hold is released on the old state,
 * which is then replaced by a fresh one if it is free.  The unlock's result,
 * or -1: never locked, the usual path answers.
 */
static int rw_fork_release(struct swap_rwlock *s)
{
	if (!gen_claim(&s->gen))
		return -1;
	void *p = __atomic_load_n(&s->slot, __ATOMIC_ACQUIRE);
	int rc = -1;
	if (p && rw_writer(s) == self_id()) {
		rw_set_writer(s, 0);
		rw_fresh_slot(s, p);
		rc = 0;
	} else if (p) {
		tls.busy++;
		rc = hot.rw_ops->unlock(p);
		int held = hot.rw_ops->trywrlock(p);
		tls.busy--;
		if (!held)
			rw_fresh_slot(s, p);
	}
	gen_publish(&s->gen, hot.fork_gen);
	return rc;
}

static inline int rw_stale(const struct swap_rwlock *s)
{
	return unlikely(__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != hot.fork_gen);
}

/*
 * Any lock of a swapped rwlock.  As glibc's: a bad deadline (tv_nsec out of
 * range, a clock neither CLOCK_REALTIME nor CLOCK_MONOTONIC) is EINVAL even
 * when the lock is free; a thread holding the write lock gets EDEADLK from
 * rdlock and wrlock (plain, timed, clock) and EBUSY from their try.
 */
static int rw_acquire(pthread_rwlock_t *l, int write, enum how how, clockid_t clk,
		      const struct timespec *abs)
{
	struct swap_rwlock *s = SR(l);
	if (how == H_TIMED && (!abs || abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L ||
			       (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)))
		return EINVAL;
	unsigned me = self_id();
	if (rw_writer(s) == me)
		return how == H_TRY ? EBUSY : EDEADLK;
	if (rw_stale(s))
		rw_fork_repair(s);
	void *p = rw_slot_of(s);
	const struct ll_rwlock_ops *o = hot.rw_ops;
	int rc, contended = 0;
	tls.busy++;
	if (how == H_TRY) {
		rc = write ? o->trywrlock(p) : o->tryrdlock(p);
	} else if (how == H_LOCK && !counting()) {
		rc = write ? o->wrlock(p) : o->rdlock(p);
	} else {
		rc = write ? o->trywrlock(p) : o->tryrdlock(p);
		if (rc == EBUSY) {
			contended = 1;
			struct timespec mono;
			if (counting())
				waiting_enter();
			if (how == H_LOCK)
				rc = write ? o->wrlock(p) : o->rdlock(p);
			else if (!(rc = to_mono(clk, abs, &mono)))
				rc = write ? o->timedwrlock(p, &mono) : o->timedrdlock(p, &mono);
			if (counting())
				waiting_leave();
		}
	}
	tls.busy--;
	if (rc)
		return rc;
	if (write)
		rw_set_writer(s, me);
	if (counting())
		rw_count(contended);
	return 0;
}

EXPORT int SWAPPED(pthread_rwlock_init)(pthread_rwlock_t *l, const pthread_rwlockattr_t *a)
{
	int r = GLIBC_CALL(rw_init, 0, l, a);
	if (r || tls.busy)
		return r;
	/* Relaxed: totals read at exit. */
	if (counting())
		atomic_fetch_add_explicit(&totals.rwlocks, 1, memory_order_relaxed);
	if (hot.rw_ops && SR(l)->shared)
		atomic_fetch_add_explicit(&totals.rw_pshared, 1, memory_order_relaxed);
	return 0;
}

EXPORT int SWAPPED(pthread_rwlock_destroy)(pthread_rwlock_t *l)
{
	if (rw_glibcs(l))
		return GLIBC_CALL(rw_destroy, 0, l);
	struct swap_rwlock *s = SR(l);
	void *p = __atomic_exchange_n(&s->slot, NULL, __ATOMIC_ACQ_REL);
	if (p) {
		/* A state from before a fork is dropped: its destroy could wait for
		 * threads that are gone. */
		if (!rw_stale(s)) {
			tls.busy++;
			hot.rw_ops->destroy(p);
			tls.busy--;
		}
		rw_slot_release(p);
	}
	rw_set_writer(s, 0);
	return 0;
}

EXPORT int SWAPPED(pthread_rwlock_unlock)(pthread_rwlock_t *l)
{
	if (rw_glibcs(l))
		return GLIBC_CALL(rw_unlock, 0, l);
	struct swap_rwlock *s = SR(l);
	if (rw_stale(s)) {
		int rc = rw_fork_release(s);
		if (rc >= 0)
			return rc;
	}
	void *p = __atomic_load_n(&s->slot, __ATOMIC_ACQUIRE);
	if (unlikely(!p))
		return EPERM;   /* never locked */
	if (rw_writer(s) == self_id())
		rw_set_writer(s, 0);
	tls.busy++;
	int rc = hot.rw_ops->unlock(p);
	tls.busy--;
	return rc;
}

/* The four lock calls of one side, rd or wr: plain, try, timed, clock. */
#define RWLOCK_SIDE(side, write)                                                            \
	EXPORT int SWAPPED(pthread_rwlock_##side##lock)(pthread_rwlock_t *l)                 \
	{                                                                                    \
		if (rw_glibcs(l))                                                            \
			return rw_counted(GLIBC_CALL(rw_##side##lock, 0, l));                \
		return rw_acquire(l, write, H_LOCK, 0, NULL);                                \
	}                                                                                    \
	EXPORT int SWAPPED(pthread_rwlock_try##side##lock)(pthread_rwlock_t *l)              \
	{                                                                                    \
		if (rw_glibcs(l))                                                            \
			return rw_counted(GLIBC_CALL(rw_try##side##lock, 0, l));             \
		return rw_acquire(l, write, H_TRY, 0, NULL);                                 \
	}                                                                                    \
	EXPORT int SWAPPED(pthread_rwlock_timed##side##lock)(pthread_rwlock_t *l,            \
							       const struct timespec *abs)   \
	{                                                                                    \
		if (rw_glibcs(l))                                                            \
			return rw_counted(GLIBC_CALL(rw_timed##side##lock, 0, l, abs));      \
		return rw_acquire(l, write, H_TIMED, CLOCK_REALTIME, abs);                   \
	}                                                                                    \
	EXPORT int SWAPPED(pthread_rwlock_clock##side##lock)(pthread_rwlock_t *l, clockid_t clk, \
							       const struct timespec *abs)   \
	{                                                                                    \
		if (rw_glibcs(l)) {                                                          \
			if (can_call_real() && !real.rw_clock##side##lock)                   \
				return ENOSYS;                                               \
			return rw_counted(GLIBC_CALL(rw_clock##side##lock, 0, l, clk, abs)); \
		}                                                                            \
		return rw_acquire(l, write, H_TIMED, clk, abs);                              \
	}

RWLOCK_SIDE(rd, 0)
RWLOCK_SIDE(wr, 1)
#undef RWLOCK_SIDE

/* -------------------------------------------------------- fork and exit */

/*
 * The slab and name guards are not taken before fork: other prepare handlers
 * (an allocator's, locking all its mutexes) may still make slots, or name
 * mutexes, after ours.  A child whose copy was taken with a guard held cannot
 * trust what it guards: it starts a new chunk and new lists, or new symbol
 * tables (the old ones leak; the call-site cache's entries are each whole).
 */
static void after_fork_child(void)
{
	if (atomic_flag_test_and_set_explicit(&slab_guard, memory_order_relaxed)) {
		slab_next = slab_end = NULL;
		slab_free = rw_slot_free = NULL;
		memset(block_free, 0, sizeof(block_free));
	}
	atomic_flag_clear_explicit(&slab_guard, memory_order_relaxed);
	if (atomic_flag_test_and_set_explicit(&name_guard, memory_order_relaxed)) {
		memset(&name_arena, 0, sizeof(name_arena));
		memset(&names, 0, sizeof(names));
		names.arena = &name_arena;
	}
	atomic_flag_clear_explicit(&name_guard, memory_order_relaxed);
	/* Every mutex used before now is looked at once more (fork_repair). */
	hot.fork_gen = (hot.fork_gen + 1) & GEN_MASK;
	/* Only this thread exists: no guard is held, no waiter is left, nobody
	 * queues to regain a mutex. */
	for (int i = 0; i < SWAP_GUARDS; i++) {
		memset(&guards[i].m, 0, sizeof(guards[i].m));
		atomic_store_explicit(&guards[i].waiters, 0, memory_order_relaxed);
	}
	for (int i = 0; i < REGAIN_BUCKETS; i++) {
		memset(&regains[i].lock, 0, sizeof(regains[i].lock));
		regains[i].head = regains[i].tail = NULL;
	}
	/* The parent's totals are the parent's. */
	atomic_store_explicit(&totals.acquisitions, 0, memory_order_relaxed);
	atomic_store_explicit(&totals.contended, 0, memory_order_relaxed);
	atomic_store_explicit(&totals.conds, 0, memory_order_relaxed);
	atomic_store_explicit(&totals.mutexes, 0, memory_order_relaxed);
	atomic_store_explicit(&totals.rwlocks, 0, memory_order_relaxed);
	atomic_store_explicit(&totals.rw_acquisitions, 0, memory_order_relaxed);
	atomic_store_explicit(&totals.rw_swapped, 0, memory_order_relaxed);
	atomic_store_explicit(&totals.rw_contended, 0, memory_order_relaxed);
	atomic_store_explicit(&totals.rw_pshared, 0, memory_order_relaxed);
	atomic_store_explicit(&totals.waiting, 0, memory_order_relaxed);
	atomic_store_explicit(&totals.max_waiting, 0, memory_order_relaxed);
	for (int i = 0; i < PASS_N; i++)
		atomic_store_explicit(&totals.passthrough[i], 0, memory_order_relaxed);
	for (int i = 0; i <= nsites; i++)
		atomic_store_explicit(&classes[i].matched, 0, memory_order_relaxed);
	atomic_store_explicit(&glibc_class.matched, 0, memory_order_relaxed);
	tls.acq = tls.cont = tls.rw = tls.rwc = 0;
}

__attribute__((constructor)) static void swap_ctor(void)
{
	real_resolve();
	if (!atomic_load_explicit(&config_ready, memory_order_acquire))
		config_load();
	if (getenv("LOCKLAB_SWAP_CHECK"))
		_exit(0);   /* the CLI's check of the lock and its options, before the run */
	pthread_atfork(NULL, NULL, after_fork_child);
}

/* ------------------------------------------------------------- reporting */

/* Text built without malloc, into a buffer of the caller's: cut short when full. */
struct out {
	char *p;
	size_t len, cap;
};

static void out_printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(struct out *o, const char *fmt, ...)
{
	if (o->len + 1 >= o->cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len = o->len + (size_t)n < o->cap ? o->len + (size_t)n : o->cap - 1;
}

static void out_sink(void *ctx, const char *p, size_t n)
{
	struct out *o = ctx;
	out_printf(o, "%.*s", (int)n, p);
}

static void out_str(struct out *o, const char *s)
{
	ll_json_string(s, out_sink, o);
}

/* "lock": ..., "lock_opts": ..., "lock_for": [...], with the counts or without. */
static void put_config_json(struct out *o, int counts)
{
	out_printf(o, "\"lock\": ");
	out_str(o, rest == GLIBC_CLASS ? NULL : classes[0].name);
	out_printf(o, ", \"lock_opts\": ");
	out_str(o, rest == GLIBC_CLASS ? "" : classes[0].opts);
	out_printf(o, ", \"lock_for\": [");
	for (int i = 1; i <= nsites; i++) {
		out_printf(o, "%s{\"site\": ", i > 1 ? ", " : "");
		out_str(o, classes[i].site);
		out_printf(o, ", \"lock\": ");
		out_str(o, classes[i].name);
		out_printf(o, ", \"lock_opts\": ");
		out_str(o, classes[i].opts);
		if (counts)
			out_printf(o, ", \"matched\": %lu",
				   atomic_load_explicit(&classes[i].matched, memory_order_relaxed));
		out_printf(o, "}");
	}
	out_printf(o, "]");
	if (counts)
		out_printf(o, ", \"not_chosen\": %lu",
			   atomic_load_explicit(&glibc_class.matched, memory_order_relaxed));
}

EXPORT void locklab_swap_describe(int json, char *buf, size_t len)
{
	struct out o = { buf, 0, len };
	if (!len)
		return;
	buf[0] = 0;
	if (!atomic_load_explicit(&config_ready, memory_order_acquire))
		config_load();
	if (json) {
		out_printf(&o, "{");
		put_config_json(&o, 0);
		out_printf(&o, "}");
		return;
	}
	if (rest != GLIBC_CLASS)
		out_printf(&o, "%s%s%s%s", classes[0].name, classes[0].opts[0] ? " (" : "",
			   classes[0].opts, classes[0].opts[0] ? ")" : "");
	for (int i = 1; i <= nsites; i++)
		out_printf(&o, "%s%s%s%s%s for %s", i > 1 || rest != GLIBC_CLASS ? "; " : "",
			   classes[i].name, classes[i].opts[0] ? " (" : "", classes[i].opts,
			   classes[i].opts[0] ? ")" : "", classes[i].site);
	if (nsites)
		out_printf(&o, "; %s for the rest", rest == GLIBC_CLASS ? "glibc" : classes[0].name);
}

/* One write with O_APPEND: processes appending at once do not interleave. */
static void append_line(const char *path, const struct out *o)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		say("locklab: swap: %s: %s", path, strerror(errno));
		return;
	}
	ssize_t w = write(fd, o->p, o->len);
	(void)w;
	close(fd);
}

static char report_buf[1 << 17];   /* the exit reports' text (64 sites of 511 bytes fit) */

__attribute__((destructor)) static void swap_dtor(void)
{
	if (!atomic_load_explicit(&config_ready, memory_order_acquire))
		return;
	struct out o = { report_buf, 0, sizeof(report_buf) };
	if (sites_json[0]) {
		out_printf(&o, "{\"pid\": %d, ", (int)getpid());
		put_config_json(&o, 1);
		out_printf(&o, "}\n");
		append_line(sites_json, &o);
	}
	if (!counting())
		return;
	flush_counts();
	unsigned long pass[PASS_N], npass = 0;
	for (int i = 0; i < PASS_N; i++)
		npass += pass[i] = atomic_load_explicit(&totals.passthrough[i], memory_order_relaxed);
	unsigned long mx = atomic_load_explicit(&totals.mutexes, memory_order_relaxed);
	unsigned long acq = atomic_load_explicit(&totals.acquisitions, memory_order_relaxed);
	unsigned long cont = atomic_load_explicit(&totals.contended, memory_order_relaxed);
	unsigned long conds = atomic_load_explicit(&totals.conds, memory_order_relaxed);
	unsigned maxw = atomic_load_explicit(&totals.max_waiting, memory_order_relaxed);
	unsigned long rwl = atomic_load_explicit(&totals.rwlocks, memory_order_relaxed);
	unsigned long rwa = atomic_load_explicit(&totals.rw_acquisitions, memory_order_relaxed);
	unsigned long rws = atomic_load_explicit(&totals.rw_swapped, memory_order_relaxed);
	unsigned long rwc_ = atomic_load_explicit(&totals.rw_contended, memory_order_relaxed);
	unsigned long rwp = atomic_load_explicit(&totals.rw_pshared, memory_order_relaxed);
	unsigned long rw_slots = atomic_load_explicit(&in_use.rw_slots, memory_order_relaxed);
	unsigned long slots = atomic_load_explicit(&in_use.slots, memory_order_relaxed);
	unsigned long blk = atomic_load_explicit(&in_use.blocks, memory_order_relaxed);
	unsigned long blk_bytes = atomic_load_explicit(&in_use.block_bytes, memory_order_relaxed);
	if (stats_line) {
		o.len = 0;
		out_printf(&o, "locklab: swap pid %d lock %s: %lu mutexes (%zu bytes each), "
			   "%lu acquisitions, %lu contended, %lu passed to glibc, %lu condvar waits, "
			   "at most %u waiting at once; ",
			   (int)getpid(), rest == GLIBC_CLASS ? "glibc" : classes[0].name, mx,
			   slot_bytes, acq, cont, npass, conds, maxw);
		if (hot.rw_ops)
			out_printf(&o, "rwlocks %s: %lu initialised, %lu swapped (%zu bytes each), "
				   "%lu acquisitions, %lu contended, %lu process-shared left to glibc",
				   rwc.name, rwl, rws, rwc.slot_bytes, rwa, rwc_, rwp);
		else
			out_printf(&o, "glibc's rwlocks: %lu initialised, %lu acquisitions", rwl, rwa);
		out_printf(&o, "; in use: %lu slots, %lu rwlock slots, %lu blocks of the "
			   "algorithms' (%lu bytes)", slots, rw_slots, blk, blk_bytes);
		for (int i = 1; i <= nsites; i++) {
			unsigned long n = atomic_load_explicit(&classes[i].matched, memory_order_relaxed);
			out_printf(&o, "%s%s %s: %lu%s", i == 1 ? "; lock-for " : ", ", classes[i].site,
				   classes[i].name, n, n ? "" : " (matched nothing)");
		}
		if (nsites)
			out_printf(&o, "; %lu not chosen",
				   atomic_load_explicit(&glibc_class.matched, memory_order_relaxed));
		out_printf(&o, "\n");
		ssize_t w = write(2, o.p, o.len);
		(void)w;
	}
	if (stats_json[0]) {
		o.len = 0;
		out_printf(&o, "{\"pid\": %d, ", (int)getpid());
		put_config_json(&o, 1);
		out_printf(&o, ", \"mutexes\": %lu, \"slot_bytes\": %zu, \"acquisitions\": %lu, "
			   "\"contended\": %lu, \"passthrough\": {\"%s\": %lu, \"%s\": %lu, "
			   "\"%s\": %lu, \"%s\": %lu}, \"conds\": %lu, \"max_waiting\": %u, "
			   "\"rwlocks\": {\"lock\": ",
			   mx, slot_bytes, acq, cont, pass_names[0], pass[0], pass_names[1], pass[1],
			   pass_names[2], pass[2], pass_names[3], pass[3], conds, maxw);
		out_str(&o, hot.rw_ops ? rwc.name : NULL);
		out_printf(&o, ", \"lock_opts\": ");
		out_str(&o, rwc.opts);
		out_printf(&o, ", \"initialised\": %lu, \"acquisitions\": %lu, \"swapped\": %lu, "
			   "\"slot_bytes\": %zu, \"contended\": %lu, \"pshared\": %lu}, "
			   "\"in_use\": {\"slots\": %lu, \"rw_slots\": %lu, \"blocks\": %lu, "
			   "\"block_bytes\": %lu}}\n",
			   rwl, rwa, rws, rwc.slot_bytes, rwc_, rwp, slots, rw_slots, blk, blk_bytes);
		append_line(stats_json, &o);
	}
}
