/*
 * control.c: start-up, fork, the dump thread, the output, and dying (the
 * environment it is configured by is read in config.c).
 *
 * The exit report is also written when the program dies of SIGTERM, SIGINT,
 * SIGHUP or SIGQUIT left at their default action, and before _exit; see
 * "Dying" below.
 *
 * Fork: the child forgets the parent's threads and counts, and reports its own
 * events under its own pid.  Exec: the new program loads the library again
 * (LD_PRELOAD is inherited) and reports by itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof.h"

static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t dump_sem;
static atomic_int helper_started;
static _Atomic pid_t helper_pid;      /* the process whose dump thread is running */
static pid_t own_pid;                 /* getpid() of this process (a vfork child differs) */
static atomic_int final_state;        /* exit report: 0 not yet, 1 being written, 2 written */
static atomic_int final_wanted;       /* the dump thread is asked to write it */
static uint64_t nonce;
static unsigned dump_seq;
static int output_started;

#define PROF_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ output */

/* 0, or -1 (errno set) when the file cannot be opened. */
static int write_file(const char *path, const struct prof_buf *b, int append)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
	int fd = open(path, flags, 0644);
	if (fd < 0)
		return -1;
	pl_write_all(fd, b->p, b->len);
	close(fd);
	return 0;
}

/*
 * CLI mode: DIR/PID.live exists while this process may still write a report
 * (made at start and in a fork child, removed after the exit report).  A
 * daemon outlives `locklab profile`, which finds these, keeps the directory
 * and says where the daemon's report will be (python/locklab/profile/session.py).
 * An exec keeps the pid and the file: the new program owns it.
 */
static void live_path(char *buf, size_t len, pid_t pid)
{
	snprintf(buf, len, "%s/%d.live", prof_cfg.dir, (int)pid);
}

static void live_mark_pid(pid_t pid)
{
	if (!prof_cfg.dir[0])
		return;
	char path[600];
	live_path(path, sizeof(path), pid);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}

static void live_mark(void)
{
	live_mark_pid(getpid());
}

static void live_unmark(void)
{
	if (!prof_cfg.dir[0])
		return;
	char path[600];
	live_path(path, sizeof(path), getpid());
	unlink(path);
}

/* The parent marks its child too, before fork returns: a daemon's parent exits
 * at once, and the CLI may look before the child has run at all. */
PROF_EXPORT pid_t fork(void)
{
	pid_t pid = REAL(fork)();
	if (pid > 0) {
		int e = errno;
		live_mark_pid(pid);
		errno = e;
	}
	return pid;
}

/* DIR/<start>-<pid>-<seq>.<ext>, written aside and renamed: a reader sees whole files. */
static void write_dir(const char *ext, const struct prof_buf *b, enum prof_dump_reason why)
{
	static const char *reason[] = { "exit", "signal", "interval" };
	char tmp[700], final[700];
	snprintf(final, sizeof(final), "%s/%llu-%d-%04u-%s.%s", prof_cfg.dir,
		 (unsigned long long)nonce, (int)getpid(), dump_seq, reason[why], ext);
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%d-%s", prof_cfg.dir, (int)getpid(), ext);
	write_file(tmp, b, 0);
	rename(tmp, final);
}

/* How long a report written from a signal handler waits for another report, or
 * for the dump thread to write it, before the program dies without one. */
#define HANDLER_WAIT_NS (10 * 1000000000ull)

static void nap_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };
	nanosleep(&ts, NULL);
}

/* hurry: from a signal handler or _exit, where this thread may hold dump_lock
 * already (interrupted in before_fork): try, wait a bounded time, give up. */
