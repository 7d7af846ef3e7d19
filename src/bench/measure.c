/*
 * measure.c: /proc/stat, rusage, threads' schedstat and state, and timed
 * joins for the benchmark workloads.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "locklab/bits/spin.h"
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

static void call(void (*fn)(void *), void *ctx)
{
	if (fn)
		fn(ctx);
}

/* Every thread's counters now; at_end: less what `window` held (their values as it opened). */
static void read_counters(const struct run_window *w, uint64_t *window, int at_end)
{
	for (int64_t i = 0; i < w->threads; i++) {
		const atomic_uint_fast64_t *c =
			(const atomic_uint_fast64_t *)(const void *)((const char *)w->counters +
								    (size_t)i * w->stride);
		for (int k = 0; k < w->per_thread; k++) {
			uint64_t *at = &window[i * w->per_thread + k];
			uint64_t n = atomic_load_explicit(&c[k], memory_order_relaxed);
			*at = at_end ? n - *at : n;
		}
	}
}

int run_window(const struct run_window *w, uint64_t *window, struct snapshot *a,
	       struct snapshot *b)
{
	if (w->opts->iterations) {
		take_snapshot(a);
		read_counters(w, window, 0);
		pthread_barrier_wait(w->start);
		call(w->released, w->ctx);
		for (int64_t i = 0; i < w->threads; i++)
			pthread_join(w->tids[i], NULL);
		read_counters(w, window, 1);
		take_snapshot(b);
		call(w->closed, w->ctx);
		return 1;
	}
	pthread_barrier_wait(w->start);
	call(w->released, w->ctx);
	sleep_seconds(w->opts->warmup_s);
	call(w->opening, w->ctx);
	take_snapshot(a);
	read_counters(w, window, 0);
	atomic_store(w->phase, PHASE_MEASURE);
	sleep_seconds(w->opts->duration_s);
	read_counters(w, window, 1);
	take_snapshot(b);
	call(w->closed, w->ctx);
	atomic_store(w->phase, PHASE_STOP);
	return join_until(w->tids, w->threads, w->drain_s + w->opts->duration_s);
}

void exit_if_undrained(int drained, int ok)
{
	if (drained)
		return;
	fflush(stdout);
	_exit(ok ? 0 : 1);
}

void window_rates(const struct window *w, uint64_t ops, struct rates *r)
{
	double wall_ns = w->duration_s * 1e9;
	r->ns_per_op = ops ? wall_ns / (double)ops : 0;
	r->ops_per_sec = wall_ns > 0 ? (double)ops * 1e9 / wall_ns : 0;
	r->cpu_ns_per_op = ops ? w->cpu_ns / (double)ops : 0;
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

int schedstat_read(int fd, uint64_t *run_ns, uint64_t *wait_ns)
{
	char buf[128];
	unsigned long long run, wait;
	ssize_t got = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
	if (got <= 0)
		return 0;
	buf[got] = '\0';
	if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
		return 0;
	if (run_ns)
		*run_ns = run;
	if (wait_ns)
		*wait_ns = wait;
	return 1;
}

int thread_runnable(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return -1;
	buf[got] = '\0';
	/* "TID (comm) S ...": the state follows the last ')' (comm may hold one). */
	char *paren = strrchr(buf, ')');
	if (!paren || paren[1] != ' ')
		return -1;
	return paren[2] == 'R';
}

void fd_limit_at_least(int64_t n)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)n ? rl.rlim_max : (rlim_t)n;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}
