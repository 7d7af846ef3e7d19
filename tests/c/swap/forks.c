/*
 * forks.c: fork with swapped mutexes and rwlocks held, queued on and free: what
 * the child's first use of each finds (the swapper's repair at a fork).
 */
#include <sys/wait.h>

#include "swap_test.h"

/* A lock another thread of the parent holds across the fork, until told to stop. */
struct holder {
	int (*take)(void *lock), (*release)(void *lock);
	void *lock;
	atomic_int holding, stop;
	pthread_t thread;
};

static void *hold(void *p)
{
	struct holder *h = p;
	CHECK(h->take(h->lock) == 0, "the holder's lock");
	atomic_store(&h->holding, 1);
	while (!atomic_load(&h->stop))
		sched_yield();
	CHECK(h->release(h->lock) == 0, "the holder's unlock");
	return NULL;
}

static void holder_start(struct holder *h)
{
	spawn(hold, h, &h->thread);
	while (!atomic_load(&h->holding))
		sched_yield();
}

static void holder_stop(struct holder *h)
{
	atomic_store(&h->stop, 1);
	join(h->thread);
}

static int mutex_take(void *m) { return pthread_mutex_lock(m); }
static int mutex_release(void *m) { return pthread_mutex_unlock(m); }
static int rw_take_read(void *l) { return pthread_rwlock_rdlock(l); }
static int rw_take_write(void *l) { return pthread_rwlock_wrlock(l); }
static int rw_release(void *l) { return pthread_rwlock_unlock(l); }

/* The child runs child() and exits with what it returns; the parent wants 0. */
static void fork_and_check(int (*child)(void), const char *what)
{
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		_exit(child());
	wait_child_ok(pid, what);
}

/*
 * The parent's side of forkheld and rwforkheld: `used` taken and let go,
 * `mine` held by this thread and `theirs` by another across the fork, child()
 * in the child; then both let go.
 */
static int fork_held(struct holder *theirs, int (*take)(void *), int (*release)(void *),
		     void *mine, void *used, int (*child)(void), const char *what)
{
	CHECK(take(used) == 0 && release(used) == 0, "%s: a lock used before the fork", what);
	CHECK(take(mine) == 0, "%s: hold", what);
	holder_start(theirs);
	fork_and_check(child, what);
	CHECK(release(mine) == 0, "%s: the parent still holds it", what);
	holder_stop(theirs);
	return 0;
}

#ifndef LL_SWAP_DIRECT
/* In a child: whether a thread of its own gets want from the call op on l
 * (rw_other).  Not under ThreadSanitizer: it stops at a thread made after a
 * threaded fork. */
static int other_gets(pthread_rwlock_t *l, int op, int want)
{
	pthread_t t;
	void *r;
	rw_subject = l;
	return !pthread_create(&t, NULL, rw_other, (void *)(intptr_t)op) && !pthread_join(t, &r) &&
	       r == (void *)(intptr_t)want;
}
#endif

static pthread_mutex_t fk_held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fk_rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t fk_free = PTHREAD_MUTEX_INITIALIZER;

int forking(void)
{
	pthread_mutex_lock(&fk_free);
	pthread_mutex_unlock(&fk_free);
	pthread_mutex_lock(&fk_held);
	pthread_mutex_lock(&fk_rec);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		/* The child's thread is the one that held them: they are its to release. */
		if (pthread_mutex_unlock(&fk_held) || pthread_mutex_unlock(&fk_rec))
			_exit(3);
		if (pthread_mutex_lock(&fk_free) || pthread_mutex_unlock(&fk_free))
			_exit(4);
		if (pthread_mutex_lock(&fk_rec) || pthread_mutex_unlock(&fk_rec))
			_exit(5);
		pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
		pthread_cond_t c = PTHREAD_COND_INITIALIZER;
		pthread_mutex_lock(&fresh);
		struct timespec dl = after_ns(CLOCK_REALTIME, 1000000);
		if (pthread_cond_timedwait(&c, &fresh, &dl) != ETIMEDOUT)
			_exit(6);
		pthread_mutex_unlock(&fresh);
		/* A thread in the child, on a lock the parent's threads used. */
		pthread_t t;
		if (pthread_create(&t, NULL, try_is_busy, &fk_free) || pthread_join(t, NULL))
			_exit(7);
		exit(0);
	}
	wait_child_ok(pid, "fork");
	CHECK(pthread_mutex_unlock(&fk_rec) == 0 && pthread_mutex_unlock(&fk_held) == 0,
	      "the parent still holds them");
	return 0;
}

/* --- fork while the parent's threads hold and queue on swapped mutexes */

