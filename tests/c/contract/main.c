/*
 * main.c: test_api_contract, the library's promises at its edges (locklab.h:
 * the contract), built with AddressSanitizer and UndefinedBehaviorSanitizer
 * by `make asan` as well as plainly:
 *
 *   test_api_contract mutex   every mutex algorithm: unlock of a lock nobody
 *                             holds, destroy twice, of a zeroed lock, calls on
 *                             a destroyed lock, a failed init
 *   test_api_contract rwlock  the same for every rwlock (EPERM, EINVAL)
 *   test_api_contract api     every entry point of locklab.h, rwlock.h, gate.h,
 *                             monitor.h and ops.h with NULL where it takes a
 *                             pointer (those documented as undefined are
 *                             named, skipped)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suite.h"

int dies_saying(void (*fn)(void *), void *arg, int sig, const char *says)
{
	int fd[2];
	CHECK(pipe(fd) == 0, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		close(fd[1]);
		fn(arg);
		_exit(0);
	}
	close(fd[1]);
	char out[1024];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(out) - 1 && (n = read(fd[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd[0]);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
	if (!WIFSIGNALED(status) || WTERMSIG(status) != sig || !strstr(out, says)) {
		fprintf(stderr, "child: status %#x, stderr: %s\n", status, out);
		return 0;
	}
	return 1;
}

struct call {
	int (*fn)(void *);
	void *arg;
	int rc;
};

static void *call_main(void *p)
{
	struct call *c = p;
	c->rc = c->fn(c->arg);
	return NULL;
}

int on_other_thread(int (*fn)(void *), void *arg)
{
	struct call c = { fn, arg, -1 };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, call_main, &c) == 0, "pthread_create");
	pthread_join(t, NULL);
	return c.rc;
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		{ "mutex", test_mutex, 0 }, { "rwlock", test_rwlock, 0 }, { "api", test_api, 0 },
	};
	const char *arg;
	const struct test_case *t = test_pick(argc, argv, tests, sizeof(tests) / sizeof(tests[0]),
					      "mutex | rwlock | api", &arg);
	if (!t)
		return 2;
	/* A lock an unlock wedged shows as a hang: fail with its name instead. */
	test_watchdog(t->name, 120);
	return t->run();
}