static void dump(enum prof_dump_reason why, int hurry)
{
	struct prof_buf text = { 0 }, json = { 0 }, trace = { 0 };
	int dir = prof_cfg.dir[0] != 0;
	/* The timeline goes with the whole-run reports, for the CLI alone. */
	int want_trace = dir && prof_cfg.trace && why != PROF_DUMP_INTERVAL;
	int want_json = dir || (prof_cfg.output[0] && prof_cfg.json);
	int want_text = dir || !want_json;

	if (hurry) {
		uint64_t until = prof_now() + HANDLER_WAIT_NS;
		while (REAL(mutex_trylock)(&dump_lock)) {
			if (prof_now() > until)
				return;
			nap_ms(1);
		}
	} else {
		REAL(mutex_lock)(&dump_lock);
	}
	prof_report(why, want_text ? &text : NULL, want_json ? &json : NULL,
		    want_trace ? &trace : NULL);
	if (dir) {
		/* The timeline first: the CLI takes a report's .json as the sign it is whole. */
		if (want_trace)
			write_dir("trace", &trace, why);
		write_dir("txt", &text, why);
		write_dir("json", &json, why);
	} else if (prof_cfg.output[0]) {
		char path[600];
		prof_expand_path(prof_cfg.output, path, sizeof(path));
		if (write_file(path, want_json ? &json : &text, output_started) == 0) {
			output_started = 1;
		} else {
			/* Checked at start, but the directory may have gone since: the report
			 * is not lost without a word. */
			prof_say("cannot write the report to %s: %s; here it is", path, strerrordesc_np(errno));
			pl_stderr_write(want_json ? json.p : text.p, want_json ? json.len : text.len);
		}
	} else if (prof_threads() || why != PROF_DUMP_EXIT) {
		pl_stderr_write(text.p, text.len);
	}
	dump_seq++;
	REAL(mutex_unlock)(&dump_lock);
	prof_buf_free(&text);
	prof_buf_free(&json);
	prof_buf_free(&trace);
}

/* ------------------------------------------------------------ dump thread */

static void on_signal(int sig)
{
	(void)sig;
	int saved = errno;
	sem_post(&dump_sem);   /* async-signal-safe: the dump thread does the work */
	errno = saved;
}

static void write_final(int hurry);

static void *helper_main(void *arg)
{
	(void)arg;
	prof_tls.busy = 1;   /* the reporter's own locking is never profiled */
	/* Release: a handler that sees this pid may hand the exit report to this thread. */
	atomic_store_explicit(&helper_pid, getpid(), memory_order_release);
	uint64_t period = (uint64_t)(prof_cfg.interval_s * 1e9);
	uint64_t next = prof_now() + period;
	for (;;) {
		int r;
		if (period) {
			struct timespec ts = { (time_t)(next / 1000000000ull),
					       (long)(next % 1000000000ull) };
			r = sem_clockwait(&dump_sem, CLOCK_MONOTONIC, &ts);
		} else {
			r = sem_wait(&dump_sem);
		}
		/* Acquire: pairs with the handler's release; the exit report comes first,
		 * and once it is written nothing follows it (the program is dying). */
		if (atomic_load_explicit(&final_wanted, memory_order_acquire)) {
			write_final(1);
			continue;
		}
		if (atomic_load_explicit(&final_state, memory_order_acquire))
			continue;
		if (r == 0) {
			dump(PROF_DUMP_SIGNAL, 0);
		} else if (errno == ETIMEDOUT) {
			dump(PROF_DUMP_INTERVAL, 0);
			uint64_t now = prof_now();
			next += period;
			if (next <= now)
				next = now + period;
		}
	}
	return NULL;
}

void prof_start_helper(void)
{
	prof_config_load();
	if (!prof_cfg.interval_s && !prof_cfg.signal)
		return;
	int expect = 0;
	/* Once per process (reset in a fork child); relaxed: nothing else is published. */
	if (!atomic_compare_exchange_strong_explicit(&helper_started, &expect, 1,
						     memory_order_relaxed, memory_order_relaxed))
		return;
	/* The dump thread takes no program signal: block them all while creating it. */
	/* Initialised here, once, before its one waiter exists (a zeroed sem_t, which
	 * the signal handler may post to before this, is a valid empty semaphore). */
	sem_init(&dump_sem, 0, 0);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 256 * 1024);
	REAL(create)(&t, &a, helper_main, NULL);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ------------------------------------------------------------ life cycle */

static void before_fork(void)
{
	/* No report is half-built in the child's copy of the arena. */
	REAL(mutex_lock)(&dump_lock);
}

static void after_fork_parent(void)
{
	REAL(mutex_unlock)(&dump_lock);
}

static void after_fork_child(void)
{
	REAL(mutex_unlock)(&dump_lock);
	prof_lock_after_fork();
	prof_threads_after_fork();
	prof_tls.nheld = 0;
	prof_start_ns = prof_last_dump_ns = prof_now();
	nonce = prof_start_ns;
	dump_seq = 0;
	output_started = 0;
	own_pid = getpid();
	atomic_store_explicit(&final_state, 0, memory_order_relaxed);
	atomic_store_explicit(&final_wanted, 0, memory_order_relaxed);
	/* The dump thread did not survive the fork: the child's first thread restarts it. */
	atomic_store_explicit(&helper_started, 0, memory_order_relaxed);
	live_mark();
}

