/*
 * park.c: the parking lot's buckets (interface in park.h).
 *
 * 256 buckets of one cache line each, hashed by lock address.  A bucket's
 * lock is the library's futex mutex with a short spin: its critical
 * sections are a few pointer moves.  A forked child gets fresh buckets: the
 * threads queued in them do not exist there.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>

#include "locklab/locks/futex.h"
#include "core/futex_sys.h"
#include "locks/ll/park.h"

enum { BUCKET_BITS = 8, BUCKETS = 1 << BUCKET_BITS };

struct ll_park_bucket {
	alignas(64) ll_futex_t mu;
	struct ll_park_node *head, *tail;
	uint32_t count;
};

static struct ll_park_bucket buckets[BUCKETS];
static pthread_once_t buckets_once = PTHREAD_ONCE_INIT;

static void buckets_init(void)
{
	const struct ll_futex_config cfg = { .spin_ns = 1000, .spin = LL_SPIN_PAUSE };
	for (int i = 0; i < BUCKETS; i++) {
		ll_futex_init(&buckets[i].mu, &cfg);
		buckets[i].head = buckets[i].tail = NULL;
		buckets[i].count = 0;
	}
}

static void buckets_once_init(void)
{
	buckets_init();
	pthread_atfork(NULL, NULL, buckets_init);
}

static struct ll_park_bucket *bucket_of(const void *lock)
{
	pthread_once(&buckets_once, buckets_once_init);
	/* Fibonacci hashing of the line address. */
	uint64_t h = ((uint64_t)(uintptr_t)lock >> 6) * UINT64_C(0x9e3779b97f4a7c15);
	return &buckets[h >> (64 - BUCKET_BITS)];
}

struct ll_park_bucket *ll_park_lock(const void *lock)
{
	struct ll_park_bucket *b = bucket_of(lock);
	ll_futex_lock(&b->mu);
	return b;
}

struct ll_park_bucket *ll_park_trylock(const void *lock)
{
	struct ll_park_bucket *b = bucket_of(lock);
	return ll_futex_trylock(&b->mu) == 0 ? b : NULL;
}

void ll_park_unlock(struct ll_park_bucket *b)
{
	ll_futex_unlock(&b->mu);
}

void ll_park_enqueue(struct ll_park_bucket *b, struct ll_park_node *node)
{
	node->next = NULL;
	node->prev = b->tail;
	if (b->tail)
		b->tail->next = node;
	else
		b->head = node;
	b->tail = node;
	b->count++;
}

static void unlink_node(struct ll_park_bucket *b, struct ll_park_node *node)
{
	if (node->prev)
		node->prev->next = node->next;
	else
		b->head = node->next;
	if (node->next)
		node->next->prev = node->prev;
	else
		b->tail = node->prev;
	b->count--;
}

/* The first node of `lock` from n on, or NULL. */
static struct ll_park_node *find_from(struct ll_park_node *n, const void *lock)
{
	while (n && n->lock != lock)
		n = n->next;
	return n;
}

struct ll_park_node *ll_park_first(struct ll_park_bucket *b, const void *lock, int *more)
{
	struct ll_park_node *node = find_from(b->head, lock);
	/* Older nodes of this lock cannot exist: only later ones need a look. */
	*more = node && find_from(node->next, lock) != NULL;
	return node;
}

struct ll_park_node *ll_park_next(const struct ll_park_node *node)
{
	return find_from(node->next, node->lock);
}

int ll_park_remove(struct ll_park_bucket *b, struct ll_park_node *node)
{
	unlink_node(b, node);
	return find_from(b->head, node->lock) != NULL;
}

uint32_t ll_park_count(const struct ll_park_bucket *b)
{
	return b->count;
}

int ll_park_sleep(struct ll_park_node *node, const struct timespec *abs_mono)
{
	while (atomic_load_explicit(&node->word, memory_order_acquire) == 0) {
		if (ll_sys_futex_wait(&node->word, 0, abs_mono) == ETIMEDOUT)
			return atomic_load_explicit(&node->word, memory_order_acquire) ? 0 : ETIMEDOUT;
	}
	return 0;
}

void ll_park_wake(atomic_uint *word)
{
	ll_sys_futex_wake(word, 1);
}
