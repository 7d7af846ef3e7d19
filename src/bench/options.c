/*
 * options.c: option values of locklab-bench's subcommands, checked, and the
 * one-line error for a bad one (options.h).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error_line.h"
#include "options.h"

int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ll_error_line(fmt, ap);
	va_end(ap);
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

void usage_run_options(FILE *f, const char *what)
{
	fprintf(f,
		"  --lock L            the algorithm (`locklab-bench list` names them; rw:\n"
		"                      `list --rwlock`)\n"
		"  --lock-opts K=V,... its knobs (`locklab-bench list L` shows them, defaults)\n"
		"  --threads N         threads, 1..100000\n"
		"  --duration S        seconds measured, after the warm-up; give exactly one of\n"
		"                      --duration and --iterations\n"
		"  --iterations J      each thread's %s, no warm-up: the window is the whole run\n"
		"  --warmup S          seconds run unmeasured before the window (0.2)\n"
		"  --json              the result as one JSON line (default: text)\n"
		"  --help              this text\n",
		what);
}

void run_opts_defaults(struct run_opts *o)
{
	*o = (struct run_opts){ .sample_every = 16, .warmup_s = 0.2 };
}

/* ch, a letter of RUN_OPTIONS or SAMPLE_OPTION, with its argument: 0 or EXIT_USAGE; -1 for another. */
static int parse_run_option(int ch, const char *arg, struct run_opts *o)
{
	switch (ch) {
	case 'l': o->lock = arg; return 0;
	case 'o': o->lock_opts = arg; return 0;
	case 't':
		o->have_threads = 1;
		return parse_i64("--threads", arg, 1, 100000, &o->threads);
	case 'H':
		o->have_hold = 1;
		return parse_i64("--hold-ns", arg, 0, 1000000000, &o->hold_ns);
	case 'O': return parse_i64("--outside-ns", arg, 0, 1000000000, &o->outside_ns);
	case 'd': return parse_seconds("--duration", arg, 0.001, &o->duration_s);
	case 'i': return parse_i64("--iterations", arg, 1, INT64_MAX / 2, &o->iterations);
	case 'w': return parse_seconds("--warmup", arg, 0, &o->warmup_s);
	case 's': return parse_i64("--sample-every", arg, 1, 1 << 20, &o->sample_every);
	case 'j': o->json = 1; return 0;
	default: return -1;
	}
}

int check_run_opts(const struct run_opts *o)
{
	if ((o->duration_s > 0) == (o->iterations > 0))
		return usage_error("bench: give exactly one of --duration and --iterations");
	if (o->sample_every & (o->sample_every - 1))
		return usage_error("bench: --sample-every wants a power of two, got %" PRId64,
				   o->sample_every);
	return 0;
}

int parse_options(int argc, char **argv, const struct option *opts, struct run_opts *r,
		  int (*take)(int ch, const char *arg, void *ctx), void *ctx)
{
	int rc = 0, ch;

	opterr = 0;
	optind = 1;
	while (!rc && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		rc = parse_run_option(ch, optarg, r);
		if (rc < 0)
			rc = take(ch, optarg, ctx);
		if (rc < 0)
			return usage_error("bench: unknown or incomplete option '%s'", argv[optind - 1]);
	}
	if (rc)
		return rc;
	if (optind < argc)
		return usage_error("bench: unexpected argument '%s'", argv[optind]);
	return 0;
}
