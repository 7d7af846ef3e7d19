/* Over 800 lines for one algorithm: its read fast path inlines the table the writer scans. */
/*
 * ll.c: the project's own rwlock (word, records and bounds drawn in
 * locklab/rwlocks/ll.h): a per-CPU table of visible readers shared by every
 * lock, a writer-first futex rwlock underneath, BRAVO's bias revocation
 * between them.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdalign.h>
#include <sched.h>
#include <stddef.h>
#include <unistd.h>
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define LL_HAVE_RSEQ 1
#else
#define LL_HAVE_RSEQ 0
#endif

#include "core/cpus.h"
#include "core/futex_sys.h"
#include "core/mem.h"
#include "core/sched.h"
#include "locklab/rwlocks/ll.h"
#include "locklab/bits/spin.h"
#include "rwlocks/rwalgo.h"

_Static_assert(sizeof(ll_rw_ll_t) == 48, "ll_rw_ll_t is drawn as 48 bytes in rwlocks/ll.h");

#define P LL_RW_LL_P
#define G LL_RW_LL_G
#define B LL_RW_LL_B
#define R LL_RW_LL_R
#define W LL_RW_LL_W
#define S LL_RW_LL_S
#define T LL_RW_LL_T
#define READERS LL_RW_LL_READERS

/* rt: the realtime writers waiting, and the highest priority among them. */
#define RT_COUNT 0xffffu
#define RT_PRIO_SHIFT 16

#define SLOTS 8
#define ALL_SLOTS ((1u << SLOTS) - 1)
/* A slow hold, recorded in a slot for recursion. */
#define SLOW_TAG ((uintptr_t)1)
/* A revoking writer sleeps at most this long between looks at a slot (a fast
 * unlock's wake can pass its release store, rwlocks/ll.h). */
#define REVOKE_TICK_NS 100000u
/* A slow reader reads the clock for the bias once in this many reads of its thread. */
#define BIAS_LOOK_EVERY 64u

/*
 * The visible readers: lines of LINE_SLOTS slots shared by every lock, first
 * one per CPU.  A fast reader claims a free slot of its CPU's line by CAS and
 * writes its lock's address there; threads on one CPU take turns on its
 * line, so it stays in that CPU's cache.  A revoking writer scans every line
 * in use: as many as there are CPUs, whatever the number of threads.
 *
 * Where readers are preempted inside their sections (more threads than
 * CPUs), a CPU's line fills: its readers then look through the further lines
 * that belong to their CPU (line cpu + k x cpus), and once those are full
 * too, double the lines in use, up to LINES_MAX; the table never shrinks.  A
 * reader grows the table before its slot's CAS, and a writer reads the lines
 * in use after it clears B, so a reader that finds B set has its slot
 * within the writer's scan.
 */
#define LINE_SLOTS 8
#define LINES_MAX 4096
struct line {
	alignas(64) _Atomic uintptr_t slot[LINE_SLOTS];
};
static struct line table[LINES_MAX];
static unsigned cpu_lines = 1;         /* a power of two: the CPUs configured, rounded up */
static _Atomic unsigned lines_in_use = 1;  /* a power of two, from cpu_lines to LINES_MAX */

__attribute__((constructor)) static void table_size(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	unsigned n = 1;
	while (n < LINES_MAX && (long)n < cpus)
		n <<= 1;
	cpu_lines = n;
	atomic_store(&lines_in_use, n);
}

/*
 * Where the calling thread can read the CPU it runs on: glibc's rseq area
 * (cpu_id, kept by the kernel), or NULL where glibc registered none.
 */
static const volatile unsigned *cpu_word(void)
{
#if LL_HAVE_RSEQ
	if (__rseq_size != 0)
		return (const volatile unsigned *)((const char *)__builtin_thread_pointer() +
						  __rseq_offset + offsetof(struct rseq, cpu_id));
#endif
	return NULL;
}

static inline unsigned this_cpu(const volatile unsigned *cpu)
{
	if (__builtin_expect(cpu != NULL, 1))
		return *cpu;
	int c = sched_getcpu();
	return c < 0 ? 0u : (unsigned)c;
}

static inline _Atomic uintptr_t *table_slot(unsigned at)
{
	return &table[at / LINE_SLOTS].slot[at % LINE_SLOTS];
}

