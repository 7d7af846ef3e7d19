/*
 * fifo_tp.c: slow paths of `fifo-tp` (word and roles drawn in locklab/locks/fifo_tp.h).
 *
 * Who touches what, from where:
 *   word           every thread, by CAS; QUEUED only with the lock's bucket held,
 *                  SLEEPY set by a candidate going to sleep, cleared at a
 *                  turn's end (bucket held)
 *   unlocks        the holder (slow unlock); candidates read it
 *   turn_start,    the holder, the granter for its grantee, and the thread
 *   look_at        that makes the queue (bucket held); read by the holder
 *   turn_owner     the holder (and the granter); read by threads that would
 *                  take the lock back
 *   holder_cpu     the holder; read by candidates
 *   wake_ns        waiters that slept, when they run again; read at turn starts
 *   waiters        with the bucket held; read at turn starts
 *   a waiter node  on its waiter's stack; linked and unlinked with the bucket
 *                  held; its word and woken_at changed by others only with
 *                  the bucket held; its heartbeat written by its waiter alone
 *
 * A node's word:
 *   PARKED      queued behind the candidates; asleep (SLEEPING) or about to be
 *   CANDIDATE   at the head: spins and publishes heartbeats, or sleeps
 *               (SLEEPING): after patience_ns without an unlock or on a
 *               crowded core (spin=auto), or until the turn's end while it
 *               shares the holder's CPU
 *   GRANTED     unlinked by the granter, who began the node's turn: the
 *               waiter holds the lock

 * The queue is FIFO and its candidates are always its first nodes: a
 * newcomer is promoted at once only when nobody is parked ahead of it, and
 * promotions take the oldest parked node.  Invariant: while the queue is
 * not empty, a candidate runs, sleeps (a grant wakes it) or was woken less
 * than WAKE_GRACE_NS ago; ensure_candidates() restores it whenever a thread
 * with the bucket finds it broken (a candidate stopped).
 */
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "locklab/locks/fifo_tp.h"
#include "locks/algo.h"
#include "core/futex_sys.h"
#include "locks/ll/park.h"

enum { N_PARKED = 0, N_CANDIDATE = 1, N_GRANTED = 2, N_SLEEPING = 4 };

/*
 * A candidate publishes its heartbeat about this often; stale_ns is held
 * to several of these, so that a running candidate never looks stopped.
 */
#define BEAT_NS 1000
#define MIN_STALE_NS (4 * BEAT_NS)
/*
 * A woken waiter has this long to run before it counts as stopped: a
 * wake-up waits for the scheduler, and promoting another waiter sooner
 * only adds a second runnable spinner to a busy CPU.
 */
#define WAKE_GRACE_NS 2000000
/*
 * A turn lengthened for slow wake-ups stays short enough for the whole queue
 * to have its turn within this (fairness over a second).
 */
#define ROTATION_NS 100000000
/* A longer wake-up counts as this long: a waiter preempted after its wake sets no pace. */
#define MAX_WAKE_NS 1000000

struct waiter {
	struct ll_park_node park;   /* first: park's nodes are our waiters */
	_Atomic uint64_t beat;      /* the waiter's clock when last seen running; 0: not since woken */
	_Atomic uint64_t woken_at;  /* when promoted or woken (written with the bucket held) */
	const void *self;           /* its thread's token */
};

static struct waiter *waiter_of(struct ll_park_node *n)
{
	return (struct waiter *)n;
}

/* A thread's token: the address of a thread-local byte, distinct per live thread. */
static _Thread_local char token __attribute__((tls_model("initial-exec")));

static const void *self_token(void)
{
	return &token;
}

/* Futex words to wake once the bucket is let go (a node may be gone by then: address only). */
struct wakes {
	atomic_uint *word[8];
	int n;
};

static void wake_later(struct wakes *k, atomic_uint *word)
{
	if (k->n < (int)LL_COUNT(k->word))
		k->word[k->n++] = word;
	else
		ll_park_wake(word);
}

static void wake_all(const struct wakes *k)
{
	for (int i = 0; i < k->n; i++)
		ll_park_wake(k->word[i]);
}

/* With the bucket held: set a node's word, waking it (later) if it sleeps. */
static void node_set(struct waiter *n, unsigned to, struct wakes *k)
{
	unsigned was = atomic_exchange_explicit(&n->park.word, to, memory_order_acq_rel);
	if (was & N_SLEEPING)
		wake_later(k, &n->park.word);
}

