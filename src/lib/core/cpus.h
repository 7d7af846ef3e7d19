/*
 * cpus.h: the CPUs this process may run on (its affinity mask), which the
 * admission gates and `ll`'s pollers size themselves by.
 */
#ifndef LOCKLAB_CORE_CPUS_H
#define LOCKLAB_CORE_CPUS_H

/* CPUs in the process's affinity mask; 1 if it cannot be read. */
int ll_cpus_usable(void);

#endif
