/*
 * monitor.c: the lock monitor's records, its tables of live locks and of
 * threads, and the monitored lock paths that ll_mutex_lock() and friends take
 * when a lock's LL_MON_ON bit is set (locklab.h).  Dumps are in dump.c, the
 * watchdog in watchdog.c, the environment in env.c, the manual in
 * docs/monitoring.md.
 *
 * Cost model.  Unmonitored: acquiring calls test m->mon, on the line that
 * holds m->ops; unlock tests nothing.  Monitored and uncontended: the
 * algorithm's trylock, then four stores to the record's first line
 * (acquisitions, the call site, the holder), inline at the call site
 * (monitor.h); the release goes through the record's copy of the ops,
 * whose unlock clears the holder and jumps to the algorithm's.  One
 * acquisition in LL_MON_HOLD_SAMPLE reads the clock at lock and unlock.  The counters need
 * no locked instruction: only the lock's holder writes them, and the lock
 * orders the holders.  Failed trylocks and time-outs are counted without
 * the lock, with an atomic add.  Contended: two clock reads around the wait,
 * the thread's wait published for dumps and the watchdog, and the spin
 * waits and OS waits the library's helpers counted meanwhile.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "locklab/locklab.h"
#include "locks/algo.h"
#include "monitor/monitor_impl.h"

#if LL_MONITOR

_Thread_local struct ll_mon_counting ll_mon_counting __attribute__((tls_model("initial-exec")));

struct ll_mon_registry ll_mon_reg = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.head = { .next = &ll_mon_reg.head, .prev = &ll_mon_reg.head },
	.threads_mu = PTHREAD_MUTEX_INITIALIZER,
	.threads = { .next = &ll_mon_reg.threads, .prev = &ll_mon_reg.threads },
};

int ll_monitor_available(void)
{
	return 1;
}

/* ---- threads ---- */

static _Thread_local struct ll_mon_thread *self_rec __attribute__((tls_model("initial-exec")));
_Thread_local int ll_mon_tid __attribute__((tls_model("initial-exec")));
static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;

/* At thread exit (a key destructor): out of the list before the record goes. */
static void thread_gone(void *p)
{
	struct ll_mon_thread *t = p;
	pthread_mutex_lock(&ll_mon_reg.threads_mu);
	t->prev->next = t->next;
	t->next->prev = t->prev;
	pthread_mutex_unlock(&ll_mon_reg.threads_mu);
	free(t);
	self_rec = NULL;
}

static void make_thread_key(void)
{
	pthread_key_create(&thread_key, thread_gone);
}

/* The first monitored call of a thread: its id, and its record in the list. */
static __attribute__((noinline)) int register_thread(void)
{
	int tid = (int)syscall(SYS_gettid);
	struct ll_mon_thread *t = calloc(1, sizeof(*t));
	ll_mon_tid = tid;
	if (!t)
		return tid;   /* counted, but never listed as a waiter */
	t->tid = tid;
	pthread_getname_np(pthread_self(), t->name, sizeof(t->name));
	t->counting = &ll_mon_counting;
	pthread_once(&thread_key_once, make_thread_key);
	pthread_setspecific(thread_key, t);
	pthread_mutex_lock(&ll_mon_reg.threads_mu);
	t->next = &ll_mon_reg.threads;
	t->prev = ll_mon_reg.threads.prev;
	t->prev->next = t;
	ll_mon_reg.threads.prev = t;
	pthread_mutex_unlock(&ll_mon_reg.threads_mu);
	self_rec = t;
	return tid;
}

static inline int my_tid(void)
{
	int tid = ll_mon_tid;
	return __builtin_expect(tid != 0, 1) ? tid : register_thread();
}

int ll_monitor_thread_id(void)
{
	return my_tid();
}

/* ---- records and the registry ---- */

static inline struct ll_mon_lock *record_of(const ll_mutex_t *m)
{
	return (struct ll_mon_lock *)(MON_LOAD(m->mon) & ~LL_MON_ON);
}

/* Locks whose waits the library's helpers do not see: glibc's mutexes and other projects' locks. */
static int waits_opaque(const struct ll_lock_ops *ops)
{
	if (ops->flags & LL_ALGO_GLIBC)
		return 1;
	for (size_t i = 0; i < ll_algo_count(); i++)
		if (ll_algo_at(i) == ops)
			return 0;
	return 1;
}

static void hold_end(struct ll_mon_hot *h, uint64_t t0);

