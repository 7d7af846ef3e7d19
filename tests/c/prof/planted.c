/*
 * planted.c: a program with one planted hot lock among many cold ones, a
 * read-mostly rwlock, a condvar queue and a futex lock made with
 * syscall(SYS_futex), which counts its own contention so that a profile of
 * it can be checked against the truth.
 *
 *   planted [SECONDS [THREADS [malloc]]]   prints {"hot_contended": N, ...} on stdout
 *
 * With "malloc" every iteration also allocates and frees (for the allocator tests:
 * jemalloc and tcmalloc lock inside malloc, through pthread mutexes or futexes).
 *
 * Hot: every iteration takes `hot_lock` for ~2 us; a failed trylock first
 * counts the contention, then pthread_mutex_lock blocks.  The profiler
 * counts the lock calls that found it held, so its count can only be lower,
 * by the rare release between the program's trylock and its own.
 * Cold: 64 static and 64 heap mutexes, each thread on its own share.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NCOLD 64
#define QUEUE 16

static pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cold_locks[NCOLD];
static pthread_mutex_t *heap_locks;
static pthread_rwlock_t table_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static atomic_uint futex_word;   /* 0 free, 1 held, 2 held with sleepers */

static int queue[QUEUE], queue_len;
static atomic_int stop;
static int use_malloc;
static atomic_long hot_contended, hot_acquired, futex_sleeps;
static long table[8];

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void work_ns(long ns)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static void fx_lock(void)
{
	unsigned c = 0;
	if (atomic_compare_exchange_strong(&futex_word, &c, 1))
		return;
	if (c != 2)
		c = atomic_exchange(&futex_word, 2);
	while (c != 0) {
		if (syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0) == 0)
			atomic_fetch_add(&futex_sleeps, 1);
		c = atomic_exchange(&futex_word, 2);
	}
}

static void fx_unlock(void)
{
	if (atomic_exchange(&futex_word, 0) == 2)
		syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	for (long i = 0; !atomic_load(&stop); i++) {
		if (pthread_mutex_trylock(&hot_lock) == EBUSY) {
			atomic_fetch_add(&hot_contended, 1);
			pthread_mutex_lock(&hot_lock);
		}
		atomic_fetch_add(&hot_acquired, 1);
		work_ns(2000);
		pthread_mutex_unlock(&hot_lock);

		/* Cold: each thread its own eighth of the cold locks. */
		pthread_mutex_t *c = &cold_locks[(id * 8 + i % 8) % NCOLD];
		pthread_mutex_lock(c);
		pthread_mutex_unlock(c);
		c = &heap_locks[(id * 8 + i % 8) % NCOLD];
		pthread_mutex_lock(c);
		pthread_mutex_unlock(c);

		if (i % 16 == 0) {
			pthread_rwlock_wrlock(&table_rw);
			table[i % 8]++;
			work_ns(500);
			pthread_rwlock_unlock(&table_rw);
		} else {
			pthread_rwlock_rdlock(&table_rw);
			work_ns(200);
			pthread_rwlock_unlock(&table_rw);
		}
		if (use_malloc) {
			char *p = malloc((size_t)(16 + (i * 37 + id * 101) % 4000));
			char *q = p ? realloc(p, (size_t)(32 + (i * 53) % 9000)) : NULL;
			free(q ? q : p);
		}
		if (i % 4 == 0) {
			fx_lock();
			work_ns(300);
			fx_unlock();
		}
	}
	return NULL;
}

static void *producer(void *arg)
{
	(void)arg;
	for (int v = 0; !atomic_load(&stop); v++) {
		pthread_mutex_lock(&queue_lock);
		while (queue_len == QUEUE && !atomic_load(&stop))
			pthread_cond_wait(&queue_cond, &queue_lock);
		queue[queue_len++] = v;
		pthread_cond_broadcast(&queue_cond);
		work_ns(1000);   /* still holding: the woken consumer must wait for the mutex */
		pthread_mutex_unlock(&queue_lock);
	}
	pthread_mutex_lock(&queue_lock);
	pthread_cond_broadcast(&queue_cond);
	pthread_mutex_unlock(&queue_lock);
	return NULL;
}

static void *consumer(void *arg)
{
	long *got = arg;
	for (;;) {
		pthread_mutex_lock(&queue_lock);
		while (queue_len == 0 && !atomic_load(&stop)) {
			struct timespec dl;
			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_nsec += 50 * 1000000;
			if (dl.tv_nsec >= 1000000000) {
				dl.tv_sec++;
				dl.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&queue_cond, &queue_lock, &dl);
		}
		if (queue_len == 0) {
			pthread_mutex_unlock(&queue_lock);
			return NULL;
		}
		queue_len--;
		(*got)++;
		pthread_cond_broadcast(&queue_cond);
		pthread_mutex_unlock(&queue_lock);
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	int nthreads = argc > 2 ? atoi(argv[2]) : 4;
	use_malloc = argc > 3 && !strcmp(argv[3], "malloc");
	pthread_t t[64], prod, cons[2];
	long got[2] = { 0, 0 };

	if (nthreads < 1 || nthreads > 64)
		nthreads = 4;
	heap_locks = calloc(NCOLD, sizeof(*heap_locks));
	if (!heap_locks)
		return 1;
	for (int i = 0; i < NCOLD; i++) {
		pthread_mutex_init(&cold_locks[i], NULL);
		pthread_mutex_init(&heap_locks[i], NULL);
	}
	for (long i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	pthread_create(&prod, NULL, producer, NULL);
	for (int i = 0; i < 2; i++)
		pthread_create(&cons[i], NULL, consumer, &got[i]);
	double end = now_s() + seconds;
	while (now_s() < end)
		usleep(10000);
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	pthread_join(prod, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(cons[i], NULL);
	printf("{\"hot_contended\": %ld, \"hot_acquired\": %ld, \"futex_sleeps\": %ld, "
	       "\"consumed\": %ld}\n",
	       atomic_load(&hot_contended), atomic_load(&hot_acquired), atomic_load(&futex_sleeps),
	       got[0] + got[1]);
	return 0;
}
