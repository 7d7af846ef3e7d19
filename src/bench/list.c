/*
 * list.c: `locklab-bench list`: every algorithm, its summary and its knobs
 * with defaults; with NAME and --lock-opts, the values those options give
 * (the way to check an option string before a sweep uses it).
 *
 * Peer locks this build left out (peers.c) follow the rest: in text, one line
 * per reason, "not built: ck-mcs, ck-ticket, ck-fas (why)"; in JSON, entries
 * {"name", "built": false, "summary": "not built: why", "note": why,
 * "knobs": []} after the runnable ones, which carry "built": true.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "json.h"
#include "locks.h"

static const char *flag_text(unsigned flags)
{
	if (flags & LL_ALGO_FIFO)
		return "spins, FIFO";
	return flags & LL_ALGO_PARKS ? "parks" : "spins";
}

static void print_text(const struct ll_lock_ops *ops, const void *config)
{
	char val[64];

	printf("%-18s %s [%s]\n", ops->name, ops->summary, flag_text(ops->flags));
	for (size_t k = 0; k < ops->nknobs; k++) {
		const struct ll_knob *kn = &ops->knobs[k];
		char arg[96];
		ll_config_format(kn, config, val, sizeof(val));
		snprintf(arg, sizeof(arg), "%s=%s", kn->name, val);
		printf("    %-28s %s\n", arg, kn->help);
	}
}

static void print_json(const struct ll_lock_ops *ops, const void *config)
{
	char val[64];
	int64_t defaults[LL_CONFIG_MAX];

	ll_config_defaults(ops, defaults);
	fputs("{\"name\":", stdout);
	json_string(stdout, ops->name);
	fputs(",\"built\":true,\"summary\":", stdout);
	json_string(stdout, ops->summary);
	printf(",\"parks\":%s,\"fifo\":%s,\"knobs\":[", ops->flags & LL_ALGO_PARKS ? "true" : "false",
	       ops->flags & LL_ALGO_FIFO ? "true" : "false");
	for (size_t k = 0; k < ops->nknobs; k++) {
		const struct ll_knob *kn = &ops->knobs[k];
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

int cmd_list(int argc, char **argv)
{
	const char *name = NULL, *opts = NULL;
	int json = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--lock-opts") && i + 1 < argc)
			opts = argv[++i];
		else if (!strncmp(argv[i], "--lock-opts=", 12))
			opts = argv[i] + 12;
		else if (argv[i][0] != '-' && !name)
			name = argv[i];
		else
			return usage_error("list: unexpected argument '%s'", argv[i]);
	}
	if (opts && !name)
		return usage_error("list: --lock-opts needs a lock name");

	struct ll_error err;
	int64_t config[LL_CONFIG_MAX];
	size_t first = 0, last = bench_lock_count();
	if (name) {
		const struct ll_lock_ops *ops = bench_lock_find(name, &err);
		if (!ops)
			return usage_error("%s", err.msg);
		while (bench_lock_at(first) != ops)
			first++;
		last = first + 1;
	}

	if (json)
		fputs("[", stdout);
	for (size_t i = first; i < last; i++) {
		const struct ll_lock_ops *ops = bench_lock_at(i);
		ll_config_defaults(ops, config);
		if (ll_config_parse(ops, opts, config, &err))
			return usage_error("%s", err.msg);
		if (json) {
			if (i != first)
				fputs(",\n", stdout);
			print_json(ops, config);
		} else {
			print_text(ops, config);
		}
	}
	if (!name && json)
		print_unbuilt_json(first == last);
	else if (!name)
		print_unbuilt_text();
	if (json)
		fputs("]\n", stdout);
	return 0;
}