/* A release whose hold was sampled: out of the way of the others. */
static __attribute__((noinline, cold)) void sampled_unlock(struct ll_mon_lock *r, void *state,
							    uint64_t t0)
{
	hold_end(&r->hot, t0);
	MON_STORE(r->hot.holder_tid, 0);
	r->ops->unlock(state);
}

/* The monitored lock's unlock (in its record's copy of the ops): count, then release. */
static void monitored_unlock(void *state)
{
	ll_mutex_t *m = (ll_mutex_t *)((char *)state - offsetof(ll_mutex_t, state));
	struct ll_mon_lock *r = record_of(m);
	uint64_t t0 = MON_LOAD(r->hot.hold_t0);
	if (__builtin_expect(t0 != 0, 0)) {
		sampled_unlock(r, state, t0);
		return;
	}
	MON_STORE(r->hot.holder_tid, 0);
	r->ops->unlock(state);
}

static void switch_record(struct ll_mon_lock *r, int on);

void ll_mon_attach(ll_mutex_t *m, const char *file, int line)
{
	struct ll_mon_lock *r = aligned_alloc(64, sizeof(*r));
	if (!r)
		return;   /* a lock without a record: never monitored, never listed */
	memset(r, 0, sizeof(*r));
	r->mutex = m;
	r->ops = m->ops;
	r->created_file = file;
	r->created_line = line;
	r->created_tid = my_tid();
	r->opaque = (uint8_t)waits_opaque(m->ops);
	r->mon_ops = *m->ops;
	r->mon_ops.unlock = monitored_unlock;

	pthread_mutex_lock(&ll_mon_reg.mu);
	r->id = ++ll_mon_reg.next_id;
	r->next = &ll_mon_reg.head;
	r->prev = ll_mon_reg.head.prev;
	r->prev->next = r;
	ll_mon_reg.head.prev = r;
	ll_mon_reg.count++;
	MON_STORE(m->mon, (uintptr_t)r);
	if (MON_LOAD(ll_mon_reg.enabled))
		switch_record(r, 1);
	pthread_mutex_unlock(&ll_mon_reg.mu);
}

void ll_mon_detach(ll_mutex_t *m)
{
	struct ll_mon_lock *r = record_of(m);
	if (!r)
		return;
	pthread_mutex_lock(&ll_mon_reg.mu);
	r->prev->next = r->next;
	r->next->prev = r->prev;
	ll_mon_reg.count--;
	MON_STORE(m->ops, r->ops);
	MON_STORE(m->mon, (uintptr_t)0);
	pthread_mutex_unlock(&ll_mon_reg.mu);
	free(r);
}

/*
 * Under ll_mon_reg.mu.  On: the bit, then the counting unlock; off: the
 * other way round.  A call that saw the bit on and the ops not yet switched
 * (or back) counts an acquisition whose release is not: holder and hold
 * sample are cleared here, and the next monitored call rewrites them.
 */
static void switch_record(struct ll_mon_lock *r, int on)
{
	ll_mutex_t *m = r->mutex;
	if (on) {
		MON_STORE(m->mon, (uintptr_t)r | LL_MON_ON);
		MON_STORE(m->ops, (const struct ll_lock_ops *)&r->mon_ops);
	} else {
		MON_STORE(m->ops, r->ops);
		MON_STORE(m->mon, (uintptr_t)r);
		/* Its unlock will not come through here: no holder, no hold being timed. */
		MON_STORE(r->hot.holder_tid, 0);
		MON_STORE(r->hot.hold_t0, 0);
	}
}

int ll_monitor_set_enabled(int on)
{
	pthread_mutex_lock(&ll_mon_reg.mu);
	int old = MON_LOAD(ll_mon_reg.enabled);
	MON_STORE(ll_mon_reg.enabled, on ? 1 : 0);
	for (struct ll_mon_lock *r = ll_mon_reg.head.next; r != &ll_mon_reg.head; r = r->next)
		switch_record(r, on);
	pthread_mutex_unlock(&ll_mon_reg.mu);
	return old;
}

int ll_monitor_enabled(void)
{
	return MON_LOAD(ll_mon_reg.enabled);
}

int ll_mutex_monitor(ll_mutex_t *m, int on)
{
	if (!m)
		return EINVAL;
	struct ll_mon_lock *r = record_of(m);
	if (!r)
		return ENOENT;
	pthread_mutex_lock(&ll_mon_reg.mu);
	switch_record(r, on);
	pthread_mutex_unlock(&ll_mon_reg.mu);
	return 0;
}

