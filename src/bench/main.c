/*
 * main.c: locklab-bench, the C side of the `locklab` command.
 *
 *   locklab-bench list [NAME] [--lock-opts K=V,...] [--json]
 *   locklab-bench bench --lock L --threads N --mutexes M --hold-ns H ... [--json]
 *   locklab-bench bench --workload server --lock L --threads C [--gate P] ... [--json]
 *   locklab-bench floor [--json]
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "options.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "list", cmd_list },
	{ "bench", cmd_bench_workload },
	{ "floor", cmd_floor },
	{ "moncost", cmd_moncost },
};

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs("usage: locklab-bench list [--rwlock] [NAME] [--lock-opts K=V,...] [--json]\n"
		      "       locklab-bench bench [--workload mutex|server|rw] --lock L ... [--json]\n"
		      "       locklab-bench floor [--json]\n"
		      "       locklab-bench moncost [--locks L,...] ... [--json]\n"
		      "  list     the algorithms, their knobs and defaults\n"
		      "  bench    one benchmark point in this process\n"
		      "  floor    what the primitives cost on this machine\n"
		      "  moncost  what the lock monitor costs an uncontended lock\n"
		      "Each command's --help describes its options.\n",
		      argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	return usage_error("unknown command '%s' (valid: list, bench, floor, moncost)", argv[1]);
}