static unsigned node_word(struct waiter *n)
{
	return atomic_load_explicit(&n->park.word, memory_order_acquire);
}

static int is_candidate(struct ll_park_node *n)
{
	return (atomic_load_explicit(&n->word, memory_order_relaxed) & N_CANDIDATE) != 0;
}

/* now - t as signed: a heartbeat taken after our `now` is fresh, not ancient. */
static int64_t age(uint64_t now, uint64_t t)
{
	return (int64_t)(now - t);
}

/* Runs now: spinning, with a heartbeat younger than stale_ns. */
static int grantable(const ll_fifo_tp_t *l, struct waiter *n, uint64_t now)
{
	uint64_t beat = atomic_load_explicit(&n->beat, memory_order_relaxed);
	return !(node_word(n) & N_SLEEPING) && beat && age(now, beat) < (int64_t)l->stale_ns;
}

/* Will take the lock: runs, sleeps (a release wakes it), or was woken just now. */
static int alive(const ll_fifo_tp_t *l, struct waiter *n, uint64_t now)
{
	return grantable(l, n, now) || (node_word(n) & N_SLEEPING) ||
	       age(now, atomic_load_explicit(&n->woken_at, memory_order_relaxed)) < WAKE_GRACE_NS;
}

/* With the bucket held: 1 if a candidate of l runs now. */
static int candidate_running(struct ll_park_bucket *b, const ll_fifo_tp_t *l, uint64_t now)
{
	int more;
	for (struct ll_park_node *n = ll_park_first(b, l, &more); n && is_candidate(n);
	     n = ll_park_next(n))
		if (grantable(l, waiter_of(n), now))
			return 1;
	return 0;
}

/*
 * With the bucket held: promote the oldest parked waiters while fewer than
 * max_candidates candidates are queued, or while none of them is alive
 * (the invariant above).  A stopped candidate keeps its place: when it runs
 * again it is the oldest candidate, and the next grant is its.
 */
static void ensure_candidates(struct ll_park_bucket *b, const ll_fifo_tp_t *l, uint64_t now,
			      struct wakes *k)
{
	int more, any_alive = 0;
	unsigned count = 0;
	struct ll_park_node *n = ll_park_first(b, l, &more);
	for (; n && is_candidate(n); n = ll_park_next(n)) {
		count++;
		any_alive |= alive(l, waiter_of(n), now);
	}
	while (n && (count < l->max_candidates || !any_alive)) {
		struct waiter *p = waiter_of(n);
		n = ll_park_next(n);
		atomic_store_explicit(&p->beat, 0, memory_order_relaxed);
		atomic_store_explicit(&p->woken_at, now, memory_order_relaxed);
		node_set(p, N_CANDIDATE, k);
		count++;
		any_alive = 1;
	}
}