int ll_mutex_set_name(ll_mutex_t *m, const char *name)
{
	if (!m)
		return EINVAL;
	struct ll_mon_lock *r = record_of(m);
	if (!r)
		return ENOENT;
	pthread_mutex_lock(&ll_mon_reg.mu);
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "");
	pthread_mutex_unlock(&ll_mon_reg.mu);
	return 0;
}

size_t ll_monitor_lock_count(void)
{
	pthread_mutex_lock(&ll_mon_reg.mu);
	size_t n = ll_mon_reg.count;
	pthread_mutex_unlock(&ll_mon_reg.mu);
	return n;
}

/* ---- the monitored paths ---- */

static inline unsigned log2_bucket(uint64_t ns)
{
	if (ns < 2)
		return 0;
	unsigned b = 63u - (unsigned)__builtin_clzll(ns);
	return b < LL_MON_HIST_BUCKETS ? b : LL_MON_HIST_BUCKETS - 1;
}

/* A sampled hold (monitor.h's inline paths call these); hot is the record's first member. */
void ll_mon_hold_start(struct ll_mon_hot *h)
{
	MON_STORE(h->hold_t0, ll_now_ns());
}

static __attribute__((noinline, cold)) void hold_end(struct ll_mon_hot *h, uint64_t t0)
{
	struct ll_mon_lock *r = (struct ll_mon_lock *)h;
	uint64_t held = ll_now_ns() - t0;
	MON_STORE(r->hot.hold_t0, 0);
	MON_BUMP(r->hold_samples, 1);
	MON_BUMP(r->hold_ns_sum, held);
	if (held > MON_LOAD(r->hold_ns_max))
		MON_STORE(r->hold_ns_max, held);
}


/*
 * Publish the wait under way, a sequence lock without fences (which
 * ThreadSanitizer cannot model): the odd count is stored first, each field
 * with release order after it, the even count last.  A reader that loads a
 * field with acquire order and sees a new value also sees the odd count.
 */
#define MON_PUBLISH(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static void wait_begin(struct ll_mon_thread *t, struct ll_mon_lock *r, const char *file, int line,
		       uint64_t t0)
{
	uint64_t seq = t->wait_seq;   /* only this thread writes it */
	MON_STORE(t->wait_seq, seq + 1);
	MON_PUBLISH(t->since_ns, t0);
	MON_PUBLISH(t->spins0, ll_mon_counting.spins);
	MON_PUBLISH(t->parks0, ll_mon_counting.parks);
	MON_PUBLISH(t->wait_file, file);
	MON_PUBLISH(t->wait_line, line);
	MON_PUBLISH(t->waiting_on, r);
	MON_PUBLISH(t->wait_seq, seq + 2);
}

static void wait_end(struct ll_mon_thread *t)
{
	uint64_t seq = t->wait_seq;
	MON_STORE(t->wait_seq, seq + 1);
	MON_PUBLISH(t->waiting_on, (struct ll_mon_lock *)NULL);
	MON_PUBLISH(t->wait_seq, seq + 2);
}

/* The first try failed: wait (abs_mono NULL: without a deadline) and count. */
static int wait_for(ll_mutex_t *m, struct ll_mon_lock *r, const char *file, int line,
		    const struct timespec *abs_mono)
{
	my_tid();
	struct ll_mon_thread *t = self_rec;
	struct ll_mon_counting *c = &ll_mon_counting;
	unsigned was_active = c->active;
	uint64_t spins0 = c->spins, parks0 = c->parks;
	uint64_t t0 = ll_now_ns();
	int rc = 0;

	if (t)
		wait_begin(t, r, file, line, t0);
	c->active = 1;
	if (abs_mono)
		rc = r->ops->timedlock(m->state, abs_mono);
	else
		r->ops->lock(m->state);
	c->active = was_active;
	uint64_t waited = ll_now_ns() - t0;
	if (t)
		wait_end(t);

	uint64_t spins = c->spins - spins0, parks = c->parks - parks0;
	/* glibc's or a peer's own wait: counted as one OS wait when the lock may park. */
	if (MON_LOAD(r->opaque) && (r->ops->flags & LL_ALGO_PARKS))
		parks++;
	if (rc == 0) {
		ll_mon_acquired(&r->hot, file, line);
		MON_BUMP(r->contended, 1);
		MON_BUMP(r->spins, spins);
		MON_BUMP(r->parks, parks);
		MON_BUMP(r->wait_ns_sum, waited);
		if (waited > MON_LOAD(r->wait_ns_max))
			MON_STORE(r->wait_ns_max, waited);
		MON_BUMP(r->wait_hist[log2_bucket(waited)], 1);
	} else {
		if (rc == ETIMEDOUT)
			MON_ADD(r->timeouts, 1);
		MON_ADD(r->failed_spins, spins);
		MON_ADD(r->failed_parks, parks);
	}
	return rc;
}

