/*
 * locklab-attach: the lock contention of a process that is already running,
 * by eBPF, as plockstat -p did: which locks made its threads wait, per lock
 * and call site, in the profiler's text and JSON (tracer.h says how the parts
 * fit).
 *
 * The trace ends at --duration, at Ctrl-C (SIGINT), SIGTERM, SIGHUP or
 * SIGQUIT, or when the process exits, and then writes its report; on each of
 * those ways the kernel half is detached and freed before the program exits.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer.h"

#define DEFAULT_DEPTH 32
#define DEFAULT_SAMPLE_EVERY 64
#define DEFAULT_TRACE_EVENTS 16384   /* as `locklab profile --trace-events` */

static void usage(FILE *f)
{
	fputs("usage: locklab-attach -p PID [options]\n"
	      "       locklab-attach --check [--json]\n"
	      "Trace the futex waits and wakes of a running process with eBPF and report which\n"
	      "locks made its threads wait, per lock and call site, as `locklab profile` does for\n"
	      "a program it starts. The process is never stopped; hold times are not seen.\n"
	      "  -p, --pid PID          the process (all its threads, and those it starts)\n"
	      "  --duration S           trace S seconds (0.01-31536000; default: until Ctrl-C,\n"
	      "                         SIGTERM or the process's exit)\n"
	      "  --interval S           also report what happened in each S seconds (0.01-86400)\n"
	      "  --json                 JSON, one report per line (default: text)\n"
	      "  -o, --output FILE      write there instead of stdout\n"
	      "  --trace FILE           also write the timeline of waits (the profiler's, which\n"
	      "                         the CLI turns into a Perfetto trace) there\n"
	      "  --trace-events N       waits each thread keeps for --trace, its last N\n"
	      "                         (16384; 1-1048576)\n"
	      "  -s, --stack-depth N    text: a wait histogram and N frames per entry (1-64)\n"
	      "  --depth N              frames kept per stack (32; 1-64)\n"
	      "  --top N                at most N entries per section\n"
	      "  --min-wait NS          leave out entries that waited less than NS in total\n"
	      "  --threads              add the per-thread breakdown\n"
	      "  --condvar              also report condvar waits for a signal (not contention)\n"
	      "  --stacks dwarf|fp      dwarf: unwind sampled stacks from DWARF CFI in user space\n"
	      "                         (works without frame pointers; default); fp: walk frame\n"
	      "                         pointers in the kernel, every acquisition\n"
	      "  --sample-every N       dwarf: sample 1 acquisition in N per thread and futex\n"
	      "                         word (64; 1-1000000)\n"
	      "  --hook auto|syscall|raw  attach by the futex syscall tracepoints (need tracefs)\n"
	      "                         or by raw tracepoints (auto: the first there is)\n"
	      "  --check                whether this build and this machine can trace, and why\n"
	      "                         not (with --json: as JSON)\n"
	      "  --version, --help\n",
	      f);
}

/* A whole number in [lo, hi]; exits with the one-line error otherwise. */
static long whole(const char *opt, const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = s ? strtol(s, &end, 10) : 0;
	if (!s || !*s || *end || errno || v < lo || v > hi) {
		attach_say("%s %s: not a whole number in %ld-%ld", opt, s ? s : "(missing)", lo, hi);
		exit(ATTACH_EXIT_USAGE);
	}
	return v;
}

static double seconds(const char *opt, const char *s, double lo, double hi)
{
	char *end;
	double v = s ? strtod(s, &end) : NAN;
	/* NaN fails every comparison, infinity the upper bound. */
	if (!s || !*s || *end || !(v >= lo && v <= hi)) {
		attach_say("%s %s: not a number of seconds in %g-%g", opt, s ? s : "(missing)", lo, hi);
		exit(ATTACH_EXIT_USAGE);
	}
	return v;
}

static int one_of(const char *opt, const char *s, const char *const *names, int n)
{
	for (int i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	char valid[128] = "";
	for (int i = 0; i < n; i++)
		snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s", i ? ", " : "",
			 names[i]);
	attach_say("%s %s: unknown (valid: %s)", opt, s ? s : "(missing)", valid);
	exit(ATTACH_EXIT_USAGE);
}

