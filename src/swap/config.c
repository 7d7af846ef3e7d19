/*
 * config.c: the swapper's set-up: which algorithm serves which mutexes
 * (LOCKLAB_SWAP_LOCK, _OPTS, LOCKLAB_SWAP_LOCK_FOR), which rwlock serves which
 * rwlocks (LOCKLAB_SWAP_RWLOCK, _OPTS, LOCKLAB_SWAP_RWLOCK_FOR), and what is
 * reported (LOCKLAB_SWAP_STATS, _STATS_JSON, _SITES_JSON).  Read once, by the
 * constructor or by the first mutex call that comes before it; an unknown
 * name or option exits 2 with one line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

#include "preload/once.h"
#include "preload/stderr.h"

struct swap_class swap_classes[1 + SWAP_SITES], swap_glibc_class;
int swap_nsites;
struct swap_class *swap_rest;
struct swap_hot swap_hot __attribute__((aligned(64)));
struct swap_rwclass swap_rwclasses[1 + SWAP_SITES], swap_rw_glibc_class;
struct swap_outputs swap_out;
atomic_int swap_config_ready;

void swap_say(const char *fmt, ...)
{
	char buf[768];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	pl_stderr_write(buf, (size_t)n);
}

static void refuse(const char *msg)
{
	swap_say("locklab: swap: %s", msg);
	_exit(2);
}

/*
 * The glibc-backed algorithms (LL_ALGO_GLIBC: their state is a glibc mutex
 * of their type) locked and unlocked by us, on their state: liblocklab's own
 * call would come back through our pthread_mutex_lock for a second pass that
 * ends in the same glibc call.
 */
static void glibc_state_lock(void *state)
{
	swap_real.mutex_lock(state);
}

static void glibc_state_unlock(void *state)
{
	swap_real.mutex_unlock(state);
}

/* A state's slot: whole 64-byte lines, so that no two locks share one (a
 * state over the budget still works). */
static size_t slot_bytes_for(size_t state_size)
{
	size_t line = LL_STATE_LINE_BYTES;
	return state_size ? (state_size + line - 1) / line * line : line;
}

/* An algorithm and its options into a class: 0, or nonzero with err filled. */
static int class_set(struct swap_class *c, const char *name, size_t nlen, const char *opts,
		     struct ll_error *err)
{
	char n[64];
	snprintf(n, sizeof(n), "%.*s", (int)(nlen < sizeof(n) ? nlen : sizeof(n) - 1), name);
	const struct ll_lock_ops *o = ll_algo_find(n, err);
	if (!o)
		return EINVAL;
	ll_config_defaults(o, c->config);
	if (ll_config_parse(o, opts, c->config, err))
		return EINVAL;
	snprintf(c->name, sizeof(c->name), "%s", o->name);
	snprintf(c->opts, sizeof(c->opts), "%s", opts ? opts : "");
	c->ops = o;
	c->pure_spin = (o->flags & LL_ALGO_SPINS) &&
		       !ll_config_preempt_safe(o->flags, o->knobs, o->nknobs, c->config);
	int glibc_state = (o->flags & LL_ALGO_GLIBC) != 0;
	c->lock = glibc_state ? glibc_state_lock : o->lock;
	c->unlock = glibc_state ? glibc_state_unlock : o->unlock;
	c->recipe = (struct swap_recipe){
		.name = o->name, .init = o->init, .destroy = o->destroy, .try_excl = o->trylock,
		.drop = o->drop, .held_waits = 1, .config = c->config, .slots = &swap_mutex_slots,
	};
	return 0;
}

static int lock_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '-';
}

static void refuse_site(const char *var, const char *entry, size_t len, const char *why)
{
	swap_say("locklab: swap: %s '%.*s': %s", var, (int)(len < 300 ? len : 300), entry, why);
	_exit(2);
}

/* One entry of a sites variable: the site, the lock's name and its options. */
struct site_entry {
	const char *site, *name;
	size_t site_len, name_len;
	char opts[256];
};

/*
 * LOCKLAB_SWAP_LOCK_FOR or _RWLOCK_FOR (VAR, "lock-for" or "rwlock-for" in
 * messages): "SITE=NAME[:OPTS];SITE=NAME..." (empty entries skipped), each
 * given to SET as the I-th site (0, or nonzero with err filled); how many.
 * A site is a lock's name as `locklab profile` prints it, which may hold '='
 * itself (C++'s operator=): the entry splits at the first '=' that a lock
 * name follows, up to its end or a ':' and the options.
 */