/* The contended entry points (locklab.h's inline paths made the first try). */
int ll_mon_wait(ll_mutex_t *m, const struct timespec *abs_mono, const char *file, int line)
{
	return wait_for(m, record_of(m), file, line, abs_mono);
}

void ll_mon_trylock_failed(ll_mutex_t *m)
{
	MON_ADD(record_of(m)->trylock_failures, 1);
}


/* ---- reading: stats, waiters, snapshots ---- */

/* Under ll_mon_reg.mu (the name, and the record's life). */
static void fill_stats(const struct ll_mon_lock *r, struct ll_mutex_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->id = r->id;
	memcpy(s->name, r->name, sizeof(s->name));
	s->algo = r->ops->name;
	s->created_file = r->created_file;
	s->created_line = r->created_line;
	s->created_tid = r->created_tid;
	s->monitored = (MON_LOAD(r->mutex->mon) & LL_MON_ON) != 0;
	s->acquisitions = MON_LOAD(r->hot.acquisitions);
	s->contended = MON_LOAD(r->contended);
	s->spins = MON_LOAD(r->spins) + MON_LOAD(r->failed_spins);
	s->parks = MON_LOAD(r->parks) + MON_LOAD(r->failed_parks);
	s->trylock_failures = MON_LOAD(r->trylock_failures);
	s->timeouts = MON_LOAD(r->timeouts);
	s->wait_ns_sum = MON_LOAD(r->wait_ns_sum);
	s->wait_ns_max = MON_LOAD(r->wait_ns_max);
	for (unsigned b = 0; b < LL_MON_HIST_BUCKETS; b++)
		s->wait_hist[b] = MON_LOAD(r->wait_hist[b]);
	s->hold_samples = MON_LOAD(r->hold_samples);
	s->hold_ns_sum = MON_LOAD(r->hold_ns_sum);
	s->hold_ns_max = MON_LOAD(r->hold_ns_max);
	s->last_file = MON_LOAD(r->hot.last_file);
	uint64_t site = MON_LOAD(r->hot.last_site);
	s->last_line = (int)(uint32_t)(site >> 32);
	s->last_tid = (int)(uint32_t)site;
	s->holder_tid = MON_LOAD(r->hot.holder_tid);
}

/*
 * A consistent copy of t's wait (under threads_mu): 1 and *w filled when it
 * waits, with *on the lock; 0 when it does not (or changes its wait now).
 */
static int read_wait(const struct ll_mon_thread *t, uint64_t now, struct ll_waiter *w,
		     struct ll_mon_lock **on, uint64_t *seq_out)
{
#define MON_READ(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
	uint64_t seq = MON_READ(t->wait_seq);
	if (seq & 1)
		return 0;
	struct ll_mon_lock *r = MON_READ(t->waiting_on);
	if (!r)
		return 0;
	memset(w, 0, sizeof(*w));
	w->tid = t->tid;
	memcpy(w->thread_name, t->name, sizeof(w->thread_name));
	w->since_ns = MON_READ(t->since_ns);
	w->file = MON_READ(t->wait_file);
	w->line = MON_READ(t->wait_line);
	uint64_t spins0 = MON_READ(t->spins0), parks0 = MON_READ(t->parks0);
	w->spins = MON_LOAD(t->counting->spins) - spins0;
	w->parks = MON_LOAD(t->counting->parks) - parks0;
	/* After the acquire loads: a writer that began meanwhile has changed it. */
	if (MON_LOAD(t->wait_seq) != seq)
		return 0;
#undef MON_READ
	w->waited_ns = now > w->since_ns ? now - w->since_ns : 0;
	*on = r;
	if (seq_out)
		*seq_out = seq;
	return 1;
}