/* With the bucket held: a waiter joins the queue, or leaves it. */
static void enqueue(struct ll_park_bucket *b, ll_fifo_tp_t *l, struct waiter *w)
{
	ll_park_enqueue(b, &w->park);
	atomic_store_explicit(&l->waiters, atomic_load_explicit(&l->waiters, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

static void dequeue(struct ll_park_bucket *b, ll_fifo_tp_t *l, struct waiter *w)
{
	ll_park_remove(b, &w->park);
	atomic_store_explicit(&l->waiters, atomic_load_explicit(&l->waiters, memory_order_relaxed) - 1,
			      memory_order_relaxed);
}

/*
 * With the bucket held: QUEUED (and SLEEPY) off when l has no waiter left
 * (the count too: a forked child inherits a count without its waiters),
 * else candidates kept.
 */
static void settle(struct ll_park_bucket *b, ll_fifo_tp_t *l, uint64_t now, struct wakes *k)
{
	int more;
	if (!ll_park_first(b, l, &more)) {
		atomic_fetch_and_explicit(&l->word, ~(unsigned)(LL_FIFO_TP_QUEUED | LL_FIFO_TP_SLEEPY),
					  memory_order_relaxed);
		atomic_store_explicit(&l->waiters, 0, memory_order_relaxed);
	} else {
		ensure_candidates(b, l, now, k);
	}
}

/*
 * A turn's length: turn_ns, or twice what a wake-up takes here if that is
 * longer (the candidate woken as a turn begins then runs by its end), but
 * no longer than lets every queued waiter have its turn within ROTATION_NS.
 */
static uint64_t turn_len(const ll_fifo_tp_t *l)
{
	uint64_t t = 2 * (uint64_t)atomic_load_explicit(&l->wake_ns, memory_order_relaxed);
	uint32_t n = atomic_load_explicit(&l->waiters, memory_order_relaxed);
	uint64_t fair = n ? ROTATION_NS / n : t;
	if (t > fair)
		t = fair;
	return l->turn_ns && t > l->turn_ns ? t : l->turn_ns;
}

/*
 * The holder's CPU, for candidates to see whether they share it (relaxed:
 * a hint; the holder moves rarely and writes it only when it has).
 */
static void note_cpu(ll_fifo_tp_t *l)
{
	int cpu = sched_getcpu();
	if (cpu != atomic_load_explicit(&l->holder_cpu, memory_order_relaxed))
		atomic_store_explicit(&l->holder_cpu, cpu, memory_order_relaxed);
}

/* A turn begins now. */
static void time_turn(ll_fifo_tp_t *l, uint64_t now)
{
	atomic_store_explicit(&l->turn_start, now, memory_order_relaxed);
	atomic_store_explicit(&l->look_at, now + turn_len(l), memory_order_relaxed);
}

/* The turn of `owner` begins now. */
static void start_turn(ll_fifo_tp_t *l, const void *owner, uint64_t now)
{
	time_turn(l, now);
	atomic_store_explicit(&l->turn_owner, owner, memory_order_relaxed);
}

/* We hold l, taken with a queue behind us: our turn begins. */
static void begin_turn(struct ll_park_bucket *b, ll_fifo_tp_t *l, const void *self, uint64_t now,
		       struct wakes *k)
{
	start_turn(l, self, now);
	settle(b, l, now, k);
}

/*
 * The turn's owner takes its lock back (QUEUED -> LOCKED|QUEUED), and
 * anyone takes a lock with no queue (FREE -> LOCKED): 1 when taken.
 */
static int retake(ll_fifo_tp_t *l, const void *self)
{
	unsigned w = atomic_load_explicit(&l->word, memory_order_relaxed);
	while (!(w & LL_FIFO_TP_LOCKED)) {
		if ((w & LL_FIFO_TP_QUEUED) &&
		    atomic_load_explicit(&l->turn_owner, memory_order_relaxed) != self)
			return 0;
		if (atomic_compare_exchange_weak_explicit(&l->word, &w, w | LL_FIFO_TP_LOCKED,
							  memory_order_acquire, memory_order_relaxed))
			return 1;
	}
	return 0;
}

/*
 * With the bucket held: take l if it is free and no queued waiter runs to
 * take it (QUEUED -> LOCKED|QUEUED, or FREE -> LOCKED): the oldest running
 * waiter is us.  1 when taken; *w is the word last seen.
 */
static int take_if_nobody_runs(struct ll_park_bucket *b, ll_fifo_tp_t *l, uint64_t now,
			       unsigned *w, struct wakes *k)
{
	while (!(*w & LL_FIFO_TP_LOCKED)) {
		if ((*w & LL_FIFO_TP_QUEUED) && candidate_running(b, l, now))
			return 0;
		if (atomic_compare_exchange_weak_explicit(&l->word, w, *w | LL_FIFO_TP_LOCKED,
							  memory_order_acquire, memory_order_relaxed)) {
			if (*w & LL_FIFO_TP_QUEUED) {
				note_cpu(l);
				begin_turn(b, l, self_token(), now, k);
			}
			return 1;
		}
	}
	return 0;
}

/* A waiter whose deadline passed: out of the queue, unless it was granted the lock first. */
static int leave(ll_fifo_tp_t *l, struct waiter *me)
{
	struct wakes k = { .n = 0 };
	struct ll_park_bucket *b = ll_park_lock(l);
	if (node_word(me) == N_GRANTED) {
		ll_park_unlock(b);
		return 0;
	}
	dequeue(b, l, me);
	settle(b, l, ll_now_ns(), &k);
	ll_park_unlock(b);
	wake_all(&k);
	return ETIMEDOUT;
}

/* A candidate took the idle lock (QUEUED -> LOCKED|QUEUED): out of the queue, its turn begins. */
static int taken(ll_fifo_tp_t *l, struct waiter *me, uint64_t now)
{
	struct wakes k = { .n = 0 };
	note_cpu(l);
	struct ll_park_bucket *b = ll_park_lock(l);
	dequeue(b, l, me);
	begin_turn(b, l, me->self, now, &k);
	ll_park_unlock(b);
	wake_all(&k);
	return 0;
}

/*
 * A waiter that slept runs again: how long since it was woken joins the
 * lock's average wake-up (weight 1/8), which lengthens turns.
 */
static void note_wake(ll_fifo_tp_t *l, struct waiter *me, uint64_t now)
{
	uint64_t avg = atomic_load_explicit(&l->wake_ns, memory_order_relaxed);
	uint64_t woken = atomic_load_explicit(&me->woken_at, memory_order_relaxed);
	uint64_t ran = age(now, woken) > MAX_WAKE_NS ? woken + MAX_WAKE_NS : now;
	atomic_store_explicit(&l->wake_ns, (unsigned)ll_handoff_avg(avg, woken, ran),
			      memory_order_relaxed);
}

/*
 * A candidate sleeps (SLEEPING on its node: a grant wakes it) until woken,
 * `until` or the caller's deadline (ns; UINT64_MAX: none).  `sleepy`: the
 * holder is slow (no unlock for patience_ns), and its next release ends the
 * turn: SLEEPY on the word, after SLEEPING (acq_rel: a releaser whose CAS
 * fails on our SLEEPY then sees our SLEEPING); a free lock is looked at
 * again instead.  ETIMEDOUT once the caller's deadline passed; 1 when we
 * slept; 0 when we did not (granted, or the lock was free).
 */
static int candidate_sleep(ll_fifo_tp_t *l, struct waiter *me, uint64_t until, uint64_t deadline,
			   int sleepy)
{
	const unsigned asleep = N_CANDIDATE | N_SLEEPING;
	unsigned s = N_CANDIDATE;
	if (!atomic_compare_exchange_strong_explicit(&me->park.word, &s, asleep,
						     memory_order_acq_rel, memory_order_acquire))
		return 0;   /* granted meanwhile */
	unsigned w = atomic_load_explicit(&l->word, memory_order_relaxed);
	while (sleepy) {
		if (!(w & LL_FIFO_TP_LOCKED)) {
			s = asleep;
			atomic_compare_exchange_strong_explicit(&me->park.word, &s, N_CANDIDATE,
								memory_order_acq_rel,
								memory_order_acquire);
			return 0;
		}
		if ((w & LL_FIFO_TP_SLEEPY) ||
		    atomic_compare_exchange_weak_explicit(&l->word, &w, w | LL_FIFO_TP_SLEEPY,
							  memory_order_acq_rel, memory_order_relaxed))
			break;
	}
	uint64_t end = until < deadline ? until : deadline;
	struct timespec ts = ll_ns_timespec(end);
	while (node_word(me) == asleep) {
		if (ll_sys_futex_wait(&me->park.word, asleep, end == UINT64_MAX ? NULL : &ts) !=
		    ETIMEDOUT)
			continue;
		/* Our time is up: awake again, unless a wake or a grant got here first. */
		s = asleep;
		if (atomic_compare_exchange_strong_explicit(&me->park.word, &s, N_CANDIDATE,
							    memory_order_acq_rel, memory_order_acquire))
			return end == deadline ? ETIMEDOUT : 1;
	}
	return 1;
}

/*
 * A candidate's wait: spin on our node, and every beat publish the clock,
 * look at the deadline, and at the lock.  A lock seen free at two beats in
 * a row with no unlock between is idle (its turn's owner has gone): take it.
 * A candidate that runs on the holder's CPU keeps the holder from running:
 * it naps until the turn ends (at least stale_ns).  One that sees no unlock
 * for patience_ns, or whose core is crowded (spin=auto), sleeps until a
 * release: its CPU is better used by the others.
 */
static int candidate_wait(ll_fifo_tp_t *l, struct waiter *me, const struct timespec *abs_mono,
			  int woken)
{
	uint64_t deadline = abs_mono ? ll_timespec_ns(abs_mono) : UINT64_MAX;
	uint64_t now = ll_now_ns(), progress_at = now;
	unsigned char last_unlocks = atomic_load_explicit(&l->unlocks, memory_order_relaxed);
	int was_free = 0;
	struct ll_spinner s = ll_spinner_start(l->spin);

	for (uint32_t next_beat = 0;; next_beat--) {
		if (node_word(me) == N_GRANTED) {
			note_cpu(l);
			return 0;
		}
		if (next_beat) {
			ll_spinner_wait(&s);
			continue;
		}
		next_beat = l->beat_iters;
		now = ll_now_ns();
		if (woken)
			note_wake(l, me, now);
		woken = 0;
		atomic_store_explicit(&me->beat, now, memory_order_relaxed);
		if (now >= deadline)
			return leave(l, me);
		unsigned w = atomic_load_explicit(&l->word, memory_order_relaxed);
		unsigned char u = atomic_load_explicit(&l->unlocks, memory_order_relaxed);
		int is_free = !(w & LL_FIFO_TP_LOCKED), slept = 0;
		if (u != last_unlocks) {
			progress_at = now;
			last_unlocks = u;
		} else if (is_free && was_free &&
			   atomic_compare_exchange_strong_explicit(&l->word, &w, w | LL_FIFO_TP_LOCKED,
								   memory_order_acquire,
								   memory_order_relaxed)) {
			return taken(l, me, now);
		}
		if (!is_free &&
		    sched_getcpu() == atomic_load_explicit(&l->holder_cpu, memory_order_relaxed)) {
			uint64_t end = atomic_load_explicit(&l->look_at, memory_order_relaxed);
			if (age(end, now) < (int64_t)l->stale_ns)
				end = now + l->stale_ns;
			slept = candidate_sleep(l, me, end, deadline, 0);
		} else if (age(now, progress_at) >= (int64_t)l->patience_ns || ll_spinner_parks(&s)) {
			slept = candidate_sleep(l, me, UINT64_MAX, deadline, 1);
		}
		if (slept == ETIMEDOUT)
			return leave(l, me);
		if (slept) {
			woken = 1;
			progress_at = ll_now_ns();
			is_free = 0;
			s = ll_spinner_start(l->spin);
		}
		was_free = is_free;
	}
}

/* Queued: asleep until promoted (or granted), then a candidate. */
static int queued_wait(ll_fifo_tp_t *l, struct waiter *me, const struct timespec *abs_mono)
{
	int slept = 0;
	for (;;) {
		unsigned s = node_word(me);
		if (s == N_GRANTED)
			return 0;
		if (s & N_CANDIDATE)
			return candidate_wait(l, me, abs_mono, slept);
		if (s == N_PARKED) {
			atomic_compare_exchange_strong_explicit(&me->park.word, &s, N_PARKED | N_SLEEPING,
								memory_order_acq_rel,
								memory_order_acquire);
			continue;
		}
		if (ll_sys_futex_wait(&me->park.word, s, abs_mono) == ETIMEDOUT &&
		    node_word(me) == s)
			return leave(l, me);
		slept = 1;
	}
}

int ll_fifo_tp_lock_slow(ll_fifo_tp_t *l, const struct timespec *abs_mono)
{
	const void *self = self_token();
	if (retake(l, self))
		return 0;

	struct wakes k = { .n = 0 };
	struct ll_park_bucket *b = ll_park_lock(l);
	uint64_t now = ll_now_ns();
	unsigned w = atomic_load_explicit(&l->word, memory_order_relaxed);
	for (;;) {
		if (take_if_nobody_runs(b, l, now, &w, &k)) {
			ll_park_unlock(b);
			wake_all(&k);
			return 0;
		}
		if (w & LL_FIFO_TP_QUEUED)
			break;
		/*
		 * LOCKED -> LOCKED|QUEUED: the holder's turn is timed from its first
		 * waiter (its unlock names it the turn's owner).
		 */
		if (atomic_compare_exchange_weak_explicit(&l->word, &w, w | LL_FIFO_TP_QUEUED,
							  memory_order_relaxed, memory_order_relaxed)) {
			time_turn(l, now);
			/* Whose CPU the holder is on, its unlocks will say. */
			atomic_store_explicit(&l->holder_cpu, -1, memory_order_relaxed);
			break;
		}
	}
	struct waiter me;
	memset(&me, 0, sizeof(me));
	atomic_init(&me.park.word, N_PARKED);
	me.park.lock = l;
	atomic_init(&me.woken_at, now);
	me.self = self;
	enqueue(b, l, &me);
	ensure_candidates(b, l, now, &k);
	ll_park_unlock(b);
	wake_all(&k);
	return queued_wait(l, &me, abs_mono);
}

int ll_fifo_tp_trylock_slow(ll_fifo_tp_t *l)
{
	if (retake(l, self_token()))
		return 0;
	if (!(atomic_load_explicit(&l->word, memory_order_relaxed) & LL_FIFO_TP_QUEUED))
		return EBUSY;
	/* Free with a queue: ours only if no queued waiter runs; never wait for the bucket. */
	struct ll_park_bucket *b = ll_park_trylock(l);
	if (!b)
		return EBUSY;
	struct wakes k = { .n = 0 };
	unsigned w = atomic_load_explicit(&l->word, memory_order_relaxed);
	int took = take_if_nobody_runs(b, l, ll_now_ns(), &w, &k);
	ll_park_unlock(b);
	wake_all(&k);
	return took ? 0 : EBUSY;
}

/*
 * With the bucket held: the oldest candidate that runs (*running) and the
 * oldest alive (*ready), NULL where there is none; *sleepers: how many sleep.
 */
static void look_at_candidates(struct ll_park_bucket *b, const ll_fifo_tp_t *l, uint64_t now,
			       struct waiter **running, struct waiter **ready, int *sleepers)
{
	int more;
	*running = *ready = NULL;
	*sleepers = 0;
	for (struct ll_park_node *n = ll_park_first(b, l, &more); n && is_candidate(n);
	     n = ll_park_next(n)) {
		struct waiter *c = waiter_of(n);
		*sleepers += (node_word(c) & N_SLEEPING) != 0;
		if (!*running && grantable(l, c, now))
			*running = c;
		if (!*ready && alive(l, c, now))
			*ready = c;
	}
}

/*
 * The holder's release with a queue, at the end of its turn or when a
 * candidate sleeps (SLEEPY: the holder was slow).  The lock goes to the
 * oldest candidate that runs, or with none running to the oldest alive
 * (woken just now, or asleep: woken with the grant), so that the queue
 * keeps turning however slowly the scheduler runs it: LOCKED|QUEUED stays,
 * with a new owner.  Candidates that stopped are passed by, and a parked
 * waiter is promoted beside them first.  With no candidate alive the lock
 * is released (QUEUED): a newcomer may take it, or the stopped one once it
 * runs.  SLEEPY stays while other candidates sleep (the next release sees
 * to them); it can appear while we hold the bucket (a candidate going to
 * sleep): the word's CAS then fails and the candidates are counted again.
 */
static void turn_end(ll_fifo_tp_t *l)
{
	struct wakes k = { .n = 0 };
	struct ll_park_bucket *b = ll_park_lock(l);
	uint64_t now = ll_now_ns();
	unsigned w = atomic_load_explicit(&l->word, memory_order_acquire);
	struct waiter *running, *ready, *ignored;
	int sleepers, more;

	ensure_candidates(b, l, now, &k);
	look_at_candidates(b, l, now, &running, &ready, &sleepers);
	struct waiter *grantee = running ? running : ready;
	if (grantee) {
		sleepers -= (node_word(grantee) & N_SLEEPING) != 0;
		dequeue(b, l, grantee);
		ensure_candidates(b, l, now, &k);
	}
	for (;;) {
		unsigned to = grantee ? LL_FIFO_TP_LOCKED : 0;
		if (ll_park_first(b, l, &more))
			to |= LL_FIFO_TP_QUEUED | (sleepers ? LL_FIFO_TP_SLEEPY : 0);
		if (atomic_compare_exchange_weak_explicit(&l->word, &w, to, memory_order_acq_rel,
							  memory_order_acquire))
			break;
		look_at_candidates(b, l, now, &ignored, &ignored, &sleepers);
	}
	if (grantee) {
		start_turn(l, grantee->self, now);
		/* Release: our critical section happens-before the grantee's. */
		node_set(grantee, N_GRANTED, &k);
	}
	ll_park_unlock(b);
	wake_all(&k);
}

void ll_fifo_tp_unlock_slow(ll_fifo_tp_t *l)
{
	unsigned char u = (unsigned char)(atomic_load_explicit(&l->unlocks, memory_order_relaxed) + 1);
	atomic_store_explicit(&l->unlocks, u, memory_order_relaxed);
	/* The clock costs more than a look at the word: every 8th unlock of a turn reads it. */
	if (l->turn_ns == 0 || (u & 7) == 0) {
		if (age(ll_now_ns(), atomic_load_explicit(&l->look_at, memory_order_relaxed)) >= 0) {
			turn_end(l);
			return;
		}
		note_cpu(l);
	}
	atomic_store_explicit(&l->turn_owner, self_token(), memory_order_relaxed);
	unsigned w = atomic_load_explicit(&l->word, memory_order_relaxed);
	for (;;) {
		if (w & LL_FIFO_TP_SLEEPY) {
			turn_end(l);
			return;
		}
		/* LOCKED|QUEUED -> QUEUED (ours to take back), or LOCKED -> FREE (queue gone). */
		if (atomic_compare_exchange_weak_explicit(&l->word, &w, w & ~(unsigned)LL_FIFO_TP_LOCKED,
							  memory_order_release, memory_order_relaxed))
			return;
	}
}

static int ns_knob_fits(int64_t ns)
{
	return ns >= 0 && ns <= LL_FIFO_TP_MAX_NS;
}

int ll_fifo_tp_init(ll_fifo_tp_t *l, const struct ll_fifo_tp_config *cfg)
{
	struct ll_fifo_tp_config def;
	cfg = LL_CONFIG_OR_DEFAULTS(fifo_tp, cfg, def);
	/* A config built without the knob table (a C caller's) must still fit the fields. */
	if (!ns_knob_fits(cfg->turn_ns) || !ns_knob_fits(cfg->stale_ns) ||
	    cfg->stale_ns < MIN_STALE_NS || !ns_knob_fits(cfg->patience_ns) ||
	    cfg->candidates < 1 || cfg->candidates > 8 || cfg->spin < 0 ||
	    cfg->spin >= LL_SPIN_POLICIES)
		return EINVAL;
	memset(l, 0, sizeof(*l));
	atomic_init(&l->word, 0);
	atomic_init(&l->holder_cpu, -1);
	l->spin = (uint8_t)cfg->spin;
	l->max_candidates = (uint8_t)cfg->candidates;
	l->turn_ns = (uint32_t)cfg->turn_ns;
	l->stale_ns = (uint32_t)cfg->stale_ns;
	l->patience_ns = (uint32_t)cfg->patience_ns;
	l->beat_iters = ll_spin_iters(l->spin, BEAT_NS);
	return 0;
}

static const struct ll_knob knobs[] = {
	LL_KNOB_INT(struct ll_fifo_tp_config, turn_ns, 50000, 0, LL_FIFO_TP_MAX_NS,
		    "the longest a holder keeps re-taking the lock while a running waiter waits, "
		    "ns (0: hand over at every unlock)"),
	LL_KNOB_INT(struct ll_fifo_tp_config, stale_ns, 20000, MIN_STALE_NS, LL_FIFO_TP_MAX_NS,
		    "a waiter whose heartbeat is older is not running: skipped, ns"),
	LL_KNOB_INT(struct ll_fifo_tp_config, patience_ns, 100000, 0, LL_FIFO_TP_MAX_NS,
		    "a spinning waiter sleeps after this long without an unlock, ns"),
	LL_KNOB_INT(struct ll_fifo_tp_config, candidates, 1, 1, 8,
		    "waiters spinning at the head of the queue; the others park"),
	LL_KNOB_SPIN(struct ll_fifo_tp_config),
};

LL_OPS_ADAPTERS(fifo_tp, ll_fifo_tp_t)

const struct ll_lock_ops ll_fifo_tp_ops = {
	.name = "fifo-tp",
	.summary = "FIFO queue lock that survives preemption: the lock passes by turns to the "
		   "oldest waiter still running (heartbeats), the others park",
	.flags = LL_ALGO_PARKS | LL_ALGO_FIFO | LL_ALGO_PREEMPT_SAFE,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_fifo_tp_config),
	LL_OPS_FUNCS(fifo_tp, ll_fifo_tp_t),
};
