/*
 * test_prof.c: programs keep their semantics with liblocklab-prof.so preloaded.
 *
 *   test_prof TEST        (run by ctest with LD_PRELOAD set; fails if it is not)
 *
 * types    recursive, errorcheck and robust mutexes, trylock, timedlock
 * rwlock   readers and writers exclude each other; timed and try variants
 * cond     a one-slot queue with signal (no lost wakeup), timedwait's timeout,
 *          cancellation inside pthread_cond_wait (the cleanup handler owns the mutex)
 * futex    a mutex made of syscall(SYS_futex): exclusion, and errno kept
 * fork     a forked child reports its own locks, under its own pid
 * report   the report at exit names the contended static lock (run in a child)
 * die      a child that dies of SIGTERM or SIGINT, or calls _exit, leaves its
 *          report and the same status; a handler of its own wins
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static void require_profiler(void)
{
	Dl_info info;
	void *fn = dlsym(RTLD_DEFAULT, "pthread_mutex_lock");
	CHECK(fn && dladdr(fn, &info) && strstr(info.dli_fname, "liblocklab-prof"),
	      "pthread_mutex_lock is not the profiler's (LD_PRELOAD not set?)");
}

static struct timespec in_ms(int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return ts;
}

/* ------------------------------------------------------------------ types */

static pthread_mutex_t robust;

static void *die_holding(void *arg)
{
	(void)arg;
	CHECK(pthread_mutex_lock(&robust) == 0, "robust lock");
	return NULL;   /* exits holding it */
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static atomic_int held_go;

static void *hold_a_while(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&held);
	atomic_store(&held_go, 1);
	usleep(200 * 1000);
	pthread_mutex_unlock(&held);
	return NULL;
}

static void test_types(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&m, &a);
	CHECK(pthread_mutex_lock(&m) == 0 && pthread_mutex_lock(&m) == 0, "recursive relock");
	CHECK(pthread_mutex_trylock(&m) == 0, "recursive trylock");
	for (int i = 0; i < 3; i++)
		CHECK(pthread_mutex_unlock(&m) == 0, "recursive unlock %d", i);
	CHECK(pthread_mutex_unlock(&m) == EPERM, "recursive: unlock when free is EPERM");
	pthread_mutex_destroy(&m);

	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&m, &a);
	CHECK(pthread_mutex_lock(&m) == 0, "errorcheck lock");
	CHECK(pthread_mutex_lock(&m) == EDEADLK, "errorcheck relock is EDEADLK");
	CHECK(pthread_mutex_unlock(&m) == 0, "errorcheck unlock");
	CHECK(pthread_mutex_unlock(&m) == EPERM, "errorcheck unlock when free is EPERM");
	pthread_mutex_destroy(&m);
	pthread_mutexattr_destroy(&a);

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&robust, &a);
	pthread_t t;
	pthread_create(&t, NULL, die_holding, NULL);
	pthread_join(t, NULL);
	CHECK(pthread_mutex_lock(&robust) == EOWNERDEAD, "robust: owner died");
	CHECK(pthread_mutex_consistent(&robust) == 0, "consistent");
	CHECK(pthread_mutex_unlock(&robust) == 0, "robust unlock");
	CHECK(pthread_mutex_lock(&robust) == 0 && pthread_mutex_unlock(&robust) == 0, "robust again");
	pthread_mutexattr_destroy(&a);

	pthread_create(&t, NULL, hold_a_while, NULL);
	while (!atomic_load(&held_go))
		usleep(1000);
	CHECK(pthread_mutex_trylock(&held) == EBUSY, "trylock of a held mutex");
	struct timespec dl = in_ms(20);
	CHECK(pthread_mutex_timedlock(&held, &dl) == ETIMEDOUT, "timedlock times out");
	dl = in_ms(5000);
	CHECK(pthread_mutex_timedlock(&held, &dl) == 0, "timedlock waits for the release");
	pthread_mutex_unlock(&held);
	pthread_join(t, NULL);
}