/* ------------------------------------------------------------------ dying
 *
 * A program that dies of SIGTERM, SIGINT, SIGHUP or SIGQUIT without handling
 * it, or that raises one itself, would run no destructor and leave no report.
 * Where the program left such a signal at its default action, the profiler
 * installs its own handler, which writes the exit report, puts the default
 * action back and raises the signal again: the program dies of the same
 * signal, with the same status (and core dump, for QUIT), a moment later.
 * _exit and _Exit, which skip destructors too, write the report first.
 *
 * The program stays in charge: sigaction() and signal() are interposed so
 * that a handler the program installs replaces ours for good, SIG_DFL keeps
 * ours (it does what the default does, with a report), and asking for the
 * current action answers SIG_DFL where ours is installed.
 *
 *   handler, in a thread of the program:
 *     dump thread running?  final_wanted = 1, post; nap until final_state == 2
 *                           (10 s at most)
 *     otherwise             write it here: trylock dump_lock (10 s at most)
 *     then                  SIG_DFL; raise(sig); unblock sig: the default action
 *
 *   final_state: 0 --CAS--> 1 (one writer: exit, _exit, handler or dump thread) --> 2
 *
 * The report is built without malloc and written with write(); what it gives
 * up there: C++ names stay mangled (no dlsym, no __cxa_demangle), and the
 * report is lost if it cannot be written within 10 s (the thread that was
 * interrupted holds the loader's lock, say, or the dump thread is stuck).
 * Handing it to the dump thread means the interrupted thread's own state
 * (a lock of the program, of the loader, of the allocator) never stands in
 * the report's way unless the dump thread needs it too.
 */

static const int fatal_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
static atomic_uchar fatal_ours[NSIG];   /* 1: on_fatal stands in for SIG_DFL */

static void write_final(int hurry)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong_explicit(&final_state, &expect, 1,
						     memory_order_acq_rel, memory_order_acquire))
		return;
	prof_sym_plain = hurry;
	dump(PROF_DUMP_EXIT, hurry);
	live_unmark();
	/* Release: a waiting handler may let the program die now. */
	atomic_store_explicit(&final_state, 2, memory_order_release);
}

/* The exit report from a signal handler or _exit: by the dump thread if there is
 * one, else here; either way bounded, and written at most once. */
static void final_report_hurried(void)
{
	if (atomic_load_explicit(&final_state, memory_order_acquire) == 2 || getpid() != own_pid)
		return;   /* written already, or a vfork child borrowing the parent's memory */
	uint8_t busy = prof_tls.busy;
	prof_tls.busy = 1;
	if (atomic_load_explicit(&helper_pid, memory_order_acquire) == own_pid) {
		/* Release: pairs with the dump thread's acquire of final_wanted. */
		atomic_store_explicit(&final_wanted, 1, memory_order_release);
		sem_post(&dump_sem);
	} else {
		write_final(1);
	}
	uint64_t until = prof_now() + HANDLER_WAIT_NS;
	while (atomic_load_explicit(&final_state, memory_order_acquire) != 2 &&
	       prof_now() < until)
		nap_ms(1);
	prof_tls.busy = busy;
}

static void on_fatal(int sig)
{
	int saved = errno;
	int none = 0;
	/* Relaxed: read by the report, which final_state orders after this. */
	__atomic_compare_exchange_n(&prof_exit_signal, &none, sig, 0, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
	final_report_hurried();
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	atomic_store_explicit(&fatal_ours[sig], 0, memory_order_relaxed);
	REAL(sigaction)(sig, &dfl, NULL);
	/* Pending while this handler blocks it; unblocked, the default action kills. */
	raise(sig);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	errno = saved;
}

static void install_fatal_handlers(void)
{
	struct sigaction sa, cur;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	/* One report at a time: the others wait until the program is dead. */
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		sigaddset(&sa.sa_mask, fatal_signals[i]);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		int sig = fatal_signals[i];
		/* Only where the program (or a library's constructor) left the default;
		 * SIG_IGN inherited across exec stays ignored. */
		if (REAL(sigaction)(sig, NULL, &cur) || (cur.sa_flags & SA_SIGINFO) ||
		    cur.sa_handler != SIG_DFL || sig == prof_cfg.signal)
			continue;
		atomic_store_explicit(&fatal_ours[sig], 1, memory_order_relaxed);
		REAL(sigaction)(sig, &sa, NULL);
	}
}

