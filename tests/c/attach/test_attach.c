/*
 * test_attach.c: locklab-attach against running programs.
 *
 *   test_attach TEST      (ctest sets LL_ATTACH, LL_ATTACH_PLANTED, LL_ATTACH_PINGPONG,
 *                          LL_PROF_LIB and LL_ATTACH_STATIC to the programs' paths)
 *
 * window   the planted program (planted.c) runs 10 s and is traced for 3 s: its
 *          hot mutex is first by wait and by count, and its count is within 10% of
 *          the program's own count of contended acquisitions in the same window
 * names    the hot mutex and its call site are named as the preload profiler names
 *          them (run on the same program), with file:line in the text and JSON
 * interval --interval reports, one JSON line each, then the last one
 * timeline --trace: every acquisition the report counts is on a thread's timeline,
 *          in the profiler's format, under the report's lock names
 * hooks    --hook raw attaches by raw tracepoints; --hook syscall by the futex
 *          tracepoints where tracefs has them, else one line that says so
 * exact    a ping-pong through one futex word (pingpong.c), traced whole: the
 *          tracer's count is the program's own count of waits, exactly, and the
 *          main thread's pthread_join is left out, no lock; and the
 *          time a round takes with and without the tracer (what a traced futex
 *          call costs; a figure, not checked: the machine may be busy)
 * nopid    no such process, or one that has exited and is not yet reaped: one
 *          line each, status 1
 * thread   a thread's id: one line naming its process
 * static   a statically linked program: one line, refused
 * early    a dynamically linked program stopped at its exec, before the loader has
 *          mapped libc: one line that says so, not taken for a static one
 * unprivileged  not root and no capabilities: one line
 * detach   no program, map or link of the tracer's is left, however the trace ends:
 *          --duration, SIGINT, SIGTERM, the process's exit, SIGKILL of the tracer
 * repeat [N]  N traces (100) one after another of the same running program: each
 *          ends well, the program runs on and goes on counting, nothing is left
 *          behind (ctest runs 5; 100 by hand, docs/design/profiler.md)
 *
 * Each needs what the tracer needs (root, BTF, a way to attach): where
 * `locklab-attach --check` says it cannot trace, the test says why and skips (77).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define SKIP 77

static const char *tracer, *planted;
static char scratch[256];

/* ------------------------------------------------------------ processes */

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Every process started, killed if a check fails (exit) while it runs. */
static pid_t children[64];
static int nchildren;

static void kill_children(void)
{
	for (int i = 0; i < nchildren; i++)
		kill(children[i], SIGKILL);
}