static pthread_mutex_t fq_held = PTHREAD_MUTEX_INITIALIZER;    /* the forking thread's */
static pthread_mutex_t fq_free = PTHREAD_MUTEX_INITIALIZER;    /* contended, free at fork */
static pthread_mutex_t fq_theirs = PTHREAD_MUTEX_INITIALIZER;  /* another thread's at fork */
static pthread_cond_t fq_cond = PTHREAD_COND_INITIALIZER;
static atomic_int fq_arrived;
static long fq_count, fq_child_count[2];

#define FQ_QUEUED 3

/* Contends fq_free, then queues on fq_held (the forking thread holds it). */
static void *fq_queue(void *p)
{
	(void)p;
	for (int r = 0; r < 2000; r++) {
		pthread_mutex_lock(&fq_free);
		fq_count++;
		pthread_mutex_unlock(&fq_free);
	}
	atomic_fetch_add(&fq_arrived, 1);
	CHECK(pthread_mutex_lock(&fq_held) == 0, "lock");
	CHECK(pthread_mutex_unlock(&fq_held) == 0, "unlock");
	return NULL;
}

/* Holds fq_theirs across the fork, queued on fq_held meanwhile. */
static void *fq_holder(void *p)
{
	(void)p;
	CHECK(pthread_mutex_lock(&fq_theirs) == 0, "lock");
	atomic_fetch_add(&fq_arrived, 1);
	CHECK(pthread_mutex_lock(&fq_held) == 0, "lock");
	CHECK(pthread_mutex_unlock(&fq_held) == 0, "unlock");
	CHECK(pthread_mutex_unlock(&fq_theirs) == 0, "unlock");
	return NULL;
}

/* The child's threads: the two mutexes the parent's threads queued on, and a condvar. */
static void *fq_child_main(void *p)
{
	(void)p;
	for (int r = 0; r < 2000; r++) {
		pthread_mutex_t *m = r % 2 ? &fq_held : &fq_free;
		if (pthread_mutex_lock(m))
			_exit(10);
		fq_child_count[r % 2]++;
		if (r % 500 == 0)
			pthread_cond_signal(&fq_cond);
		if (pthread_mutex_unlock(m))
			_exit(11);
	}
	return NULL;
}

static int fq_child(void)
{
	test_watchdog("forkqueue's child", 30);
	/* Held by a thread that does not exist here: it stays held, as with glibc. */
	if (pthread_mutex_trylock(&fq_theirs) != EBUSY)
		_exit(4);
	struct timespec dl = after_ns(CLOCK_REALTIME, 20000000);
	if (pthread_mutex_timedlock(&fq_theirs, &dl) != ETIMEDOUT)
		_exit(5);
	/* Ours, with the parent's threads queued behind: they are not here. */
	if (pthread_mutex_unlock(&fq_held))
		_exit(6);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, fq_child_main, NULL))
			_exit(7);
	fq_child_main(NULL);
	pthread_mutex_lock(&fq_held);
	dl = after_ns(CLOCK_REALTIME, 1000000);
	int rc = pthread_cond_timedwait(&fq_cond, &fq_held, &dl);
	pthread_mutex_unlock(&fq_held);
	if (rc && rc != ETIMEDOUT)
		_exit(8);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (fq_child_count[0] + fq_child_count[1] != 3 * 2000)
		_exit(9);
	if (pthread_mutex_trylock(&fq_free) || pthread_mutex_unlock(&fq_free) ||
	    pthread_mutex_trylock(&fq_held) || pthread_mutex_unlock(&fq_held))
		_exit(12);
	_exit(0);
}

int forkqueue(void)
{
	pthread_t q[FQ_QUEUED], h;
	CHECK(pthread_mutex_lock(&fq_held) == 0, "lock");
	for (int i = 0; i < FQ_QUEUED; i++)
		spawn(fq_queue, NULL, &q[i]);
	spawn(fq_holder, NULL, &h);
	while (atomic_load(&fq_arrived) < FQ_QUEUED + 1)
		sched_yield();
	/* Long enough for all of them to be queued (or asleep) on fq_held. */
	struct timespec settle = { 0, 50000000 };
	nanosleep(&settle, NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		fq_child();
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(pthread_mutex_unlock(&fq_held) == 0, "unlock");
	for (int i = 0; i < FQ_QUEUED; i++)
		join(q[i]);
	join(h);
	CHECK(fq_count == FQ_QUEUED * 2000, "%ld increments in the parent", fq_count);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child: status %#x (exit 4-5: a mutex held by a gone thread was free; "
	      "6-12: the mutexes the parent's threads queued on failed)", status);
	return 0;
}


/*
 * fork with rwlocks held and waited on by the parent's threads: one
 * write-held by another thread (stays held in the child, as glibc's), one
 * free but used by others, one write-held by the forking thread with a
 * writer queued, one read-held by the forking thread.  (A read hold of the
 * forking thread with a writer queued is not here: its release hands the
 * lock to the queued writer, who is gone, in glibc's rwlock as in the
 * library's: the lock stays held in the child.)
 */
