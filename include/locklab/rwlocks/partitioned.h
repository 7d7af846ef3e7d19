/*
 * rwlocks/partitioned.h: MySQL's fix for its LOCK_grant rwlock, as an rwlock of
 * the library: n glibc rwlocks, each on its own cache line; a reader takes
 * the one its thread maps to, a writer takes them all, in order.
 *
 * Per lock, 32 bytes here and n x 64 bytes allocated at init:
 *
 *   parts ---> +------------------------+------------------------+-- ... --+
 *              | pthread_rwlock_t (56)  | pthread_rwlock_t (56)  |         |
 *              | + pad, line 0          | + pad, line 1          |  n - 1  |
 *              +------------------------+------------------------+-- ... --+
 *   n          partitions (knob n, MySQL's 32)
 *   writer     1 while a writer holds every partition (unlock reads it)
 *   writers    a futex mutex: one writer at a time takes partitions
 *
 *   rdlock   the partition of thread t (a number given to each thread at
 *            its first read, round robin, mod n): one glibc read lock, on a
 *            line only the threads of that partition write
 *   wrlock   `writers`, then partitions 0 .. n-1 write-locked in order
 *            (trylock first), then writer = 1, `writers` released; a timed
 *            or try writer that fails part-way releases what it took.  A
 *            writer that must wait and runs SCHED_FIFO or SCHED_RR takes
 *            every free partition first, then waits for the busy ones in
 *            order: POSIX's rule that no reader enters while a realtime
 *            writer waits, for readers of every partition but those whose
 *            readers it waits for (a glibc rwlock, prefer=reader, lets a
 *            reader join the readers inside).  Out of order is safe: only
 *            the holder of `writers` takes partitions.
 *   unlock   writer set: clear it, release every partition; else the
 *            caller's partition
 *
 * Readers of different partitions share no line; a writer pays n locks.
 * prefer: each partition's glibc kind (locklab/rwlocks/pthread.h).
 */
#ifndef LOCKLAB_RW_PARTITIONED_H
#define LOCKLAB_RW_PARTITIONED_H

#include "locklab/bits/api.h"

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/locks/futex.h"
#include "locklab/rwlocks/pthread.h"

struct ll_rw_part;   /* one partition: an ll_rw_pthread_t on its own line */

typedef struct {
	struct ll_rw_part *parts;
	uint32_t n;
	atomic_uint writer;
	ll_futex_t writers;
} ll_rw_partitioned_t;

struct ll_rw_partitioned_config {
	int64_t n;             /* partitions (1..1024, default 32) */
	int64_t prefer;        /* LL_RW_PREFER_* of every partition */
};

/* cfg NULL: defaults.  0, EINVAL (config out of range), ENOMEM, or pthread_rwlock_init's error. */
LL_API int ll_rw_partitioned_init(ll_rw_partitioned_t *l, const struct ll_rw_partitioned_config *cfg);
LL_API void ll_rw_partitioned_destroy(ll_rw_partitioned_t *l);
LL_API int ll_rw_partitioned_rdlock(ll_rw_partitioned_t *l);
LL_API int ll_rw_partitioned_tryrdlock(ll_rw_partitioned_t *l);
LL_API int ll_rw_partitioned_timedrdlock(ll_rw_partitioned_t *l, const struct timespec *abs_mono);
LL_API int ll_rw_partitioned_wrlock(ll_rw_partitioned_t *l);
LL_API int ll_rw_partitioned_trywrlock(ll_rw_partitioned_t *l);
LL_API int ll_rw_partitioned_timedwrlock(ll_rw_partitioned_t *l, const struct timespec *abs_mono);
LL_API int ll_rw_partitioned_unlock(ll_rw_partitioned_t *l);

#endif
