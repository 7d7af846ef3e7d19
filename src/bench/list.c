/*
 * list.c: `locklab-bench list`: every algorithm, its summary and its knobs
 * with defaults; with NAME and --lock-opts, the values those options give
 * (the way to check an option string before a sweep uses it).
 *
 * The rwlocks (locklab/rwlock.h) follow the mutexes, "[rwlock, ...]" in
 * text and "kind": "rwlock" in JSON (mutexes: "kind": "mutex"); --rwlock
 * lists only them, and with NAME names an rwlock rather than a mutex.
 *
 * Peer locks this build left out (peers.c) follow the mutexes: in text, one line
 * per reason, "not built: ck-mcs, ck-ticket, ck-fas (why)"; in JSON, entries
 * {"name", "built": false, "summary": "not built: why", "note": why,
 * "knobs": []} after the runnable ones, which carry "built": true.
 *
 * The admission gates' policies (locklab/gate.h) come last, "[gate]" in text
 * and "kind": "gate" in JSON; --gate lists only them, and with NAME names a
 * policy, whose options --gate-opts (or --lock-opts) checks and applies.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "json.h"
#include "locks.h"
#include "locklab/gate.h"

/*
 * One lock of either table as list shows it: kind "mutex" or "rwlock".
 * `library`: liblocklab's own, so ll_mutex_init and the swapper know it
 * (the peers are the benchmark's alone).
 */
struct entry {
	const char *kind, *name, *summary;
	unsigned flags;
	const struct ll_knob *knobs;
	size_t nknobs, config_size;
	int library;
};

static struct entry mutex_entry(const struct ll_lock_ops *ops)
{
	return (struct entry){ "mutex", ops->name, ops->summary, ops->flags, ops->knobs,
			       ops->nknobs, ops->config_size, bench_lock_is_library(ops) };
}

static struct entry rwlock_entry(const struct ll_rwlock_ops *ops)
{
	return (struct entry){ "rwlock", ops->name, ops->summary, ops->flags, ops->knobs,
			       ops->nknobs, ops->config_size, 1 };
}

static struct entry gate_entry(const struct ll_gate_policy_info *info)
{
	return (struct entry){ "gate", info->name, info->summary, 0, info->knobs, info->nknobs,
			       LL_CONFIG_MAX * sizeof(int64_t), 1 };
}

static int is_kind(const struct entry *e, const char *kind)
{
	return !strcmp(e->kind, kind);
}

/* The entry's defaults with opts applied: 0, or EXIT_USAGE after the one-line error. */
static int entry_config(const struct entry *e, const char *opts, int64_t *config)
{
	struct ll_error err;
	ll_knobs_defaults(e->knobs, e->nknobs, config, e->config_size);
	if (ll_knobs_parse(is_kind(e, "mutex") ? "lock" : e->kind, e->name, e->knobs,
			   e->nknobs, opts, config, &err))
		return usage_error("%s", err.msg);
	return 0;
}

static int preempt_safe(const struct entry *e, const void *config)
{
	return ll_config_preempt_safe(e->flags, e->knobs, e->nknobs, config);
}

/*
 * The choices of knob k that would make the entry survive preemption, where
 * it does not whatever its options; 0 when none (or it does anyway).
 */
static unsigned safe_choices(const struct entry *e, const struct ll_knob *k)
{
	return e->flags & LL_ALGO_PREEMPT_SAFE ? 0 : ll_knob_preempt_safe_choices(k);
}

/*
 * "rwlock, parks, FIFO, preemption-safe"; a lock that survives preemption
 * only with other options names them: "spins; preemption-safe with spin=yield
 * or spin=auto".
 */
static void print_flags(const struct entry *e, const void *config)
{
	if (is_kind(e, "gate")) {
		fputs("gate", stdout);
		return;
	}
	printf("%s%s%s", is_kind(e, "rwlock") ? "rwlock, " : "",
	       e->flags & LL_ALGO_PARKS ? "parks" : "spins", e->flags & LL_ALGO_FIFO ? ", FIFO" : "");
	if (preempt_safe(e, config)) {
		fputs(", preemption-safe", stdout);
		return;
	}
	const char *sep = "; preemption-safe with ";
	for (size_t k = 0; k < e->nknobs; k++) {
		unsigned safe = safe_choices(e, &e->knobs[k]);
		for (size_t c = 0; safe && e->knobs[k].choices[c]; c++) {
			if (!((safe >> c) & 1))
				continue;
			printf("%s%s=%s", sep, e->knobs[k].name, e->knobs[k].choices[c]);
			sep = " or ";
		}
	}
}