/* argv started with stdout and stderr into files (NULL: inherited); its pid. */
static pid_t start(char *const argv[], const char *out, const char *err)
{
	pid_t pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid > 0 && nchildren < 64)
		children[nchildren++] = pid;
	if (pid == 0) {
		if (out)
			dup2(open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
		if (err)
			dup2(open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* Its exit status (128 + N if killed by N), after at most `seconds`. */
static int finish(pid_t pid, int seconds)
{
	int status = 0;
	for (int i = 0; i < nchildren; i++)
		if (children[i] == pid)
			children[i] = children[--nchildren];
	for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited += 10) {
		CHECK(waited < seconds * 1000, "pid %d still running after %d s", (int)pid, seconds);
		nap_ms(10);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	CHECK(f, "%s: %s", path, strerror(errno));
	static char *buf;
	free(buf);
	size_t cap = 1 << 16, n = 0;
	buf = malloc(cap);
	for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
		n += got;
		if (n + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	CHECK(buf, "out of memory");
	buf[n] = 0;
	return buf;
}

static char *path_of(const char *name)
{
	static char paths[8][320];
	static int next;
	char *p = paths[next++ % 8];
	snprintf(p, sizeof(paths[0]), "%s/%s", scratch, name);
	return p;
}

/* The planted program for `seconds`, its counts into counts.txt; its pid, once it counts. */
static pid_t start_planted(const char *seconds)
{
	char *argv[] = { (char *)planted, (char *)seconds, path_of("counts.txt"), NULL };
	unlink(path_of("counts.txt"));   /* a last run's: not a sign this one has started */
	pid_t pid = start(argv, NULL, NULL);
	struct stat st;
	for (int i = 0; i < 500 && (stat(path_of("counts.txt"), &st) || !st.st_size); i++)
		nap_ms(10);
	return pid;
}

/* locklab-attach ARGS... -p PID into out/err files; its exit status. */
static int run_tracer(pid_t pid, const char *out, const char *err, char *const *args, int nargs)
{
	char pidtxt[16];
	snprintf(pidtxt, sizeof(pidtxt), "%d", (int)pid);
	char *argv[16] = { (char *)tracer, "-p", pidtxt };
	for (int i = 0; i < nargs && i < 12; i++)
		argv[3 + i] = args[i];
	return finish(start(argv, out, err), 120);
}

/* The tracer's stderr: exactly one line, containing `want`. */
static void check_one_line(const char *err, const char *want)
{
	const char *text = slurp(err);
	CHECK(strstr(text, want), "stderr lacks \"%s\": %s", want, text);
	const char *nl = strchr(text, '\n');
	CHECK(nl && !nl[1], "not one line: %s", text);
	CHECK(!strncmp(text, "locklab-attach: ", 16), "not the tool's line: %s", text);
}

/* ------------------------------------------------------------------- JSON */

/* The number after "key": at or after `from` (its position in *at); -1: none before `end`. */
static long long number_after(const char *from, const char *end, const char *key, const char **at)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(from, pat);
	if (!p || (end && p >= end))
		return -1;
	if (at)
		*at = p;
	return strtoll(p + strlen(pat), NULL, 10);
}

struct lock_entry {
	char name[200];
	long long count, wait_ns;
	const char *at, *end;   /* its object in the document */
};

/* The report's locks, in its order (the objects that begin {"name": before "objects"). */
static int locks_of(const char *doc, struct lock_entry *v, int max)
{
	const char *p = strstr(doc, "\"locks\":[");
	const char *end = strstr(doc, ",\"objects\":[");
	int n = 0;
	CHECK(p && end, "no locks or objects in the report: %.200s", doc);
	while (n < max && (p = strstr(p, "{\"name\":\"")) && p < end) {
		struct lock_entry *l = &v[n++];
		const char *q = p + 9;
		size_t len = strcspn(q, "\"");
		snprintf(l->name, sizeof(l->name), "%.*s", (int)len, q);
		l->at = p;
		l->count = number_after(p, end, "count", NULL);
		l->wait_ns = number_after(p, end, "wait_ns", NULL);
		p = q + len;
		if (n > 1)
			v[n - 2].end = l->at;
	}
	if (n)
		v[n - 1].end = end;
	return n;
}

/* ---------------------------------------------------------------- setup */

/* Skip, saying why, where the tracer cannot run (not built, not root, no BTF...). */
static void require_tracer(void)
{
	char *argv[] = { (char *)tracer, "--check", "--json", NULL };
	int rc = finish(start(argv, path_of("check.json"), NULL), 60);
	const char *doc = slurp(path_of("check.json"));
	if (rc == 0 && strstr(doc, "\"ready\":true"))
		return;
	const char *why = strstr(doc, "\"problem\":\"");
	if (why)
		printf("skipped: locklab-attach cannot trace here: %.*s\n",
		       (int)strcspn(why + 11, "\""), why + 11);
	else
		printf("skipped: locklab-attach cannot trace here: %s\n", doc);
	exit(SKIP);
}

/* The program's count of the hot mutex's contended acquisitions at `ns`,
 * interpolated between its lines. */
static double hot_count_at(const char *counts, long long ns)
{
	long long t0 = 0, c0 = 0, t, c, cold;
	const char *p = counts;
	int n;
	while (sscanf(p, "%lld %lld %lld%n", &t, &c, &cold, &n) == 3) {
		if (t >= ns)
			return t == t0 ? (double)c
				       : (double)c0 + (double)(c - c0) * (double)(ns - t0) / (double)(t - t0);
		t0 = t;
		c0 = c;
		p += n;
	}
	CHECK(0, "the program's counts end before %lld", ns);
	return 0;
}

/* ---------------------------------------------------------- BPF objects */

static long bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* The next id after `id` of a kind (BPF_PROG_GET_NEXT_ID...); 0 at the end. */
static uint32_t next_id(int cmd, uint32_t id)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.start_id = id;
	return bpf(cmd, &a) ? 0 : a.next_id;
}

static int count_ids(int cmd)
{
	int n = 0;
	for (uint32_t id = next_id(cmd, 0); id; id = next_id(cmd, id))
		n++;
	return n;
}

/* An object's info by its id (BPF_PROG_GET_FD_BY_ID...); 0, or -1 when it is gone. */
static int info_of(int get_fd_cmd, uint32_t id, void *info, uint32_t len)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.prog_id = id;   /* map_id, link_id: the same member */
	int fd = (int)bpf(get_fd_cmd, &a);
	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (uint32_t)fd;
	a.info.info_len = len;
	a.info.info = (uint64_t)(uintptr_t)info;
	long rc = bpf(BPF_OBJ_GET_INFO_BY_FD, &a);
	close(fd);
	return rc ? -1 : 0;
}

/* The tracer's objects loaded now: its programs (by name), their maps, their links. */
struct ours {
	uint32_t progs[16], maps[64], links[16];
	int nprogs, nmaps, nlinks;
};

static int is_ours(const char *name)
{
	static const char *const names[] = { "tp_enter_futex", "tp_exit_futex", "tp_enter_futex_", "tp_exit_futex_w",
					      "raw_enter", "raw_exit" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return 1;
	return 0;
}

static void find_ours(struct ours *o)
{
	memset(o, 0, sizeof(*o));
	for (uint32_t id = next_id(BPF_PROG_GET_NEXT_ID, 0); id; id = next_id(BPF_PROG_GET_NEXT_ID, id)) {
		struct bpf_prog_info info;
		uint32_t maps[64];
		memset(&info, 0, sizeof(info));
		info.nr_map_ids = 64;
		info.map_ids = (uint64_t)(uintptr_t)maps;
		if (info_of(BPF_PROG_GET_FD_BY_ID, id, &info, sizeof(info)) || !is_ours(info.name) ||
		    o->nprogs == 16)
			continue;
		o->progs[o->nprogs++] = id;
		for (uint32_t k = 0; k < info.nr_map_ids && k < 64 && o->nmaps < 64; k++) {
			int seen = 0;
			for (int m = 0; m < o->nmaps; m++)
				seen |= o->maps[m] == maps[k];
			if (!seen)
				o->maps[o->nmaps++] = maps[k];
		}
	}
	for (uint32_t id = next_id(BPF_LINK_GET_NEXT_ID, 0); id; id = next_id(BPF_LINK_GET_NEXT_ID, id)) {
		struct bpf_link_info info;
		memset(&info, 0, sizeof(info));
		if (info_of(BPF_LINK_GET_FD_BY_ID, id, &info, sizeof(info)))
			continue;
		for (int k = 0; k < o->nprogs && o->nlinks < 16; k++)
			if (info.prog_id == o->progs[k])
				o->links[o->nlinks++] = id;
	}
}

/* How many of those objects exist still. */
static int left_of(const struct ours *o)
{
	struct bpf_prog_info pi;
	struct bpf_map_info mi;
	struct bpf_link_info li;
	int left = 0;
	for (int i = 0; i < o->nprogs; i++)
		left += info_of(BPF_PROG_GET_FD_BY_ID, o->progs[i], &pi, sizeof(pi)) == 0;
	for (int i = 0; i < o->nmaps; i++)
		left += info_of(BPF_MAP_GET_FD_BY_ID, o->maps[i], &mi, sizeof(mi)) == 0;
	for (int i = 0; i < o->nlinks; i++)
		left += info_of(BPF_LINK_GET_FD_BY_ID, o->links[i], &li, sizeof(li)) == 0;
	return left;
}

/* None of those objects exists any more, and the machine has as many as before.
 * The kernel frees an object when its last file closes, after a grace period:
 * soon, not at once. */
static void check_gone(const struct ours *o, const int before[3], const char *how)
{
	for (int i = 0; i < 500 && left_of(o); i++)
		nap_ms(10);
	CHECK(!left_of(o), "%s: %d of the tracer's programs, maps and links are still loaded "
	      "5 s after it ended", how, left_of(o));
	int after[3] = { count_ids(BPF_PROG_GET_NEXT_ID), count_ids(BPF_MAP_GET_NEXT_ID),
			 count_ids(BPF_LINK_GET_NEXT_ID) };
	CHECK(!memcmp(before, after, sizeof(after)),
	      "%s: programs, maps, links: %d %d %d before, %d %d %d after", how, before[0],
	      before[1], before[2], after[0], after[1], after[2]);
}

/* Once the tracer has loaded and attached (a link for each program): its objects. */
static void wait_attached(struct ours *o, const char *err)
{
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < 3000 && !(o->nprogs >= 2 && o->nlinks == o->nprogs); i++) {
		nap_ms(10);
		find_ours(o);
	}
	CHECK(o->nprogs >= 2 && o->nlinks == o->nprogs && o->nmaps >= 5, "the tracer was not seen "
	      "attached (%d programs, %d maps, %d links): %s", o->nprogs, o->nmaps, o->nlinks,
	      slurp(err));
}

/* ---------------------------------------------------------------- tests */

static int test_window(void)
{
	require_tracer();
	pid_t pid = start_planted("10");
	nap_ms(2000);
	char *args[] = { "--duration", "3", "--json", "-o", path_of("window.json") };
	CHECK(run_tracer(pid, NULL, path_of("window.err"), args, 5) == 0, "tracer failed: %s",
	      slurp(path_of("window.err")));
	CHECK(finish(pid, 60) == 0, "the planted program failed");
	char *doc = strdup(slurp(path_of("window.json")));
	struct lock_entry locks[64];
	int n = locks_of(doc, locks, 64);
	CHECK(n >= 1, "no lock in the report");
	CHECK(!strcmp(locks[0].name, "attach_planted`hot_lock"), "first by wait: %s", locks[0].name);
	for (int i = 1; i < n; i++)
		CHECK(locks[i].count <= locks[0].count, "%s has more waits (%lld) than the hot lock (%lld)",
		      locks[i].name, locks[i].count, locks[0].count);
	long long t0 = number_after(doc, NULL, "start_ns", NULL);
	long long t1 = number_after(doc, NULL, "end_ns", NULL);
	const char *counts = slurp(path_of("counts.txt"));
	double own = hot_count_at(counts, t1) - hot_count_at(counts, t0);
	printf("hot lock, the same %.3f s: %lld acquisitions traced, %.0f contended by the "
	       "program's own count\n", (double)(t1 - t0) / 1e9, locks[0].count, own);
	CHECK(own > 50, "too little contention to compare (%.0f)", own);
	CHECK(locks[0].count >= own * 0.9 && locks[0].count <= own * 1.1,
	      "traced %lld, the program counted %.0f: more than 10%% apart", locks[0].count, own);
	free(doc);
	return 0;
}

/* The first lock's name and its first waiter stack's first frame, from a report. */
static void first_lock_and_caller(const char *doc, char *name, char *caller, size_t len)
{
	struct lock_entry locks[64];
	CHECK(locks_of(doc, locks, 64) >= 1, "no lock in the report");
	snprintf(name, len, "%s", locks[0].name);
	const char *s = strstr(locks[0].at, "\"stack\":[\"");
	CHECK(s && s < locks[0].end, "the first lock has no stack");
	s += 10;
	snprintf(caller, len, "%.*s", (int)strcspn(s, "\""), s);
}

static int test_names(void)
{
	require_tracer();
	const char *prof = getenv("LL_PROF_LIB");
	/* The preload profiler's names for the same program. */
	char env_preload[400], env_out[400];
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", prof);
	snprintf(env_out, sizeof(env_out), "LOCKLAB_PROF_OUTPUT=%s", path_of("prof.json"));
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		putenv(env_preload);
		putenv(env_out);
		putenv("LOCKLAB_PROF_FORMAT=json");
		execl(planted, planted, "2", path_of("prof-counts.txt"), (char *)NULL);
		_exit(127);
	}
	CHECK(finish(pid, 60) == 0, "the planted program failed under the profiler");
	char prof_lock[200], prof_caller[200], lock[200], caller[200];
	first_lock_and_caller(slurp(path_of("prof.json")), prof_lock, prof_caller, sizeof(lock));

	pid = start_planted("60");   /* outlives both traces however slow they start; killed */
	nap_ms(1000);
	char *json_args[] = { "--duration", "1.5", "--json", "-o", path_of("names.json") };
	CHECK(run_tracer(pid, NULL, path_of("names.err"), json_args, 5) == 0, "tracer failed: %s",
	      slurp(path_of("names.err")));
	char *text_args[] = { "--duration", "1.5", "-s", "4", "-o", path_of("names.txt") };
	CHECK(run_tracer(pid, NULL, path_of("names.err"), text_args, 6) == 0, "tracer failed: %s",
	      slurp(path_of("names.err")));
	kill(pid, SIGKILL);
	finish(pid, 60);
	const char *doc = slurp(path_of("names.json"));
	first_lock_and_caller(doc, lock, caller, sizeof(lock));
	printf("profiler: %s at %s; tracer: %s at %s\n", prof_lock, prof_caller, lock, caller);
	CHECK(!strcmp(lock, prof_lock), "the tracer names it %s, the profiler %s", lock, prof_lock);
	CHECK(!strcmp(caller, prof_caller), "call site %s, the profiler's %s", caller, prof_caller);
	const char *lines = strstr(doc, "\"lines\":[[{\"function\":\"");
	CHECK(lines && strstr(lines, "planted.c\",\"line\":"), "no file:line for the caller in JSON");
	/* Text: the hot lock's caller row ends "CALLER  at .../planted.c:LINE". */
	const char *text = slurp(path_of("names.txt"));
	char row_end[300];
	snprintf(row_end, sizeof(row_end), " %s  at ", caller);
	const char *row = strstr(text, "\nMutex block\n");
	row = row ? strstr(row, "attach_planted`hot_lock ") : NULL;
	const char *eol = row ? strchr(row, '\n') : NULL;
	const char *at = row ? strstr(row, row_end) : NULL;
	CHECK(at && at < eol, "no caller row \"%s...\" for the hot lock in the text:\n%s", row_end,
	      text);
	const char *file = strstr(at, "planted.c:");
	CHECK(file && file < eol, "the caller row has no file:line: %.*s", (int)(eol - row), row);
	CHECK(strstr(text, "hold times are not seen"), "the header does not say holds are unseen");
	return 0;
}