/* "--name VALUE" or "--name=VALUE": the value, or NULL when argv[*i] is not --name. */
static const char *value_of(int argc, char **argv, int *i, const char *name, const char *alias)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	if (!strncmp(a, name, n) && a[n] == '=')
		return a + n + 1;
	if (strcmp(a, name) && (!alias || strcmp(a, alias)))
		return NULL;
	if (*i + 1 >= argc) {
		attach_say("%s needs a value", a);
		exit(ATTACH_EXIT_USAGE);
	}
	return argv[++*i];
}

static int parse(int argc, char **argv, struct attach_opts *o, int *check)
{
	static const char *const stacks[] = { "dwarf", "fp" };
	static const char *const hooks[] = { "auto", "syscall", "raw" };
	const char *v;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(ATTACH_EXIT_OK);
		} else if (!strcmp(a, "--version")) {
			printf("locklab-attach %s\n", LL_VERSION);
			exit(ATTACH_EXIT_OK);
		} else if (!strcmp(a, "--check")) {
			*check = 1;
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
		} else if (!strcmp(a, "--threads")) {
			prof_cfg.per_thread = 1;
		} else if (!strcmp(a, "--condvar")) {
			o->condvar = 1;
		} else if ((v = value_of(argc, argv, &i, "--pid", "-p"))) {
			o->pid = (pid_t)whole("--pid", v, 1, 0x3fffffff);
		} else if ((v = value_of(argc, argv, &i, "--duration", NULL))) {
			o->duration_s = seconds("--duration", v, 0.01, 31536000);
		} else if ((v = value_of(argc, argv, &i, "--interval", NULL))) {
			o->interval_s = seconds("--interval", v, 0.01, 86400);
		} else if ((v = value_of(argc, argv, &i, "--output", "-o"))) {
			o->output = v;
		} else if ((v = value_of(argc, argv, &i, "--trace", NULL))) {
			o->trace = v;
		} else if ((v = value_of(argc, argv, &i, "--trace-events", NULL))) {
			prof_cfg.trace = (uint32_t)whole("--trace-events", v, 1, PROF_TRACE_MAX);
		} else if ((v = value_of(argc, argv, &i, "--stack-depth", "-s"))) {
			prof_cfg.show_depth = (int)whole("--stack-depth", v, 1, PROF_MAX_DEPTH);
		} else if ((v = value_of(argc, argv, &i, "--depth", NULL))) {
			prof_cfg.depth = (int)whole("--depth", v, 1, PROF_MAX_DEPTH);
		} else if ((v = value_of(argc, argv, &i, "--top", NULL))) {
			prof_cfg.top = (int)whole("--top", v, 1, 1 << 30);
		} else if ((v = value_of(argc, argv, &i, "--min-wait", NULL))) {
			prof_cfg.min_wait_ns = (uint64_t)whole("--min-wait", v, 0, __LONG_MAX__);
		} else if ((v = value_of(argc, argv, &i, "--stacks", NULL))) {
			o->stacks = (enum attach_stacks)one_of("--stacks", v, stacks, 2);
		} else if ((v = value_of(argc, argv, &i, "--sample-every", NULL))) {
			o->sample_every = (unsigned)whole("--sample-every", v, 1, 1000000);
		} else if ((v = value_of(argc, argv, &i, "--hook", NULL))) {
			o->hook = (enum attach_hook)one_of("--hook", v, hooks, 3);
		} else {
			attach_say("unexpected argument '%s' (--help lists the options)", a);
			return -1;
		}
	}
	if (!*check && !o->pid) {
		attach_say("which process? -p PID (--help lists the options)");
		return -1;
	}
	if (prof_cfg.show_depth > prof_cfg.depth)
		prof_cfg.depth = prof_cfg.show_depth;
	if (prof_cfg.trace && !o->trace) {
		attach_say("--trace-events is for --trace FILE");
		return -1;
	}
	/* Each thread's ring is mapped when its table is made: the size is known first. */
	if (o->trace && !prof_cfg.trace)
		prof_cfg.trace = DEFAULT_TRACE_EVENTS;
	return 0;
}

/* Until the duration, a signal or the process's exit: samples as they come, and
 * the interval reports.  Returns the reason for the last report. */
