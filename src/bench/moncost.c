/*
 * moncost.c: `locklab-bench moncost`, what the lock monitor costs an
 * uncontended lock+unlock, measured in one process (docs/monitoring.md).
 *
 * Each lock gets one mutex, timed four ways, round by round with the order
 * rotating so that drift and interference fall on all alike:
 *   bare  the loop compiled with LL_MONITOR=0 (moncost/loop.c): the bare
 *         ops calls of a build without the feature;
 *   off   the loop compiled with the monitor, statistics off for the lock;
 *   on    the same loop, statistics on (ll_mutex_monitor);
 *   bare2 bare again: the A/A control, whose ratio to bare is the noise.
 * A round times `pairs` iterations each way of bench's worker loop with one
 * thread (--empty: bare lock+unlock pairs).  Reported: the median over
 * rounds of each way's ns per iteration, and of the per-round ratios
 * off/bare and bare2/bare and difference on - off (paired in the round).  A second thread stays
 * alive, blocked, throughout: glibc drops its mutex's atomics while a
 * process has one thread.  Afterwards the monitor must have counted every
 * monitored pair.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "json.h"
#include "locks.h"
#include "moncost.h"
#include "stats.h"

enum { BARE, OFF, ON, BARE2, WAYS };
static const char *const way_names[WAYS] = { "bare", "off", "on", "bare2" };

struct lock_cost {
	const char *lock;
	double ns[WAYS];            /* median ns per iteration */
	double off_over_bare;       /* median of per-round ratios */
	double aa;                  /* median of per-round bare2/bare: the noise */
	double on_minus_off;        /* median of per-round differences, ns */
	int counted;                /* the monitor's count was exact */
};

static int empty;
static struct moncost_slot slot;

static double time_way(ll_mutex_t *m, int way, uint64_t pairs)
{
	uint64_t ns;
	if (way == BARE || way == BARE2)
		return (double)moncost_pairs_bare(m, pairs, empty, &slot) / (double)pairs;
	ll_mutex_monitor(m, way == ON);
	ns = moncost_pairs_monitored(m, pairs, empty, &slot);
	ll_mutex_monitor(m, 0);
	return (double)ns / (double)pairs;
}

static int measure(const char *lock, uint64_t pairs, int rounds, struct lock_cost *out)
{
	ll_mutex_t m;
	struct ll_error err;
	double *per = calloc((size_t)rounds * (WAYS + 3), sizeof(double));
	double *ratio = per + (size_t)rounds * WAYS, *diff = ratio + rounds, *aa = diff + rounds;

	if (!per)
		return usage_error("moncost: out of memory");
	if (bench_mutex_init(&m, lock, NULL, &err)) {
		free(per);
		return usage_error("%s", err.msg);
	}
	ll_mutex_set_name(&m, "moncost");
	for (int way = 0; way < WAYS; way++)   /* warm-up: code, line and record in cache */
		time_way(&m, way, pairs);
	for (int r = 0; r < rounds; r++) {
		double t[WAYS];
		for (int k = 0; k < WAYS; k++) {
			int way = (r + k) % WAYS;
			t[way] = time_way(&m, way, pairs);
		}
		for (int way = 0; way < WAYS; way++)
			per[way * rounds + r] = t[way];
		ratio[r] = t[OFF] / t[BARE];
		aa[r] = t[BARE2] / t[BARE];
		diff[r] = t[ON] - t[OFF];
	}
	struct ll_mutex_stats st;
	out->lock = lock;
	out->counted = ll_mutex_stats(&m, &st) == 0 &&
		       st.acquisitions == (uint64_t)(rounds + 1) * pairs && st.contended == 0;
	for (int way = 0; way < WAYS; way++)
		out->ns[way] = median(per + way * rounds, (size_t)rounds);
	out->off_over_bare = median(ratio, (size_t)rounds);
	out->aa = median(aa, (size_t)rounds);
	out->on_minus_off = median(diff, (size_t)rounds);
	ll_mutex_destroy(&m);
	free(per);
	return 0;
}

/* The second thread: alive and blocked until main writes to the pipe. */
static void *idle_main(void *p)
{
	char c;
	while (read(*(int *)p, &c, 1) < 0)
		;
	return NULL;
}

static void usage(FILE *f)
{
	fputs("usage: locklab-bench moncost [--locks L,...] [--pairs N] [--rounds R] [--empty] [--json]\n"
	      "What the lock monitor costs an uncontended lock: bench's loop with one thread,\n"
	      "ns per iteration built without the monitor (bare), with it but statistics off\n"
	      "(off), and on (on); bare2/bare is the A/A control.\n"
	      "  --locks L,...       these locks (default: every lock)\n"
	      "  --pairs N           iterations each way times in a round, 1..1000000000 (100000)\n"
	      "  --rounds R          rounds, each timing every way in turn; the figures are\n"
	      "                      medians over them, 1..1001 (21)\n"
	      "  --empty             bare lock+unlock pairs, no work in the loop\n"
	      "  --json              the figures as JSON (default: a table)\n"
	      "  --help              this text\n", f);
}