static int test_interval(void)
{
	require_tracer();
	pid_t pid = start_planted("60");   /* outlives the trace however slow it starts */
	char *args[] = { "--duration", "2.2", "--interval", "0.5", "--json", "-o",
			 path_of("interval.json") };
	CHECK(run_tracer(pid, NULL, path_of("interval.err"), args, 7) == 0, "tracer failed: %s",
	      slurp(path_of("interval.err")));
	kill(pid, SIGKILL);
	finish(pid, 30);
	const char *doc = slurp(path_of("interval.json"));
	int lines = 0, intervals = 0;
	for (const char *p = doc; *p; p = strchr(p, '\n') + 1, lines++) {
		CHECK(!strncmp(p, "{\"tool\":\"locklab-attach\"", 24), "line %d: %.80s", lines + 1, p);
		intervals += !strncmp(strstr(p, "\"reason\":"), "\"reason\":\"interval\"", 19);
		if (!strchr(p, '\n'))
			break;
	}
	CHECK(intervals >= 3 && lines == intervals + 1, "%d lines, %d interval reports", lines,
	      intervals);
	const char *last = doc + strlen(doc) - 1;
	while (last > doc && last[-1] != '\n')
		last--;
	CHECK(strstr(last, "\"reason\":\"detach\"") && strstr(last, "\"delta\":false"),
	      "the last report is not the whole trace: %.120s", last);
	return 0;
}

