/*
 * main.c: locklab-bench, the C side of the `locklab` command.
 *
 *   locklab-bench list [NAME] [--lock-opts K=V,...] [--json]
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("locklab: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "list", cmd_list },
};

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs("usage: locklab-bench list [NAME] [--lock-opts K=V,...] [--json]\n",
		      argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	return usage_error("unknown command '%s' (valid: list)", argv[1]);
}
