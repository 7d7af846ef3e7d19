/*
 * prof.h: the contention profiler's shared state (liblocklab-prof.so).
 *
 * Who touches what:
 *
 *   fast path (every lock/unlock)   its own mutex word and this thread's TLS,
 *                                   nothing else: no table, no clock, no syscall
 *   slow path (lock was busy)       the lock table (one entry per lock address),
 *                                   the stack table, this thread's records
 *   sampled hold (1 in N)           the clock, the lock's table entry, this thread's records
 *   reporter (exit, signal, timer)  everything, read-only but for the interval
 *                                   baselines, which only it writes
 *
 * Records are per thread, written by their thread alone, so counting needs no
 * atomic read-modify-write; the shared tables are claimed slot by slot with
 * compare-and-swap.  Nothing here calls malloc: every table is an anonymous
 * mapping made once, so the profiler cannot deadlock against an allocator that
 * itself takes pthread mutexes (jemalloc) or futexes (tcmalloc).
 */
#ifndef LOCKLAB_PROF_H
#define LOCKLAB_PROF_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "preload/arena.h"
#include "preload/glibc.h"
#include "preload/stderr.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* What kind of object a lock address is (condvars: locklab-attach --condvar only). */
enum prof_kind { PROF_MUTEX, PROF_RWLOCK, PROF_FUTEX, PROF_CONDVAR, PROF_NKINDS };

/* What a record counts. */
enum prof_event {
	PROF_EV_MUTEX,   /* blocked in pthread_mutex_lock / timedlock / clocklock */
	PROF_EV_COND,    /* blocked reacquiring the mutex after a condvar wakeup */
	PROF_EV_READ,    /* blocked in pthread_rwlock_rdlock and friends */
	PROF_EV_WRITE,   /* blocked in pthread_rwlock_wrlock and friends */
	PROF_EV_FUTEX,   /* slept in syscall(SYS_futex, FUTEX_WAIT...) */
	PROF_EV_SIGNAL,  /* waited in pthread_cond_wait for a signal (locklab-attach --condvar) */
	PROF_EV_HOLD,    /* a sampled hold: acquisition to release */
	PROF_EV_BLAME,   /* waiter-ns that piled up while this stack held the lock */
	PROF_NEVENTS
};
#define PROF_EV_IS_WAIT(e) ((e) <= PROF_EV_SIGNAL)

/* Power-of-two wait histogram: bucket b counts waits in [2^b, 2^(b+1)) ns. */
#define PROF_HIST 40
#define PROF_MAX_DEPTH 64
#define PROF_HELD 4   /* sampled holds one thread can have open at once */

struct prof_config {
	int depth;            /* frames captured per stack */
	int show_depth;       /* -s: frames printed per entry (0: no histograms) */
	int hold_every;       /* sample 1 hold in N (0: never) */
	int top;              /* entries per section (0: all) */
	uint64_t min_wait_ns; /* drop entries that waited less in total */
	int per_thread;       /* add the per-thread breakdown */
	double interval_s;    /* delta dumps every S seconds (0: none) */
	int signal;           /* dump on this signal (0: none) */
	int futex;            /* profile syscall(SYS_futex) */
	int cond;             /* measure condvar reacquisition */
	uint32_t trace;       /* waits kept per thread for the timeline (0: none) */
	int json;             /* OUTPUT mode: write JSON instead of text */
	int loaded;           /* the environment has been read */
	char dir[512];        /* CLI mode: text and JSON per dump into this directory */
	char output[512];     /* file template (%p: pid); empty: stderr */
};
extern struct prof_config prof_cfg;

/* One entry per lock address that has been initialised or contended. */
struct prof_lock {
	_Atomic uintptr_t addr;       /* 0: free slot; claimed once by CAS, never freed */
	_Atomic uintptr_t init_pc;    /* caller of pthread_*_init (0: none seen) */
	_Atomic uintptr_t first_pc;   /* caller at the first contended use */
	_Atomic uint32_t last_holder; /* stack of the last contended unlock */
	atomic_uint guard;            /* spin guard of nwaiting and integ_* */
	uint32_t nwaiting;            /* threads now blocked on it (as we counted them) */
	atomic_uchar where;           /* 0 not known yet, PROF_WHERE_STATIC or _HEAP */
	uint64_t integ_ns;            /* waiter-ns not yet charged to a holder */
	uint64_t integ_ts;            /* when integ_ns was last brought up to date */
	/* The naming site when a hold was last sampled here (0: never): an instance
	 * for the report, still named after the lock is destroyed. */
	_Atomic uintptr_t sampled_site;
};

enum { PROF_WHERE_STATIC = 1, PROF_WHERE_HEAP = 2 };

/*
 * One record per (lock, site, event, stack, caller) per thread.  Sampled
 * holds of heap locks are kept with lock 0: their name is their site, and
 * keyed by address a program with thousands of locks (memcached's item
 * locks) would make thousands of records per thread; instances are counted
 * from the lock table instead (prof_lock_each_sampled).
 */