/* Slot `at` (one the thread took before), if it is of line0 and free, now holding me. */
static inline int claim_again(unsigned at, unsigned line0, uintptr_t me)
{
	_Atomic uintptr_t *slot = table_slot(at);
	uintptr_t z = 0;
	return ((at / LINE_SLOTS) & (cpu_lines - 1)) == line0 &&
	       atomic_load_explicit(slot, memory_order_relaxed) == 0 &&
	       atomic_compare_exchange_strong(slot, &z, me);
}

/* A free slot of line ln, now holding me: its index in the table, or -1. */
static inline int line_claim(unsigned ln, uintptr_t me)
{
	for (unsigned j = 0; j < LINE_SLOTS; j++) {
		uintptr_t z = 0;
		if (atomic_load_explicit(&table[ln].slot[j], memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong(&table[ln].slot[j], &z, me))
			return (int)(ln * LINE_SLOTS + j);
	}
	return -1;
}

/*
 * The CPU's own line was full: its further lines, starting at the one that
 * last had room for this thread (*hint), then the table doubled; -1 if full.
 */
static __attribute__((noinline)) int table_claim_further(unsigned line0, uintptr_t me,
							 uint32_t *hint)
{
	unsigned n = atomic_load(&lines_in_use);
	for (;;) {
		unsigned per_cpu = n / cpu_lines;
		unsigned kk = *hint >= 1 && *hint < per_cpu ? *hint : 1;
		for (unsigned k = 1; k < per_cpu; k++, kk = kk + 1 < per_cpu ? kk + 1 : 1) {
			int at = line_claim(line0 + kk * cpu_lines, me);
			if (at >= 0) {
				*hint = kk;
				return at;
			}
		}
		if (n >= LINES_MAX)
			return -1;
		/* Twice the lines: this CPU's new ones are empty unless a peer took them. */
		if (atomic_compare_exchange_strong(&lines_in_use, &n, 2 * n))
			n = 2 * n;
		*hint = per_cpu;
	}
}

/*
 * A free slot for the caller's CPU, now holding me: its index in the table,
 * or -1.  First the slot the thread took last (*last), if it is of this CPU:
 * where readers outnumber CPUs the line's first slots are often held by
 * readers preempted inside their sections.
 */
static inline int table_claim(uintptr_t me, const volatile unsigned *cpu, uint32_t *last,
			      uint32_t *hint)
{
	unsigned line0 = this_cpu(cpu) & (cpu_lines - 1);
	if (claim_again(*last, line0, me))
		return (int)*last;
	int at = line_claim(line0, me);
	if (__builtin_expect(at < 0, 0))
		at = table_claim_further(line0, me, hint);
	if (at >= 0)
		*last = (uint32_t)at;
	return at;
}

/* One thread's holds (private: no other thread reads them) and its recursion counts. */
struct rec {
	alignas(64) uintptr_t held[SLOTS];  /* the lock's address; | SLOW_TAG: a slow hold */
	uint32_t count[SLOTS];
	uint32_t at[SLOTS];            /* a fast hold's slot in the table */
	uint32_t used;                 /* bit i: held[i] holds a lock (else stale) */
	uint32_t slow_reads;           /* the thread's reads through the word, mod 2^32 */
	const volatile unsigned *cpu;  /* the thread's cpu_word() */
	uint32_t last;                 /* the table slot it took last */
	uint32_t further;              /* which further line of its CPU last had room */
	struct rec *next;              /* every record ever made, never unlinked */
	atomic_int taken;              /* a live thread owns it */
};

static _Atomic(struct rec *) records;
static _Thread_local struct rec *self __attribute__((tls_model("initial-exec")));
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

/* Threads that own a record now (they have read an ll rwlock), and the CPUs we may use. */
static atomic_int live_recs;
static int usable_cpus = 1;
static pthread_once_t cpus_once = PTHREAD_ONCE_INIT;

static void count_cpus(void)
{
	usable_cpus = ll_cpus_usable();
}

/* Every reading thread can have a CPU of its own. */
static int one_thread_per_cpu(void)
{
	return atomic_load_explicit(&live_recs, memory_order_relaxed) <= usable_cpus;
}

/* At thread exit: the record goes to the next thread, unless a fast hold is still in it. */
static void thread_gone(void *p)
{
	struct rec *r = p;
	if (r->used)
		return;
	self = NULL;
	atomic_fetch_sub_explicit(&live_recs, 1, memory_order_relaxed);
	atomic_store_explicit(&r->taken, 0, memory_order_release);
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, thread_gone);
}