/* A trace of 0.5 s by one hook: the status, and the report (or the error) in hook.out. */
static int trace_by(pid_t pid, const char *hook)
{
	char *args[] = { "--duration", "0.5", "--hook", (char *)hook };
	return run_tracer(pid, path_of("hook.out"), path_of("hook.err"), args, 4);
}

static int test_hooks(void)
{
	require_tracer();
	pid_t pid = start_planted("60");   /* outlives both traces; killed */
	int raw = trace_by(pid, "raw");
	char *raw_report = strdup(slurp(path_of("hook.out")));
	int syscall_tp = trace_by(pid, "syscall");
	kill(pid, SIGKILL);
	finish(pid, 30);
	CHECK(raw == 0 && strstr(raw_report, "attached by raw tracepoints"),
	      "--hook raw: status %d: %s", raw, slurp(path_of("hook.err")));
	free(raw_report);
	if (access("/sys/kernel/tracing/events/syscalls/sys_enter_futex/id", F_OK) == 0 ||
	    access("/sys/kernel/debug/tracing/events/syscalls/sys_enter_futex/id", F_OK) == 0) {
		CHECK(syscall_tp == 0 && strstr(slurp(path_of("hook.out")),
						"attached by syscall tracepoints"),
		      "--hook syscall: status %d: %s", syscall_tp, slurp(path_of("hook.err")));
		printf("tracefs is mounted: both hooks traced\n");
	} else {
		CHECK(syscall_tp == 1, "--hook syscall without tracefs: status %d", syscall_tp);
		check_one_line(path_of("hook.err"), "tracefs is not mounted");
		printf("tracefs is not mounted: --hook syscall said so in one line\n");
	}
	return 0;
}