static enum prof_dump_reason trace_until_end(const struct attach_opts *o, struct attach_bpf *b,
				   const sigset_t *stop)
{
	int sig_fd = signalfd(-1, stop, SFD_CLOEXEC);
	/* The process's exit wakes poll; without pidfds (before Linux 5.3), a look each 200 ms. */
	int pid_fd = (int)syscall(SYS_pidfd_open, o->pid, 0);
	struct pollfd fds[3] = { { attach_samples_fd(b), POLLIN, 0 }, { sig_fd, POLLIN, 0 },
				 { pid_fd, POLLIN, 0 } };
	uint64_t start = prof_now();
	uint64_t end = o->duration_s ? start + (uint64_t)(o->duration_s * 1e9) : 0;
	uint64_t period = (uint64_t)(o->interval_s * 1e9), next = period ? start + period : 0;
	enum prof_dump_reason why = PROF_DUMP_DETACH;
	for (;;) {
		uint64_t now = prof_now();
		if (end && now >= end)
			break;
		if (next && now >= next) {
			attach_collect_counts(0);
			attach_output_report(PROF_DUMP_INTERVAL);
			next += period;
			continue;
		}
		uint64_t wait_ns = pid_fd < 0 ? 200000000ull : 3600000000000ull;
		if (end && end - now < wait_ns)
			wait_ns = end - now;
		if (next && next - now < wait_ns)
			wait_ns = next - now;
		int r = poll(fds, 3, (int)((wait_ns + 999999) / 1000000));
		if (r < 0 && errno != EINTR)
			break;
		if (fds[0].revents)
			attach_drain(b);
		if (fds[1].revents) {
			struct signalfd_siginfo si;
			if (read(sig_fd, &si, sizeof(si)) > 0)
				break;
		}
		if (fds[2].revents || (pid_fd < 0 && kill(o->pid, 0) != 0 && errno == ESRCH)) {
			why = PROF_DUMP_EXIT;
			break;
		}
	}
	if (sig_fd >= 0)
		close(sig_fd);
	if (pid_fd >= 0)
		close(pid_fd);
	return why;
}

/* The ring buffers' records, as load.c drains them. */
static const struct attach_sinks sinks = {
	.sample = attach_collect_sample,
	.timed = attach_collect_timed,
};

int main(int argc, char **argv)
{
	struct attach_opts o = { .stacks = ATTACH_STACKS_DWARF, .sample_every = DEFAULT_SAMPLE_EVERY };
	int check = 0;
	prof_cfg.depth = DEFAULT_DEPTH;
	prof_cfg.loaded = 1;   /* configured here; hold_every 0: holds are not seen */
	if (parse(argc, argv, &o, &check))
		return ATTACH_EXIT_USAGE;
	if (check)
		return attach_check_report(o.json);

	char why[1024];
	enum attach_hook hook;
	if (attach_check_kernel(why, sizeof(why)) || attach_check_target(o.pid, why, sizeof(why)) ||
	    attach_choose_hook(o.hook, &hook, why, sizeof(why))) {
		attach_say("%s", why);
		return ATTACH_EXIT_FAIL;
	}
	if (why[0])
		attach_say("%s", why);   /* how it attaches, when it had to choose */
	/* The stop signals go to signalfd (trace_until_end()), from before anything is loaded:
	 * one arriving during the set-up ends the trace at its first look. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGQUIT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	prof_subject.tool = "locklab-attach";
	prof_subject.pid = o.pid;
	char state;
	if (attach_proc_stat(o.pid, &state, &prof_subject.ppid))
		prof_subject.ppid = 0;
	prof_subject.traced = 1;
	int rc = ATTACH_EXIT_FAIL;
	struct attach_bpf *b = NULL;
	if (attach_names_begin(o.pid) == 0 &&
	    (o.stacks != ATTACH_STACKS_DWARF || attach_unwind_begin(o.pid) == 0) &&
	    attach_output_begin(&o) == 0 && (b = attach_load(&o, hook, &sinks)) != NULL &&
	    attach_collect_begin(&o, b, hook) == 0) {
		prof_start_ns = prof_last_dump_ns = prof_now();
		if (!o.duration_s && isatty(2))
			attach_say("tracing process %d (%s); Ctrl-C ends the trace and reports",
				   (int)o.pid, prof_exe_name());
		enum prof_dump_reason end = trace_until_end(&o, b, &stop);
		/* The counts stop where the programs come off; what they sent is read. */
		attach_detach(b);
		prof_subject.end_ns = prof_now();
		attach_drain(b);
		attach_collect_counts(1);
		rc = attach_output_report(end) == 0 ? ATTACH_EXIT_OK : ATTACH_EXIT_FAIL;
	}
	if (b)
		attach_unload(b);
	attach_collect_end();
	attach_output_end();
	attach_unwind_end();
	attach_names_end();
	return rc;
}