/* ----------------------------------------------------------------- rwlock */

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int readers_in, writers_in;
static long rw_counter;

static void *rw_worker(void *arg)
{
	long id = (long)arg;
	for (long i = 0; i < test_scaled(20000); i++) {
		if ((i + id) % 8 == 0) {
			if (i % 3 == 0) {
				struct timespec dl = in_ms(10000);
				CHECK(pthread_rwlock_timedwrlock(&rw, &dl) == 0, "timedwrlock");
			} else if (pthread_rwlock_trywrlock(&rw) != 0) {
				pthread_rwlock_wrlock(&rw);
			}
			CHECK(atomic_fetch_add(&writers_in, 1) == 0 && atomic_load(&readers_in) == 0,
			      "writer not alone");
			rw_counter++;
			atomic_fetch_sub(&writers_in, 1);
		} else {
			if (i % 5 == 0) {
				struct timespec dl = in_ms(10000);
				CHECK(pthread_rwlock_timedrdlock(&rw, &dl) == 0, "timedrdlock");
			} else if (pthread_rwlock_tryrdlock(&rw) != 0) {
				pthread_rwlock_rdlock(&rw);
			}
			atomic_fetch_add(&readers_in, 1);
			CHECK(atomic_load(&writers_in) == 0, "reader with a writer");
			atomic_fetch_sub(&readers_in, 1);
		}
		pthread_rwlock_unlock(&rw);
	}
	return NULL;
}

static void test_rwlock(void)
{
	pthread_t t[4];
	long writes = 0;
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, rw_worker, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (long id = 0; id < 4; id++)
		for (long i = 0; i < test_scaled(20000); i++)
			writes += (i + id) % 8 == 0;
	CHECK(rw_counter == writes, "writes %ld, expected %ld", rw_counter, writes);
}

/* ------------------------------------------------------------------- cond */

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_nonempty = PTHREAD_COND_INITIALIZER, q_nonfull = PTHREAD_COND_INITIALIZER;
static int q_full, q_value;
static long q_sum;

static void *q_consumer(void *arg)
{
	long n = (long)arg;
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&q_lock);
		while (!q_full)
			pthread_cond_wait(&q_nonempty, &q_lock);
		q_sum += q_value;
		q_full = 0;
		pthread_cond_signal(&q_nonfull);
		pthread_mutex_unlock(&q_lock);
	}
	return NULL;
}

static pthread_mutex_t cancel_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cancel_cond = PTHREAD_COND_INITIALIZER;
static atomic_int cancel_waiting, cancel_owned;

static void cancel_cleanup(void *arg)
{
	(void)arg;
	/* POSIX: the mutex is held again when cleanup handlers run. */
	atomic_store(&cancel_owned, pthread_mutex_trylock(&cancel_lock) == EBUSY);
	pthread_mutex_unlock(&cancel_lock);
}

static void *cancel_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cancel_lock);
	pthread_cleanup_push(cancel_cleanup, NULL);
	atomic_store(&cancel_waiting, 1);
	for (;;)
		pthread_cond_wait(&cancel_cond, &cancel_lock);
	pthread_cleanup_pop(1);
	return NULL;
}