/* A line of the program's JSON: the number after "key": */
static long long program_figure(const char *out, const char *key)
{
	long long v = number_after(out, NULL, key, NULL);
	CHECK(v >= 0, "no %s in the program's output: %s", key, out);
	return v;
}

static int test_exact(void)
{
	require_tracer();
	const char *pingpong = getenv("LL_ATTACH_PINGPONG");
	char *alone[] = { (char *)pingpong, "20000", NULL };
	CHECK(finish(start(alone, path_of("alone.out"), NULL), 120) == 0, "pingpong failed");
	long long ns_alone = program_figure(slurp(path_of("alone.out")), "ns_per_round");

	char *waiting[] = { (char *)pingpong, "20000", "wait", NULL };
	pid_t pid = start(waiting, path_of("pingpong.out"), NULL);
	struct stat st;
	for (int i = 0; i < 1000 && (stat(path_of("pingpong.out"), &st) || !st.st_size); i++)
		nap_ms(10);
	char pidtxt[16];
	snprintf(pidtxt, sizeof(pidtxt), "%d", (int)pid);
	char *argv[] = { (char *)tracer, "-p", pidtxt, "--json", "-o", path_of("exact.json"), NULL };
	pid_t t = start(argv, NULL, path_of("exact.err"));
	struct ours o;
	wait_attached(&o, path_of("exact.err"));
	kill(pid, SIGUSR1);
	CHECK(finish(pid, 120) == 0, "pingpong failed");
	CHECK(finish(t, 120) == 0, "tracer failed: %s", slurp(path_of("exact.err")));
	const char *out = slurp(path_of("pingpong.out"));
	long long waits = program_figure(out, "waits"), ns_traced = program_figure(out, "ns_per_round");
	const char *doc = slurp(path_of("exact.json"));
	CHECK(strstr(doc, "\"reason\":\"exit\""), "not the exit report: %.200s", doc);
	struct lock_entry locks[64];
	int n = locks_of(doc, locks, 64);
	CHECK(n >= 1 && !strcmp(locks[0].name, "attach_pingpong`turn"), "first lock: %s",
	      n ? locks[0].name : "none");
	CHECK(strstr(locks[0].at, "\"kind\":\"futex\"") < locks[0].end, "not a raw futex");
	printf("%lld waits traced, %lld counted by the program; a round (2 turns) %lld ns alone, "
	       "%lld ns traced\n", locks[0].count, waits, ns_alone, ns_traced);
	CHECK(locks[0].count == waits, "traced %lld waits, the program made %lld", locks[0].count,
	      waits);
	/* main's pthread_join is no lock: left out, and said so. */
	CHECK(number_after(doc, NULL, "not_locks\":{\"count", NULL) >= 1 && n == 1,
	      "main's join is not left out as no lock (%d locks: %s...)", n, locks[n - 1].name);
	return 0;
}

