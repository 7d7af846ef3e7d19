/*
 * env.c: the lock monitor switched on from the environment, before main():
 * LOCKLAB_MONITOR, LOCKLAB_MONITOR_OUT, LOCKLAB_MONITOR_FORMAT,
 * LOCKLAB_MONITOR_SIGNAL, LOCKLAB_WATCHDOG (docs/monitoring.md).  The top of
 * the monitor: it starts the dump signal and the watchdog, which call into
 * the records (monitor.c) and the output (dump.c), never back here.
 *
 * A value it cannot use ends the program with one line and status 2: the
 * monitor is asked for by whoever starts the program, who is there to read it.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locklab/locklab.h"
#include "core/error_line.h"
#include "monitor/monitor_impl.h"

#if LL_MONITOR

static __attribute__((noreturn, format(printf, 1, 2))) void env_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ll_error_line(fmt, ap);
	va_end(ap);
	exit(2);
}

/* "USR2", "SIGUSR2" or a number: the signal, or 0. */
static int parse_signal(const char *s)
{
	if (!strncmp(s, "SIG", 3))
		s += 3;
	char *end;
	long v = strtol(s, &end, 10);
	if (*s && !*end)
		return v > 0 && v < NSIG ? (int)v : 0;
	for (int sig = 1; sig < NSIG; sig++) {
		const char *abbrev = sigabbrev_np(sig);
		if (abbrev && !strcmp(abbrev, s))
			return sig;
	}
	return 0;
}

static int parse_ms(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	if (len == 0 || len > 9)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v == 0)
		return -1;
	*out = v;
	return 0;
}

__attribute__((constructor)) static void monitor_from_env(void)
{
	const char *on = getenv("LOCKLAB_MONITOR");
	const char *out = getenv("LOCKLAB_MONITOR_OUT");
	const char *format = getenv("LOCKLAB_MONITOR_FORMAT");
	const char *sig = getenv("LOCKLAB_MONITOR_SIGNAL");
	const char *wd = getenv("LOCKLAB_WATCHDOG");
	enum ll_dump_format fmt = LL_DUMP_TEXT;
	struct ll_error err;

	if (on) {
		if (!strcmp(on, "1") || !strcmp(on, "on"))
			ll_monitor_set_enabled(1);
		else if (strcmp(on, "0") && strcmp(on, "off"))
			env_error("LOCKLAB_MONITOR wants 0, 1, off or on, got '%s'", on);
	}
	if (out && strcmp(out, "stderr")) {
		FILE *f = *out ? fopen(out, "a") : NULL;
		if (!f)
			env_error("LOCKLAB_MONITOR_OUT: cannot open '%s' for appending: %s", out,
				  *out ? strerror(errno) : "empty path");
		fclose(f);
		ll_mon_set_out_path(out);
	}
	if (format) {
		if (!strcmp(format, "json"))
			fmt = LL_DUMP_JSON;
		else if (strcmp(format, "text"))
			env_error("LOCKLAB_MONITOR_FORMAT wants text or json, got '%s'", format);
	}
	if (sig) {
		int signo = parse_signal(sig);
		if (!ll_mon_dump_signal_ok(signo) ||
		    ll_monitor_dump_on_signal(signo, ll_mon_out_path(), fmt, &err))
			env_error("LOCKLAB_MONITOR_SIGNAL: cannot dump on '%s' (valid: "
				  LL_MON_DUMP_SIGNALS ")", sig);
	}
	if (wd) {
		const char *comma = strchr(wd, ',');
		struct ll_watchdog_config cfg = { 0 };
		uint64_t ms, period_ms = 0;
		if (parse_ms(wd, comma ? (size_t)(comma - wd) : strlen(wd), &ms) ||
		    (comma && parse_ms(comma + 1, strlen(comma + 1), &period_ms)))
			env_error("LOCKLAB_WATCHDOG wants THRESHOLD_MS[,PERIOD_MS] (positive "
				  "integers), got '%s'", wd);
		cfg.threshold_ns = ms * 1000000u;
		cfg.period_ns = period_ms * 1000000u;
		if (ll_watchdog_start(&cfg, &err))
			env_error("LOCKLAB_WATCHDOG: %s", err.msg);
	}
}

#endif