static void test_cond(void)
{
	long n = test_scaled(20000), expect = 0;
	pthread_t t;
	pthread_create(&t, NULL, q_consumer, (void *)n);
	for (long i = 1; i <= n; i++) {
		pthread_mutex_lock(&q_lock);
		while (q_full)
			pthread_cond_wait(&q_nonfull, &q_lock);
		q_value = (int)i;
		q_full = 1;
		expect += i;
		pthread_cond_signal(&q_nonempty);
		pthread_mutex_unlock(&q_lock);
	}
	pthread_join(t, NULL);
	CHECK(q_sum == expect, "queue sum %ld, expected %ld", q_sum, expect);

	pthread_mutex_lock(&q_lock);
	struct timespec dl = in_ms(30);
	CHECK(pthread_cond_timedwait(&q_nonempty, &q_lock, &dl) == ETIMEDOUT, "timedwait timeout");
	CHECK(pthread_mutex_trylock(&q_lock) == EBUSY, "mutex held after the timeout");
	pthread_mutex_unlock(&q_lock);

	pthread_create(&t, NULL, cancel_waiter, NULL);
	while (!atomic_load(&cancel_waiting))
		usleep(1000);
	usleep(20000);
	pthread_cancel(t);
	pthread_join(t, NULL);
	CHECK(atomic_load(&cancel_owned), "cleanup handler ran without the mutex");
	CHECK(pthread_mutex_trylock(&cancel_lock) == 0, "mutex released after cancellation");
	pthread_mutex_unlock(&cancel_lock);
}

/* ------------------------------------------------------------------ futex */

static atomic_uint fword;
static long fcount;

static void *futex_worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < test_scaled(50000); i++) {
		unsigned c = 0;
		if (!atomic_compare_exchange_strong(&fword, &c, 1)) {
			if (c != 2)
				c = atomic_exchange(&fword, 2);
			while (c) {
				syscall(SYS_futex, &fword, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
				c = atomic_exchange(&fword, 2);
			}
		}
		fcount++;
		if (atomic_exchange(&fword, 0) == 2)
			syscall(SYS_futex, &fword, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	return NULL;
}

static void test_futex(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, futex_worker, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK(fcount == 4 * test_scaled(50000), "futex mutex lost updates: %ld", fcount);
	unsigned v = 5;
	errno = 0;
	long r = syscall(SYS_futex, &v, FUTEX_WAIT_PRIVATE, 6, NULL, NULL, 0);
	CHECK(r == -1 && errno == EAGAIN, "FUTEX_WAIT on a changed word: %ld errno %d", r, errno);
	CHECK(syscall(SYS_getpid) == getpid(), "other syscalls pass through");
}

/* ------------------------------------------------------- fork and report */

static pthread_mutex_t parent_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t child_lock = PTHREAD_MUTEX_INITIALIZER;

static void *contend(void *arg)
{
	pthread_mutex_t *m = arg;
	for (int i = 0; i < 2000; i++) {
		pthread_mutex_lock(m);
		for (volatile int k = 0; k < 2000; k++)
			;
		pthread_mutex_unlock(m);
	}
	return NULL;
}

/*
 * Three threads on one mutex, with contention made certain: the mutex is
 * held while they start, so each blocks at least once (on a busy machine
 * they could otherwise run one after another and never meet).
 */
static void contend_on(pthread_mutex_t *m)
{
	pthread_t t[3];
	struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };
	pthread_mutex_lock(m);
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, contend, m);
	while (nanosleep(&ts, &ts))
		;
	pthread_mutex_unlock(m);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}

static char *slurp(const char *path)
{
	static char buf[1 << 20];
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

/* Run fn in a child (exit(0) if fn returns); its wait status and its report
 * (LOCKLAB_PROF_OUTPUT). */
static char *child_report_status(void (*fn)(void), int *status)
{
	const char *tmpl = getenv("LOCKLAB_PROF_OUTPUT");
	CHECK(tmpl && strstr(tmpl, "%p"), "LOCKLAB_PROF_OUTPUT must hold %%p");
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		fn();
		exit(0);
	}
	waitpid(pid, status, 0);
	char path[600];
	const char *p = strstr(tmpl, "%p");
	snprintf(path, sizeof(path), "%.*s%d%s", (int)(p - tmpl), tmpl, (int)pid, p + 2);
	char *text = slurp(path);
	CHECK(text, "the child wrote no report at %s", path);
	unlink(path);
	return text;
}

