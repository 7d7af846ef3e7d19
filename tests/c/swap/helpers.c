/*
 * helpers.c: what test_swap's cases share (swap_test.h).
 */
#include <sys/wait.h>

#include "swap_test.h"

const char *arg;

int64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct timespec after_ns(clockid_t clk, int64_t ns)
{
	int64_t t = now_ns(clk) + ns;
	struct timespec ts = { (time_t)(t / 1000000000LL), (long)(t % 1000000000LL) };
	return ts;
}

void spawn(void *(*fn)(void *), void *p, pthread_t *t)
{
	CHECK(pthread_create(t, NULL, fn, p) == 0, "pthread_create");
}

void *join(pthread_t t)
{
	void *r;
	CHECK(pthread_join(t, &r) == 0, "pthread_join");
	return r;
}

void *try_is_busy(void *p)
{
	return (void *)(intptr_t)pthread_mutex_trylock(p);
}

int init_typed(pthread_mutex_t *m, int type)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	int rc = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return rc;
}

long swap_record_number(const char *path, pid_t pid, const char *key)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[4096], want[64], name[128];
	long v = -1;
	snprintf(want, sizeof(want), "{\"pid\": %d,", (int)pid);
	snprintf(name, sizeof(name), "\"%s\": ", key);
	while (fgets(line, sizeof(line), f)) {
		const char *k = strstr(line, name);
		if (!strncmp(line, want, strlen(want)) && k)
			v = atol(k + strlen(name));
	}
	fclose(f);
	return v;
}

void wait_child_ok(pid_t pid, const char *what)
{
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child status %#x", what, status);
}
