/*
 * marks.c: the marks `locklab run` reads after its program to know whether any
 * process of the run had its locks swapped (python/locklab/swap/marks.py).
 *
 * With LOCKLAB_SWAP_MARKS=DIR, each process that loads the swapper makes
 * DIR/PID.loaded, holding its name, and each that leaves through exit(), _exit
 * or _Exit with the swapper still loaded makes DIR/PID.exited (_exit and _Exit
 * skip destructors, and a shell such as dash leaves by _exit: they are
 * interposed).  A process that execs a program the loader does not preload into
 * (statically linked, setuid) leaves only the first: a run whose every process
 * went that way (a script that execs a static binary) is told from one that
 * swapped.
 *
 * Self-contained: its own constructor, destructor and interposers, no state
 * shared with the rest of the swapper.  The directory is taken at load, so a
 * program that clears its environment still leaves its exit mark.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char marks_dir[4096];
/* The next _exit in the preload order (the C library's), found at load: a
 * profiler preloaded ahead of us calls ours, which calls on. */
static void (*next_exit)(int);

/* DIR/PID.SUFFIX, with CONTENT; nothing when the run gave no directory or the
 * name does not fit (the wrapper then finds no mark and says so). */
static void mark(const char *suffix, const char *content)
{
	if (!marks_dir[0])
		return;
	char path[sizeof(marks_dir) + 32];
	int n = snprintf(path, sizeof(path), "%s/%d.%s", marks_dir, (int)getpid(), suffix);
	if (n < 0 || (size_t)n >= sizeof(path))
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	ssize_t w = write(fd, content, strlen(content));
	(void)w;
	close(fd);
}

/* Before the swapper's own constructor, so that a process it refuses (exit 2)
 * is marked as having loaded it. */
__attribute__((constructor(101))) static void marks_loaded(void)
{
	next_exit = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
	const char *dir = getenv("LOCKLAB_SWAP_MARKS");
	if (!dir || strlen(dir) >= sizeof(marks_dir))
		return;
	memcpy(marks_dir, dir, strlen(dir) + 1);
	mark("loaded", program_invocation_short_name);
}

__attribute__((destructor)) static void marks_exited(void)
{
	mark("exited", "");
}

#ifndef LL_SWAP_DIRECT   /* linked into a test program, the C library's stay */
static __attribute__((noreturn)) void exit_marked(int status)
{
	marks_exited();
	if (next_exit)
		next_exit(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
	exit_marked(status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
	exit_marked(status);
}
#endif
