/*
 * cpus.c: the CPUs this process may run on.
 */
#include <sched.h>

#include "core/cpus.h"

int ll_cpus_usable(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	return 1;
}
