/*
 * sched.c: the calling thread's realtime priority (sched.h).
 */
#include <sched.h>

#include "core/sched.h"

int ll_sched_rt_priority(void)
{
	struct sched_param sp;
	int policy = sched_getscheduler(0);
	if ((policy != SCHED_FIFO && policy != SCHED_RR) || sched_getparam(0, &sp))
		return 0;
	return sp.sched_priority > 0 ? sp.sched_priority : 0;
}
