/*
 * rwlocks/bravo.h: BRAVO (Dice and Kogan, "BRAVO: Biased Locking for Reader-Writer
 * Locks", USENIX ATC 2019) over an underlying rwlock of the library, chosen
 * by the knob `under` (default pthread; any registered rwlock but bravo).
 *
 * Per lock, 40 bytes here (one line) + the underlying lock's state,
 * allocated at init (pthread: 56 bytes in a 64-byte block):
 *
 *   +-----------+-----------+------+---------+-----------+-------------+
 *   | under_ops | under     | bias | inhibit | spin_iters| bias_after  |
 *   | 8         | 8         | 4    | 4       | 4 (+4)    | 8           |
 *   +-----------+-----------+------+---------+-----------+-------------+
 *     under_ops, under  the underlying rwlock's ops table and its state
 *     bias        1: readers may enter through the table; 0: they may not;
 *                 2: they may not, and a revoking writer sleeps here;
 *                 3: a reader left while the writer slept (woken)
 *     inhibit     after a revocation taking T, bias stays off inhibit x T
 *     bias_after  ll_now_ns() before which no reader turns bias back on
 *
 * Shared by every bravo lock: the visible-readers table, 4096 slots of 8
 * bytes (32 KiB, in the library's .bss).  A slot holds the address of the
 * lock one reader holds through it, or 0.  Per thread (TLS, 120 bytes): the
 * locks it holds through the table, up to 8, with their slot and count.
 *
 *   fast rdlock   bias == 1: one CAS 0 -> lock on slot hash(thread, lock),
 *                 reload bias: still 1, in; else (or the slot busy, or 8
 *                 table holds already) put the slot back and read-lock the
 *                 underlying lock; once in, a slow reader turns bias back
 *                 on when bias_after has passed (no writer can be inside)
 *   fast unlock   store 0 in the slot (seq_cst); bias 2: make it 3, wake
 *   wrlock        the underlying write lock; then if bias is 1: clear it,
 *                 scan all 4096 slots and wait (spin spin_ns, then sleep on
 *                 bias with the caller's deadline) until none holds this
 *                 lock; bias_after = now + inhibit x the scan's time
 *   unlock        a table hold of the thread: release the slot; else the
 *                 underlying unlock (a slow read or the write)
 *
 * A writer that times out (or a try that finds a reader in the table) puts
 * bias back to 1 and releases the underlying lock: the readers still in
 * their slots hold the lock.  Writer waits are the underlying lock's plus
 * the read sections in progress at the revocation; readers arriving after
 * a writer cleared bias wait in the underlying lock.  Recursion: a thread
 * reading a lock it holds through the table counts it there (never queues
 * behind the writer it blocks); recursion through the underlying lock is
 * that lock's.  wrlock by a thread holding the lock through the table
 * returns EDEADLK.
 */
#ifndef LOCKLAB_RW_BRAVO_H
#define LOCKLAB_RW_BRAVO_H

#include "locklab/bits/api.h"

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/rwlock.h"

typedef struct {
	const struct ll_rwlock_ops *under_ops;
	void *under;
	atomic_uint bias;
	uint32_t inhibit;
	uint32_t spin_iters;          /* a revoking writer's polls of a slot before it sleeps */
	_Atomic uint64_t bias_after;
} ll_rw_bravo_t;

/* Slots of the visible-readers table shared by every bravo lock. */
#define LL_RW_BRAVO_TABLE_SLOTS 4096

struct ll_rw_bravo_config {
	int64_t under;         /* index into the knob's choices: rwlocks.def less bravo */
	int64_t inhibit;       /* bias off for inhibit x the revocation's time (BRAVO's N, 9) */
	int64_t spin_ns;       /* a revoking writer polls a slot this long before it sleeps */
};

/* cfg NULL: defaults.  0, EINVAL, ENOMEM, or the underlying lock's init error. */
LL_API int ll_rw_bravo_init(ll_rw_bravo_t *l, const struct ll_rw_bravo_config *cfg);
LL_API void ll_rw_bravo_destroy(ll_rw_bravo_t *l);
LL_API int ll_rw_bravo_rdlock(ll_rw_bravo_t *l);
LL_API int ll_rw_bravo_tryrdlock(ll_rw_bravo_t *l);
LL_API int ll_rw_bravo_timedrdlock(ll_rw_bravo_t *l, const struct timespec *abs_mono);
LL_API int ll_rw_bravo_wrlock(ll_rw_bravo_t *l);
LL_API int ll_rw_bravo_trywrlock(ll_rw_bravo_t *l);
LL_API int ll_rw_bravo_timedwrlock(ll_rw_bravo_t *l, const struct timespec *abs_mono);
LL_API int ll_rw_bravo_unlock(ll_rw_bravo_t *l);
/* Slots of the shared table that hold l now (a test's view of the fast path). */
LL_API unsigned ll_rw_bravo_table_holds(const ll_rw_bravo_t *l);

#endif