static int sites_parse(const char *v, const char *var,
		       int (*set)(int i, const struct site_entry *s, struct ll_error *err))
{
	static struct site_entry seen[SWAP_SITES];
	int n = 0;
	while (*v) {
		const char *end = strchr(v, ';');
		size_t len = end ? (size_t)(end - v) : strlen(v);
		const char *e = v;
		v += len + (end != NULL);
		if (!len)
			continue;
		const char *eq = NULL, *name = NULL, *opts = NULL;
		size_t nlen = 0;
		for (const char *q = e; q < e + len && !eq; q++) {
			if (*q != '=')
				continue;
			const char *k = q + 1;
			while (k < e + len && lock_name_char(*k))
				k++;
			if (k > q + 1 && (k == e + len || *k == ':')) {
				eq = q;
				name = q + 1;
				nlen = (size_t)(k - name);
				opts = k < e + len ? k + 1 : NULL;
			}
		}
		if (!eq)
			refuse_site(var, e, len, "not SITE=LOCK or SITE=LOCK:OPTS");
		if (eq == e)
			refuse_site(var, e, len, "the site is empty");
		if ((size_t)(eq - e) >= SWAP_SITE_LEN)
			refuse_site(var, e, len, "the site is longer than 511 bytes");
		if (n == SWAP_SITES)
			refuse_site(var, e, len, "more than 64 sites");
		struct site_entry *s = &seen[n];
		size_t olen = opts ? (size_t)(e + len - opts) : 0;
		if (olen >= sizeof(s->opts))
			refuse_site(var, e, len, "options longer than 255 bytes");
		*s = (struct site_entry){ .site = e, .name = name, .site_len = (size_t)(eq - e),
					  .name_len = nlen };
		snprintf(s->opts, sizeof(s->opts), "%.*s", (int)olen, opts ? opts : "");
		struct ll_error err;
		if (set(n, s, &err))
			refuse_site(var, e, len, err.msg);
		for (int i = 0; i < n; i++)
			if (seen[i].site_len == s->site_len && !memcmp(seen[i].site, e, s->site_len))
				refuse_site(var, e, len, "the site is given twice");
		n++;
	}
	return n;
}

/* LOCKLAB_SWAP_LOCK_FOR's I-th site: swap_classes[1 + I]. */
static int mutex_site_set(int i, const struct site_entry *s, struct ll_error *err)
{
	struct swap_class *c = &swap_classes[1 + i];
	snprintf(c->site, sizeof(c->site), "%.*s", (int)s->site_len, s->site);
	return class_set(c, s->name, s->name_len, s->opts, err);
}

/*
 * An rwlock and its options into an rwlock class: 0, or nonzero with err
 * filled.  An algorithm with a `prefer` knob (pthread, partitioned) serves a
 * lock of glibc's writer-nonrecursive kind with prefer=writer-nonrecursive,
 * unless the options name prefer themselves.
 */
static int rwclass_set(struct swap_rwclass *c, const char *name, size_t nlen, const char *opts,
		       struct ll_error *err)
{
	char n[64];
	snprintf(n, sizeof(n), "%.*s", (int)(nlen < sizeof(n) ? nlen : sizeof(n) - 1), name);
	const struct ll_rwlock_ops *o = ll_rwlock_algo_find(n, err);
	if (!o)
		return EINVAL;
	ll_rwlock_config_defaults(o, c->config[0]);
	if (ll_rwlock_config_parse(o, opts, c->config[0], err))
		return EINVAL;
	memcpy(c->config[1], c->config[0], sizeof(c->config[1]));
	int named = 0;   /* prefer among the options */
	for (const char *q = opts; q && *q; q += strcspn(q, ","), q += *q == ',')
		named |= !strncmp(q, "prefer=", 7);
	for (size_t i = 0; i < o->nknobs && !named; i++)
		if (!strcmp(o->knobs[i].name, "prefer") &&
		    ll_rwlock_config_parse(o, "prefer=writer-nonrecursive", c->config[1], err))
			return EINVAL;
	snprintf(c->name, sizeof(c->name), "%s", o->name);
	snprintf(c->opts, sizeof(c->opts), "%s", opts ? opts : "");
	c->ops = o;
	for (int k = 0; k < 2; k++)
		c->recipe[k] = (struct swap_recipe){
			.name = o->name, .init = o->init, .destroy = o->destroy,
			.try_excl = o->trywrlock, .unlock_shared = o->unlock, .held_waits = 0,
			.config = c->config[k], .slots = &swap_rw_slots,
		};
	/* One slot size for every rwlock: the largest state of any class. */
	size_t need = slot_bytes_for(o->state_size);
	if (need > swap_rw_slots.bytes)
		swap_rw_slots.bytes = need;
	return 0;
}

