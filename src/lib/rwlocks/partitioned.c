/*
 * partitioned.c: n glibc rwlocks, readers by thread, writers all (drawn in
 * locklab/rwlocks/partitioned.h).
 */
#include <errno.h>
#include <stdalign.h>

#include "core/mem.h"
#include "core/sched.h"
#include "locklab/rwlocks/partitioned.h"
#include "rwlocks/rwalgo.h"

struct ll_rw_part {
	alignas(64) ll_rw_pthread_t rw;
};

#define MAX_PARTS 1024

/* The thread's number, 1 + the count of threads that read before it; 0: none yet. */
static _Thread_local uint32_t thread_no __attribute__((tls_model("initial-exec")));
static atomic_uint threads_seen;

static struct ll_rw_part *my_part(ll_rw_partitioned_t *l)
{
	uint32_t no = thread_no;
	if (__builtin_expect(no == 0, 0))
		thread_no = no = atomic_fetch_add_explicit(&threads_seen, 1, memory_order_relaxed) + 1;
	return &l->parts[(no - 1) % l->n];
}

int ll_rw_partitioned_init(ll_rw_partitioned_t *l, const struct ll_rw_partitioned_config *cfg)
{
	struct ll_rw_partitioned_config def;
	cfg = LL_RW_CONFIG_OR_DEFAULTS(partitioned, cfg, def);
	if (cfg->n < 1 || cfg->n > MAX_PARTS || cfg->prefer < 0 || cfg->prefer > 1)
		return EINVAL;
	l->n = (uint32_t)cfg->n;
	atomic_init(&l->writer, 0);
	ll_futex_init(&l->writers, NULL);
	l->parts = ll_mem_alloc(sizeof(*l->parts) * l->n);
	if (!l->parts)
		return ENOMEM;
	const struct ll_rw_pthread_config pc = { .prefer = cfg->prefer };
	for (uint32_t i = 0; i < l->n; i++) {
		int rc = ll_rw_pthread_init(&l->parts[i].rw, &pc);
		if (rc) {
			while (i--)
				ll_rw_pthread_destroy(&l->parts[i].rw);
			ll_mem_free(l->parts, sizeof(*l->parts) * l->n);
			return rc;
		}
	}
	return 0;
}

/* Twice, or on a zeroed lock: no partitions, nothing to free. */
void ll_rw_partitioned_destroy(ll_rw_partitioned_t *l)
{
	for (uint32_t i = 0; i < l->n; i++)
		ll_rw_pthread_destroy(&l->parts[i].rw);
	ll_mem_free(l->parts, sizeof(*l->parts) * l->n);
	l->parts = NULL;
	l->n = 0;
}

int ll_rw_partitioned_rdlock(ll_rw_partitioned_t *l)
{
	return ll_rw_pthread_rdlock(&my_part(l)->rw);
}

int ll_rw_partitioned_tryrdlock(ll_rw_partitioned_t *l)
{
	return ll_rw_pthread_tryrdlock(&my_part(l)->rw);
}

int ll_rw_partitioned_timedrdlock(ll_rw_partitioned_t *l, const struct timespec *abs_mono)
{
	return ll_rw_pthread_timedrdlock(&my_part(l)->rw, abs_mono);
}

/*
 * A partition this writer holds: glibc's unlock itself (ll_rw_pthread_unlock's
 * look for an unheld lock would be n loads the writer knows the answer of).
 */
static void part_release(ll_rw_partitioned_t *l, uint32_t i)
{
	pthread_rwlock_unlock(&l->parts[i].rw.rw);
}

/* Partition i write-locked, waiting until abs_mono (NULL: for good). */
static int part_wait(ll_rw_partitioned_t *l, uint32_t i, const struct timespec *abs_mono)
{
	ll_rw_pthread_t *p = &l->parts[i].rw;
	return abs_mono ? ll_rw_pthread_timedwrlock(p, abs_mono) : ll_rw_pthread_wrlock(p);
}

/* Partitions `from` .. n-1 in order, waiting for each; on failure 0 .. from-1 too go back. */
static int wr_in_order(ll_rw_partitioned_t *l, uint32_t from, const struct timespec *abs_mono)
{
	for (uint32_t i = from; i < l->n; i++) {
		int rc = part_wait(l, i, abs_mono);
		if (rc) {
			while (i--)
				part_release(l, i);
			return rc;
		}
	}
	return 0;
}