struct prof_rec {
	atomic_uint used;             /* the slot is taken (the owner's probes; see prof_thread) */
	uint8_t event, kind;
	uint32_t stack;               /* stack id (0: none) */
	uintptr_t addr, site, caller; /* lock address, naming site, immediate caller */
	/* Written by the owning thread only; relaxed atomics so the reporter may read. */
	_Atomic uint64_t count, total_ns, max_ns, imax_ns;
	_Atomic uint32_t hist[PROF_HIST];
	/* The last interval dump's values: the reporter's alone. */
	uint64_t base_count, base_total;
	uint32_t base_hist[PROF_HIST];
};

/*
 * A thread's records are an open-addressed table of `cap` slots (6.5 MB of
 * address space, mostly never touched), and `used` lists the slots in use
 * in the order they were claimed.  The reporter walks the list, not the
 * table: with 2000 threads the table walk read 32 million slots and took
 * 3 million page faults (the zero pages of untouched records), seconds of
 * one core before every interval report.
 */
#define PROF_REC_CAP 16384u

/* One wait on the timeline (trace.c): written by its thread alone, relaxed. */
struct prof_trace_ev {
	_Atomic uint64_t t0, ns;
	_Atomic uintptr_t addr, site;
	_Atomic uint32_t what;        /* event | kind << 8 */
};
#define PROF_TRACE_MAX (1u << 20)

struct prof_thread {
	struct prof_thread *next;     /* global list, pushed by CAS, never unlinked */
	pid_t tid;
	char name[16];
	uint32_t cap, dropped;
	_Atomic uint32_t nrec;        /* used[0..nrec) are claimed; release-stored by the owner */
	/* The timeline's ring (NULL: none): wait k is in trace[k % trace_cap]. */
	struct prof_trace_ev *trace;
	uint32_t trace_cap;
	_Atomic uint64_t trace_n;     /* waits ever put in the ring; release-stored by the owner */
	uint32_t used[PROF_REC_CAP];  /* slot numbers, in claiming order */
	struct prof_rec recs[];
};

/* Thread-local state: the only memory the fast path touches besides the lock. */
struct prof_tls {
	struct prof_thread *thread;   /* created on the first event */
	int32_t hold_countdown;       /* acquisitions to the next sampled hold */
	uint32_t rng;                 /* xorshift state for the sampling countdown */
	uint8_t busy;                 /* inside the profiler: interposers pass straight through */
	uintptr_t init_caller;        /* in pthread_mutex_init: its caller (locklab_prof_init_caller) */
	uint8_t nheld;
	struct {
		const void *lock;
		const void *key;      /* the record's lock: the address if static, else 0 */
		uintptr_t site;
		uint64_t t;
		uint8_t kind;
	} held[PROF_HELD];
};
extern __thread struct prof_tls prof_tls __attribute__((tls_model("initial-exec")));

/* glibc's own functions, found with dlsym(RTLD_NEXT). */
struct prof_real {
	PL_GLIBC_LOCKS(PL_GLIBC_FIELD)
	long (*syscall)(long, ...);
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	/* control.c's: the report before a fatal signal's default action or _exit. */
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	void (*(*signal)(int, void (*)(int)))(int);
	void (*(*sysv_signal)(int, void (*)(int)))(int);
	void (*exit_)(int) __attribute__((noreturn));
	pid_t (*fork)(void);
};
extern struct prof_real prof_real;
extern atomic_int prof_real_ready;
void prof_real_resolve(void);

/* Every call to glibc goes through REAL(): resolved on first use, even before our
 * constructor (another library's constructor may lock first). */
#define REAL(f) (*(likely(atomic_load_explicit(&prof_real_ready, memory_order_acquire)) \
		       ? prof_real.f : (prof_real_resolve(), prof_real.f)))

/* config.c */
void prof_config_load(void);           /* the environment; safe anywhere, idempotent */
uint64_t prof_now(void);               /* ns, CLOCK_MONOTONIC through the vDSO */
int prof_read_file(const char *path, char *buf, size_t len); /* bytes read, -1 on error */
/* One line "locklab-prof: ..." on stderr, by write(): no stdio, no malloc. */
void prof_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void prof_expand_path(const char *tmpl, char *out, size_t len); /* %p -> the pid */

/* control.c */
void prof_start_helper(void);          /* the dump thread, once the program has threads */

/* records.c */
struct prof_thread *prof_thread_get(void); /* NULL when out of memory */
/* A thread's table, on the reporter's list (name: NULL or up to 15 bytes). */
struct prof_thread *prof_thread_new(pid_t tid, const char *name);

/* locks.c */
struct prof_lock *prof_lock_find(const void *addr, int create);
void prof_lock_note_init(const void *addr, uintptr_t pc);
void prof_lock_note_destroy(const void *addr);
uintptr_t prof_lock_site(struct prof_lock *l, uintptr_t pc);
void prof_lock_wait_begin(struct prof_lock *l, uint64_t now);
/* Returns waiter-ns left over when the last waiter leaves (charged to last_holder). */
uint64_t prof_lock_wait_end(struct prof_lock *l, uint64_t now);
uint64_t prof_lock_take_blame(struct prof_lock *l, uint64_t now);
/* Whether the lock lives in a loaded object's memory (its name is a symbol). */
int prof_lock_is_static(struct prof_lock *l);
void prof_lock_mark_sampled(struct prof_lock *l, uintptr_t site);
/* Report time: fn(arg, address, naming site) for each lock with a sampled hold. */
void prof_lock_each_sampled(void (*fn)(void *, uintptr_t, uintptr_t), void *arg);
void prof_lock_after_fork(void);
uint64_t prof_lock_dropped(void);

