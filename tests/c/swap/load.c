/*
 * load.c: programs under load: thousands of threads alive at once, and an
 * allocation-heavy program (its allocator may take mutexes itself).
 */
#include <sys/resource.h>

#include "swap_test.h"

/* --- thousands of threads alive at once on a few mutexes and a condvar */

#define MT_MUTEXES 3
#define MT_ROUNDS 5
static pthread_mutex_t mt_m[MT_MUTEXES] = { PTHREAD_MUTEX_INITIALIZER,
	PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };
static pthread_mutex_t mt_gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mt_cond = PTHREAD_COND_INITIALIZER;
static long mt_count[MT_MUTEXES];
static int mt_threads, mt_arrived, mt_released;

static void *mt_main(void *p)
{
	long id = (long)(intptr_t)p;
	for (int r = 0; r < MT_ROUNDS; r++) {
		int i = (int)((id + r) % MT_MUTEXES);
		CHECK(pthread_mutex_lock(&mt_m[i]) == 0, "lock");
		mt_count[i]++;
		CHECK(pthread_mutex_unlock(&mt_m[i]) == 0, "unlock");
	}
	/* Nobody leaves before all have arrived: all are alive at once.  Woken one
	 * by one (each signals the next), so no herd needs the gate at once. */
	CHECK(pthread_mutex_lock(&mt_gate) == 0, "lock");
	if (++mt_arrived == mt_threads)
		pthread_cond_signal(&mt_cond);
	while (mt_arrived < mt_threads)
		CHECK(pthread_cond_wait(&mt_cond, &mt_gate) == 0, "wait");
	mt_released++;
	pthread_cond_signal(&mt_cond);
	CHECK(pthread_mutex_unlock(&mt_gate) == 0, "unlock");
	return NULL;
}

/* Why n threads cannot run here, or NULL. */
static const char *thread_limit(int n, char *why, size_t len)
{
	struct rlimit rl;
	long max = -1;
	FILE *f = fopen("/proc/sys/kernel/threads-max", "r");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = -1;
		fclose(f);
	}
	if (max >= 0 && max < n + 64) {
		snprintf(why, len, "kernel.threads-max is %ld", max);
		return why;
	}
	if (!getrlimit(RLIMIT_NPROC, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)n + 64) {
		snprintf(why, len, "ulimit -u is %ld", (long)rl.rlim_cur);
		return why;
	}
	f = fopen("/sys/fs/cgroup/pids.max", "r");
	if (f) {
		char v[32] = "";
		if (fscanf(f, "%31s", v) == 1 && strcmp(v, "max") && atol(v) < n + 64) {
			snprintf(why, len, "the cgroup's pids.max is %s", v);
			fclose(f);
			return why;
		}
		fclose(f);
	}
	return NULL;
}

int manythreads(void)
{
	int n = arg ? atoi(arg) : 4000;
	char why[128];
	CHECK(n > 0, "thread count %d", n);
	if (thread_limit(n, why, sizeof(why))) {
		printf("skipped: %d threads cannot run here: %s\n", n, why);
		return 77;
	}
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	CHECK(t, "calloc");
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	mt_threads = n;
	for (int i = 0; i < n; i++) {
		int rc = pthread_create(&t[i], &a, mt_main, (void *)(intptr_t)i);
		CHECK(rc == 0, "pthread_create of thread %d: %s", i, strerror(rc));
	}
	pthread_attr_destroy(&a);
	for (int i = 0; i < n; i++)
		join(t[i]);
	long total = 0;
	for (int i = 0; i < MT_MUTEXES; i++)
		total += mt_count[i];
	CHECK(total == (long)n * MT_ROUNDS, "%ld increments, expected %ld", total,
	      (long)n * MT_ROUNDS);
	CHECK(mt_released == n, "%d of %d released", mt_released, n);
	free(t);
	return 0;
}

/* --- an allocation-heavy program: blocks made in one thread, freed in another */

#define AL_THREADS 4
#define AL_SLOTS 64
static pthread_mutex_t al_m = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *al_box[AL_SLOTS];
static size_t al_size[AL_SLOTS];
static long al_rounds;

static void al_fill(unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(n + i);
}

static int al_intact(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)(n + i))
			return 0;
	return 1;
}

static void *al_main(void *p)
{
	unsigned seed = (unsigned)(intptr_t)p * 2654435761u + 1;
	for (long r = 0; r < al_rounds; r++) {
		seed = seed * 1103515245u + 12345u;
		size_t n = 1 + (seed >> 8) % (r % 16 == 0 ? 65536 : 512);
		unsigned char *b = malloc(n);
		CHECK(b, "malloc %zu", n);
		al_fill(b, n);
		if (r % 8 == 0) {
			unsigned char *g = realloc(b, n * 2);
			CHECK(g, "realloc");
			b = g;
		}
		/* Swap it into the shared box: the block found there was made by any thread. */
		int k = (int)((seed >> 4) % AL_SLOTS);
		CHECK(pthread_mutex_lock(&al_m) == 0, "lock");
		unsigned char *old = al_box[k];
		size_t old_n = al_size[k];
		al_box[k] = b;
		al_size[k] = n;
		CHECK(pthread_mutex_unlock(&al_m) == 0, "unlock");
		if (old) {
			CHECK(al_intact(old, old_n), "a block of %zu bytes was overwritten", old_n);
			free(old);
		}
	}
	return NULL;
}

int allocs(void)
{
	al_rounds = test_scaled(20000);
	char dummy[64];
	test_run_threads(AL_THREADS, al_main, dummy, 0);
	for (int k = 0; k < AL_SLOTS; k++) {
		if (al_box[k])
			CHECK(al_intact(al_box[k], al_size[k]), "block %d overwritten", k);
		free(al_box[k]);
	}
	/* And once across a fork: the allocator's own fork handlers lock its mutexes. */
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		void *b = malloc(100);
		pthread_mutex_lock(&al_m);
		pthread_mutex_unlock(&al_m);
		free(b);
		_exit(b ? 0 : 1);
	}
	wait_child_ok(pid, "allocs");
	return 0;
}
