/*
 * names.c: the program the profiler's naming tests run (tests/python/
 * test_profile_names.py): where its waits happen is known by construction.
 *
 *   names SECONDS THREADS
 *
 * - `hot_lock`, a static mutex, taken by worker() at two call sites of its own
 *   (LOCK_SITE_A and LOCK_SITE_B mark their lines), held ~20 us each time;
 * - a futex word on the heap, slept on by futex_sleep(), a static function,
 *   called from take_word(), an exported one.  Built with -rdynamic and then
 *   stripped, the program names take_word (in .dynsym) but not futex_sleep.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint *word;   /* 0 free, 1 held, 2 held with sleepers */
static atomic_int stop;

static void spin_ns(long ns)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static __attribute__((noinline)) void futex_sleep(atomic_uint *w)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

void take_word(void);
void give_word(void);
void *worker(void *arg);

__attribute__((noinline)) void take_word(void)
{
	unsigned c = 0;
	if (atomic_compare_exchange_strong(word, &c, 1))
		return;
	if (c != 2)
		c = atomic_exchange(word, 2);
	while (c != 0) {
		futex_sleep(word);
		c = atomic_exchange(word, 2);
	}
}

__attribute__((noinline)) void give_word(void)
{
	if (atomic_exchange(word, 0) == 2)
		syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void *worker(void *arg)
{
	(void)arg;
	for (unsigned i = 0; !atomic_load(&stop); i++) {
		if (i & 1) {
			pthread_mutex_lock(&hot_lock); /* LOCK_SITE_A */
			spin_ns(20000);
			pthread_mutex_unlock(&hot_lock);
		} else {
			pthread_mutex_lock(&hot_lock); /* LOCK_SITE_B */
			spin_ns(20000);
			pthread_mutex_unlock(&hot_lock);
		}
		take_word();
		spin_ns(20000);
		give_word();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.5;
	int n = argc > 2 ? atoi(argv[2]) : 4;
	if (n < 1 || n > 64)
		n = 4;
	word = calloc(1, sizeof(*word));
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	usleep((useconds_t)(secs * 1e6));
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(word);
	return 0;
}
