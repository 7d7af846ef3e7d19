/*
 * sites.c: a program whose mutexes have distinct names, for choosing locks by
 * name (`locklab run --lock-for`) and profiling a swapped program:
 *
 *   hot_lock       static initializer, every thread takes it for HOLD ns of work
 *   cold_locks[4]  static array, each made by pthread_mutex_init, one per thread
 *   make_pool()    one pthread_mutex_init site: NPOOL heap mutexes (a class)
 *   make_spare()   another site: NSPARE heap mutexes, recursive (taken twice)
 *
 * Every mutex guards plain counters; a condvar hand-off runs on hot_lock and
 * on cold_locks[0], so both a chosen and an unchosen mutex wait on a condvar.
 * The threads start against a held hot_lock (main keeps it until all have
 * arrived, and 50 ms more), so it has waiters however loaded the machine is.
 *
 *   sites [THREADS [ITERS [HOLD]]]   prints {"hot": N, "cold": N, "pool": N, "spare": N,
 *                             "handoffs": N, "expected": N} on stdout
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NCOLD 4
#define NPOOL 16
#define NSPARE 3

static pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cold_locks[NCOLD];
static pthread_cond_t hot_cond = PTHREAD_COND_INITIALIZER, cold_cond = PTHREAD_COND_INITIALIZER;
static long hot_count, cold_count[NCOLD], handoffs, hot_token, cold_token;

struct guarded {
	pthread_mutex_t m;
	long count;
};
static struct guarded *pool, *spare;
/* Not static: their mutex counts stay arguments, each loop one init call site. */
struct guarded *make_pool(int n);
struct guarded *make_spare(int n);
static long iters, hold_ns;

static void work_ns(long ns)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

__attribute__((noinline, noclone)) struct guarded *make_pool(int n)
{
	struct guarded *g = calloc((size_t)n, sizeof(*g));
	for (int i = 0; g && i < n; i++)
		pthread_mutex_init(&g[i].m, NULL);
	return g;
}

__attribute__((noinline, noclone)) struct guarded *make_spare(int n)
{
	struct guarded *g = calloc((size_t)n, sizeof(*g));
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	for (int i = 0; g && i < n; i++)
		pthread_mutex_init(&g[i].m, &a);
	pthread_mutexattr_destroy(&a);
	return g;
}

/* One token passed through a condvar: wait until it is ours, then pass it on. */
static void handoff(pthread_mutex_t *m, pthread_cond_t *c, long *token, long me, long nthreads)
{
	pthread_mutex_lock(m);
	while (*token % nthreads != me)
		pthread_cond_wait(c, m);
	(*token)++;
	if (m == &hot_lock)
		handoffs++;
	pthread_cond_broadcast(c);
	pthread_mutex_unlock(m);
}

static long nthreads;
static atomic_long arrived;

static void *worker(void *arg)
{
	long id = (long)arg;
	atomic_fetch_add(&arrived, 1);
	pthread_mutex_lock(&hot_lock);     /* held by main: every thread waits here once */
	pthread_mutex_unlock(&hot_lock);
	for (long i = 0; i < iters; i++) {
		pthread_mutex_lock(&hot_lock);
		hot_count++;
		work_ns(hold_ns);
		pthread_mutex_unlock(&hot_lock);

		pthread_mutex_lock(&cold_locks[id % NCOLD]);
		cold_count[id % NCOLD]++;
		pthread_mutex_unlock(&cold_locks[id % NCOLD]);

		struct guarded *p = &pool[(id + i) % NPOOL];
		pthread_mutex_lock(&p->m);
		p->count++;
		pthread_mutex_unlock(&p->m);

		struct guarded *s = &spare[(id + i) % NSPARE];
		pthread_mutex_lock(&s->m);
		pthread_mutex_lock(&s->m);
		s->count++;
		pthread_mutex_unlock(&s->m);
		pthread_mutex_unlock(&s->m);

		if (i % 64 == 0) {
			handoff(&hot_lock, &hot_cond, &hot_token, id, nthreads);
			handoff(&cold_locks[0], &cold_cond, &cold_token, id, nthreads);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	nthreads = argc > 1 ? atol(argv[1]) : 4;
	iters = argc > 2 ? atol(argv[2]) : 2000;
	hold_ns = argc > 3 ? atol(argv[3]) : 1000;
	if (nthreads < 1 || nthreads > 64 || iters < 1 || hold_ns < 0)
		return 2;
	for (int i = 0; i < NCOLD; i++)
		pthread_mutex_init(&cold_locks[i], NULL);
	pool = make_pool(NPOOL);
	spare = make_spare(NSPARE);
	if (!pool || !spare)
		return 1;
	pthread_t t[64];
	pthread_mutex_lock(&hot_lock);
	for (long i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	while (atomic_load(&arrived) < nthreads)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
	pthread_mutex_unlock(&hot_lock);
	for (long i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	long cold = 0, npool = 0, nspare = 0;
	for (int i = 0; i < NCOLD; i++)
		cold += cold_count[i];
	for (int i = 0; i < NPOOL; i++)
		npool += pool[i].count;
	for (int i = 0; i < NSPARE; i++)
		nspare += spare[i].count;
	printf("{\"hot\": %ld, \"cold\": %ld, \"pool\": %ld, \"spare\": %ld, \"handoffs\": %ld, "
	       "\"expected\": %ld, \"expected_handoffs\": %ld}\n",
	       hot_count, cold, npool, nspare, handoffs, nthreads * iters,
	       nthreads * ((iters + 63) / 64));
	return 0;
}
