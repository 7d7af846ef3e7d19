/*
 * main.c: locklab-bench, the C side of the `locklab` command.
 *
 *   locklab-bench list [NAME] [--lock-opts K=V,...] [--json]
 *   locklab-bench bench --lock L --threads N --mutexes M --hold-ns H ... [--json]
 *   locklab-bench bench --workload server --lock L --threads C [--gate P] ... [--json]
 *   locklab-bench floor [--json]
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
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

int parse_i64(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return usage_error("%s wants an integer in [%lld, %lld], got '%s'", opt,
				   (long long)min, (long long)max, s);
	*out = v;
	return 0;
}

/* A day: longer is a typo, and a point that long would outlast any sweep's patience. */
#define MAX_SECONDS 86400

int parse_seconds(const char *opt, const char *s, double min, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min) || v > MAX_SECONDS)
		return usage_error("%s wants seconds in [%g, %d], got '%s'", opt, min, MAX_SECONDS, s);
	*out = v;
	return 0;
}

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
		fputs("usage: locklab-bench list [NAME] [--lock-opts K=V,...] [--json]\n"
		      "       locklab-bench bench --help\n"
		      "       locklab-bench floor [--json]\n"
		      "       locklab-bench moncost --help\n",
		      argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	return usage_error("unknown command '%s' (valid: list, bench, floor, moncost)", argv[1]);
}
