/*
 * watchdog.c: a thread that reports monitored waits longer than a threshold
 * (InnoDB's long semaphore wait warning, without the crash).
 *
 * Every period it looks at the waits under way (ll_mon_long_waits: the
 * threads' published waits, read under the registries' mutexes) and
 * reports each wait of threshold or more once: the lock, the waiter and
 * where it waits, for how long, the holder and the file:line it locked at.
 * The report goes to the user's callback, else to a line of text; it is
 * delivered with no mutex of the monitor held, so a callback may dump,
 * create or destroy locks.  The watchdog never touches the locks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "locklab/locklab.h"
#include "monitor/monitor_impl.h"

/* err->msg "watchdog: MSG" (err may be NULL); rc. */
static int fail(struct ll_error *err, int rc, const char *msg)
{
	if (err)
		snprintf(err->msg, sizeof(err->msg), "watchdog: %s", msg);
	return rc;
}

#if LL_MONITOR

static struct {
	pthread_mutex_t mu;
	pthread_cond_t wake;
	int cond_ready;
	int running, stopping;
	pthread_t thread;
	struct ll_watchdog_config cfg;
} wd = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void site(char *buf, size_t len, const char *file, int line)
{
	if (file)
		snprintf(buf, len, "%s:%d", file, line);
	else
		snprintf(buf, len, "an unknown place");
}

void ll_mon_report_print(FILE *f, const struct ll_watchdog_report *r)
{
	char created[256], at[256], held[256];
	site(created, sizeof(created), r->created_file, r->created_line);
	site(at, sizeof(at), r->wait_file, r->wait_line);
	site(held, sizeof(held), r->holder_file, r->holder_line);
	fprintf(f, "locklab watchdog: lock %llu '%s' (%s, created at %s): thread %d (%s) has waited "
		"%.3f s at %s; ", (unsigned long long)r->lock_id, r->lock_name, r->algo, created,
		r->waiter_tid, r->waiter_name, (double)r->waited_ns / 1e9, at);
	if (r->holder_tid)
		fprintf(f, "holder thread %d (%s), locked at %s\n", r->holder_tid,
			*r->holder_name ? r->holder_name : "exited", held);
	else
		fprintf(f, "holder unknown (not a monitored call), last locked at %s\n", held);
}

static void report(const struct ll_watchdog_config *cfg, const struct ll_watchdog_report *reps,
		   size_t n)
{
	if (cfg->fn) {
		for (size_t i = 0; i < n; i++)
			cfg->fn(&reps[i], cfg->arg);
		return;
	}
	const char *path = ll_mon_out_path();
	FILE *f = cfg->out ? cfg->out : ll_mon_out_open(path);
	for (size_t i = 0; i < n; i++)
		ll_mon_report_print(f, &reps[i]);
	if (cfg->out)
		fflush(f);
	else
		ll_mon_out_close(f, path);
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&wd.mu);
	struct ll_watchdog_config cfg = wd.cfg;
	uint64_t next = ll_now_ns() + cfg.period_ns;
	while (!wd.stopping) {
		struct timespec until = { .tv_sec = (time_t)(next / 1000000000u),
					  .tv_nsec = (long)(next % 1000000000u) };
		pthread_cond_timedwait(&wd.wake, &wd.mu, &until);
		if (wd.stopping)
			break;
		if (ll_now_ns() < next)
			continue;   /* woken early */
		next += cfg.period_ns;
		pthread_mutex_unlock(&wd.mu);

		struct ll_watchdog_report *reps;
		size_t n = ll_mon_long_waits(cfg.threshold_ns, &reps);
		if (n)
			report(&cfg, reps, n);
		free(reps);

		pthread_mutex_lock(&wd.mu);
		uint64_t now = ll_now_ns();
		if (next < now)   /* a late look: the next one a period from now */
			next = now + cfg.period_ns;
	}
	pthread_mutex_unlock(&wd.mu);
	return NULL;
}

int ll_watchdog_start(const struct ll_watchdog_config *cfg, struct ll_error *err)
{
	if (!cfg)
		return fail(err, EINVAL, "no config (NULL)");
	if (cfg->threshold_ns == 0)
		return fail(err, EINVAL, "the threshold must be above 0");
	struct ll_watchdog_config c = *cfg;
	if (c.period_ns == 0)
		c.period_ns = c.threshold_ns / 4 > 1000000 ? c.threshold_ns / 4 : 1000000;

	pthread_mutex_lock(&wd.mu);
	if (wd.running) {
		pthread_mutex_unlock(&wd.mu);
		return fail(err, EBUSY, "already running");
	}
	if (!wd.cond_ready) {
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&wd.wake, &ca);
		pthread_condattr_destroy(&ca);
		wd.cond_ready = 1;
	}
	wd.cfg = c;
	wd.stopping = 0;
	int rc = pthread_create(&wd.thread, NULL, watchdog_main, NULL);
	if (rc) {
		pthread_mutex_unlock(&wd.mu);
		return fail(err, rc, "cannot start its thread");
	}
	pthread_setname_np(wd.thread, "ll-watchdog");
	wd.running = 1;
	pthread_mutex_unlock(&wd.mu);
	return 0;
}

void ll_watchdog_stop(void)
{
	pthread_mutex_lock(&wd.mu);
	if (!wd.running || wd.stopping) {
		pthread_mutex_unlock(&wd.mu);
		return;
	}
	wd.stopping = 1;
	pthread_cond_signal(&wd.wake);
	pthread_t t = wd.thread;
	pthread_mutex_unlock(&wd.mu);
	pthread_join(t, NULL);
	pthread_mutex_lock(&wd.mu);
	wd.running = 0;
	wd.stopping = 0;
	pthread_mutex_unlock(&wd.mu);
}

#else /* !LL_MONITOR */

int ll_watchdog_start(const struct ll_watchdog_config *cfg, struct ll_error *err)
{
	if (!cfg)
		return fail(err, EINVAL, "no config (NULL)");
	return fail(err, ENOSYS, "the monitor is not built in (LL_MONITOR=0)");
}

void ll_watchdog_stop(void) {}

#endif
