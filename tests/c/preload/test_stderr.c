/*
 * test_stderr.c: the preloaded libraries write to the stderr the program had
 * when they loaded (src/preload/stderr.h), never into a file the program
 * opened since.  One program, two roles:
 *
 *   test_stderr LIBRARY SCENARIO       runs itself as the victim, LIBRARY
 *                                      preloaded (swap: its --stats line;
 *                                      prof: its exit report), stderr a
 *                                      pipe it reads; then checks the data
 *                                      file holds the victim's data alone
 *                                      and the report reached the pipe
 *   test_stderr --victim SCENARIO DATA the program: locks from two threads
 *                                      after it did SCENARIO to its fds
 *
 * Scenarios: close2 (close fd 2, open DATA: it becomes fd 2), close1 (the
 * same with fd 1), dup2 (DATA dup2'd onto fd 2), closefrom (close_range from
 * 3, then DATA on every number from 100 to 131: the library's duplicate is
 * gone and its number reused; fd 2 is still stderr), closeall (every fd
 * closed, DATA on 0, 1, 2 and 100 to 131: nothing is stderr any more, the
 * report is lost, not written into DATA), fork (close2 in a fork child: both
 * report), exec (an exec image gets no duplicate of the first's).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static const char DATA[] = "the program's own data\n";

static pthread_mutex_t victim_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *p)
{
	for (int i = 0; i < 20000; i++) {
		pthread_mutex_lock(&victim_lock);
		pthread_mutex_unlock(&victim_lock);
	}
	return p;
}

static void work(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
}

/* DATA opened at the lowest free number, written once: what the file must hold. */
static int open_data(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND);
	if (fd < 0 || write(fd, DATA, sizeof(DATA) - 1) != (ssize_t)(sizeof(DATA) - 1))
		_exit(20);
	return fd;
}

static void close_from(unsigned first)
{
	if (syscall(SYS_close_range, first, ~0u, 0))
		_exit(21);
}

static int victim(const char *scenario, const char *data)
{
	if (!strcmp(scenario, "close2") || !strcmp(scenario, "close1")) {
		int fd = scenario[5] - '0';
		close(fd);
		if (open_data(data) != fd)
			return 22;
	} else if (!strcmp(scenario, "dup2")) {
		int fd = open_data(data);
		dup2(fd, 2);
		close(fd);
	} else if (!strcmp(scenario, "closefrom") || !strcmp(scenario, "closeall")) {
		int all = !strcmp(scenario, "closeall");
		close_from(all ? 0 : 3);
		int fd = open_data(data);
		for (int n = all ? 1 : 100; n < 132; n++)
			if (n < 3 || n >= 100)
				dup2(fd, n);
	} else if (!strcmp(scenario, "fork")) {
		pid_t pid = fork();
		if (pid == 0) {
			close(2);
			if (open_data(data) != 2)
				_exit(22);
			work();
			exit(0);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			return 23;
	} else if (!strcmp(scenario, "exec")) {
		execl("/proc/self/exe", "test_stderr", "--victim", "exec-image", data, (char *)NULL);
		return 24;
	} else if (!strcmp(scenario, "exec-image")) {
		/* The library of this image kept its duplicate at 100; the first image's is gone. */
		if (fcntl(101, F_GETFD) != -1 || errno != EBADF)
			return 25;
	} else {
		return 26;
	}
	work();
	return 0;
}

/* The whole of what fd gives until its end. */
static size_t read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return got;
}

static size_t count(const char *s, const char *word)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, word)); p += strlen(word))
		n++;
	return n;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--victim"))
		return victim(argv[2], argv[3]);
	if (argc != 4) {
		fprintf(stderr, "usage: test_stderr swap|prof LIBRARY SCENARIO\n");
		return 2;
	}
	const char *kind = argv[1], *library = argv[2], *scenario = argv[3];
	int swap = !strcmp(kind, "swap");
	char data[] = "/tmp/locklab-stderr-XXXXXX";
	int dfd = mkstemp(data);
	int pipefd[2];
	CHECK(dfd >= 0 && pipe(pipefd) == 0, "mkstemp, pipe: %s", strerror(errno));
	close(dfd);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		close(pipefd[1]);
		setenv("LD_PRELOAD", library, 1);
		if (swap) {
			setenv("LOCKLAB_SWAP_LOCK", "futex", 1);
			setenv("LOCKLAB_SWAP_STATS", "1", 1);
		}
		execl("/proc/self/exe", argv[0], "--victim", scenario, data, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	char err[1 << 16], got[1 << 16];
	read_all(pipefd[0], err, sizeof(err));
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s %s: the victim ended with status "
	      "%#x; its stderr:\n%s", kind, scenario, status, err);
	int fd = open(data, O_RDONLY);
	CHECK(fd >= 0, "%s: %s", data, strerror(errno));
	read_all(fd, got, sizeof(got));
	close(fd);
	unlink(data);
	size_t writes = !strcmp(scenario, "exec") ? 0 : 1;   /* an exec image writes none */
	CHECK(count(got, DATA) == writes && strlen(got) == writes * (sizeof(DATA) - 1),
	      "%s %s: the data file holds more than the program wrote:\n%s", kind, scenario, got);
	const char *report = swap ? "locklab: swap pid" : "locklab-prof: pid";
	size_t want = !strcmp(scenario, "closeall") ? 0 : !strcmp(scenario, "fork") ? 2 : 1;
	CHECK(count(err, report) == want, "%s %s: %zu reports on the stderr of the start, %zu "
	      "expected:\n%s", kind, scenario, count(err, report), want, err);
	printf("%s %s: the data file untouched, %zu report(s) where stderr was\n", kind, scenario,
	       want);
	return 0;
}
