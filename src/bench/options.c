/*
 * options.c: option values of locklab-bench's subcommands, checked, and the
 * one-line error for a bad one (options.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "options.h"

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
