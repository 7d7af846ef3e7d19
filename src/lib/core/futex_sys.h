/*
 * futex_sys.h: the two futex calls the library makes (private futexes).
 */
#ifndef LOCKLAB_FUTEX_SYS_H
#define LOCKLAB_FUTEX_SYS_H

#include <errno.h>
#include <stdint.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "locklab/bits/monitor_hooks.h"

/*
 * A handoff's cost: how long a lock or slot handed to a sleeper stood idle
 * until the sleeper ran (the grantor's clock at the grant, the grantee's when
 * it runs), folded into a running average with weight 1/8.  ll's turn floor
 * and the gate's calm spells pace themselves by it.  A sample outside
 * (0, INT32_MAX) ns is left out (clocks of two CPUs, a preempted grantor).
 */
static inline uint64_t ll_handoff_avg(uint64_t avg, uint64_t granted_ns, uint64_t run_ns)
{
	int64_t idle = (int64_t)(run_ns - granted_ns);
	if (idle <= 0 || idle >= INT32_MAX)
		return avg;
	return (uint64_t)((int64_t)avg + (idle - (int64_t)avg) / 8);
}

/*
 * Sleep while *word == val, until woken or the absolute CLOCK_MONOTONIC
 * deadline (NULL: none).  Returns 0 (woken, or *word changed: EAGAIN, or a
 * signal: EINTR; the caller rechecks either way), ETIMEDOUT, or EINVAL for a
 * malformed deadline (which would otherwise fail at once forever).  Counts
 * one OS wait for the monitor (locklab/bits/monitor_hooks.h).  Any tv_sec is a deadline:
 * the kernel caps a far one at KTIME_MAX itself, but refuses a negative one
 * (EINVAL), which is long past: ETIMEDOUT here, without the call (as
 * glibc's futex waits do).
 */
static inline int ll_sys_futex_wait_bits(atomic_uint *word, unsigned val,
					 const struct timespec *abs_mono, unsigned bits)
{
	if (abs_mono && abs_mono->tv_sec < 0)
		return ETIMEDOUT;
	ll_mon_note_park();
	long rc = syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, val,
			  abs_mono, NULL, bits);
	if (rc == -1 && (errno == ETIMEDOUT || errno == EINVAL))
		return errno;
	return 0;
}

static inline int ll_sys_futex_wait(atomic_uint *word, unsigned val, const struct timespec *abs_mono)
{
	return ll_sys_futex_wait_bits(word, val, abs_mono, FUTEX_BITSET_MATCH_ANY);
}

/* Wake up to n sleepers of `word` whose wait bitset shares a bit with `bits`. */
static inline void ll_sys_futex_wake_bits(atomic_uint *word, int n, unsigned bits)
{
	syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, n, NULL, NULL,
		bits);
}

static inline void ll_sys_futex_wake(atomic_uint *word, int n)
{
	ll_sys_futex_wake_bits(word, n, FUTEX_BITSET_MATCH_ANY);
}

#endif