/* LOCKLAB_SWAP_RWLOCK_FOR's I-th site: swap_rwclasses[1 + I]. */
static int rwlock_site_set(int i, const struct site_entry *s, struct ll_error *err)
{
	struct swap_rwclass *c = &swap_rwclasses[1 + i];
	snprintf(c->site, sizeof(c->site), "%.*s", (int)s->site_len, s->site);
	return rwclass_set(c, s->name, s->name_len, s->opts, err);
}

/*
 * LOCKLAB_SWAP_RWLOCK (and _OPTS): the rwlock every pthread_rwlock_t gets
 * that no site of LOCKLAB_SWAP_RWLOCK_FOR chose (those get the site's).
 * Sites alone: the rest stay glibc's; neither: every rwlock does.
 */
static void rw_config_load(void)
{
	const char *rw_for = getenv("LOCKLAB_SWAP_RWLOCK_FOR");
	int n = rw_for ? sites_parse(rw_for, "rwlock-for", rwlock_site_set) : 0;
	swap_hot.rw_nsites = n;
	const char *name = getenv("LOCKLAB_SWAP_RWLOCK");
	if (name && *name) {
		struct ll_error err;
		if (rwclass_set(&swap_rwclasses[0], name, strlen(name),
				getenv("LOCKLAB_SWAP_RWLOCK_OPTS"), &err))
			refuse(err.msg);
		swap_hot.rw_rest = &swap_rwclasses[0];
	} else if (n) {
		swap_hot.rw_rest = RW_GLIBC_CLASS;
	}
}

static void outputs_load(void)
{
	const char *s = getenv("LOCKLAB_SWAP_STATS");
	swap_out.stats_line = s && *s && strcmp(s, "0");
	s = getenv("LOCKLAB_SWAP_STATS_JSON");
	if (s)
		snprintf(swap_out.stats_json, sizeof(swap_out.stats_json), "%s", s);
	s = getenv("LOCKLAB_SWAP_SITES_JSON");
	if (s)
		snprintf(swap_out.sites_json, sizeof(swap_out.sites_json), "%s", s);
	if (swap_out.stats_line || swap_out.stats_json[0])
		swap_hot.general |= SWAP_COUNTING;
	/* The stats line is written at exit, whatever the program did with fd 2. */
	pl_stderr_keep(swap_out.stats_line);
}

void swap_config_load(void)
{
	static atomic_int state;   /* one thread loads; the others wait for classes and config */
	if (!pl_once_claim(&state, &swap_config_ready))
		return;
	/* liblocklab's own calls below (and getenv's, anyone's) take glibc's locks. */
	swap_tls.busy++;
	swap_tls.setup++;
	swap_real_resolve();
	/* The algorithms' memory from the slab from now on: no lock of any class
	 * exists yet. */
	ll_set_allocator(&swap_blocks);
	const char *name = getenv("LOCKLAB_SWAP_LOCK");
	const char *lock_for = getenv("LOCKLAB_SWAP_LOCK_FOR");
	if (lock_for)
		swap_nsites = sites_parse(lock_for, "lock-for", mutex_site_set);
	rw_config_load();
	/* Sites alone, or rwlocks alone: every other mutex stays glibc's.
	 * None of them: ll for all. */
	if ((!name || !*name) && (swap_nsites || swap_hot.rw_rest)) {
		swap_rest = GLIBC_CLASS;
	} else {
		struct ll_error err;
		if (!name || !*name)
			name = "ll";
		if (class_set(&swap_classes[0], name, strlen(name), getenv("LOCKLAB_SWAP_LOCK_OPTS"),
			      &err))
			refuse(err.msg);
		swap_rest = &swap_classes[0];
	}
	/* One slot size for every mutex: the largest state of any class. */
	for (int i = swap_rest == GLIBC_CLASS; i <= swap_nsites; i++) {
		size_t need = slot_bytes_for(swap_classes[i].ops->state_size);
		if (need > swap_mutex_slots.bytes)
			swap_mutex_slots.bytes = need;
		if (swap_classes[i].pure_spin)
			swap_hot.general |= SWAP_WATCHING;
	}
	outputs_load();
	swap_tls.setup--;
	swap_tls.busy--;
	/* Release: ops, config and the settings above before anyone reads them. */
	pl_once_done(&swap_config_ready);
}

__attribute__((constructor)) static void swap_ctor(void)
{
	swap_real_resolve();
	swap_configured();
	if (getenv("LOCKLAB_SWAP_CHECK"))
		_exit(0);   /* the CLI's check of the lock and its options, before the run */
	pthread_atfork(NULL, NULL, swap_after_fork_child);
}