static pthread_rwlock_t rf_theirs = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rf_free = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rf_mine_w = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rf_mine_r = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int rf_users_stop;

static void *rf_user(void *p)
{
	(void)p;
	while (!atomic_load(&rf_users_stop)) {
		pthread_rwlock_rdlock(&rf_free);
		pthread_rwlock_unlock(&rf_free);
		pthread_rwlock_wrlock(&rf_free);
		pthread_rwlock_unlock(&rf_free);
	}
	return NULL;
}

static void *rf_waiter(void *p)
{
	pthread_rwlock_t *l = p;
	CHECK(pthread_rwlock_wrlock(l) == 0, "queued writer");
	pthread_rwlock_unlock(l);
	return NULL;
}

static int rf_child(void)
{
	alarm(30);   /* a hang is a failure (alarms are not inherited) */
	struct timespec short_dl = after_ns(CLOCK_MONOTONIC, 20000000);
	if (pthread_rwlock_tryrdlock(&rf_theirs) != EBUSY || pthread_rwlock_trywrlock(&rf_theirs) != EBUSY)
		return 10;
	if (pthread_rwlock_clockwrlock(&rf_theirs, CLOCK_MONOTONIC, &short_dl) != ETIMEDOUT)
		return 11;
	for (int i = 0; i < 3; i++)
		if (pthread_rwlock_wrlock(&rf_free) || pthread_rwlock_unlock(&rf_free) ||
		    pthread_rwlock_rdlock(&rf_free) || pthread_rwlock_unlock(&rf_free))
			return 12;
	/* The forking thread's holds are its own to release, and free after. */
	if (pthread_rwlock_rdlock(&rf_mine_w) != EDEADLK || pthread_rwlock_unlock(&rf_mine_w))
		return 13;
	if (pthread_rwlock_unlock(&rf_mine_r))
		return 14;
	pthread_rwlock_t *mine[2] = { &rf_mine_w, &rf_mine_r };
	for (int i = 0; i < 2; i++) {
		struct timespec dl = after_ns(CLOCK_REALTIME, 2000000000);
		if (pthread_rwlock_timedwrlock(mine[i], &dl) || pthread_rwlock_unlock(mine[i]))
			return 15 + i;
		if (pthread_rwlock_rdlock(mine[i]) || pthread_rwlock_unlock(mine[i]))
			return 17 + i;
	}
#ifndef LL_SWAP_DIRECT
	/* A thread of the child's own on a lock the parent's threads used. */
	if (!other_gets(&rf_free, RW_TRYWR, 0))
		return 19;
#endif
	return 0;
}

int rwfork(void)
{
	struct holder theirs = { .take = rw_take_write, .release = rw_release, .lock = &rf_theirs };
	pthread_t users[2], waiter;
	holder_start(&theirs);
	for (int i = 0; i < 2; i++)
		spawn(rf_user, NULL, &users[i]);
	CHECK(pthread_rwlock_wrlock(&rf_mine_w) == 0 && pthread_rwlock_rdlock(&rf_mine_r) == 0, "hold");
	spawn(rf_waiter, &rf_mine_w, &waiter);
	struct timespec nap = { 0, 30000000 };   /* the waiters queue, the users run */
	nanosleep(&nap, NULL);
	/* Free at the fork (a lock a gone thread held stays held, as glibc's). */
	atomic_store(&rf_users_stop, 1);
	for (int i = 0; i < 2; i++)
		join(users[i]);
	fork_and_check(rf_child, "rwfork");
	CHECK(pthread_rwlock_unlock(&rf_mine_w) == 0 && pthread_rwlock_unlock(&rf_mine_r) == 0,
	      "the parent still holds them");
	holder_stop(&theirs);
	join(waiter);
	return 0;
}

/*
 * fork with mutexes held: by a thread that is gone in the child, and by the
 * forking thread, whose unlock in the child must let a thread of the child's
 * that waits for it in; and a mutex used before the fork, then destroyed in
 * the child before any use there.
 */
static pthread_mutex_t fh_theirs = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fh_mine = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fh_used = PTHREAD_MUTEX_INITIALIZER;
#ifndef LL_SWAP_DIRECT
/* A thread of the child: lock, then say so; 0 or the first call's error. */
static atomic_int fh_got;
static void *fh_locker(void *p)
{
	int rc = pthread_mutex_lock(p);
	atomic_store(&fh_got, 1);
	if (!rc)
		rc = pthread_mutex_unlock(p);
	return (void *)(intptr_t)rc;
}
#endif

/* What the child's first use of a lock still held from before the fork
 * finds; nonzero: which check failed (the child's exit status). */