/* The calling thread's record: a free one, or a new one; NULL when out of memory. */
static __attribute__((noinline)) struct rec *self_register(void)
{
	struct rec *r;
	for (r = atomic_load(&records); r; r = r->next) {
		int free_rec = 0;
		if (atomic_compare_exchange_strong(&r->taken, &free_rec, 1))
			break;
	}
	if (!r) {
		r = ll_mem_alloc(sizeof(*r));
		if (!r)
			return NULL;
		atomic_init(&r->taken, 1);
		struct rec *head = atomic_load(&records);
		do
			r->next = head;
		while (!atomic_compare_exchange_weak(&records, &head, r));
	}
	atomic_fetch_add_explicit(&live_recs, 1, memory_order_relaxed);
	r->cpu = cpu_word();
	r->last = 0;
	r->further = 0;
	pthread_once(&exit_key_once, make_exit_key);
	pthread_setspecific(exit_key, r);
	self = r;
	return r;
}

static inline struct rec *self_get(void)
{
	struct rec *r = self;
	return __builtin_expect(r != NULL, 1) ? r : self_register();
}

int ll_rw_ll_init(ll_rw_ll_t *l, const struct ll_rw_ll_config *cfg)
{
	struct ll_rw_ll_config def;
	cfg = LL_RW_CONFIG_OR_DEFAULTS(ll, cfg, def);
	if (cfg->bias < 0 || cfg->bias > 1 || cfg->inhibit < 0 || cfg->inhibit > UINT16_MAX ||
	    cfg->spin_ns < 0 || cfg->spin_ns > 100000000)
		return EINVAL;
	pthread_once(&cpus_once, count_cpus);
	atomic_init(&l->word, cfg->bias ? B : 0);
	atomic_init(&l->revoker, 0);
	atomic_init(&l->rseq, 0);
	atomic_init(&l->wseq, 0);
	atomic_init(&l->wq, 0);
	atomic_init(&l->rwaiting, 0);
	atomic_init(&l->rt, 0);
	atomic_init(&l->revoked, 0);
	atomic_init(&l->bias_after, 0);
	l->spin_iters = ll_spin_iters(LL_SPIN_PAUSE, cfg->spin_ns);
	l->inhibit = (uint16_t)cfg->inhibit;
	l->bias_on = (uint8_t)cfg->bias;
	return 0;
}

/* ---- readers ---- */

static void wake_writer(ll_rw_ll_t *l)
{
	atomic_fetch_add(&l->wseq, 1);
	ll_sys_futex_wake(&l->wseq, 1);
}

/* A reader counted in rwaiting has entered or given up. */
/*
 * T follows rt's count.  Whoever clears it looks at the count again and
 * sets it back if a writer came meanwhile: a T left with no writer only
 * sends readers here (and keeps B off) until one clears it.
 */
static void rt_flag_follow(ll_rw_ll_t *l)
{
	atomic_fetch_and(&l->word, ~T);
	if (atomic_load(&l->rt) & RT_COUNT)
		atomic_fetch_or(&l->word, T);
}

/* Readers blocked by P or T, asleep on rseq: wake them to look again. */
static void wake_readers(ll_rw_ll_t *l)
{
	atomic_fetch_add(&l->rseq, 1);
	ll_sys_futex_wake(&l->rseq, INT_MAX);
}

/*
 * 1 when a slow reader may not enter word v: P, or T for a realtime writer
 * of the reader's priority or above (*me: the reader's, -1 until looked
 * up), unless G lets the readers the last writer blocked in (its owner
 * waits for them: blocking them would block it).
 */
static int rd_blocked(ll_rw_ll_t *l, unsigned v, int *me)
{
	if (v & P)
		return 1;
	if (!(v & T) || (v & G))
		return 0;
	unsigned rt = atomic_load(&l->rt);
	if (!(rt & RT_COUNT)) {
		rt_flag_follow(l);
		return 0;
	}
	if (*me < 0)
		*me = ll_sched_rt_priority();
	return *me <= (int)(rt >> RT_PRIO_SHIFT);
}

static void leave_waiting(ll_rw_ll_t *l)
{
	if (atomic_fetch_sub(&l->rwaiting, 1) == 1 && (atomic_load(&l->word) & G))
		wake_writer(l);
}

