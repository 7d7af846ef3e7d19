/*
 * fit.c: an ops table's sizes checked against the buffers they go into.
 */
#include <errno.h>
#include <stdint.h>

#include "core/fit.h"

int ll_fit_check(const struct ll_fit *f, struct ll_error *err)
{
	if (f->state_size > f->state_limit) {
		ll_error_set(err, "%s '%s': state of %zu bytes is larger than %s (%zu)", f->kind,
			     f->name, f->state_size, f->limit_name, f->state_limit);
		return EINVAL;
	}
	if (f->config_size > LL_CONFIG_MAX * sizeof(int64_t)) {
		ll_error_set(err, "%s '%s': config of %zu bytes is larger than LL_CONFIG_MAX (%d knobs, "
			     "%zu bytes)", f->kind, f->name, f->config_size, LL_CONFIG_MAX,
			     LL_CONFIG_MAX * sizeof(int64_t));
		return EINVAL;
	}
	for (size_t i = 0; i < f->nknobs; i++)
		if (f->config_size < sizeof(int64_t) ||
		    f->knobs[i].offset > f->config_size - sizeof(int64_t)) {
			ll_error_set(err, "%s '%s': knob '%s' lies outside its %zu-byte config",
				     f->kind, f->name, f->knobs[i].name, f->config_size);
			return EINVAL;
		}
	return 0;
}