static int fh_child(void)
{
	alarm(30);   /* a hang is a failure (alarms are not inherited) */
	/* Used before the fork, destroyed before any use since. */
	if (pthread_mutex_destroy(&fh_used) || pthread_mutex_init(&fh_used, NULL) ||
	    pthread_mutex_lock(&fh_used) || pthread_mutex_unlock(&fh_used))
		return 20;
	/* The holder is gone: held for good, as glibc's would be, and a bad
	 * deadline is still refused. */
	if (pthread_mutex_trylock(&fh_theirs) != EBUSY || pthread_mutex_trylock(&fh_theirs) != EBUSY)
		return 10;
	int64_t t0 = now_ns(CLOCK_MONOTONIC);
	struct timespec dl = after_ns(CLOCK_REALTIME, 20000000);
	if (pthread_mutex_timedlock(&fh_theirs, &dl) != ETIMEDOUT)
		return 11;
	if (now_ns(CLOCK_MONOTONIC) - t0 < 19000000)
		return 12;   /* gave up before the deadline */
	dl = after_ns(CLOCK_MONOTONIC, 20000000);
	if (pthread_mutex_clocklock(&fh_theirs, CLOCK_MONOTONIC, &dl) != ETIMEDOUT)
		return 13;
	struct timespec bad = { 0, 1000000000L };
	if (pthread_mutex_timedlock(&fh_theirs, &bad) != EINVAL)
		return 14;
#ifndef LL_SWAP_DIRECT
	/* The forking thread's: a thread of the child's waits in lock until the
	 * forking thread unlocks (not under ThreadSanitizer: it stops at a thread
	 * made after a threaded fork). */
	pthread_t t;
	if (pthread_create(&t, NULL, fh_locker, &fh_mine))
		return 15;
	struct timespec nap = { 0, 20000000 };
	nanosleep(&nap, NULL);
	if (atomic_load(&fh_got))
		return 16;   /* it had a mutex this thread holds */
	if (pthread_mutex_unlock(&fh_mine))
		return 17;
	void *r;
	if (pthread_join(t, &r) || r != NULL || !atomic_load(&fh_got))
		return 18;
#else
	if (pthread_mutex_unlock(&fh_mine))
		return 17;
#endif
	if (pthread_mutex_trylock(&fh_mine) || pthread_mutex_unlock(&fh_mine))
		return 19;
	return 0;
}

/*
 * fork with rwlocks read-held: by a thread that is gone in the child (readers
 * still share it, a writer cannot have it), and by the forking thread, whose
 * lock a thread of the child's looks at first (it shares the read hold, its
 * writer waits) before the forking thread's unlock frees it; and one used
 * before the fork, then destroyed in the child before any use there.  (A
 * write hold of the forking thread is released by its own first use in the
 * child: rwfork.  Looked at first by another thread, it stays as glibc's
 * would, whose unlock in the child then takes the forking thread for a
 * reader: its new thread id is not the writer's.)
 */
static pthread_rwlock_t rh_theirs = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rh_mine = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rh_used = PTHREAD_RWLOCK_INITIALIZER;

static int rh_child(void)
{
	alarm(30);
	if (pthread_rwlock_destroy(&rh_used) || pthread_rwlock_init(&rh_used, NULL) ||
	    pthread_rwlock_wrlock(&rh_used) || pthread_rwlock_unlock(&rh_used))
		return 17;
	if (pthread_rwlock_tryrdlock(&rh_theirs) || pthread_rwlock_unlock(&rh_theirs))
		return 10;
	if (pthread_rwlock_trywrlock(&rh_theirs) != EBUSY)
		return 11;
	struct timespec dl = after_ns(CLOCK_MONOTONIC, 20000000);
	if (pthread_rwlock_clockwrlock(&rh_theirs, CLOCK_MONOTONIC, &dl) != ETIMEDOUT)
		return 12;
#ifndef LL_SWAP_DIRECT
	if (!other_gets(&rh_mine, RW_TRYRD, 0))
		return 13;
	if (!other_gets(&rh_mine, RW_TRYWR, EBUSY))
		return 14;
#endif
	if (pthread_rwlock_unlock(&rh_mine))
		return 15;
	if (pthread_rwlock_trywrlock(&rh_mine) || pthread_rwlock_unlock(&rh_mine))
		return 16;
	return 0;
}

int forkheld(void)
{
	struct holder theirs = { .take = mutex_take, .release = mutex_release, .lock = &fh_theirs };
	return fork_held(&theirs, mutex_take, mutex_release, &fh_mine, &fh_used, fh_child,
			 "forkheld");
}

int rwforkheld(void)
{
	struct holder theirs = { .take = rw_take_read, .release = rw_release, .lock = &rh_theirs };
	return fork_held(&theirs, rw_take_read, rw_release, &rh_mine, &rh_used, rh_child,
			 "rwforkheld");
}
