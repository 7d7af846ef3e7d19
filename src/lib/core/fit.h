/*
 * fit.h: whether an ops table's state and config fit the buffers every
 * caller gives them; shared by the generic mutex and the generic rwlock.
 */
#ifndef LOCKLAB_CORE_FIT_H
#define LOCKLAB_CORE_FIT_H

#include <stddef.h>

#include "locklab/ops.h"

/*
 * What is checked of one table.  kind: "lock", "rwlock"; limit_name: the
 * macro the state must fit ("LL_MUTEX_STATE_BYTES").
 */
struct ll_fit {
	const char *kind, *name, *limit_name;
	size_t state_size, state_limit, config_size;
	const struct ll_knob *knobs;
	size_t nknobs;
};

/*
 * 0 when the state fits its limit, the config LL_CONFIG_MAX int64_t fields,
 * and each knob lies inside the config; else EINVAL with err set, before
 * anything is written.  The table may be a caller's own, so nothing of it is
 * trusted.
 */
int ll_fit_check(const struct ll_fit *f, struct ll_error *err);

#endif
