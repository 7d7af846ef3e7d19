/*
 * stderr.c: the stderr of load time and its private duplicate (stderr.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stderr.h"

/* The lowest number the duplicate takes: above what programs open by habit. */
#define KEEP_FD_MIN 100

static struct {
	atomic_int state;      /* 0: not looked at yet, 1: fd 2 recorded, -1: fd 2 was closed */
	dev_t dev;
	ino_t ino;
	atomic_int fd;         /* the duplicate, or -1 */
} kept = { .fd = -1 };

/* 1 when fd is open on the file fd 2 was at load. */
static int is_stderr(int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == kept.dev && st.st_ino == kept.ino;
}

/* A close-on-exec duplicate of fd 2 at KEEP_FD_MIN or above, or below a smaller limit. */
static int duplicate(void)
{
	int fd = fcntl(2, F_DUPFD_CLOEXEC, KEEP_FD_MIN);
	struct rlimit rl;
	if (fd < 0 && errno == EINVAL && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 3 &&
	    rl.rlim_cur <= KEEP_FD_MIN)
		fd = fcntl(2, F_DUPFD_CLOEXEC, (int)rl.rlim_cur - 1);
	return fd;
}

void pl_stderr_keep(int copy)
{
	int state = atomic_load(&kept.state);
	if (state == 0) {
		struct stat st;
		if (fstat(2, &st) == 0) {
			kept.dev = st.st_dev;
			kept.ino = st.st_ino;
			state = 1;
		} else {
			state = -1;
		}
		/* Release: dev and ino before the state that says they are there. */
		atomic_store(&kept.state, state);
	}
	if (!copy || state != 1 || atomic_load(&kept.fd) >= 0)
		return;
	int fd = duplicate(), none = -1;
	if (fd >= 0 && !atomic_compare_exchange_strong(&kept.fd, &none, fd))
		close(fd);   /* another thread kept one first */
}

void pl_write_all(int fd, const void *p, size_t len)
{
	const char *c = p;
	while (len) {
		ssize_t w = write(fd, c, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		c += w;
		len -= (size_t)w;
	}
}

void pl_stderr_write(const void *p, size_t len)
{
	if (atomic_load(&kept.state) == 0)
		pl_stderr_keep(0);
	if (atomic_load(&kept.state) != 1)
		return;
	int fd = atomic_load(&kept.fd);
	if (!is_stderr(fd)) {
		fd = 2;
		if (!is_stderr(fd))
			return;
	}
	pl_write_all(fd, p, len);
}
