/*
 * sched.h: the calling thread's realtime priority, which POSIX's rule for
 * rwlocks under SCHED_FIFO and SCHED_RR compares (a reader does not enter
 * while a writer of higher or equal priority waits): rwlocks/ll.c and
 * rwlocks/partitioned.c keep it.
 */
#ifndef LOCKLAB_CORE_SCHED_H
#define LOCKLAB_CORE_SCHED_H

/*
 * The calling thread's SCHED_FIFO or SCHED_RR priority (1..99), 0 for the
 * other policies.  Two system calls: for a thread about to wait, not for a
 * lock's fast path.
 */
int ll_sched_rt_priority(void);

#endif
