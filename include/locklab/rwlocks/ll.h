/*
 * rwlocks/ll.h: the project's own rwlock, `ll` in the rwlock table (ll_rw_ll_t
 * in C): a read side that writes no cache line another CPU writes while the
 * bias is on, writers that readers cannot starve, every wait a futex sleep
 * with a deadline.
 *
 * Per lock, 48 bytes:
 *
 *   word (32 bits)
 *   31  30  29  28  27  26  25  24                             0
 *   +---+---+---+---+---+---+---+--------------------------------+
 *   | P | G | B | R | W | S | T | slow readers inside (< 2^25)   |
 *   +---+---+---+---+---+---+---+--------------------------------+
 *     P  the writer holds the lock or waits for the slow readers inside
 *        to leave: no slow reader enters
 *     G  the writer waits for the readers the previous writer blocked to enter
 *     B  the bias: readers take the fast path (slots of the readers' table)
 *     R  the writer revokes the bias (waits for the fast readers): slow
 *        readers still enter, none turns B on
 *     W  a writer owns the writer side (wrlock to unlock): one at a time
 *     S  writers may sleep on wq
 *     T  a realtime writer waits (rt): no slow reader of its priority or
 *        below enters, but while G lets blocked readers in
 *
 *   revoker   1: a revoking writer sleeps here until a fast reader leaves
 *   rseq      readers blocked by P sleep on it; bumped when P clears
 *   wseq      the writer owning W sleeps on it (G, P); bumped by the reader
 *             whose leaving (or entering, for G) it waits for
 *   wq        writers waiting for W sleep on it; bumped by the release of W
 *   rwaiting  readers blocked by P, counted until they enter or give up
 *   revoked   1: the writer that set P last revoked the bias on its way, so
 *             writes are rare on this lock (the bias had come back); readers
 *             it blocks poll for it.  0: it found the bias off, writes come
 *             often, and readers it blocks sleep at once (with one thread
 *             per CPU, after one sched_yield; written by the W owner only)
 *   spin_iters, inhibit, bias_on, bias_after: the knobs and the bias timer
 *   rt        the realtime writers waiting: their count (low 16 bits) and
 *             the highest SCHED_FIFO/SCHED_RR priority among them (above),
 *             kept until the count is 0 again; T set while the count is not
 *
 * Shared by every lock: the table of visible readers, one 64-byte line of 8
 * slots per CPU (the CPUs configured, rounded up to a power of two).  A fast
 * reader claims a free slot of the line of the CPU it runs on (or of the next
 * line) and writes the lock's address there; threads on one CPU take turns on
 * its line, so the line stays in that CPU's cache.  A revoking writer reads
 * every line: as many as there are CPUs, however many threads read.  Each
 * reading thread also has a private record (192 bytes, kept for the next
 * thread when its thread exits): the locks it holds, each hold's slot in the
 * table (address | 1 for a slow hold) and its recursion counts.
 *
 *   fast rdlock   B set: CAS the lock's address into a free slot of the
 *                 CPU's line (seq_cst: one locked instruction on a line that
 *                 no other CPU writes), reload the word: B still set, done
 *   fast unlock   release-store 0 in the slot the hold took (wherever the
 *                 thread runs now); load revoker (1: wake it)
 *   slow rdlock   CAS word + 1 while P is clear, else poll spin_ns (only
 *                 behind a writer that revoked the bias, or with bias=0),
 *                 then, while no more threads read ll rwlocks than there
 *                 are CPUs, sched_yield once and look again; sleep on rseq
 *   wrlock        CAS W in (free lock, bias off: W and P in one CAS, done);
 *                 else sleep on wq for W; while readers the last writer
 *                 blocked are waiting, set G and sleep until they have
 *                 entered; if B: swap it for R, scan the table's slots
 *                 for this lock, waiting (spin, then sleep on revoker) for
 *                 each holder to leave (slow readers go on entering); swap R
 *                 for P; sleep until the slow readers inside have left
 *   unlock (w)    clear W, S, P in one RMW; wake a writer if S was set, the
 *                 blocked readers if any
 *   bias on       a revocation whose scan took T (its waits for readers
 *                 inside not counted) keeps B off for inhibit x T (BRAVO's
 *                 rule); a slow reader, one read in 64 of its thread,
 *                 reads the clock and sets B once that is over and no
 *                 writer owns W
 *
 * Bounds.  Once a writer owns W, readers arriving later never delay it: it
 * waits for the readers the previous writer blocked to enter (they were
 * woken at that writer's release), for the fast read sections in progress
 * when it cleared B, for the slow sections in progress when it set P, and
 * for nothing else.  Readers are never blocked by a writer that has not set
 * P; a reader blocked by a writer enters before the next writer can set P:
 * it waits for at most that one writer's revocation-free section.  Writers
 * among themselves barge for W (no FIFO order between writers: handing W
 * to a sleeping writer idles the lock until it runs, and the writers' wait
 * is the run queue's, which an order does not shorten).
 *
 * Realtime writers (POSIX's rule for SCHED_FIFO and SCHED_RR: a reader does
 * not acquire the lock while a writer of higher or equal priority is
 * blocked on it).  A writer that is about to wait looks up its policy; a
 * realtime one counts itself in rt and sets T until it has the lock or
 * gives up.  A slow reader that finds T compares its own priority (0 for
 * other policies) with rt's and waits as behind P.  The fast read path
 * stays as it is: the waiting writer has cleared B or is about to (its
 * revocation comes before any wait of its own but for W), and no reader
 * turns B on under T.  Such a writer skips G: the readers the last writer
 * blocked wait for it too.
 *
 * Recursion: a thread may read-lock a lock it holds for reading, even while
 * a writer waits (its record counts).  wrlock by a thread holding a read lock
 * its record knows of returns EDEADLK; a second wrlock by the writer deadlocks.
 */
