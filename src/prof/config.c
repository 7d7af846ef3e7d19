/*
 * config.c: the profiler's configuration, read once from the environment, and
 * what every part of it shares: the clock, one-line messages.
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
 *   LOCKLAB_PROF_TRACE=N         CLI mode: keep each thread's last N waits for a
 *                                timeline (0: none; at most 2^20), see trace.c
 *   LOCKLAB_PROF_FUTEX=0, LOCKLAB_PROF_COND=0   leave futex syscalls / condvars alone
 *
 * The library cannot refuse to run its host program: a value it cannot use is
 * named in one line on stderr and the default is used instead (a signal that
 * is not a report signal: none).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof.h"

struct prof_config prof_cfg;
uint64_t prof_start_ns, prof_last_dump_ns;

/* One line on stderr (the program's at load: preload/stderr.h), "locklab-prof:
 * ...".  No stdio: this may run before the program's stdio is usable, or in a
 * signal handler. */
void prof_say(const char *fmt, ...)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "locklab-prof: ");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	pl_stderr_write(line, (size_t)n);
}

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

/* NAME as a whole number in [lo, hi]; def when unset, or when refused with one line. */
static long env_long(const char *name, long def, long lo, long hi)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*end || errno == ERANGE || v < lo || v > hi) {
		prof_say("%s=%s: %s (valid: %ld-%ld); using %ld", name, s,
		    *end ? "not a whole number" : "out of range", lo, hi, def);
		return def;
	}
	return v;
}

/*
 * The signals a report may be asked on: ones whose only use is to be sent on
 * purpose, or to be ignored.  Not the fatal ones (SEGV, BUS, ILL, FPE, ABRT,
 * TRAP, SYS: a handler that returns re-runs the faulting instruction, a report
 * per fault, forever), not the ones that end or stop programs (TERM, INT, QUIT,
 * HUP, KILL, STOP, TSTP, TTIN, TTOU, CONT: a handler would make the program
 * ignore them; TERM, INT, HUP and QUIT instead leave the exit report, see
 * "Dying"), and not CHLD, PIPE, ALRM or the real-time ones, which programs use.
 */
static const struct {
	const char *name;
	int sig;
} report_signals[] = { { "PROF", SIGPROF }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
		       { "URG", SIGURG },   { "WINCH", SIGWINCH } };
#define REPORT_SIGNALS "PROF, USR1, USR2, URG, WINCH, their numbers, or 0 for none"

/* "PROF", "SIGPROF", "27" or "0": the signal (0: none), or -1 when it is not one of those. */
static int signal_number(const char *s)
{
	if (!strcmp(s, "0"))
		return 0;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	int numeric = *s && !*end && errno == 0;
	if (!strncmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof(report_signals) / sizeof(report_signals[0]); i++)
		if (numeric ? v == report_signals[i].sig : !strcmp(s, report_signals[i].name))
			return report_signals[i].sig;
	return -1;
}

/* Bounds of LOCKLAB_PROF_INTERVAL (and of the CLI's --interval): below 10 ms the
 * reports would be most of what the program does; above a day, never. */
#define INTERVAL_MIN 0.01
#define INTERVAL_MAX 86400.0

/* The directory a report file goes into must exist and be writable: say so now,
 * not when the program exits (the report then goes to stderr). */
static void check_output(struct prof_config *c, const char *tmpl);

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
	c.trace = (uint32_t)env_long("LOCKLAB_PROF_TRACE", 0, 0, PROF_TRACE_MAX);
	const char *s = getenv("LOCKLAB_PROF_INTERVAL");
	if (s && *s) {
		char *end;
		double v = strtod(s, &end);
		/* NaN fails every comparison, infinity the upper bound. */
		if (*end || !(v == 0 || (v >= INTERVAL_MIN && v <= INTERVAL_MAX)))
			prof_say("LOCKLAB_PROF_INTERVAL=%s: not a number of seconds (valid: %g-%g, or 0 "
			    "for none); no interval reports", s, INTERVAL_MIN, INTERVAL_MAX);
		else
			c.interval_s = v;
	}
	c.signal = SIGPROF;
	s = getenv("LOCKLAB_PROF_SIGNAL");
	if (s && *s) {
		c.signal = signal_number(s);
		if (c.signal < 0) {
			/* Refused: no handler at all, rather than one on a signal the program
			 * needs (SEGV would report in a loop, TERM would be ignored). */
			prof_say("LOCKLAB_PROF_SIGNAL=%s: unknown report signal (valid: " REPORT_SIGNALS
			    "); no signal reports", s);
			c.signal = 0;
		}
	}
	s = getenv("LOCKLAB_PROF_FORMAT");
	if (s && *s && strcmp(s, "json") && strcmp(s, "text"))
		prof_say("LOCKLAB_PROF_FORMAT=%s: unknown format (valid: text, json); using text", s);
	c.json = s && !strcmp(s, "json");
	s = getenv("LOCKLAB_PROF_DIR");
	if (s)
		snprintf(c.dir, sizeof(c.dir), "%s", s);
	s = getenv("LOCKLAB_PROF_OUTPUT");
	if (s && *s && !c.dir[0])
		check_output(&c, s);
	c.loaded = 1;
	prof_cfg = c;
	/* A report bound for stderr needs it at exit, whatever the program did with fd 2. */
	pl_stderr_keep(!c.dir[0] && !c.output[0]);
	/* The run starts at the first lock call, which can precede our constructor. */
	if (!prof_start_ns)
		prof_start_ns = prof_last_dump_ns = prof_now();
}

void prof_expand_path(const char *tmpl, char *out, size_t len)
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

static void check_output(struct prof_config *c, const char *tmpl)
{
	char path[600];
	prof_expand_path(tmpl, path, sizeof(path));
	char *slash = strrchr(path, '/');
	const char *dir = slash ? path : ".";
	if (slash == path)
		dir = "/";
	else if (slash)
		*slash = 0;
	if (access(dir, W_OK | X_OK) == 0) {
		snprintf(c->output, sizeof(c->output), "%s", tmpl);
		return;
	}
	prof_say("LOCKLAB_PROF_OUTPUT=%s: %s: %s; the report goes to stderr", tmpl, dir,
	    strerrordesc_np(errno));
}