static int test_timeline(void)
{
	require_tracer();
	pid_t pid = start_planted("60");   /* outlives the trace; killed */
	char *args[] = { "--duration", "1.5", "--json", "-o", path_of("timeline.json"), "--trace",
			 path_of("timeline.trace") };
	CHECK(run_tracer(pid, NULL, path_of("timeline.err"), args, 7) == 0, "tracer failed: %s",
	      slurp(path_of("timeline.err")));
	kill(pid, SIGKILL);
	finish(pid, 30);
	char *doc = strdup(slurp(path_of("timeline.json")));
	struct lock_entry locks[64];
	int n = locks_of(doc, locks, 64);
	long long counted = 0, on_timeline = 0, dropped = 0;
	for (int i = 0; i < n; i++)
		counted += locks[i].count;
	const char *trace = slurp(path_of("timeline.trace"));
	CHECK(strstr(trace, "\"locks\":[\"attach_planted`hot_lock\"") ||
	      strstr(trace, ",\"attach_planted`hot_lock\""), "the hot lock is not on the timeline");
	for (const char *p = trace; (p = strstr(p, "\"waits\":")); p++) {
		const char *d;
		on_timeline += number_after(p, NULL, "waits", NULL);
		dropped += number_after(p, NULL, "dropped", &d);
	}
	printf("%lld acquisitions in the report, %lld on the timeline (%lld dropped)\n", counted,
	       on_timeline, dropped);
	CHECK(counted > 0 && on_timeline == counted && dropped == 0,
	      "the report counts %lld, the timeline has %lld (%lld dropped)", counted, on_timeline,
	      dropped);
	free(doc);
	return 0;
}

static int test_nopid(void)
{
	require_tracer();
	pid_t gone = fork();
	if (gone == 0)
		_exit(0);
	finish(gone, 10);
	char want[64];
	snprintf(want, sizeof(want), "no process %d", (int)gone);
	CHECK(run_tracer(gone, NULL, path_of("nopid.err"), NULL, 0) == 1, "status not 1");
	check_one_line(path_of("nopid.err"), want);

	pid_t zombie = fork();
	if (zombie == 0)
		_exit(0);
	nap_ms(200);   /* exited, and left unreaped until the tracer has run */
	snprintf(want, sizeof(want), "process %d (test_attach) has exited", (int)zombie);
	int rc = run_tracer(zombie, NULL, path_of("nopid.err"), NULL, 0);
	finish(zombie, 10);
	CHECK(rc == 1, "a zombie: status %d, not 1", rc);
	check_one_line(path_of("nopid.err"), want);
	return 0;
}