#ifndef LOCKLAB_RW_LL_H
#define LOCKLAB_RW_LL_H

#include "locklab/bits/api.h"

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "locklab/locks/futex.h"

typedef struct {
	atomic_uint word;
	atomic_uint revoker;
	atomic_uint rseq;
	atomic_uint wseq;
	atomic_uint wq;
	atomic_uint rwaiting;
	uint32_t spin_iters;           /* a waiter's polls before it sleeps */
	uint16_t inhibit;              /* bias stays off for inhibit x the revocation's scan */
	uint8_t bias_on;               /* 0: never bias (a plain writer-first rwlock) */
	_Atomic uint8_t revoked;       /* the writer that set P last revoked the bias */
	_Atomic uint64_t bias_after;   /* ll_now_ns() before which bias stays off */
	atomic_uint rt;                /* realtime writers waiting: count | priority << 16 */
} ll_rw_ll_t;

#define LL_RW_LL_P 0x80000000u
#define LL_RW_LL_G 0x40000000u
#define LL_RW_LL_B 0x20000000u
#define LL_RW_LL_R 0x10000000u
#define LL_RW_LL_W 0x08000000u
#define LL_RW_LL_S 0x04000000u
#define LL_RW_LL_T 0x02000000u
#define LL_RW_LL_READERS 0x01ffffffu

struct ll_rw_ll_config {
	int64_t bias;          /* 1: the fast read path (default), 0: never */
	int64_t inhibit;       /* bias off for inhibit x the revocation's scan (BRAVO's N; 1) */
	int64_t spin_ns;       /* a waiting writer, or a reader behind a revoking writer, polls
				  this long before it sleeps */
};

/* cfg NULL: defaults.  0, or EINVAL for a config out of the knobs' range. */
LL_API int ll_rw_ll_init(ll_rw_ll_t *l, const struct ll_rw_ll_config *cfg);
static inline void ll_rw_ll_destroy(ll_rw_ll_t *l) { (void)l; }
LL_API int ll_rw_ll_rdlock(ll_rw_ll_t *l);
LL_API int ll_rw_ll_tryrdlock(ll_rw_ll_t *l);
LL_API int ll_rw_ll_timedrdlock(ll_rw_ll_t *l, const struct timespec *abs_mono);
LL_API int ll_rw_ll_wrlock(ll_rw_ll_t *l);
LL_API int ll_rw_ll_trywrlock(ll_rw_ll_t *l);
LL_API int ll_rw_ll_timedwrlock(ll_rw_ll_t *l, const struct timespec *abs_mono);
/* 0, or EPERM when the lock is not held. */
LL_API int ll_rw_ll_unlock(ll_rw_ll_t *l);

#endif