/* A slow reader leaves. */
static int rd_release(ll_rw_ll_t *l)
{
	unsigned v = atomic_fetch_sub_explicit(&l->word, 1, memory_order_release);
	if ((v & READERS) == 1 && (v & P))
		wake_writer(l);
	return 0;
}

/* A fast reader leaves its table slot (or a fast attempt backs out of it). */
static inline void fast_release(ll_rw_ll_t *l, unsigned at)
{
	atomic_store_explicit(table_slot(at), 0, memory_order_release);
	if (__builtin_expect(atomic_load_explicit(&l->revoker, memory_order_relaxed) != 0, 0))
		ll_sys_futex_wake(&l->revoker, 1);
}

/*
 * Enter through the word: 0, EBUSY (try), ETIMEDOUT, EAGAIN (reader count
 * full), EINVAL; *waited: 1 if a writer held us up.
 */
static int rd_slow(ll_rw_ll_t *l, const struct timespec *dl, int try, int *waited)
{
	int waiting = 0, yielded = 0, rc = 0, me = -1;
	uint32_t spun = 0;
	for (;;) {
		unsigned v = atomic_load_explicit(&l->word, memory_order_relaxed);
		if (!(v & (P | T)) || !rd_blocked(l, v, &me)) {
			if ((v & READERS) == READERS) {
				rc = EAGAIN;
				break;
			}
			if (atomic_compare_exchange_weak_explicit(&l->word, &v, v + 1,
								  memory_order_acquire,
								  memory_order_relaxed))
				break;
			continue;
		}
		if (try) {
			rc = EBUSY;
			break;
		}
		if (!waiting && spun < l->spin_iters &&
		    (!l->bias_on || atomic_load_explicit(&l->revoked, memory_order_relaxed))) {
			/*
			 * A rare writer's section is often shorter than a sleep and
			 * a wake.  Behind a writer that found the bias off, writers
			 * come often: polling readers then keep both CPUs on the
			 * word's line, and sleeping ones let the writers run in turn
			 * on one.
			 */
			spun++;
			ll_spin_wait(LL_SPIN_PAUSE);
			continue;
		}
		if (!waiting && !yielded && one_thread_per_cpu()) {
			/*
			 * No more reading threads than CPUs: a sleeping reader
			 * would leave its CPU idle, and its wake is an idle
			 * vCPU's.  Yield once instead (nobody else wants the CPU,
			 * so it comes straight back, and meanwhile the writer has
			 * the line to itself) and look again before sleeping.
			 * With more threads than CPUs the yield hands the CPU to
			 * another thread and costs more than it saves.
			 */
			yielded = 1;
			sched_yield();
			continue;
		}
		if (!waiting) {
			/* Counted before the last look: the next writer lets us in first. */
			atomic_fetch_add(&l->rwaiting, 1);
			waiting = 1;
			continue;
		}
		unsigned s = atomic_load(&l->rseq);
		if (!rd_blocked(l, atomic_load(&l->word), &me))
			continue;
		int w = ll_sys_futex_wait(&l->rseq, s, dl);
		if (w == EINVAL) {
			rc = EINVAL;
			break;
		}
		if (w == ETIMEDOUT && rd_blocked(l, atomic_load(&l->word), &me)) {
			rc = ETIMEDOUT;
			break;
		}
	}
	if (waiting)
		leave_waiting(l);
	*waited = waiting || spun || yielded;
	return rc;
}

/*
 * After a slow entry (the caller is counted in the word, so no writer is
 * past P): after a wait for a writer (the clock costs little beside it), or
 * once in BIAS_LOOK_EVERY reads of the thread, turn B back on if the last
 * revocation's inhibit time is over and no writer revokes (R), blocks
 * readers (P, G) or waits with a realtime priority (T).  The writer sets P
 * by a CAS that sees B: B set before that is revoked first, and none is set
 * after.
 */
static void bias_maybe_on(ll_rw_ll_t *l, struct rec *r, int waited)
{
	if (!l->bias_on || (r && (++r->slow_reads % BIAS_LOOK_EVERY) != 0 && !waited))
		return;
	unsigned v = atomic_load_explicit(&l->word, memory_order_relaxed);
	if ((v & (B | R | P | G | T)) ||
	    ll_now_ns() < atomic_load_explicit(&l->bias_after, memory_order_relaxed))
		return;
	while (!(v & (B | R | P | G | T)) &&
	       !atomic_compare_exchange_weak(&l->word, &v, v | B))
		;
}