int cmd_moncost(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "locks", required_argument, 0, 'l' }, { "pairs", required_argument, 0, 'p' },
		{ "rounds", required_argument, 0, 'r' }, { "json", no_argument, 0, 'j' },
		{ "help", no_argument, 0, 'h' },         { "empty", no_argument, 0, 'e' },
		{ 0, 0, 0, 0 },
	};
	const char *locks = NULL;
	int64_t pairs = 100000, rounds = 21;
	int json = 0, rc = 0, ch;
	struct ll_error err;

	opterr = 0;
	optind = 1;
	while (!rc && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'l': locks = optarg; break;
		case 'p': rc = parse_i64("--pairs", optarg, 1, 1000000000, &pairs); break;
		case 'r': rc = parse_i64("--rounds", optarg, 1, 1001, &rounds); break;
		case 'j': json = 1; break;
		case 'e': empty = 1; break;
		case 'h': usage(stdout); exit(0);
		default:
			return usage_error("moncost: unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (rc)
		return rc;
	if (optind < argc)
		return usage_error("moncost: unexpected argument '%s'", argv[optind]);

	/* The locks: named ones, checked before anything runs, or every one. */
	size_t n = 0, cap = bench_lock_count() + 1;
	const char **names = calloc(cap, sizeof(*names));
	char *list = locks ? strdup(locks) : NULL;
	if (!names || (locks && !list))
		return usage_error("moncost: out of memory");
	if (list) {
		for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			if (!bench_lock_find(tok, &err))
				return usage_error("moncost: %s", err.msg);
			if (n < cap)
				names[n++] = tok;
		}
		if (!n)
			return usage_error("moncost: --locks names no lock");
	} else {
		for (size_t i = 0; i < bench_lock_count(); i++)
			names[n++] = bench_lock_at(i)->name;
	}
	if (!ll_monitor_available())
		return usage_error("moncost: the library was built without the monitor (LL_MONITOR=OFF)");

	int fds[2];
	pthread_t idle;
	if (pipe(fds) || pthread_create(&idle, NULL, idle_main, &fds[0]))
		return usage_error("moncost: cannot start the second thread");

	struct lock_cost *cost = calloc(n, sizeof(*cost));
	if (!cost)
		return usage_error("moncost: out of memory");
	int all_counted = 1;
	for (size_t i = 0; i < n; i++) {
		rc = measure(names[i], (uint64_t)pairs, (int)rounds, &cost[i]);
		if (rc)
			return rc;
		all_counted &= cost[i].counted;
	}
	if (write(fds[1], "x", 1) == 1)
		pthread_join(idle, NULL);

	double log_sum = 0, log_aa = 0, worst_ratio = 0, worst_diff = -1e9;
	for (size_t i = 0; i < n; i++) {
		log_sum += log(cost[i].off_over_bare);
		log_aa += log(cost[i].aa);
		if (cost[i].off_over_bare > worst_ratio)
			worst_ratio = cost[i].off_over_bare;
		if (cost[i].on_minus_off > worst_diff)
			worst_diff = cost[i].on_minus_off;
	}
	double geomean = exp(log_sum / (double)n), aa_geomean = exp(log_aa / (double)n);

	if (json) {
		printf("{\"pairs\":%" PRId64 ",\"rounds\":%" PRId64 ",\"loop\":\"%s\","
		       "\"hold_sample_every\":%d,\"locks\":[", pairs, rounds,
		       empty ? "empty" : "bench", LL_MON_HOLD_SAMPLE);
		for (size_t i = 0; i < n; i++) {
			printf("%s{\"lock\":", i ? "," : "");
			json_string(stdout, cost[i].lock);
			for (int way = 0; way < WAYS; way++)
				printf(",\"%s_ns\":%.3f", way_names[way], cost[i].ns[way]);
			printf(",\"off_over_bare\":%.4f,\"bare2_over_bare\":%.4f,\"on_minus_off_ns\":%.3f"
			       ",\"counted\":%s}", cost[i].off_over_bare, cost[i].aa,
			       cost[i].on_minus_off, cost[i].counted ? "true" : "false");
		}
		printf("],\"off_over_bare_geomean\":%.4f,\"off_over_bare_max\":%.4f,"
		       "\"bare2_over_bare_geomean\":%.4f,\"on_minus_off_max_ns\":%.3f,"
		       "\"counted\":%s}\n", geomean, worst_ratio, aa_geomean, worst_diff,
		       all_counted ? "true" : "false");
	} else {
		printf("uncontended, one thread, %s: ns per iteration, median of %" PRId64
		       " rounds of %" PRId64 " each way, interleaved\n",
		       empty ? "lock+unlock pairs" : "bench's loop", rounds, pairs);
		printf("%-18s %8s %8s %8s %9s %8s %10s\n", "lock", "bare", "off", "on", "off/bare",
		       "on-off", "bare2/bare");
		for (size_t i = 0; i < n; i++)
			printf("%-18s %8.2f %8.2f %8.2f %9.3f %+8.2f %10.3f%s\n", cost[i].lock,
			       cost[i].ns[BARE], cost[i].ns[OFF], cost[i].ns[ON],
			       cost[i].off_over_bare, cost[i].on_minus_off, cost[i].aa,
			       cost[i].counted ? "" : "  MISCOUNTED");
		printf("off/bare: geometric mean %.3f, max %.3f (A/A bare2/bare: geometric mean "
		       "%.3f); on-off: max %+.2f ns\n", geomean, worst_ratio, aa_geomean, worst_diff);
	}
	free(cost);
	free(names);
	free(list);
	if (!all_counted)
		fprintf(stderr, "locklab: moncost: the monitor miscounted a lock's acquisitions\n");
	return all_counted ? 0 : 1;
}
