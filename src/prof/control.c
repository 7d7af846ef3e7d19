/*
 * control.c: configuration, start-up, fork, the dump thread and the output.
 *
 * Environment (the CLI sets these; alone with LD_PRELOAD the defaults give a
 * text report on stderr at exit):
 *
 *   LOCKLAB_PROF_OUTPUT=FILE     report there instead of stderr (%p: pid)
 *   LOCKLAB_PROF_FORMAT=json     JSON instead of text in that file
 *   LOCKLAB_PROF_DIR=DIR         CLI mode: every dump as DIR/ID.txt and ID.json
 *   LOCKLAB_PROF_STACKS=D        text: histogram and D frames per entry (-s)
 *   LOCKLAB_PROF_DEPTH=D         frames captured per stack (16, at most 64)
 *   LOCKLAB_PROF_HOLD_EVERY=N    sample the hold time of 1 acquisition in N (100; 0: off)
 *   LOCKLAB_PROF_TOP=N           N entries per section
 *   LOCKLAB_PROF_MIN_WAIT_NS=NS  drop entries that waited less in total
 *   LOCKLAB_PROF_THREADS=1       per-thread breakdown
 *   LOCKLAB_PROF_INTERVAL=S      dump what happened in each S seconds
 *   LOCKLAB_PROF_SIGNAL=SIG      dump the whole run so far on SIG (PROF; 0: none)
 *   LOCKLAB_PROF_FUTEX=0, LOCKLAB_PROF_COND=0   leave futex syscalls / condvars alone
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

struct prof_config prof_cfg;

static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t dump_sem;
static atomic_int helper_started;
static uint64_t nonce;
static unsigned dump_seq;
static int output_started;

uint64_t prof_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);   /* vDSO: no syscall */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int prof_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return (int)n;
}

static long env_long(const char *name, long def, long lo, long hi)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	long v = strtol(s, &end, 10);
	if (*end)
		return def;
	return v < lo ? lo : v > hi ? hi : v;
}

static int signal_number(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = { { "PROF", SIGPROF }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
		      { "HUP", SIGHUP },   { "URG", SIGURG },   { "WINCH", SIGWINCH } };
	if (!strncmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name))
			return names[i].sig;
	char *end;
	long v = strtol(s, &end, 10);
	return *end || v < 0 || v >= NSIG ? SIGPROF : (int)v;
}

void prof_config_load(void)
{
	if (prof_cfg.loaded)
		return;
	struct prof_config c = { 0 };
	c.depth = (int)env_long("LOCKLAB_PROF_DEPTH", 16, 1, PROF_MAX_DEPTH);
	c.show_depth = (int)env_long("LOCKLAB_PROF_STACKS", 0, 0, PROF_MAX_DEPTH);
	if (c.show_depth > c.depth)
		c.depth = c.show_depth;
	c.hold_every = (int)env_long("LOCKLAB_PROF_HOLD_EVERY", 100, 0, 1 << 30);
	c.top = (int)env_long("LOCKLAB_PROF_TOP", 0, 0, 1 << 30);
	c.min_wait_ns = (uint64_t)env_long("LOCKLAB_PROF_MIN_WAIT_NS", 0, 0, __LONG_MAX__);
	c.per_thread = (int)env_long("LOCKLAB_PROF_THREADS", 0, 0, 1);
	c.futex = (int)env_long("LOCKLAB_PROF_FUTEX", 1, 0, 1);
	c.cond = (int)env_long("LOCKLAB_PROF_COND", 1, 0, 1);
	const char *s = getenv("LOCKLAB_PROF_INTERVAL");
	if (s && *s)
		c.interval_s = strtod(s, NULL);
	if (c.interval_s < 0.01)
		c.interval_s = 0;
	s = getenv("LOCKLAB_PROF_SIGNAL");
	c.signal = s && *s ? (strcmp(s, "0") ? signal_number(s) : 0) : SIGPROF;
	s = getenv("LOCKLAB_PROF_FORMAT");
	c.json = s && !strcmp(s, "json");
	s = getenv("LOCKLAB_PROF_DIR");
	if (s)
		snprintf(c.dir, sizeof(c.dir), "%s", s);
	s = getenv("LOCKLAB_PROF_OUTPUT");
	if (s)
		snprintf(c.output, sizeof(c.output), "%s", s);
	c.loaded = 1;
	prof_cfg = c;
	/* The run starts at the first lock call, which can precede our constructor. */
	if (!prof_start_ns)
		prof_start_ns = prof_last_dump_ns = prof_now();
}

/* ------------------------------------------------------------------ output */

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* FILE with every %p replaced by the pid. */
static void expand(const char *tmpl, char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = tmpl; *p && o + 16 < len; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			o += (size_t)snprintf(out + o, len - o, "%d", (int)getpid());
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = 0;
}

static void write_file(const char *path, const struct prof_buf *b, int append)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
	int fd = open(path, flags, 0644);
	if (fd < 0)
		return;
	write_all(fd, b->p, b->len);
	close(fd);
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

static void dump(enum prof_dump_reason why)
{
	struct prof_buf text = { 0 }, json = { 0 };
	int dir = prof_cfg.dir[0] != 0;
	int want_json = dir || (prof_cfg.output[0] && prof_cfg.json);
	int want_text = dir || !want_json;

	REAL(mutex_lock)(&dump_lock);
	prof_report(why, want_text ? &text : NULL, want_json ? &json : NULL);
	if (dir) {
		write_dir("txt", &text, why);
		write_dir("json", &json, why);
	} else if (prof_cfg.output[0]) {
		char path[600];
		expand(prof_cfg.output, path, sizeof(path));
		write_file(path, want_json ? &json : &text, output_started);
		output_started = 1;
	} else if (prof_threads() || why != PROF_DUMP_EXIT) {
		write_all(2, text.p, text.len);
	}
	dump_seq++;
	REAL(mutex_unlock)(&dump_lock);
	prof_buf_free(&text);
	prof_buf_free(&json);
}

/* ------------------------------------------------------------ dump thread */

static void on_signal(int sig)
{
	(void)sig;
	int saved = errno;
	sem_post(&dump_sem);   /* async-signal-safe: the dump thread does the work */
	errno = saved;
}

static void *helper_main(void *arg)
{
	(void)arg;
	prof_tls.busy = 1;   /* the reporter's own locking is never profiled */
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
		if (r == 0) {
			dump(PROF_DUMP_SIGNAL);
		} else if (errno == ETIMEDOUT) {
			dump(PROF_DUMP_INTERVAL);
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
	/* The dump thread did not survive the fork: the child's first thread restarts it. */
	atomic_store_explicit(&helper_started, 0, memory_order_relaxed);
}

__attribute__((constructor)) static void prof_ctor(void)
{
	prof_real_resolve();
	prof_config_load();
	nonce = prof_start_ns;
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	if (prof_cfg.signal) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(prof_cfg.signal, &sa, NULL);
	}
}

__attribute__((destructor)) static void prof_dtor(void)
{
	prof_tls.busy = 1;
	dump(PROF_DUMP_EXIT);
	prof_tls.busy = 0;
}