static void print_text(const struct entry *e, const void *config)
{
	char val[64];

	printf("%-18s %s [", e->name, e->summary);
	print_flags(e, config);
	fputs("]\n", stdout);
	for (size_t k = 0; k < e->nknobs; k++) {
		const struct ll_knob *kn = &e->knobs[k];
		char arg[96];
		ll_config_format(kn, config, val, sizeof(val));
		snprintf(arg, sizeof(arg), "%s=%s", kn->name, val);
		printf("    %-28s %s\n", arg, kn->help);
	}
}

static const char *json_bool(unsigned flag)
{
	return flag ? "true" : "false";
}

static void print_json(const struct entry *e, const void *config)
{
	char val[64];
	int64_t defaults[LL_CONFIG_MAX];

	ll_knobs_defaults(e->knobs, e->nknobs, defaults, e->config_size);
	fputs("{\"name\":", stdout);
	json_string(stdout, e->name);
	fputs(",\"kind\":", stdout);
	json_string(stdout, e->kind);
	printf(",\"built\":true,\"library\":%s,\"summary\":", json_bool(e->library));
	json_string(stdout, e->summary);
	if (!is_kind(e, "gate")) /* a gate neither parks nor spins: its policy's summary says how it waits */
		printf(",\"parks\":%s,\"fifo\":%s,\"spins\":%s,\"glibc\":%s,\"preemption_safe\":%s",
		       json_bool(e->flags & LL_ALGO_PARKS), json_bool(e->flags & LL_ALGO_FIFO),
		       json_bool(e->flags & LL_ALGO_SPINS), json_bool(e->flags & LL_ALGO_GLIBC),
		       json_bool(preempt_safe(e, config)));
	fputs(",\"knobs\":[", stdout);
	for (size_t k = 0; k < e->nknobs; k++) {
		const struct ll_knob *kn = &e->knobs[k];
		fputs(k ? ",{\"name\":" : "{\"name\":", stdout);
		json_string(stdout, kn->name);
		fputs(",\"help\":", stdout);
		json_string(stdout, kn->help);
		ll_config_format(kn, defaults, val, sizeof(val));
		fputs(",\"default\":", stdout);
		json_string(stdout, val);
		ll_config_format(kn, config, val, sizeof(val));
		fputs(",\"value\":", stdout);
		json_string(stdout, val);
		if (kn->choices) {
			fputs(",\"choices\":[", stdout);
			for (size_t c = 0; kn->choices[c]; c++) {
				if (c)
					fputc(',', stdout);
				json_string(stdout, kn->choices[c]);
			}
			fputc(']', stdout);
			/* The values that would make the lock survive preemption (it does not as it is). */
			unsigned safe = safe_choices(e, kn);
			if (safe) {
				fputs(",\"preemption_safe_choices\":[", stdout);
				for (size_t c = 0, n = 0; kn->choices[c]; c++) {
					if (!((safe >> c) & 1))
						continue;
					if (n++)
						fputc(',', stdout);
					json_string(stdout, kn->choices[c]);
				}
				fputc(']', stdout);
			}
		} else {
			printf(",\"min\":%lld,\"max\":%lld", (long long)kn->min, (long long)kn->max);
		}
		fputc('}', stdout);
	}
	fputs("]}", stdout);
}

static void print_unbuilt_text(void)
{
	for (size_t i = 0; i < bench_unbuilt_lock_count; i++) {
		const char *why = bench_unbuilt_locks[i].why;
		size_t j = 0;
		while (j < i && strcmp(bench_unbuilt_locks[j].why, why))
			j++;
		if (j < i)
			continue; /* named on an earlier line, with the others left out for it */
		fputs("not built: ", stdout);
		for (j = i; j < bench_unbuilt_lock_count; j++)
			if (!strcmp(bench_unbuilt_locks[j].why, why))
				printf("%s%s", j != i ? ", " : "", bench_unbuilt_locks[j].name);
		printf(" (%s)\n", why);
	}
}

static void print_unbuilt_json(int first)
{
	for (size_t i = 0; i < bench_unbuilt_lock_count; i++) {
		const struct bench_unbuilt_lock *u = &bench_unbuilt_locks[i];
		char summary[256];
		snprintf(summary, sizeof(summary), "not built: %s", u->why);
		fputs(first && !i ? "{\"name\":" : ",\n{\"name\":", stdout);
		json_string(stdout, u->name);
		fputs(",\"built\":false,\"summary\":", stdout);
		json_string(stdout, summary);
		fputs(",\"note\":", stdout);
		json_string(stdout, u->why);
		fputs(",\"knobs\":[]}", stdout);
	}
}

