/*
 * park.h: the parking lot behind `ll` and `fifo-tp`: FIFO queues of
 * sleeping waiters kept outside the lock, in a fixed table of buckets hashed
 * by lock address.  Each lock word keeps one bit (LL_LL_PARKED, fifo-tp's
 * QUEUED) saying its queue is not empty, changed only with the lock's bucket
 * held.  A lock may embed the node in a larger one of its own (fifo-tp's
 * waiters publish their heartbeats there).
 *
 * A waiter queues a node on its own stack and sleeps on the node's word, so
 * the thread that dequeues it names it: the promotion is that waiter's
 * alone, and a thread arriving later cannot take it (no queue-jumping).
 *
 * A waker stores 1 into the node's word and calls ll_park_wake(&node->word)
 * after that: the wakee may already have returned, so the waker keeps the
 * address, never the node (a futex wake on a stale private address at worst
 * wakes a futex wait that rechecks its condition).
 */
#ifndef LOCKLAB_LL_PARK_H
#define LOCKLAB_LL_PARK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

struct ll_park_node {
	atomic_uint word;               /* 0 parked, 1 promoted */
	uint32_t queue_len;             /* waiters in the bucket when it was promoted */
	unsigned parity;                /* its parity as heir, set when promoted */
	const void *lock;
	struct ll_park_node *prev, *next;
};

struct ll_park_bucket;

/* The bucket of `lock`, locked. */
struct ll_park_bucket *ll_park_lock(const void *lock);
/* The same without waiting: NULL when another thread has the bucket. */
struct ll_park_bucket *ll_park_trylock(const void *lock);
void ll_park_unlock(struct ll_park_bucket *b);

/* With b held: append node (node->lock set by the caller). */
void ll_park_enqueue(struct ll_park_bucket *b, struct ll_park_node *node);
/* With b held: the oldest node of `lock` (NULL if none), left queued; *more = it has company. */
struct ll_park_node *ll_park_first(struct ll_park_bucket *b, const void *lock, int *more);
/* With b held: the next node of node's lock after node (NULL if none). */
struct ll_park_node *ll_park_next(const struct ll_park_node *node);
/* With b held: unlink node (a waiter leaving); returns 1 when another node of its lock remains. */
int ll_park_remove(struct ll_park_bucket *b, struct ll_park_node *node);
/* Nodes in the bucket, every lock's (a hint of queue length). */
uint32_t ll_park_count(const struct ll_park_bucket *b);

/* Sleep while node->word is 0; 0, or ETIMEDOUT once abs_mono passed. */
int ll_park_sleep(struct ll_park_node *node, const struct timespec *abs_mono);
void ll_park_wake(atomic_uint *word);

#endif