/* Run fn in a child that exits normally; its report. */
static char *child_report(void (*fn)(void))
{
	int status;
	char *text = child_report_status(fn, &status);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");
	return text;
}

static void in_child(void)
{
	contend_on(&child_lock);
}

static void test_fork(void)
{
	contend_on(&parent_lock);   /* threads and counts the child must not inherit */
	char *text = child_report(in_child);
	CHECK(strstr(text, "test_prof`child_lock"), "child's lock missing:\n%s", text);
	CHECK(!strstr(text, "parent_lock"), "the parent's lock leaked into the child:\n%s", text);
	char pid[32];
	snprintf(pid, sizeof(pid), "pid %d", (int)getpid());
	CHECK(!strstr(text, pid), "the child reported under the parent's pid");
}

static void test_report(void)
{
	char *text = child_report(in_child);
	CHECK(strstr(text, "Mutex block"), "no Mutex block section:\n%s", text);
	const char *row = strstr(text, "Locks, by total wait");
	CHECK(row && strstr(row, "test_prof`child_lock"), "lock not named:\n%s", text);
	CHECK(strstr(text, "test_prof`contend+"), "caller not named:\n%s", text);
}

/* ------------------------------------------------------------------ die */

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
	got_term = sig;
}

/* What the program sees: SIG_DFL, though the profiler's handler stands in for it. */
static void check_default(int sig)
{
	struct sigaction now;
	CHECK(sigaction(sig, NULL, &now) == 0 && now.sa_handler == SIG_DFL,
	      "signal %d does not look like SIG_DFL to the program", sig);
}

static void raise_term(void)
{
	contend_on(&child_lock);   /* the dump thread runs: the report is handed to it */
	check_default(SIGTERM);
	raise(SIGTERM);
}

static void raise_int_alone(void)
{
	/* No thread: the report is written in the handler itself. */
	pthread_mutex_lock(&child_lock);
	pthread_mutex_unlock(&child_lock);
	check_default(SIGINT);
	raise(SIGINT);
}

static void quick_exit_7(void)
{
	contend_on(&child_lock);
	_exit(7);
}

static void own_handler(void)
{
	contend_on(&child_lock);
	signal(SIGTERM, on_term);
	struct sigaction now;
	sigaction(SIGTERM, NULL, &now);
	CHECK(now.sa_handler == on_term, "the program's handler is not the one it sees");
	raise(SIGTERM);
	CHECK(got_term == SIGTERM, "the program's own handler did not run");
}

static void test_die(void)
{
	int status;
	char *text = child_report_status(raise_term, &status);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %#x, not SIGTERM", status);
	CHECK(strstr(text, "exit report (SIGTERM)") && strstr(text, "test_prof`child_lock"),
	      "report of a child killed by SIGTERM:\n%s", text);

	text = child_report_status(raise_int_alone, &status);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT, "status %#x, not SIGINT", status);
	CHECK(strstr(text, "exit report (SIGINT)"), "report of a child killed by SIGINT:\n%s", text);

	text = child_report_status(quick_exit_7, &status);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7, "status %#x, not _exit(7)", status);
	CHECK(strstr(text, "exit report, ") && strstr(text, "test_prof`child_lock"),
	      "report of a child that called _exit:\n%s", text);

	text = child_report_status(own_handler, &status);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: the handler lost", status);
	CHECK(strstr(text, "exit report, "), "report of a child with its own handler:\n%s", text);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = { { "types", test_types }, { "rwlock", test_rwlock }, { "cond", test_cond },
		      { "futex", test_futex }, { "fork", test_fork },     { "report", test_report },
		      { "die", test_die } };
	CHECK(argc == 2, "usage: test_prof TEST");
	require_profiler();
	test_watchdog(argv[1], 120);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(argv[1], tests[i].name)) {
			tests[i].fn();
			return 0;
		}
	CHECK(0, "unknown test %s", argv[1]);
	return 1;
}