/* Print one entry (its config checked first); 0 or EXIT_USAGE. */
static int show(const struct entry *e, const char *opts, int json, int *first)
{
	int64_t config[LL_CONFIG_MAX];
	int rc = entry_config(e, opts, config);
	if (rc)
		return rc;
	if (json) {
		if (!*first)
			fputs(",\n", stdout);
		print_json(e, config);
	} else {
		print_text(e, config);
	}
	*first = 0;
	return 0;
}

int cmd_list(int argc, char **argv)
{
	const char *name = NULL, *opts = NULL;
	int json = 0, rwlocks_only = 0, gates_only = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			fputs("usage: locklab-bench list [--rwlock | --gate] [NAME] [--lock-opts K=V,...] "
			      "[--json]\n"
			      "The algorithms (mutexes, then rwlocks), then the admission gates' policies,\n"
			      "each with its knobs and defaults.\n"
			      "  NAME                one mutex only (with --rwlock, one rwlock; with --gate,\n"
			      "                      one gate policy)\n"
			      "  --rwlock            the read-write locks only\n"
			      "  --gate              the admission gates' policies only (locklab/gate.h)\n"
			      "  --lock-opts K=V,... NAME's knobs, checked and shown applied (--gate-opts:\n"
			      "                      the same, for a gate policy)\n"
			      "  --json              a JSON array (default: text)\n"
			      "  --help              this text\n",
			      stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--rwlock"))
			rwlocks_only = 1;
		else if (!strcmp(argv[i], "--gate"))
			gates_only = 1;
		else if ((!strcmp(argv[i], "--lock-opts") || !strcmp(argv[i], "--gate-opts")) &&
			 i + 1 < argc)
			opts = argv[++i];
		else if (!strncmp(argv[i], "--lock-opts=", 12) || !strncmp(argv[i], "--gate-opts=", 12))
			opts = argv[i] + 12;
		else if (argv[i][0] != '-' && !name)
			name = argv[i];
		else
			return usage_error("list: unexpected argument '%s'", argv[i]);
	}
	if (opts && !name)
		return usage_error("list: --lock-opts needs a lock name");
	if (rwlocks_only && gates_only)
		return usage_error("list: --rwlock and --gate exclude each other");

	/* One name: a mutex's, or with --rwlock an rwlock's (pthread and ll are both). */
	struct ll_error err;
	struct entry one;
	if (name && gates_only) {
		const struct ll_gate_policy_info *info = NULL;
		for (size_t i = 0; ll_gate_policy_at(i); i++)
			if (!strcmp(ll_gate_policy_at(i)->name, name))
				info = ll_gate_policy_at(i);
		if (!info) {
			/* ll_gate_create words the error as every unknown name is worded */
			ll_gate_t *none = ll_gate_create(name, NULL, &err);
			if (none)
				ll_gate_destroy(none);
			return usage_error("%s", err.msg);
		}
		one = gate_entry(info);
	} else if (name && rwlocks_only) {
		const struct ll_rwlock_ops *ops = ll_rwlock_algo_find(name, &err);
		if (!ops)
			return usage_error("%s", err.msg);
		one = rwlock_entry(ops);
	} else if (name) {
		const struct ll_lock_ops *ops = bench_lock_find(name, &err);
		if (!ops)
			return usage_error("%s", err.msg);
		one = mutex_entry(ops);
	}

	int first = 1, rc = 0;
	if (json)
		fputs("[", stdout);
	if (name) {
		rc = show(&one, opts, json, &first);
	} else {
		int mutexes = !rwlocks_only && !gates_only;
		for (size_t i = 0; mutexes && !rc && i < bench_lock_count(); i++) {
			struct entry e = mutex_entry(bench_lock_at(i));
			rc = show(&e, NULL, json, &first);
		}
		if (mutexes && json)
			print_unbuilt_json(first);
		else if (mutexes)
			print_unbuilt_text();
		first = first && !(json && mutexes && bench_unbuilt_lock_count);
		for (size_t i = 0; !gates_only && !rc && i < ll_rwlock_algo_count(); i++) {
			struct entry e = rwlock_entry(ll_rwlock_algo_at(i));
			rc = show(&e, NULL, json, &first);
		}
		for (size_t i = 0; !rwlocks_only && !rc && ll_gate_policy_at(i); i++) {
			struct entry e = gate_entry(ll_gate_policy_at(i));
			rc = show(&e, NULL, json, &first);
		}
	}
	if (rc)
		return rc;
	if (json)
		fputs("]\n", stdout);
	return 0;
}
