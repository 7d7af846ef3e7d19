/*
 * knobs.c: configs as structs of int64_t knobs (locklab/ops.h), filled with
 * their defaults and from "k=v,k=v" text, checked, with one-line errors: the
 * locks', the admission gates' and the server workload's options alike.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locklab/ops.h"
#include "locklab/bits/spin.h"

static const char *knob_name(size_t i, const void *ctx)
{
	return ((const struct ll_knob *)ctx)[i].name;
}

static const char *choice_name(size_t i, const void *ctx)
{
	return ((const char *const *)ctx)[i];
}

static int64_t *knob_field(const struct ll_knob *k, void *config)
{
	return (int64_t *)((char *)config + k->offset);
}

static size_t count_choices(const char *const *choices)
{
	size_t n = 0;
	while (choices[n])
		n++;
	return n;
}

void ll_knobs_defaults(const struct ll_knob *knobs, size_t nknobs, void *config, size_t size)
{
	if (!config)
		return;
	memset(config, 0, size);
	for (size_t i = 0; knobs && i < nknobs; i++)
		*knob_field(&knobs[i], config) = knobs[i].def;
}

void ll_config_defaults(const struct ll_lock_ops *ops, void *config)
{
	if (ops)
		ll_knobs_defaults(ops->knobs, ops->nknobs, config, ops->config_size);
}

void ll_config_format(const struct ll_knob *k, const void *config, char *buf, size_t len)
{
	if (!buf || !len)
		return;
	if (!k || !config) {
		buf[0] = '\0';
		return;
	}
	int64_t v = *knob_field(k, (void *)config);
	/* A value outside the choices (a config not from the parser) prints as its number. */
	if (k->choices && v >= 0 && (uint64_t)v < count_choices(k->choices))
		snprintf(buf, len, "%s", k->choices[v]);
	else
		snprintf(buf, len, "%" PRId64, v);
}

unsigned ll_knob_preempt_safe_choices(const struct ll_knob *k)
{
	return k && k->choices == ll_spin_policy_names ? LL_SPIN_PREEMPT_SAFE : 0;
}

int ll_config_preempt_safe(unsigned flags, const struct ll_knob *knobs, size_t nknobs,
			   const void *config)
{
	if (flags & LL_ALGO_PREEMPT_SAFE)
		return 1;
	for (size_t i = 0; knobs && config && i < nknobs; i++) {
		int64_t v = *knob_field(&knobs[i], (void *)config);
		if (v >= 0 && v < 32 && ((ll_knob_preempt_safe_choices(&knobs[i]) >> v) & 1))
			return 1;
	}
	return 0;
}

/* 1 if an item of opts before `item` sets the key of klen bytes at item (those items are valid). */
static int key_set_before(const char *opts, const char *item, size_t klen)
{
	for (const char *p = opts; p < item; p = strchr(p, ',') + 1)
		if (!strncmp(p, item, klen) && p[klen] == '=')
			return 1;
	return 0;
}

/* The bytes of an option's key or value as an error quotes them: whole up to
 * QUOTED bytes, else cut there and marked, so that a message never shows a cut
 * text as if it were what was given. */
#define QUOTED 64
static void quote(char *buf, size_t size, const char *p, size_t len)
{
	if (len > QUOTED)
		snprintf(buf, size, "%.*s... (%zu bytes)", QUOTED, p, len);
	else
		snprintf(buf, size, "%.*s", (int)len, p);
}

/* Parse one "key=value" of length len at item, inside opts (NUL-terminated, so a
 * value is read in place: an item ends at the next ',' or at the end). */
static int apply_option(const char *kind, const char *owner, const struct ll_knob *knobs,
			size_t nknobs, const char *opts, const char *item, size_t len,
			void *config, struct ll_error *err)
{
	const char *eq = memchr(item, '=', len);
	if (!eq || eq == item) {
		ll_error_set(err, "malformed option '%.*s' for %s '%s' (expected KEY=VALUE)",
			     (int)len, item, kind, owner);
		return EINVAL;
	}
	size_t klen = (size_t)(eq - item);
	const char *val = eq + 1;
	size_t vlen = len - klen - 1;
	char shown[QUOTED + 48];

	const struct ll_knob *k = NULL;
	for (size_t i = 0; i < nknobs; i++)
		if (strlen(knobs[i].name) == klen && !strncmp(knobs[i].name, item, klen))
			k = &knobs[i];
	if (!k) {
		char where[128];
		quote(shown, sizeof(shown), item, klen);
		snprintf(where, sizeof(where), "for %s '%s'", kind, owner);
		ll_error_unknown(err, "option", shown, where, nknobs, knob_name, knobs);
		return EINVAL;
	}
	/* One value per knob: a second would silently undo the first. */
	if (key_set_before(opts, item, klen)) {
		ll_error_set(err, "option '%s' of %s '%s' given twice in '%s'", k->name, kind, owner,
			     opts);
		return EINVAL;
	}
	if (vlen == 0 && k->choices) {
		ll_error_set(err, "option '%s' of %s '%s' has an empty value", k->name, kind, owner);
		return EINVAL;
	}

	if (k->choices) {
		for (size_t c = 0; k->choices[c]; c++) {
			if (strlen(k->choices[c]) == vlen && !strncmp(k->choices[c], val, vlen)) {
				*knob_field(k, config) = (int64_t)c;
				return 0;
			}
		}
		char where[128];
		quote(shown, sizeof(shown), val, vlen);
		snprintf(where, sizeof(where), "for option '%s' of %s '%s'", k->name, kind, owner);
		ll_error_unknown(err, "value", shown, where, count_choices(k->choices), choice_name,
				 k->choices);
		return EINVAL;
	}

	/* A number of any length (leading zeros included) is read where it stands. */
	char *end;
	errno = 0;
	long long v = vlen ? strtoll(val, &end, 10) : 0;
	if (!vlen || errno || end != val + vlen || v < k->min || v > k->max) {
		quote(shown, sizeof(shown), val, vlen);
		ll_error_set(err, "option '%s' of %s '%s' wants an integer in [%" PRId64 ", %" PRId64
			     "], got '%s'", k->name, kind, owner, k->min, k->max, shown);
		return EINVAL;
	}
	*knob_field(k, config) = v;
	return 0;
}

int ll_knobs_parse(const char *kind, const char *owner, const struct ll_knob *knobs,
		   size_t nknobs, const char *opts, void *config, struct ll_error *err)
{
	if (!kind)
		kind = "";
	if (!owner)
		owner = "";
	if (!config) {
		ll_error_set(err, "options of %s '%s': the config to fill is NULL", kind, owner);
		return EINVAL;
	}
	if (!knobs)
		nknobs = 0;
	if (!opts || !*opts)
		return 0;
	/* Items between commas, every one non-empty: `,a=1`, `a=1,,b=2` and `a=1,` alike. */
	for (const char *p = opts;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0) {
			ll_error_set(err, "malformed options '%s' for %s '%s' (empty item)", opts,
				     kind, owner);
			return EINVAL;
		}
		int rc = apply_option(kind, owner, knobs, nknobs, opts, p, len, config, err);
		if (rc || !comma)
			return rc;
		p = comma + 1;
	}
}

int ll_config_parse(const struct ll_lock_ops *ops, const char *opts, void *config,
		    struct ll_error *err)
{
	if (!ops) {
		ll_error_set(err, "lock options: the ops table is NULL");
		return EINVAL;
	}
	return ll_knobs_parse("lock", ops->name, ops->knobs, ops->nknobs, opts, config, err);
}
