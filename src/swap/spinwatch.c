/*
 * spinwatch.c: the one warning a pure spinlock gets (a class whose algorithm
 * only spins, with options that do not give the core away: tas, ttas,
 * ticket and mcs at spin=pause, none or tas).  Such a lock hangs or crawls
 * once its threads outnumber the CPUs: a waiter spins through its time
 * slice while the holder, or the waiter whose turn it is, waits for a CPU.
 *
 * While a pure spinlock class exists and nobody has been warned
 * (SWAP_WATCHING in swap_hot.general), its mutexes take the general path, where each
 * thread's first acquisition comes here.  Once more threads have met one
 * than the process may use CPUs, the live threads are counted from
 * /proc/self/stat (threads that have exited do not count); if they
 * outnumber the CPUs, one line on stderr names the alternatives that
 * survive, and the watch ends: every mutex is back on the fast path.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static atomic_uint met;        /* threads that have taken a pure spinlock */
static atomic_int warned;

/* The process's threads now (num_threads, field 20 of /proc/self/stat); 0 if unknown. */
static long live_threads(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name (field 2) may hold spaces and parentheses: count from its end. */
	char *p = strrchr(buf, ')');
	for (int field = 3; p && field <= 20; field++)
		p = strchr(p + 1, ' ');
	return p ? strtol(p + 1, NULL, 10) : 0;
}

static int usable_cpus(void)
{
	cpu_set_t set;
	return sched_getaffinity(0, sizeof(set), &set) ? 0 : CPU_COUNT(&set);
}

/* "mcs:spin=auto, mcs:spin=yield, fifo-tp, ll, ...": c's own safe options, then every safe lock. */
static void alternatives(const struct swap_class *c, char *buf, size_t len)
{
	size_t at = 0;
	const struct ll_lock_ops *o = c->ops;
	for (size_t k = 0; k < o->nknobs; k++) {
		unsigned safe = ll_knob_preempt_safe_choices(&o->knobs[k]);
		for (size_t i = 0; safe && o->knobs[k].choices[i]; i++)
			if ((safe >> i) & 1 && at < len)
				at += (size_t)snprintf(buf + at, len - at, "%s%s:%s=%s", at ? ", " : "",
						       o->name, o->knobs[k].name, o->knobs[k].choices[i]);
	}
	for (size_t i = 0; ll_algo_at(i); i++)
		if ((ll_algo_at(i)->flags & LL_ALGO_PREEMPT_SAFE) && at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "",
					       ll_algo_at(i)->name);
}

void swap_spin_meet(const struct swap_class *c)
{
	swap_tls.met_spinlock = 1;
	unsigned threads = atomic_fetch_add_explicit(&met, 1, memory_order_relaxed) + 1;
	int cpus = usable_cpus();
	if (cpus <= 0 || threads <= (unsigned)cpus || atomic_load(&warned))
		return;
	long live = live_threads();
	if (live <= cpus || atomic_exchange(&warned, 1))
		return;
	char alt[512];
	swap_tls.busy++;   /* nothing below should take a mutex; one that does is glibc's */
	alternatives(c, alt, sizeof(alt));
	swap_say("locklab: swap: warning: %s%s%s only spins, and %ld threads outnumber the %d CPUs "
		 "they may use: a waiter can spin out its time slice while the holder waits for a "
		 "CPU; locks that survive this: %s", c->name, c->opts[0] ? ":" : "", c->opts, live,
		 cpus, alt);
	swap_tls.busy--;
	__atomic_and_fetch(&swap_hot.general, ~SWAP_WATCHING, __ATOMIC_RELAXED);
}