/* A read through the word, recorded in slot free_i (-1: none free) of r (NULL: none). */
static __attribute__((noinline)) int rd_word(ll_rw_ll_t *l, const struct timespec *dl, int try,
					     struct rec *r, int free_i)
{
	int waited;
	int rc = rd_slow(l, dl, try, &waited);
	if (rc)
		return rc;
	if (free_i >= 0) {
		r->used |= 1u << free_i;
		r->held[free_i] = (uintptr_t)l | SLOW_TAG;
		r->count[free_i] = 1;
	}
	bias_maybe_on(l, r, waited);
	return 0;
}

/* A read past the fastest case: recursion, a slot elsewhere in the table, the word. */
static __attribute__((noinline)) int rd_general(ll_rw_ll_t *l, const struct timespec *dl,
						int try)
{
	const uintptr_t me = (uintptr_t)l;
	struct rec *r = self_get();
	if (__builtin_expect(r == NULL, 0))
		return rd_word(l, dl, try, NULL, -1);
	/* Recursion: only the slots in use can hold this lock. */
	for (uint32_t u = r->used; u; u &= u - 1) {
		int i = __builtin_ctz(u);
		uintptr_t v = r->held[i];
		if (v == me) {
			r->count[i]++;
			return 0;
		}
		if (v == (me | SLOW_TAG)) {
			/* Held already: enter even past a waiting writer. */
			if ((atomic_load_explicit(&l->word, memory_order_relaxed) & READERS) ==
			    READERS)
				return EAGAIN;
			atomic_fetch_add_explicit(&l->word, 1, memory_order_relaxed);
			r->count[i]++;
			return 0;
		}
	}
	uint32_t free_mask = ~r->used & ALL_SLOTS;
	int free_i = free_mask ? __builtin_ctz(free_mask) : -1;
	if (free_i >= 0 && (atomic_load_explicit(&l->word, memory_order_relaxed) & B)) {
		/* Seen by a revoking writer's scan (a seq_cst CAS), or we see its B cleared. */
		int at = table_claim(me, r->cpu, &r->last, &r->further);
		if (__builtin_expect(at >= 0, 1)) {
			if (__builtin_expect(atomic_load(&l->word) & B, 1)) {
				r->used |= 1u << free_i;
				r->held[free_i] = me;
				r->at[free_i] = (uint32_t)at;
				r->count[free_i] = 1;
				return 0;
			}
			fast_release(l, (unsigned)at);
		}
	}
	return rd_word(l, dl, try, r, free_i);
}

/*
 * The fastest case, with no call to set up for: a registered thread holding
 * no other lock, the bias on, and the slot it took last free and of its CPU's
 * line.  Anything else goes to rd_general.
 */
static inline __attribute__((always_inline)) int rd(ll_rw_ll_t *l, const struct timespec *dl,
						  int try)
{
	const uintptr_t me = (uintptr_t)l;
	struct rec *r = self;
	if (__builtin_expect(r != NULL && r->used == 0 && r->cpu != NULL, 1) &&
	    (atomic_load_explicit(&l->word, memory_order_relaxed) & B)) {
		unsigned at = r->last;
		if (claim_again(at, *r->cpu & (cpu_lines - 1), me)) {
			/* Seen by a revoking writer's scan, or we see its B cleared. */
			if (__builtin_expect(atomic_load(&l->word) & B, 1)) {
				r->used = 1;
				r->held[0] = me;
				r->at[0] = at;
				r->count[0] = 1;
				return 0;
			}
			fast_release(l, at);
		}
	}
	return rd_general(l, dl, try);
}

int ll_rw_ll_rdlock(ll_rw_ll_t *l)
{
	return rd(l, NULL, 0);
}

int ll_rw_ll_tryrdlock(ll_rw_ll_t *l)
{
	return rd(l, NULL, 1);
}

int ll_rw_ll_timedrdlock(ll_rw_ll_t *l, const struct timespec *abs_mono)
{
	return rd(l, abs_mono, 0);
}

/* ---- writers ---- */

/* Set bits `on`, clear bits `off` of the word in one RMW; the old word. */
static unsigned word_swap(ll_rw_ll_t *l, unsigned on, unsigned off)
{
	unsigned v = atomic_load_explicit(&l->word, memory_order_relaxed);
	while (!atomic_compare_exchange_weak(&l->word, &v, (v | on) & ~off))
		;
	return v;
}