int ll_mutex_stats(const ll_mutex_t *m, struct ll_mutex_stats *out)
{
	if (!m || !out)
		return EINVAL;
	struct ll_mon_lock *r = record_of(m);
	if (!r)
		return ENOENT;
	uint64_t now = ll_now_ns();
	pthread_mutex_lock(&ll_mon_reg.mu);
	fill_stats(r, out);
	pthread_mutex_lock(&ll_mon_reg.threads_mu);
	for (struct ll_mon_thread *t = ll_mon_reg.threads.next; t != &ll_mon_reg.threads; t = t->next) {
		struct ll_waiter w;
		struct ll_mon_lock *on;
		if (read_wait(t, now, &w, &on, NULL) && on == r)
			out->waiters++;
	}
	pthread_mutex_unlock(&ll_mon_reg.threads_mu);
	pthread_mutex_unlock(&ll_mon_reg.mu);
	return 0;
}

size_t ll_mutex_waiters(const ll_mutex_t *m, struct ll_waiter *out, size_t max)
{
	struct ll_mon_lock *r = m ? record_of(m) : NULL;
	size_t n = 0;
	if (!r)
		return 0;
	if (!out)
		max = 0;
	uint64_t now = ll_now_ns();
	pthread_mutex_lock(&ll_mon_reg.threads_mu);
	for (struct ll_mon_thread *t = ll_mon_reg.threads.next; t != &ll_mon_reg.threads; t = t->next) {
		struct ll_waiter w;
		struct ll_mon_lock *on;
		if (!read_wait(t, now, &w, &on, NULL) || on != r)
			continue;
		if (n < max)
			out[n] = w;
		n++;
	}
	pthread_mutex_unlock(&ll_mon_reg.threads_mu);
	return n;
}

static int by_tid(const void *a, const void *b)
{
	int x = ((const struct ll_mon_thread_info *)a)->tid;
	int y = ((const struct ll_mon_thread_info *)b)->tid;
	return (x > y) - (x < y);
}

const char *ll_mon_thread_name(const struct ll_mon_snapshot *s, int tid)
{
	struct ll_mon_thread_info key = { .tid = tid };
	const struct ll_mon_thread_info *t =
		tid ? bsearch(&key, s->threads, s->nthreads, sizeof(key), by_tid) : NULL;
	return t ? t->name : "";
}

void ll_mon_snapshot_free(struct ll_mon_snapshot *s)
{
	free(s->locks);
	free(s->waits);
	free(s->threads);
	memset(s, 0, sizeof(*s));
}

int ll_mon_snapshot_take(struct ll_mon_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->now_ns = ll_now_ns();
	pthread_mutex_lock(&ll_mon_reg.mu);
	s->enabled = MON_LOAD(ll_mon_reg.enabled);
	s->locks = calloc(ll_mon_reg.count + 1, sizeof(*s->locks));
	if (!s->locks)
		goto nomem;
	for (struct ll_mon_lock *r = ll_mon_reg.head.next; r != &ll_mon_reg.head; r = r->next) {
		r->snap_index = s->nlocks;
		fill_stats(r, &s->locks[s->nlocks++]);
	}

	pthread_mutex_lock(&ll_mon_reg.threads_mu);
	size_t nthreads = 0;
	for (struct ll_mon_thread *t = ll_mon_reg.threads.next; t != &ll_mon_reg.threads; t = t->next)
		nthreads++;
	s->threads = calloc(nthreads + 1, sizeof(*s->threads));
	s->waits = calloc(nthreads + 1, sizeof(*s->waits));
	if (!s->threads || !s->waits) {
		pthread_mutex_unlock(&ll_mon_reg.threads_mu);
		goto nomem;
	}
	for (struct ll_mon_thread *t = ll_mon_reg.threads.next; t != &ll_mon_reg.threads; t = t->next) {
		struct ll_mon_thread_info *ti = &s->threads[s->nthreads++];
		ti->tid = t->tid;
		memcpy(ti->name, t->name, sizeof(ti->name));
		struct ll_mon_wait_info *wi = &s->waits[s->nwaits];
		struct ll_mon_lock *on;
		/* A waited-on lock is alive: it cannot be destroyed while waited on, and a
		 * destroy that follows the wait's end takes mu, which we hold. */
		if (read_wait(t, s->now_ns, &wi->w, &on, NULL)) {
			wi->lock = on->snap_index;
			s->locks[wi->lock].waiters++;
			s->nwaits++;
		}
	}
	pthread_mutex_unlock(&ll_mon_reg.threads_mu);
	pthread_mutex_unlock(&ll_mon_reg.mu);
	qsort(s->threads, s->nthreads, sizeof(*s->threads), by_tid);
	return 0;
nomem:
	pthread_mutex_unlock(&ll_mon_reg.mu);
	ll_mon_snapshot_free(s);
	return ENOMEM;
}

