/*
 * second_thread.h: a thread alive and blocked on a pipe while a program
 * times uncontended lock+unlock pairs.  glibc drops its mutex's atomics
 * while a process has one thread, and a real program, which has more, pays
 * them: a pair timed single-threaded compares unlike things.
 */
#ifndef LOCKLAB_TEST_SECOND_THREAD_H
#define LOCKLAB_TEST_SECOND_THREAD_H

#include <pthread.h>
#include <unistd.h>

struct second_thread {
	int fds[2];
	pthread_t t;
};

static inline void *second_thread_main(void *p)
{
	char c;
	ssize_t r = read(*(int *)p, &c, 1);
	(void)r;
	return NULL;
}

/* 0, or -1 when the pipe or the thread cannot be made. */
static inline int second_thread_start(struct second_thread *s)
{
	if (pipe(s->fds))
		return -1;
	return pthread_create(&s->t, NULL, second_thread_main, &s->fds[0]) ? -1 : 0;
}

static inline void second_thread_stop(struct second_thread *s)
{
	ssize_t w = write(s->fds[1], "x", 1);
	(void)w;
	pthread_join(s->t, NULL);
	close(s->fds[0]);
	close(s->fds[1]);
}

#endif