/* Give W up (with P, and S, which the next owner sets again if it slept). */
static void release_w(ll_rw_ll_t *l)
{
	unsigned v = atomic_fetch_and(&l->word, ~(W | S | P));
	if (v & S) {
		atomic_fetch_add(&l->wq, 1);
		ll_sys_futex_wake(&l->wq, 1);
	}
	if ((v & P) && atomic_load(&l->rwaiting))
		wake_readers(l);
}

/* A writer's realtime priority (-1: not looked up yet, 0: none) and whether it set T. */
struct rt_writer {
	int prio;
	int counted;
};

static int rt_writer_prio(struct rt_writer *me)
{
	if (me->prio < 0)
		me->prio = ll_sched_rt_priority();
	return me->prio;
}

/* The writer is about to wait: a realtime one counts itself in rt and sets T (once). */
static void rt_writer_waits(ll_rw_ll_t *l, struct rt_writer *me)
{
	if (me->counted || !rt_writer_prio(me))
		return;
	unsigned v = atomic_load(&l->rt), nv;
	do {
		unsigned prio = v >> RT_PRIO_SHIFT;
		if ((unsigned)me->prio > prio)
			prio = (unsigned)me->prio;
		nv = ((v & RT_COUNT) + 1) | prio << RT_PRIO_SHIFT;
	} while (!atomic_compare_exchange_weak(&l->rt, &v, nv));
	atomic_fetch_or(&l->word, T);
	me->counted = 1;
}

/* It has the lock or gave up: out of rt; the last one clears T and wakes its readers. */
static void rt_writer_done(ll_rw_ll_t *l, struct rt_writer *me)
{
	if (!me->counted)
		return;
	unsigned v = atomic_load(&l->rt), nv;
	do
		nv = (v & RT_COUNT) == 1 ? 0 : v - 1;
	while (!atomic_compare_exchange_weak(&l->rt, &v, nv));
	if (nv)
		return;
	rt_flag_follow(l);
	/* Behind P they stay asleep: P's release wakes them. */
	if (!(atomic_load(&l->word) & P) && atomic_load(&l->rwaiting))
		wake_readers(l);
}

/* Take W: 0, EBUSY (try), ETIMEDOUT or EINVAL. */
static int take_w(ll_rw_ll_t *l, const struct timespec *dl, int try, struct rt_writer *me)
{
	unsigned v = atomic_load_explicit(&l->word, memory_order_relaxed);
	while (!(v & W))
		if (atomic_compare_exchange_weak(&l->word, &v, v | W))
			return 0;
	if (try)
		return EBUSY;
	rt_writer_waits(l, me);
	/* As the three-state futex mutex: a sleeper takes W with S, not knowing who else sleeps. */
	for (;;) {
		unsigned s = atomic_load(&l->wq);
		v = atomic_load(&l->word);
		if (!(v & W)) {
			if (atomic_compare_exchange_weak(&l->word, &v, v | W | S))
				return 0;
			continue;
		}
		if (!(v & S) && !atomic_compare_exchange_weak(&l->word, &v, v | S))
			continue;
		int w = ll_sys_futex_wait(&l->wq, s, dl);
		if (w == EINVAL)
			return EINVAL;
		if (w == ETIMEDOUT) {
			v = atomic_load(&l->word);
			while (!(v & W))
				if (atomic_compare_exchange_weak(&l->word, &v, v | W | S))
					return 0;
			return ETIMEDOUT;
		}
	}
}

typedef int (*wr_cond)(ll_rw_ll_t *l);

static int no_waiting_readers(ll_rw_ll_t *l)
{
	return atomic_load(&l->rwaiting) == 0;
}

static int no_slow_readers(ll_rw_ll_t *l)
{
	return (atomic_load_explicit(&l->word, memory_order_acquire) & READERS) == 0;
}

/* The W owner waits on wseq until cond: 0, ETIMEDOUT or EINVAL. */
static int writer_wait(ll_rw_ll_t *l, wr_cond cond, const struct timespec *dl)
{
	for (uint32_t i = 0; i < l->spin_iters; i++) {
		if (cond(l))
			return 0;
		ll_spin_wait(LL_SPIN_PAUSE);
	}
	for (;;) {
		unsigned s = atomic_load(&l->wseq);
		if (cond(l))
			return 0;
		int w = ll_sys_futex_wait(&l->wseq, s, dl);
		if (w == EINVAL)
			return EINVAL;
		if (w == ETIMEDOUT)
			return cond(l) ? 0 : ETIMEDOUT;
	}
}