/* stacks.c: ids 1.., 0 when the table is full */
uint32_t prof_stack_capture(uintptr_t from_pc);
uint32_t prof_stack_intern(const uintptr_t *pc, int n);   /* frames known already */
const uintptr_t *prof_stack_get(uint32_t id, int *depth);
uint64_t prof_stack_dropped(void);

/* records.c */
/* count: 1 for an event, 0 to add ns to the record alone (a leftover blame). */
void prof_record(uint8_t event, uint8_t kind, const void *addr, uintptr_t site,
		 uintptr_t caller, uint32_t stack, uint64_t ns, uint32_t count);
/* Many events at once, into thread t's record (its one writer calls): count and
 * total_ns added, max_ns the largest, hist added bucket by bucket. */
struct prof_sum {
	uint64_t count, total_ns, max_ns;
	uint32_t hist[PROF_HIST];
};
void prof_record_add(struct prof_thread *t, uint8_t event, uint8_t kind, uintptr_t addr,
		     uintptr_t site, uintptr_t caller, uint32_t stack, const struct prof_sum *sum);
struct prof_thread *prof_threads(void);
void prof_threads_after_fork(void);

/* trace.c: the timeline of waits, per thread (LOCKLAB_PROF_TRACE). */
void prof_trace_wait(uint8_t event, uint8_t kind, const void *addr, uintptr_t site,
		     uint64_t t0, uint64_t ns);
/* The same into thread t's ring, by its one writer (locklab-attach's collector). */
void prof_trace_add(struct prof_thread *t, uint8_t event, uint8_t kind, uintptr_t addr,
		    uintptr_t site, uint64_t t0, uint64_t ns);

/* symbols.c: report time only (reads files, may take a while). */
extern int prof_sym_plain;             /* no dlsym, no demangling (set by control.c) */
void prof_sym_begin(void);
void prof_sym_end(void);
/* "object`symbol+0x1c" for a code address (a return address: looked up at pc-1);
 * 1 when a symbol named it, 0 when it is "object`+0xOFF" or a bare address. */
int prof_sym_code(uintptr_t pc, char *buf, size_t len);
/* Its object, for symbolisers outside the process (src/preload/symbols.h); -1: none. */
struct pl_where;
int prof_sym_where(uintptr_t pc, struct pl_where *w);
int prof_sym_object(int index, struct pl_where *w);   /* by the index that returned */
/* Static data: "object`symbol+0x8"; returns 0 when addr is not in any object's data. */
int prof_sym_data(uintptr_t addr, char *buf, size_t len);
const char *prof_exe_name(void);

/* arena.c: report-time memory, reset after each report (the symbols' too). */
extern struct pl_arena prof_report_arena;
void *prof_arena_alloc(size_t bytes);
void prof_arena_reset(void);
struct prof_buf {
	char *p;
	size_t len, cap;
	int failed;
};
void prof_buf_printf(struct prof_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void prof_buf_json_str(struct prof_buf *b, const char *s);
void prof_buf_free(struct prof_buf *b);

/* report.c */
/* DETACH: locklab-attach's trace ended while its process ran on. */
enum prof_dump_reason { PROF_DUMP_EXIT, PROF_DUMP_SIGNAL, PROF_DUMP_INTERVAL, PROF_DUMP_DETACH };
/*
 * Whose report it is.  The profiler's is its own process: all zero, the pid
 * read at report time (a fork changes it).  locklab-attach reports a process
 * it traces from outside, whose waits it sees as futex calls: `traced`, so
 * the report says hold times are not seen and calls the holders wakers (the
 * threads whose wake ended a wait).  The hooks, each optional, add to the
 * report: file:line after a frame in the text ("planted.c:88", "" when none),
 * a frame's JSON "lines" value (an array, or null), lines under the text's
 * header, members at the end of the JSON object (each starting with a comma).
 */
struct prof_subject {
	const char *tool;               /* NULL: "locklab-prof" */
	pid_t pid, ppid;
	int traced;
	uint64_t end_ns;                /* when the report's span ends (0: as it is written) */
	const char *(*text_where)(uintptr_t pc);
	void (*json_lines)(struct prof_buf *b, uintptr_t pc);
	void (*text_notes)(struct prof_buf *b);
	void (*json_members)(struct prof_buf *b);
};
extern struct prof_subject prof_subject;
extern int prof_exit_signal;           /* the exit report is written before this signal kills */
/* trace: the timeline as JSON (NULL: none; only with LOCKLAB_PROF_TRACE). */
void prof_report(enum prof_dump_reason why, struct prof_buf *text, struct prof_buf *json,
		 struct prof_buf *trace);
extern uint64_t prof_start_ns, prof_last_dump_ns;

#endif
