/*
 * clock.c: deadlines from one clock to the other, by the time left now.
 */
#include <errno.h>
#include <stdint.h>

#include "core/clock.h"
#include "locklab/rwlock.h"
#include "locklab/bits/spin.h"

static uint64_t now_on(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return ll_timespec_ns(&ts);
}

/* The deadline abs on clock `from`, moved to clock `to` by the time left now (saturated). */
static struct timespec move_deadline(clockid_t from, clockid_t to, const struct timespec *abs)
{
	uint64_t dl = ll_timespec_ns(abs), now = now_on(from);
	return ll_ns_timespec(ll_ns_add_sat(now_on(to), dl > now ? dl - now : 0));
}

struct timespec ll_mono_to_realtime(const struct timespec *abs_mono)
{
	/* A deadline before the realtime clock's zero cannot be drawn: it is long past. */
	return move_deadline(CLOCK_MONOTONIC, CLOCK_REALTIME, abs_mono);
}

int ll_clock_to_mono(int clk, const struct timespec *abs, struct timespec *abs_mono)
{
	if (!abs || !abs_mono || abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L)
		return EINVAL;
	if (clk == CLOCK_MONOTONIC) {
		*abs_mono = *abs;
		return 0;
	}
	if (clk != CLOCK_REALTIME)
		return EINVAL;
	*abs_mono = move_deadline(CLOCK_REALTIME, CLOCK_MONOTONIC, abs);
	return 0;
}