/* Until the fast reader in slot has left: 0, or ETIMEDOUT. */
static int wait_fast_reader(ll_rw_ll_t *l, _Atomic uintptr_t *slot, const struct timespec *dl)
{
	const uintptr_t me = (uintptr_t)l;
	for (uint32_t i = 0; i < l->spin_iters; i++) {
		if (atomic_load(slot) != me)
			return 0;
		ll_spin_wait(LL_SPIN_PAUSE);
	}
	uint64_t end = dl ? ll_timespec_ns(dl) : UINT64_MAX;
	int rc = 0;
	for (;;) {
		atomic_store(&l->revoker, 1);
		if (atomic_load(slot) != me)
			break;
		uint64_t now = ll_now_ns();
		if (now >= end) {
			rc = ETIMEDOUT;
			break;
		}
		struct timespec tick = ll_ns_timespec(end - now < REVOKE_TICK_NS ? end
						      : now + REVOKE_TICK_NS);
		ll_sys_futex_wait(&l->revoker, 1, &tick);
	}
	atomic_store(&l->revoker, 0);
	return rc;
}

/*
 * The W owner, B set: swap B for R (no reader turns it on again, slow
 * readers still enter) and wait for every fast reader of this lock to leave.
 * try: EBUSY at the first one found.  A failure puts B back: the fast
 * readers still in their slots hold the lock, and a writer that saw B off
 * would not look for them.
 *
 * The bias stays off for inhibit x the revocation's own cost: the scan of
 * the table, not the waits for readers still inside (any rwlock's writer
 * waits for those; counted, a reader preempted inside its section would keep
 * every reader off the fast path for inhibit x a time slice).
 */
static int revoke_bias(ll_rw_ll_t *l, const struct timespec *dl, int try, struct rt_writer *rtw)
{
	const uintptr_t me = (uintptr_t)l;
	uint64_t t0 = ll_now_ns(), waited = 0;
	word_swap(l, R, B);
	unsigned n = atomic_load(&lines_in_use);
	for (unsigned at = 0; at < n * LINE_SLOTS; at++) {
		_Atomic uintptr_t *slot = table_slot(at);
		if (atomic_load(slot) != me)
			continue;
		if (try) {
			word_swap(l, B, R);
			return EBUSY;
		}
		rt_writer_waits(l, rtw);
		uint64_t w0 = ll_now_ns();
		int rc = wait_fast_reader(l, slot, dl);
		if (rc) {
			word_swap(l, B, R);
			return rc;
		}
		waited += ll_now_ns() - w0;
	}
	uint64_t now = ll_now_ns(), cost = now - t0 - waited;
	atomic_store_explicit(&l->bias_after, now + (uint64_t)l->inhibit * cost,
			      memory_order_relaxed);
	return 0;
}

/* 1 if the calling thread holds a read lock of l that its slots know of. */
static int reads_it(ll_rw_ll_t *l)
{
	struct rec *r = self;
	for (uint32_t u = r ? r->used : 0; u; u &= u - 1)
		if ((r->held[__builtin_ctz(u)] & ~SLOW_TAG) == (uintptr_t)l)
			return 1;
	return 0;
}