/* Under both mutexes: the name of a live thread, "" otherwise. */
static void thread_name_locked(int tid, char *buf)
{
	buf[0] = '\0';
	if (!tid)
		return;
	for (struct ll_mon_thread *t = ll_mon_reg.threads.next; t != &ll_mon_reg.threads; t = t->next)
		if (t->tid == tid) {
			memcpy(buf, t->name, LL_MON_THREAD_NAME_MAX);
			return;
		}
}

size_t ll_mon_long_waits(uint64_t threshold_ns, struct ll_watchdog_report **out)
{
	size_t n = 0, cap = 0;
	struct ll_watchdog_report *reps = NULL;
	uint64_t now = ll_now_ns();

	pthread_mutex_lock(&ll_mon_reg.mu);
	pthread_mutex_lock(&ll_mon_reg.threads_mu);
	for (struct ll_mon_thread *t = ll_mon_reg.threads.next; t != &ll_mon_reg.threads; t = t->next) {
		struct ll_waiter w;
		struct ll_mon_lock *r;
		uint64_t seq;
		if (!read_wait(t, now, &w, &r, &seq) || w.waited_ns < threshold_ns ||
		    seq == t->reported_seq)
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 8;
			struct ll_watchdog_report *more = realloc(reps, ncap * sizeof(*reps));
			if (!more)
				break;   /* the rest is reported next time */
			reps = more;
			cap = ncap;
		}
		t->reported_seq = seq;
		struct ll_watchdog_report *rep = &reps[n++];
		memset(rep, 0, sizeof(*rep));
		rep->lock_id = r->id;
		memcpy(rep->lock_name, r->name, sizeof(rep->lock_name));
		rep->algo = r->ops->name;
		rep->created_file = r->created_file;
		rep->created_line = r->created_line;
		rep->waiter_tid = w.tid;
		memcpy(rep->waiter_name, w.thread_name, sizeof(rep->waiter_name));
		rep->wait_file = w.file;
		rep->wait_line = w.line;
		rep->waited_ns = w.waited_ns;
		rep->holder_tid = MON_LOAD(r->hot.holder_tid);
		thread_name_locked(rep->holder_tid, rep->holder_name);
		rep->holder_file = MON_LOAD(r->hot.last_file);
		rep->holder_line = (int)(uint32_t)(MON_LOAD(r->hot.last_site) >> 32);
	}
	pthread_mutex_unlock(&ll_mon_reg.threads_mu);
	pthread_mutex_unlock(&ll_mon_reg.mu);
	*out = reps;
	return n;
}

#else /* !LL_MONITOR: the API, doing nothing */

void ll_mon_attach(ll_mutex_t *m, const char *file, int line)
{
	(void)file;
	(void)line;
	m->mon = 0;
}
void ll_mon_detach(ll_mutex_t *m) { (void)m; }
int ll_monitor_available(void) { return 0; }
int ll_monitor_set_enabled(int on) { (void)on; return 0; }
int ll_monitor_enabled(void) { return 0; }
int ll_mutex_monitor(ll_mutex_t *m, int on) { (void)on; return m ? ENOENT : EINVAL; }
int ll_mutex_set_name(ll_mutex_t *m, const char *name) { (void)name; return m ? ENOENT : EINVAL; }
size_t ll_monitor_lock_count(void) { return 0; }
int ll_monitor_thread_id(void) { return (int)syscall(SYS_gettid); }
int ll_mutex_stats(const ll_mutex_t *m, struct ll_mutex_stats *out)
{
	if (!m || !out)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	return ENOENT;
}
size_t ll_mutex_waiters(const ll_mutex_t *m, struct ll_waiter *out, size_t max)
{
	(void)m;
	(void)out;
	(void)max;
	return 0;
}
/* Never called (no lock has LL_MON_ON), but the inline paths of a unit built with LL_MONITOR=1 name them. */
_Thread_local int ll_mon_tid __attribute__((tls_model("initial-exec")));
void ll_mon_hold_start(struct ll_mon_hot *h) { (void)h; }
int ll_mon_wait(ll_mutex_t *m, const struct timespec *abs_mono, const char *file, int line)
{
	(void)file;
	(void)line;
	if (abs_mono)
		return m->ops->timedlock(m->state, abs_mono);
	m->ops->lock(m->state);
	return 0;
}
void ll_mon_trylock_failed(ll_mutex_t *m) { (void)m; }

#endif