/* Ours still, as far as the kernel knows: sigset() and glibc's internal callers
 * change the action without going through the interposers below. */
static int fatal_is_ours(int sig)
{
	if (sig <= 0 || sig >= NSIG || !atomic_load_explicit(&fatal_ours[sig], memory_order_relaxed))
		return 0;
	struct sigaction cur;
	if (REAL(sigaction)(sig, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_handler == on_fatal)
		return 1;
	atomic_store_explicit(&fatal_ours[sig], 0, memory_order_relaxed);
	return 0;
}

PROF_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!fatal_is_ours(sig))
		return REAL(sigaction)(sig, act, old);
	if (act && ((act->sa_flags & SA_SIGINFO) || act->sa_handler != SIG_DFL)) {
		/* The program's own handler (or SIG_IGN): it wins, for good. */
		atomic_store_explicit(&fatal_ours[sig], 0, memory_order_relaxed);
		int r = REAL(sigaction)(sig, act, old);
		if (r == 0 && old && !(old->sa_flags & SA_SIGINFO) && old->sa_handler == on_fatal) {
			memset(old, 0, sizeof(*old));
			old->sa_handler = SIG_DFL;
		}
		return r;
	}
	/* A query, or SIG_DFL: ours stays, and looks like the default it stands in for. */
	if (old) {
		memset(old, 0, sizeof(*old));
		old->sa_handler = SIG_DFL;
	}
	return 0;
}

typedef void (*handler_fn)(int);

static handler_fn fatal_signal_call(handler_fn (*real)(int, handler_fn), int sig, handler_fn h)
{
	if (!fatal_is_ours(sig))
		return real(sig, h);
	if (h == SIG_DFL)
		return SIG_DFL;
	atomic_store_explicit(&fatal_ours[sig], 0, memory_order_relaxed);
	handler_fn was = real(sig, h);
	return was == on_fatal ? SIG_DFL : was;
}

PROF_EXPORT handler_fn signal(int sig, handler_fn h)
{
	return fatal_signal_call(REAL(signal), sig, h);
}

/* glibc's name for signal() with BSD semantics; its headers no longer declare it. */
handler_fn bsd_signal(int sig, handler_fn h);

PROF_EXPORT handler_fn bsd_signal(int sig, handler_fn h)
{
	return fatal_signal_call(REAL(signal), sig, h);
}

PROF_EXPORT handler_fn sysv_signal(int sig, handler_fn h)
{
	return fatal_signal_call(REAL(sysv_signal), sig, h);
}

static __attribute__((noreturn)) void exit_now(int status)
{
	if (prof_cfg.loaded) {
		/* A fatal signal now would interrupt the report it is waiting for. */
		sigset_t fatal, old;
		sigemptyset(&fatal);
		for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
			sigaddset(&fatal, fatal_signals[i]);
		pthread_sigmask(SIG_BLOCK, &fatal, &old);
		final_report_hurried();
	}
	REAL(exit_)(status);
}

PROF_EXPORT void _exit(int status)
{
	exit_now(status);
}

PROF_EXPORT void _Exit(int status)
{
	exit_now(status);
}

__attribute__((constructor)) static void prof_ctor(void)
{
	prof_real_resolve();
	prof_config_load();
	nonce = prof_start_ns;
	own_pid = getpid();
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	if (prof_cfg.signal) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		REAL(sigaction)(prof_cfg.signal, &sa, NULL);
	}
	install_fatal_handlers();
	live_mark();
}

__attribute__((destructor)) static void prof_dtor(void)
{
	if (getpid() != own_pid)
		return;
	/* A fatal signal during the report waits for it, then finds it written. */
	sigset_t fatal, old;
	sigemptyset(&fatal);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		sigaddset(&fatal, fatal_signals[i]);
	pthread_sigmask(SIG_BLOCK, &fatal, &old);
	prof_tls.busy = 1;
	write_final(0);
	prof_tls.busy = 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
