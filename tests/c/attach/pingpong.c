/*
 * pingpong.c: two threads hand a turn back and forth through one futex word,
 * a known number of times, counting their own waits: the attach tracer's exact
 * count, and what one traced futex call costs.
 *
 *   attach_pingpong ROUNDS [wait]
 *
 * With "wait" it starts on SIGUSR1 (the tracer attaches first), or gives up
 * after a minute.  It prints
 * {"rounds": N, "waits": W, "ns_per_round": T}: W counts the turns a thread
 * waited for in the kernel (at least one futex_wait call; the tracer's unit,
 * a wait again at once on the same word being the same one), T the wall time
 * of a round (two turns, each a wake and usually a wait).
 */
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_uint turn;       /* whose turn: 0 or 1 */
static long rounds;
static atomic_long waits;

static void wait_for(unsigned mine)
{
	int waited = 0;
	unsigned now;
	while ((now = atomic_load(&turn)) != mine) {
		syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, now, NULL, NULL, 0);
		waited = 1;
	}
	if (waited)
		atomic_fetch_add(&waits, 1);
}

static void give(unsigned other)
{
	atomic_store(&turn, other);
	syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *player(void *arg)
{
	unsigned mine = (unsigned)(long)arg;
	for (long i = 0; i < rounds; i++) {
		wait_for(mine);
		give(!mine);
	}
	return NULL;
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atol(argv[1]) : 0;
	if (rounds <= 0) {
		fprintf(stderr, "usage: attach_pingpong ROUNDS [wait]\n");
		return 2;
	}
	if (argc > 2 && !strcmp(argv[2], "wait")) {
		sigset_t go;
		sigemptyset(&go);
		sigaddset(&go, SIGUSR1);
		sigprocmask(SIG_BLOCK, &go, NULL);
		printf("ready\n");
		fflush(stdout);
		struct timespec patience = { 60, 0 };
		if (sigtimedwait(&go, NULL, &patience) != SIGUSR1)
			return 1;   /* nobody came */
	}
	pthread_t t[2];
	long long t0 = now_ns();
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, player, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	long long ns = now_ns() - t0;
	printf("{\"rounds\": %ld, \"waits\": %ld, \"ns_per_round\": %lld}\n", rounds,
	       atomic_load(&waits), ns / rounds);
	return 0;
}
