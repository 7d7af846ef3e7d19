/*
 * measure.c: /proc/stat, rusage, threads' schedstat and timed joins for the
 * benchmark workloads.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "locklab/spin.h"
#include "options.h"
#include "measure.h"

static void read_proc_stat(struct cpu_ticks *t)
{
	unsigned long long v[10] = { 0 };
	char line[512];
	FILE *f = fopen("/proc/stat", "r");

	memset(t, 0, sizeof(*t));
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "cpu ", 4)) {
			sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
			       &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
			/* As vmstat: us = user+nice, sy = system+irq+softirq, id = idle. */
			t->user = v[0] + v[1];
			t->sys = v[2] + v[5] + v[6];
			t->idle = v[3];
			t->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
		} else if (!strncmp(line, "ctxt ", 5)) {
			t->ctxt = strtoull(line + 5, NULL, 10);
		}
	}
	fclose(f);
}

void take_snapshot(struct snapshot *s)
{
	s->ns = ll_now_ns();
	read_proc_stat(&s->cpu);
	getrusage(RUSAGE_SELF, &s->ru);
}

static double tv_ns(struct timeval tv)
{
	return (double)tv.tv_sec * 1e9 + (double)tv.tv_usec * 1e3;
}

void window_between(const struct snapshot *a, const struct snapshot *b, struct window *w)
{
	memset(w, 0, sizeof(*w));
	w->duration_s = (double)(b->ns - a->ns) / 1e9;
	double ticks = (double)(b->cpu.total - a->cpu.total);
	if (ticks > 0) {
		w->cpu_user_pct = 100.0 * (double)(b->cpu.user - a->cpu.user) / ticks;
		w->cpu_sys_pct = 100.0 * (double)(b->cpu.sys - a->cpu.sys) / ticks;
		w->cpu_idle_pct = 100.0 * (double)(b->cpu.idle - a->cpu.idle) / ticks;
	}
	if (w->duration_s > 0)
		w->cs_per_sec = (double)(b->cpu.ctxt - a->cpu.ctxt) / w->duration_s;
	w->vcsw = (uint64_t)(b->ru.ru_nvcsw - a->ru.ru_nvcsw);
	w->ivcsw = (uint64_t)(b->ru.ru_nivcsw - a->ru.ru_nivcsw);
	w->cpu_ns = tv_ns(b->ru.ru_utime) - tv_ns(a->ru.ru_utime) + tv_ns(b->ru.ru_stime) -
		    tv_ns(a->ru.ru_stime);
}

void sleep_seconds(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts))
		;
}

int join_until(pthread_t *tids, int64_t n, double seconds)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);   /* pthread_timedjoin_np's clock */
	double t = (double)dl.tv_nsec / 1e9 + seconds;
	dl.tv_sec += (time_t)t;
	dl.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
	for (int64_t i = 0; i < n; i++)
		if (pthread_timedjoin_np(tids[i], NULL, &dl))
			return 0;
	return 1;
}

void start_threads(pthread_t *tids, int64_t n, void *(*fn)(void *), void *args, size_t stride,
		   const char *what)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	for (int64_t i = 0; i < n; i++) {
		int rc = pthread_create(&tids[i], &attr, fn, (char *)args + (size_t)i * stride);
		if (rc) {
			fprintf(stderr, "locklab: bench: cannot create %s %" PRId64 " of %" PRId64 ": %s\n",
				what, i + 1, n, strerror(rc));
			exit(EXIT_USAGE);
		}
	}
	pthread_attr_destroy(&attr);
}

/* The first line of a file of /proc, NUL-terminated in buf; its length, or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t got = read(fd, buf, size - 1);
	close(fd);
	if (got <= 0)
		return -1;
	buf[got] = '\0';
	return got;
}

void sched_watch_close(int *fds, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

int sched_watch_open(const pid_t *tids, int64_t n, int *fds)
{
	/* One fd per thread, and the few the process has besides. */
	struct rlimit rl;
	rlim_t want = (rlim_t)n + 64;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (int64_t i = 0; i < n; i++)
		fds[i] = -1;
	for (int64_t i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tids[i]);
		fds[i] = open(path, O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			sched_watch_close(fds, n);
			return 0;
		}
	}
	return 1;
}

int sched_run_times(const int *fds, int64_t n, uint64_t *run_ns)
{
	for (int64_t i = 0; i < n; i++) {
		char buf[128];
		ssize_t got = pread(fds[i], buf, sizeof(buf) - 1, 0);
		if (got <= 0)
			return 0;
		buf[got] = '\0';
		unsigned long long run;
		if (sscanf(buf, "%llu", &run) != 1)
			return 0;
		run_ns[i] = run;
	}
	return 1;
}

int64_t count_unscheduled(const pid_t *tids, const uint64_t *a, const uint64_t *b, int64_t n)
{
	int64_t count = 0;
	for (int64_t i = 0; i < n; i++) {
		if (a[i] != b[i])
			continue;
		/* "TID (comm) S ...": the state follows the last ')' (comm may hold one). */
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tids[i]);
		char *paren = read_proc(path, buf, sizeof(buf)) < 0 ? NULL : strrchr(buf, ')');
		if (!paren || paren[1] != ' ')
			return -1;
		count += paren[2] == 'R';
	}
	return count;
}