static int test_thread(void)
{
	require_tracer();
	pid_t pid = start_planted("3");
	char dir[64], want[96];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	pid_t tid = 0;
	for (int i = 0; i < 100 && !tid; i++) {
		char task[80];
		for (pid_t t = pid + 1; t < pid + 64 && !tid; t++) {
			snprintf(task, sizeof(task), "%s/%d", dir, (int)t);
			if (access(task, F_OK) == 0)
				tid = t;
		}
		if (!tid)
			nap_ms(20);
	}
	CHECK(tid, "no thread of the planted program found");
	snprintf(want, sizeof(want), "%d is a thread of process %d", (int)tid, (int)pid);
	int rc = run_tracer(tid, NULL, path_of("thread.err"), NULL, 0);
	finish(pid, 30);
	CHECK(rc == 1, "status %d, not 1", rc);
	check_one_line(path_of("thread.err"), want);
	return 0;
}

static int test_static(void)
{
	require_tracer();
	const char *prog = getenv("LL_ATTACH_STATIC");
	if (!prog || !*prog) {
		printf("skipped: no statically linked test program (static libc not found at build "
		       "time)\n");
		return SKIP;
	}
	char *argv[] = { (char *)prog, "5", NULL };
	pid_t pid = start(argv, NULL, NULL);
	nap_ms(200);
	int rc = run_tracer(pid, NULL, path_of("static.err"), NULL, 0);
	kill(pid, SIGKILL);
	finish(pid, 10);
	CHECK(rc == 1, "status %d, not 1", rc);
	check_one_line(path_of("static.err"), "is statically linked");
	return 0;
}

static int test_early(void)
{
	require_tracer();
	pid_t pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* Traced, it stops at the exec, before the dynamic loader runs. */
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(planted, planted, "3", path_of("counts.txt"), (char *)NULL);
		_exit(127);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid && WIFSTOPPED(status), "not stopped at its exec");
	char want[96];
	snprintf(want, sizeof(want), "process %d (attach_planted) has not loaded libc.so.6 yet",
		 (int)pid);
	int rc = run_tracer(pid, NULL, path_of("early.err"), NULL, 0);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	CHECK(rc == 1, "status %d, not 1", rc);
	check_one_line(path_of("early.err"), want);
	return 0;
}

static int test_unprivileged(void)
{
	require_tracer();
	if (geteuid() != 0) {
		printf("skipped: needs root, to drop to an unprivileged user\n");
		return SKIP;
	}
	pid_t pid = start_planted("3");
	char pidtxt[16];
	snprintf(pidtxt, sizeof(pidtxt), "%d", (int)pid);
	pid_t child = fork();
	CHECK(child >= 0, "fork");
	if (child == 0) {
		dup2(open(path_of("unpriv.err"), O_WRONLY | O_CREAT | O_TRUNC, 0666), 2);
		if (setgid(65534) || setuid(65534))
			_exit(126);
		execl(tracer, tracer, "-p", pidtxt, "--duration", "1", (char *)NULL);
		_exit(127);
	}
	int rc = finish(child, 60);
	finish(pid, 30);
	CHECK(rc == 1, "status %d, not 1", rc);
	check_one_line(path_of("unpriv.err"), "needs root, or the capabilities CAP_BPF and CAP_PERFMON");
	return 0;
}

enum end_by { BY_DURATION, BY_SIGINT, BY_SIGTERM, BY_EXIT, BY_SIGKILL };