/* wr past its one-CAS case; rtw: the caller's realtime standing (rwlocks/ll.h). */
static int wr_slow(ll_rw_ll_t *l, const struct timespec *dl, int try, struct rt_writer *rtw)
{
	int rc = take_w(l, dl, try, rtw);
	if (rc)
		return rc;
	if (!try && atomic_load(&l->rwaiting) && !rt_writer_prio(rtw)) {
		/*
		 * The readers the last writer blocked go first (rwlocks/ll.h:
		 * bounds), but not before a realtime writer.
		 */
		atomic_fetch_or(&l->word, G);
		rc = writer_wait(l, no_waiting_readers, dl);
		atomic_fetch_and(&l->word, ~G);
		if (rc)
			goto give_up;
	}
	/*
	 * B off (revoked here, or a reader turned it on before we reached P: R,
	 * P and G keep it off), then P.  try: only over no slow reader, and B
	 * back if this call revoked it.  `revoked` (ours while we own W) tells
	 * the readers P blocks whether to poll.
	 */
	uint8_t revoked = 0;
	for (;;) {
		unsigned v = atomic_load(&l->word);
		if (try && (v & READERS)) {
			if (v & R)
				word_swap(l, B, R);
			rc = EBUSY;
			goto give_up;
		}
		if (v & B) {
			rc = revoke_bias(l, dl, try, rtw);
			if (rc)
				goto give_up;
			revoked = 1;
			continue;
		}
		atomic_store_explicit(&l->revoked, revoked, memory_order_relaxed);
		if (atomic_compare_exchange_weak(&l->word, &v, (v | P) & ~R))
			break;
	}
	if (try)
		return 0;
	rc = writer_wait(l, no_slow_readers, dl);
	if (rc)
		goto give_up;
	return 0;
give_up:
	release_w(l);
	return rc;
}

static int wr(ll_rw_ll_t *l, const struct timespec *dl, int try)
{
	if (reads_it(l))
		return EDEADLK;
	/* Free, bias off, no blocked readers to let in first: W and P in one CAS. */
	unsigned w = atomic_load_explicit(&l->word, memory_order_relaxed);
	if (!(w & ~S) && !atomic_load_explicit(&l->rwaiting, memory_order_relaxed) &&
	    atomic_compare_exchange_strong(&l->word, &w, w | W | P)) {
		atomic_store_explicit(&l->revoked, 0, memory_order_relaxed);
		return 0;
	}
	struct rt_writer rtw = { -1, 0 };
	int rc = wr_slow(l, dl, try, &rtw);
	rt_writer_done(l, &rtw);
	return rc;
}

int ll_rw_ll_wrlock(ll_rw_ll_t *l)
{
	return wr(l, NULL, 0);
}

int ll_rw_ll_trywrlock(ll_rw_ll_t *l)
{
	return wr(l, NULL, 1);
}

int ll_rw_ll_timedwrlock(ll_rw_ll_t *l, const struct timespec *abs_mono)
{
	return wr(l, abs_mono, 0);
}

static inline int unlock(ll_rw_ll_t *l)
{
	const uintptr_t me = (uintptr_t)l;
	struct rec *r = self;
	for (uint32_t u = r ? r->used : 0; u; u &= u - 1) {
		int i = __builtin_ctz(u);
		uintptr_t v = r->held[i];
		if (v == me) {
			if (--r->count[i] == 0) {
				r->used &= ~(1u << i);
				fast_release(l, r->at[i]);
			}
			return 0;
		}
		if (v == (me | SLOW_TAG)) {
			if (--r->count[i] == 0)
				r->used &= ~(1u << i);
			return rd_release(l);
		}
	}
	unsigned v = atomic_load_explicit(&l->word, memory_order_relaxed);
	if (v & READERS)
		return rd_release(l);   /* a slow hold no slot recorded (all 8 were in use) */
	if ((v & (W | P)) != (W | P))
		return EPERM;
	release_w(l);
	return 0;
}

int ll_rw_ll_unlock(ll_rw_ll_t *l)
{
	return unlock(l);
}

static const struct ll_knob knobs[] = {
	LL_KNOB_INT(struct ll_rw_ll_config, bias, 1, 0, 1,
		    "1: readers take slots of a per-CPU table while no writer is active; 0: never"),
	LL_KNOB_INT(struct ll_rw_ll_config, inhibit, 1, 0, UINT16_MAX,
		    "after a revocation whose scan took T, no fast reads for inhibit x T"),
	LL_KNOB_INT(struct ll_rw_ll_config, spin_ns, 2000, 0, 100000000,
		    "nanoseconds a waiting writer, or a reader behind a writer that revoked the "
		    "bias, polls before it sleeps"),
};

LL_RW_STATIC_ADAPTERS(ll_rw_ll_init, ll_rw_ll_destroy)

const struct ll_rwlock_ops ll_rw_ll_ops = {
	.name = "ll",
	.summary = "readers in a per-CPU table while the bias is on (BRAVO), writer-first "
		   "futex rwlock underneath, 48 bytes",
	.flags = LL_ALGO_PARKS | LL_ALGO_PREEMPT_SAFE,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_rw_ll_config),
	LL_RW_STATIC_FUNCS(ll_rw_ll_t),
};
