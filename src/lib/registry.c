/*
 * registry.c: the table of algorithms, knob parsing, and the generic ll_mutex_t.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locklab/locklab.h"
#include "algo.h"
#include "monitor_impl.h"

static const struct ll_lock_ops *const algorithms[] = {
#define LL_ALGO(id) &ll_##id##_ops,
#include "algorithms.def"
#undef LL_ALGO
};

size_t ll_algo_count(void)
{
	return LL_COUNT(algorithms);
}

const struct ll_lock_ops *ll_algo_at(size_t i)
{
	return i < LL_COUNT(algorithms) ? algorithms[i] : NULL;
}

static void set_error(struct ll_error *err, const char *fmt, ...)
{
	if (!err)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

/* Append "a, b, c" of n names (fetched by get) to buf. */
static void join_names(char *buf, size_t len, size_t n, const char *(*get)(size_t, const void *),
		       const void *ctx)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", get(i, ctx));
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

static const char *algo_name(size_t i, const void *ctx)
{
	(void)ctx;
	return algorithms[i]->name;
}

static const char *knob_name(size_t i, const void *ctx)
{
	return ((const struct ll_knob *)ctx)[i].name;
}

static const char *choice_name(size_t i, const void *ctx)
{
	return ((const char *const *)ctx)[i];
}

const struct ll_lock_ops *ll_algo_find(const char *name, struct ll_error *err)
{
	for (size_t i = 0; i < LL_COUNT(algorithms); i++)
		if (strcmp(algorithms[i]->name, name) == 0)
			return algorithms[i];
	char names[256];
	join_names(names, sizeof(names), LL_COUNT(algorithms), algo_name, NULL);
	set_error(err, "unknown lock '%s' (valid: %s)", name, names);
	return NULL;
}

static int64_t *knob_field(const struct ll_knob *k, void *config)
{
	return (int64_t *)((char *)config + k->offset);
}

void ll_knobs_defaults(const struct ll_knob *knobs, size_t nknobs, void *config, size_t size)
{
	memset(config, 0, size);
	for (size_t i = 0; i < nknobs; i++)
		*knob_field(&knobs[i], config) = knobs[i].def;
}

void ll_config_defaults(const struct ll_lock_ops *ops, void *config)
{
	ll_knobs_defaults(ops->knobs, ops->nknobs, config, ops->config_size);
}

void ll_config_format(const struct ll_knob *k, const void *config, char *buf, size_t len)
{
	int64_t v = *knob_field(k, (void *)config);
	if (k->choices)
		snprintf(buf, len, "%s", k->choices[v]);
	else
		snprintf(buf, len, "%" PRId64, v);
}

static size_t count_choices(const char *const *choices)
{
	size_t n = 0;
	while (choices[n])
		n++;
	return n;
}

/* 1 if an item of opts before `item` sets the key of klen bytes at item (those items are valid). */
static int key_set_before(const char *opts, const char *item, size_t klen)
{
	for (const char *p = opts; p < item; p = strchr(p, ',') + 1)
		if (!strncmp(p, item, klen) && p[klen] == '=')
			return 1;
	return 0;
}

/* Parse one "key=value" of length len at item, inside opts. */
static int apply_option(const char *kind, const char *owner, const struct ll_knob *knobs,
			size_t nknobs, const char *opts, const char *item, size_t len,
			void *config, struct ll_error *err)
{
	const char *eq = memchr(item, '=', len);
	if (!eq || eq == item) {
		set_error(err, "malformed option '%.*s' for %s '%s' (expected KEY=VALUE)",
			  (int)len, item, kind, owner);
		return EINVAL;
	}
	size_t klen = (size_t)(eq - item);
	const char *val = eq + 1;
	size_t vlen = len - klen - 1;
	char vbuf[64];

	const struct ll_knob *k = NULL;
	for (size_t i = 0; i < nknobs; i++)
		if (strlen(knobs[i].name) == klen && !strncmp(knobs[i].name, item, klen))
			k = &knobs[i];
	if (!k) {
		char names[256];
		join_names(names, sizeof(names), nknobs, knob_name, knobs);
		set_error(err, "unknown option '%.*s' for %s '%s' (valid: %s)", (int)klen, item,
			  kind, owner, nknobs ? names : "none");
		return EINVAL;
	}
	/* One value per knob: a second would silently undo the first. */
	if (key_set_before(opts, item, klen)) {
		set_error(err, "option '%s' of %s '%s' given twice in '%s'", k->name, kind, owner,
			  opts);
		return EINVAL;
	}
	if (vlen == 0 || vlen >= sizeof(vbuf))
		goto bad;
	memcpy(vbuf, val, vlen);
	vbuf[vlen] = '\0';

	if (k->choices) {
		for (size_t c = 0; k->choices[c]; c++) {
			if (!strcmp(k->choices[c], vbuf)) {
				*knob_field(k, config) = (int64_t)c;
				return 0;
			}
		}
		char names[128];
		join_names(names, sizeof(names), count_choices(k->choices), choice_name, k->choices);
		set_error(err, "option '%s' of %s '%s' wants one of: %s; got '%s'", k->name,
			  kind, owner, names, vbuf);
		return EINVAL;
	}

	char *end;
	errno = 0;
	long long v = strtoll(vbuf, &end, 10);
	if (errno || *end || v < k->min || v > k->max)
		goto bad;
	*knob_field(k, config) = v;
	return 0;
bad:
	if (k->choices)
		set_error(err, "option '%s' of %s '%s' has an empty value", k->name, kind, owner);
	else
		set_error(err, "option '%s' of %s '%s' wants an integer in [%" PRId64 ", %" PRId64
			  "], got '%.*s'", k->name, kind, owner, k->min, k->max, (int)vlen, val);
	return EINVAL;
}

