/*
 * clock.h: deadlines moved between CLOCK_MONOTONIC (what every algorithm
 * waits on) and CLOCK_REALTIME (what glibc's timed calls without a clock
 * argument take).  The public direction is ll_clock_to_mono (locklab/rwlock.h).
 */
#ifndef LOCKLAB_CORE_CLOCK_H
#define LOCKLAB_CORE_CLOCK_H

#include <time.h>

/*
 * The CLOCK_REALTIME deadline as far from now as abs_mono is, saturated so
 * that a far deadline stays far and a past one stays past: for glibc calls
 * that take only realtime deadlines (ThreadSanitizer intercepts no
 * *_clocklock call).
 */
struct timespec ll_mono_to_realtime(const struct timespec *abs_mono);

#endif