static void trace_and_end(enum end_by how, const char *what)
{
	int before[3] = { count_ids(BPF_PROG_GET_NEXT_ID), count_ids(BPF_MAP_GET_NEXT_ID),
			  count_ids(BPF_LINK_GET_NEXT_ID) };
	pid_t pid = start_planted(how == BY_EXIT ? "3" : "60");   /* else killed after */
	char pidtxt[16];
	snprintf(pidtxt, sizeof(pidtxt), "%d", (int)pid);
	char *with_duration[] = { (char *)tracer, "-p", pidtxt, "--duration", "2", NULL };
	char *until_stopped[] = { (char *)tracer, "-p", pidtxt, NULL };
	pid_t t = start(how == BY_DURATION ? with_duration : until_stopped, path_of("detach.txt"),
			path_of("detach.err"));
	struct ours o;
	wait_attached(&o, path_of("detach.err"));
	nap_ms(500);
	if (how == BY_SIGINT || how == BY_SIGTERM || how == BY_SIGKILL)
		kill(t, how == BY_SIGINT ? SIGINT : how == BY_SIGTERM ? SIGTERM : SIGKILL);
	int rc = finish(t, 120);
	CHECK(rc == (how == BY_SIGKILL ? 128 + SIGKILL : 0), "%s: tracer status %d: %s", what, rc,
	      slurp(path_of("detach.err")));
	if (how != BY_SIGKILL)
		CHECK(strstr(slurp(path_of("detach.txt")), how == BY_EXIT ? "exit report" : "detach report"),
		      "%s: no report", what);
	kill(pid, SIGKILL);
	finish(pid, 30);
	check_gone(&o, before, what);
	printf("%s: %d programs, %d maps, %d links loaded, none left\n", what, o.nprogs, o.nmaps,
	       o.nlinks);
}

static int test_detach(void)
{
	require_tracer();
	trace_and_end(BY_DURATION, "--duration");
	trace_and_end(BY_SIGINT, "SIGINT");
	trace_and_end(BY_SIGTERM, "SIGTERM");
	trace_and_end(BY_EXIT, "the process's exit");
	trace_and_end(BY_SIGKILL, "SIGKILL of the tracer");
	return 0;
}

static const char *repeat_arg;

static int test_repeat(void)
{
	long times = repeat_arg ? strtol(repeat_arg, NULL, 10) : 100;
	CHECK(times >= 1 && times <= 100000, "repeat %s: not a count of traces", repeat_arg);
	require_tracer();
	int before[3] = { count_ids(BPF_PROG_GET_NEXT_ID), count_ids(BPF_MAP_GET_NEXT_ID),
			  count_ids(BPF_LINK_GET_NEXT_ID) };
	pid_t pid = start_planted("600");
	struct ours none = { 0 };
	for (long i = 0; i < times; i++) {
		char *args[] = { "--duration", "0.1", "-o", "/dev/null" };
		int rc = run_tracer(pid, NULL, path_of("repeat.err"), args, 4);
		CHECK(rc == 0, "trace %ld: status %d: %s", i + 1, rc, slurp(path_of("repeat.err")));
		CHECK(kill(pid, 0) == 0, "the program died during trace %ld", i + 1);
	}
	/* Still counting: its count moves on after the last trace. */
	size_t written = strlen(slurp(path_of("counts.txt")));
	nap_ms(500);
	CHECK(strlen(slurp(path_of("counts.txt"))) > written, "the program stopped counting");
	kill(pid, SIGKILL);
	finish(pid, 30);
	check_gone(&none, before, "after the traces");
	printf("%ld traces of one running program: each ended well, nothing left behind\n", times);
	return 0;
}

static const struct test_case cases[] = {
	{ "window", test_window, 0 },     { "names", test_names, 0 },
	{ "interval", test_interval, 0 }, { "timeline", test_timeline, 0 },
	{ "hooks", test_hooks, 0 },
	{ "exact", test_exact, 0 },       { "nopid", test_nopid, 0 },
	{ "thread", test_thread, 0 },     { "static", test_static, 0 },
	{ "early", test_early, 0 },
	{ "unprivileged", test_unprivileged, 0 }, { "detach", test_detach, 0 },
	{ "repeat", test_repeat, 0 },
};

int main(int argc, char **argv)
{
	const char *arg;
	const struct test_case *t = test_pick(argc, argv, cases, sizeof(cases) / sizeof(cases[0]),
					      "window|names|interval|timeline|hooks|exact|nopid|thread|static|"
					      "early|unprivileged|detach|repeat [N]", &arg);
	if (!t)
		return 2;
	repeat_arg = arg;
	tracer = getenv("LL_ATTACH");
	planted = getenv("LL_ATTACH_PLANTED");
	CHECK(tracer && planted, "LL_ATTACH and LL_ATTACH_PLANTED must name the programs");
	snprintf(scratch, sizeof(scratch), "%s/attach-%s-%d",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", t->name, (int)getpid());
	CHECK(mkdir(scratch, 0777) == 0 || errno == EEXIST, "%s: %s", scratch, strerror(errno));
	chmod(scratch, 0777);   /* the unprivileged test writes there as nobody */
	test_watchdog(t->name, 600);
	atexit(kill_children);
	return t->run();
}