int ll_knobs_parse(const char *kind, const char *owner, const struct ll_knob *knobs,
		   size_t nknobs, const char *opts, void *config, struct ll_error *err)
{
	if (!opts || !*opts)
		return 0;
	/* Items between commas, every one non-empty: `,a=1`, `a=1,,b=2` and `a=1,` alike. */
	for (const char *p = opts;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0) {
			set_error(err, "malformed options '%s' for %s '%s' (empty item)", opts,
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
	return ll_knobs_parse("lock", ops->name, ops->knobs, ops->nknobs, opts, config, err);
}

/*
 * 0 when ops's state and config fit the buffers every caller gives them
 * (ll_mutex_t's state, int64_t[LL_CONFIG_MAX]) and each knob lies inside its
 * config; else EINVAL with err set, before anything is written.  The table
 * may be a caller's own (locklab.h invites it), so nothing of it is trusted.
 */
static int ops_fit(const struct ll_lock_ops *ops, struct ll_error *err)
{
	if (ops->state_size > LL_MUTEX_STATE_BYTES) {
		set_error(err, "lock '%s': state of %zu bytes is larger than LL_MUTEX_STATE_BYTES (%d)",
			  ops->name, ops->state_size, LL_MUTEX_STATE_BYTES);
		return EINVAL;
	}
	if (ops->config_size > LL_CONFIG_MAX * sizeof(int64_t)) {
		set_error(err, "lock '%s': config of %zu bytes is larger than LL_CONFIG_MAX (%d knobs, "
			  "%zu bytes)", ops->name, ops->config_size, LL_CONFIG_MAX,
			  LL_CONFIG_MAX * sizeof(int64_t));
		return EINVAL;
	}
	for (size_t i = 0; i < ops->nknobs; i++)
		if (ops->config_size < sizeof(int64_t) ||
		    ops->knobs[i].offset > ops->config_size - sizeof(int64_t)) {
			set_error(err, "lock '%s': knob '%s' lies outside its %zu-byte config",
				  ops->name, ops->knobs[i].name, ops->config_size);
			return EINVAL;
		}
	return 0;
}

int ll_mutex_init_config_at(ll_mutex_t *m, const struct ll_lock_ops *ops, const void *config,
			    const char *file, int line)
{
	int64_t defaults[LL_CONFIG_MAX];

	if (ops_fit(ops, NULL))
		return EINVAL;
	if (!config) {
		ll_config_defaults(ops, defaults);
		config = defaults;
	}
	memset(m->state, 0, sizeof(m->state));
	m->ops = ops;
	m->mon = 0;
	int rc = ops->init(m->state, config);
	if (rc == 0)
		ll_mon_attach(m, file, line);
	return rc;
}

int ll_mutex_init_at(ll_mutex_t *m, const char *algo, const char *opts, struct ll_error *err,
		     const char *file, int line)
{
	const struct ll_lock_ops *ops = ll_algo_find(algo ? algo : LL_DEFAULT_ALGO, err);
	return ops ? ll_mutex_init_opts_at(m, ops, opts, err, file, line) : EINVAL;
}

int ll_mutex_init_opts_at(ll_mutex_t *m, const struct ll_lock_ops *ops, const char *opts,
			  struct ll_error *err, const char *file, int line)
{
	int64_t config[LL_CONFIG_MAX];

	int rc = ops_fit(ops, err);
	if (rc)
		return rc;
	ll_config_defaults(ops, config);
	rc = ll_config_parse(ops, opts, config, err);
	if (rc)
		return rc;
	rc = ll_mutex_init_config_at(m, ops, config, file, line);
	if (rc)
		set_error(err, "lock '%s': init failed: %s", ops->name, strerror(rc));
	return rc;
}

/* The functions behind the macros, for callers that do not see them: the place is unknown. */
int (ll_mutex_init_config)(ll_mutex_t *m, const struct ll_lock_ops *ops, const void *config)
{
	return ll_mutex_init_config_at(m, ops, config, NULL, 0);
}

int (ll_mutex_init)(ll_mutex_t *m, const char *algo, const char *opts, struct ll_error *err)
{
	return ll_mutex_init_at(m, algo, opts, err, NULL, 0);
}

int (ll_mutex_init_opts)(ll_mutex_t *m, const struct ll_lock_ops *ops, const char *opts,
			 struct ll_error *err)
{
	return ll_mutex_init_opts_at(m, ops, opts, err, NULL, 0);
}

void ll_mutex_destroy(ll_mutex_t *m)
{
	/* Out of the registry first: a dump never sees a lock being torn down. */
	ll_mon_detach(m);
	m->ops->destroy(m->state);
}

struct timespec ll_deadline_after_ns(int64_t rel_ns)
{
	/* Saturated: INT64_MAX from an uptime past 292 years still lies ahead. */
	return ll_ns_timespec(ll_ns_add_sat(ll_now_ns(), (uint64_t)(rel_ns > 0 ? rel_ns : 0)));
}

int (ll_mutex_timedlock_ns)(ll_mutex_t *m, int64_t rel_ns)
{
	return ll_mutex_timedlock_ns_at(m, rel_ns, NULL, 0);
}