/*
 * A realtime writer that must wait (partitioned.h): every free partition past
 * `busy` (0 .. busy-1 are held already) at once, then the busy ones in order.
 */
static int wr_realtime(ll_rw_partitioned_t *l, uint32_t busy, const struct timespec *abs_mono)
{
	uint64_t held[MAX_PARTS / 64] = { 0 };
	for (uint32_t i = 0; i < busy; i++)
		held[i / 64] |= 1ull << (i % 64);
	for (uint32_t i = busy + 1; i < l->n; i++)
		if (ll_rw_pthread_trywrlock(&l->parts[i].rw) == 0)
			held[i / 64] |= 1ull << (i % 64);
	for (uint32_t i = busy; i < l->n; i++) {
		if (held[i / 64] & 1ull << (i % 64))
			continue;
		int rc = part_wait(l, i, abs_mono);
		if (rc) {
			for (uint32_t j = 0; j < l->n; j++)
				if (held[j / 64] & 1ull << (j % 64))
					part_release(l, j);
			return rc;
		}
		held[i / 64] |= 1ull << (i % 64);
	}
	return 0;
}

/* Every partition (abs_mono NULL: wait; try: do not); on failure none is kept. */
static int wr(ll_rw_partitioned_t *l, const struct timespec *abs_mono, int try)
{
	int rc = try ? ll_futex_trylock(&l->writers)
		     : abs_mono ? ll_futex_timedlock(&l->writers, abs_mono)
				: (ll_futex_lock(&l->writers), 0);
	if (rc)
		return rc;
	uint32_t i = 0;
	while (i < l->n && ll_rw_pthread_trywrlock(&l->parts[i].rw) == 0)
		i++;
	if (i < l->n) {
		if (try) {
			while (i--)
				part_release(l, i);
			rc = EBUSY;
		} else {
			rc = ll_sched_rt_priority() ? wr_realtime(l, i, abs_mono)
						    : wr_in_order(l, i, abs_mono);
		}
	}
	ll_futex_unlock(&l->writers);
	if (rc)
		return rc;
	atomic_store_explicit(&l->writer, 1, memory_order_relaxed);
	return 0;
}

int ll_rw_partitioned_wrlock(ll_rw_partitioned_t *l)
{
	return wr(l, NULL, 0);
}

int ll_rw_partitioned_trywrlock(ll_rw_partitioned_t *l)
{
	return wr(l, NULL, 1);
}

int ll_rw_partitioned_timedwrlock(ll_rw_partitioned_t *l, const struct timespec *abs_mono)
{
	return wr(l, abs_mono, 0);
}

int ll_rw_partitioned_unlock(ll_rw_partitioned_t *l)
{
	/* Only the writer can see its own 1: no reader is inside while it is set. */
	if (atomic_load_explicit(&l->writer, memory_order_relaxed)) {
		atomic_store_explicit(&l->writer, 0, memory_order_relaxed);
		for (uint32_t i = l->n; i--;)
			part_release(l, i);
		return 0;
	}
	return ll_rw_pthread_unlock(&my_part(l)->rw);
}

static const struct ll_knob knobs[] = {
	LL_KNOB_INT(struct ll_rw_partitioned_config, n, 32, 1, MAX_PARTS,
		    "partitions, each a glibc rwlock on its own line (MySQL's LOCK_grant: 32)"),
	LL_RW_KNOB_PREFER(struct ll_rw_partitioned_config,
			  "each partition's glibc kind: reader or writer-nonrecursive"),
};

LL_RWLOCK_ADAPTERS(partitioned, ll_rw_partitioned_t)

const struct ll_rwlock_ops ll_rw_partitioned_ops = {
	.name = "partitioned",
	.summary = "MySQL's LOCK_grant fix: n glibc rwlocks, a reader takes its thread's, a "
		   "writer all",
	.flags = LL_ALGO_PARKS | LL_ALGO_PREEMPT_SAFE,
	.knobs = knobs, .nknobs = LL_COUNT(knobs),
	.config_size = sizeof(struct ll_rw_partitioned_config),
	LL_RWLOCK_FUNCS(partitioned, ll_rw_partitioned_t),
};
