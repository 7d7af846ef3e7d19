/*
 * dump.c: the status dump of every live lock, SHOW ENGINE INNODB
 * MUTEX with the rest of the monitor's figures: a text table or one line of
 * JSON, from ll_monitor_dump() or on a signal (columns in
 * docs/monitoring.md).
 *
 * The figures are copied out under the registries' mutexes
 * (ll_mon_snapshot_take), then formatted without them, so a slow output
 * never holds up ll_mutex_init or ll_mutex_destroy.
 *
 * On a signal the handler only posts a semaphore (async-signal-safe); a
 * dumper thread, started with the handler, waits on it and writes.
 */
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "locklab/locklab.h"
#include "monitor/monitor_impl.h"

#if LL_MONITOR

/* ---- formatting helpers ---- */

static void fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1fus", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.1fms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2fs", (double)ns / 1e9);
}

/* The bucket holding quantile q of the histogram: its upper bound in ns, 0 when empty. */
static uint64_t hist_below(const uint64_t *hist, double q)
{
	uint64_t total = 0, seen = 0;
	for (unsigned b = 0; b < LL_MON_HIST_BUCKETS; b++)
		total += hist[b];
	if (!total)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)total);
	if (rank >= total)
		rank = total - 1;
	for (unsigned b = 0; b < LL_MON_HIST_BUCKETS; b++) {
		seen += hist[b];
		if (seen > rank)
			return b + 1 < 64 ? (uint64_t)1 << (b + 1) : UINT64_MAX;
	}
	return UINT64_MAX;
}

/* s as a JSON string (core/json.h); NULL as null. */
static void json_str(FILE *f, const char *s)
{
	ll_json_string(s, ll_json_to_file, f);
}

/* "file:line" (the basename), "-" when unknown. */
static void fmt_site(char *buf, size_t len, const char *file, int line)
{
	if (!file) {
		snprintf(buf, len, "-");
		return;
	}
	const char *base = strrchr(file, '/');
	snprintf(buf, len, "%s:%d", base ? base + 1 : file, line);
}

/* Printable text for a table cell: control bytes become '?'. */
static void fmt_text(char *buf, size_t len, const char *s)
{
	snprintf(buf, len, "%s", s);
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static void fmt_thread(char *buf, size_t len, const struct ll_mon_snapshot *s, int tid)
{
	const char *name = ll_mon_thread_name(s, tid);
	char clean[LL_MON_THREAD_NAME_MAX];
	fmt_text(clean, sizeof(clean), name);
	snprintf(buf, len, "%d (%s)", tid, *name ? clean : "exited");
}

/* ---- text ---- */

enum { COLS = 17, CELL = 160 };

static const char *const col_names[COLS] = {
	"id", "name", "algo", "created", "acquired", "contended", "spins", "os_waits",
	"try_fail", "timeouts", "wait_p50", "wait_p99", "wait_max", "hold_avg", "last_locker",
	"holder", "waiters",
};
/* Left-aligned columns; the rest are numbers or times, right-aligned. */
static const unsigned char col_left[COLS] = { 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0 };

static void lock_cells(const struct ll_mon_snapshot *s, const struct ll_mutex_stats *l,
		       char cells[COLS][CELL])
{
	char t[64];
	snprintf(cells[0], CELL, "%llu", (unsigned long long)l->id);
	fmt_text(cells[1], CELL, *l->name ? l->name : "-");
	snprintf(cells[2], CELL, "%s%s", l->algo, l->monitored ? "" : " (off)");
	fmt_site(cells[3], CELL, l->created_file, l->created_line);
	snprintf(cells[4], CELL, "%llu", (unsigned long long)l->acquisitions);
	snprintf(cells[5], CELL, "%llu", (unsigned long long)l->contended);
	snprintf(cells[6], CELL, "%llu", (unsigned long long)l->spins);
	snprintf(cells[7], CELL, "%llu", (unsigned long long)l->parks);
	snprintf(cells[8], CELL, "%llu", (unsigned long long)l->trylock_failures);
	snprintf(cells[9], CELL, "%llu", (unsigned long long)l->timeouts);
	uint64_t p50 = hist_below(l->wait_hist, 0.50), p99 = hist_below(l->wait_hist, 0.99);
	fmt_ns(t, sizeof(t), p50);
	snprintf(cells[10], CELL, "%s%s", p50 ? "<" : "", p50 ? t : "-");
	fmt_ns(t, sizeof(t), p99);
	snprintf(cells[11], CELL, "%s%s", p99 ? "<" : "", p99 ? t : "-");
	if (l->contended)
		fmt_ns(cells[12], CELL, l->wait_ns_max);
	else
		snprintf(cells[12], CELL, "-");
	if (l->hold_samples)
		fmt_ns(cells[13], CELL, l->hold_ns_sum / l->hold_samples);
	else
		snprintf(cells[13], CELL, "-");
	if (l->last_file) {
		char site[64], who[48];
		fmt_site(site, sizeof(site), l->last_file, l->last_line);
		fmt_thread(who, sizeof(who), s, l->last_tid);
		snprintf(cells[14], CELL, "%s %s", site, who);
	} else {
		snprintf(cells[14], CELL, "-");
	}
	if (l->holder_tid)
		fmt_thread(cells[15], CELL, s, l->holder_tid);
	else
		snprintf(cells[15], CELL, "-");
	snprintf(cells[16], CELL, "%zu", l->waiters);
}

static void print_row(FILE *f, const char *const *row, const size_t *width)
{
	for (int c = 0; c < COLS; c++) {
		/* No padding after the last cell. */
		int w = c == COLS - 1 && col_left[c] ? 0 : (int)width[c];
		fprintf(f, "%s%*s", c ? "  " : "", col_left[c] ? -w : w, row[c]);
	}
	fputc('\n', f);
}

static void dump_text(FILE *f, const struct ll_mon_snapshot *s)
{
	fprintf(f, "LOCKLAB MONITOR: pid %d, %zu locks, statistics %s, hold time sampled 1 in %d, "
		"%zu threads waiting\n", (int)getpid(), s->nlocks, s->enabled ? "on" : "off",
		LL_MON_HOLD_SAMPLE, s->nwaits);
	char (*cells)[COLS][CELL] = calloc(s->nlocks + 1, sizeof(*cells));
	size_t width[COLS];
	if (!cells)
		return;
	for (int c = 0; c < COLS; c++)
		width[c] = strlen(col_names[c]);
	for (size_t i = 0; i < s->nlocks; i++) {
		lock_cells(s, &s->locks[i], cells[i]);
		for (int c = 0; c < COLS; c++)
			if (strlen(cells[i][c]) > width[c])
				width[c] = strlen(cells[i][c]);
	}
	print_row(f, col_names, width);
	for (size_t i = 0; i < s->nlocks; i++) {
		const char *row[COLS];
		for (int c = 0; c < COLS; c++)
			row[c] = cells[i][c];
		print_row(f, row, width);
		for (size_t k = 0; k < s->nwaits; k++) {
			const struct ll_waiter *w = &s->waits[k].w;
			char who[48], site[64], t[32];
			if (s->waits[k].lock != i)
				continue;
			fmt_thread(who, sizeof(who), s, w->tid);
			fmt_site(site, sizeof(site), w->file, w->line);
			fmt_ns(t, sizeof(t), w->waited_ns);
			fprintf(f, "    waiting: thread %s for %s at %s (spins %llu, os_waits %llu)\n",
				who, t, site, (unsigned long long)w->spins, (unsigned long long)w->parks);
		}
	}
	free(cells);
}

/* ---- JSON ---- */

static void json_thread(FILE *f, const struct ll_mon_snapshot *s, int tid)
{
	const char *name = ll_mon_thread_name(s, tid);
	fprintf(f, "{\"tid\":%d,\"thread\":", tid);
	if (*name)
		json_str(f, name);
	else
		fputs("null", f);
	fputc('}', f);
}

static void json_site(FILE *f, const char *file, int line)
{
	fputs("{\"file\":", f);
	json_str(f, file);
	fprintf(f, ",\"line\":%d}", line);
}

static void json_lock(FILE *f, const struct ll_mon_snapshot *s, size_t i)
{
	const struct ll_mutex_stats *l = &s->locks[i];
#define U(x) ((unsigned long long)(x))
	fprintf(f, "{\"id\":%llu,\"name\":", U(l->id));
	json_str(f, l->name);
	fputs(",\"algo\":", f);
	json_str(f, l->algo);
	fputs(",\"created\":", f);
	json_site(f, l->created_file, l->created_line);
	fprintf(f, ",\"created_tid\":%d,\"monitored\":%s,\"acquisitions\":%llu,\"contended\":%llu"
		",\"spins\":%llu,\"os_waits\":%llu,\"trylock_failures\":%llu,\"timeouts\":%llu",
		l->created_tid, l->monitored ? "true" : "false", U(l->acquisitions), U(l->contended),
		U(l->spins), U(l->parks), U(l->trylock_failures), U(l->timeouts));
	fprintf(f, ",\"wait_ns\":{\"sum\":%llu,\"max\":%llu,\"p50_below\":%llu,\"p99_below\":%llu"
		",\"log2_hist\":[", U(l->wait_ns_sum), U(l->wait_ns_max),
		U(hist_below(l->wait_hist, 0.50)), U(hist_below(l->wait_hist, 0.99)));
	unsigned used = LL_MON_HIST_BUCKETS;
	while (used && !l->wait_hist[used - 1])
		used--;
	for (unsigned b = 0; b < used; b++)
		fprintf(f, "%s%llu", b ? "," : "", U(l->wait_hist[b]));
	fprintf(f, "]},\"hold_ns\":{\"samples\":%llu,\"sum\":%llu,\"max\":%llu,\"avg\":%llu}",
		U(l->hold_samples), U(l->hold_ns_sum), U(l->hold_ns_max),
		U(l->hold_samples ? l->hold_ns_sum / l->hold_samples : 0));
	fputs(",\"last_locker\":", f);
	if (l->last_file) {
		fputs("{\"file\":", f);
		json_str(f, l->last_file);
		fprintf(f, ",\"line\":%d,\"tid\":%d}", l->last_line, l->last_tid);
	} else {
		fputs("null", f);
	}
	fputs(",\"holder\":", f);
	if (l->holder_tid)
		json_thread(f, s, l->holder_tid);
	else
		fputs("null", f);
	fputs(",\"waiters\":[", f);
	int first = 1;
	for (size_t k = 0; k < s->nwaits; k++) {
		const struct ll_waiter *w = &s->waits[k].w;
		if (s->waits[k].lock != i)
			continue;
		fprintf(f, "%s{\"tid\":%d,\"thread\":", first ? "" : ",", w->tid);
		json_str(f, w->thread_name);
		fputs(",\"at\":", f);
		json_site(f, w->file, w->line);
		fprintf(f, ",\"waited_ns\":%llu,\"spins\":%llu,\"os_waits\":%llu}", U(w->waited_ns),
			U(w->spins), U(w->parks));
		first = 0;
	}
	fputs("]}", f);
#undef U
}

static void dump_json(FILE *f, const struct ll_mon_snapshot *s)
{
	fprintf(f, "{\"locklab_monitor\":1,\"pid\":%d,\"time_ns\":%llu,\"statistics\":%s,"
		"\"hold_sample_every\":%d,\"lock_count\":%zu,\"waiting_threads\":%zu,\"locks\":[",
		(int)getpid(), (unsigned long long)s->now_ns, s->enabled ? "true" : "false",
		LL_MON_HOLD_SAMPLE, s->nlocks, s->nwaits);
	for (size_t i = 0; i < s->nlocks; i++) {
		if (i)
			fputc(',', f);
		json_lock(f, s, i);
	}
	fputs("]}\n", f);
}

int ll_monitor_dump(FILE *f, enum ll_dump_format format)
{
	struct ll_mon_snapshot s;
	if (!f || (format != LL_DUMP_TEXT && format != LL_DUMP_JSON))
		return EINVAL;
	if (ll_mon_snapshot_take(&s))
		return ENOMEM;
	if (format == LL_DUMP_JSON)
		dump_json(f, &s);
	else
		dump_text(f, &s);
	ll_mon_snapshot_free(&s);
	fflush(f);
	return ferror(f) ? EIO : 0;
}

/* ---- output ---- */

static char *out_path;   /* LOCKLAB_MONITOR_OUT; NULL: stderr.  Set before threads start. */

void ll_mon_set_out_path(const char *path)
{
	out_path = path ? strdup(path) : NULL;
}

const char *ll_mon_out_path(void)
{
	return out_path;
}

FILE *ll_mon_out_open(const char *path)
{
	FILE *f = path ? fopen(path, "a") : NULL;
	return f ? f : stderr;
}

void ll_mon_out_close(FILE *f, const char *path)
{
	(void)path;
	if (f == stderr)
		fflush(f);
	else
		fclose(f);
}

/* ---- on a signal ---- */

static struct {
	pthread_mutex_t mu;
	sem_t posted;
	int started;             /* the semaphore and the dumper thread exist */
	int signo;               /* 0: none */
	char *path;
	enum ll_dump_format format;
	struct sigaction previous;
} sigdump = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void on_dump_signal(int sig)
{
	int saved = errno;
	(void)sig;
	sem_post(&sigdump.posted);
	errno = saved;
}

static void *dumper_main(void *arg)
{
	(void)arg;
	for (;;) {
		if (sem_wait(&sigdump.posted))
			continue;   /* EINTR */
		pthread_mutex_lock(&sigdump.mu);
		char *path = sigdump.path ? strdup(sigdump.path) : NULL;
		enum ll_dump_format format = sigdump.format;
		int active = sigdump.signo != 0;
		pthread_mutex_unlock(&sigdump.mu);
		if (active) {
			FILE *f = ll_mon_out_open(path);
			ll_monitor_dump(f, format);
			ll_mon_out_close(f, path);
		}
		free(path);
	}
	return NULL;
}

static int set_error(struct ll_error *err, int rc, const char *msg)
{
	if (err)
		snprintf(err->msg, sizeof(err->msg), "%s", msg);
	return rc;
}

/*
 * Signals a dump may be asked on: ones sent only on purpose.  A handler on a
 * fault (SEGV, BUS, ILL, FPE, TRAP, SYS) returns to the faulting instruction:
 * a dump per fault, forever; one on TERM, INT, QUIT, HUP, ABRT or job control
 * (TSTP, TTIN, TTOU, CONT) makes the program ignore what ends or stops it;
 * CHLD, PIPE, ALRM and the real-time signals are the program's own.
 */
int ll_mon_dump_signal_ok(int signo)
{
	return signo == SIGUSR1 || signo == SIGUSR2 || signo == SIGPROF || signo == SIGURG ||
	       signo == SIGWINCH;
}

int ll_monitor_dump_on_signal(int signo, const char *path, enum ll_dump_format format,
			      struct ll_error *err)
{
	if (signo && !ll_mon_dump_signal_ok(signo))
		return set_error(err, EINVAL, "dump on signal: not a dump signal (valid: "
				 LL_MON_DUMP_SIGNALS ")");
	if (format != LL_DUMP_TEXT && format != LL_DUMP_JSON)
		return set_error(err, EINVAL, "dump on signal: format is text or json");
	char *copy = NULL;
	if (path && !(copy = strdup(path)))
		return set_error(err, ENOMEM, "dump on signal: out of memory");

	pthread_mutex_lock(&sigdump.mu);
	int rc = 0;
	if (!sigdump.started && signo) {
		pthread_t t;
		sem_init(&sigdump.posted, 0, 0);
		if (pthread_create(&t, NULL, dumper_main, NULL)) {
			rc = set_error(err, EAGAIN, "dump on signal: cannot start the dumper thread");
			goto out;
		}
		pthread_setname_np(t, "ll-monitor-dump");
		pthread_detach(t);
		sigdump.started = 1;
	}
	if (sigdump.signo)   /* back to what the program had before */
		sigaction(sigdump.signo, &sigdump.previous, NULL);
	sigdump.signo = 0;
	if (signo) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_dump_signal;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(signo, &sa, &sigdump.previous)) {
			rc = set_error(err, EINVAL, "dump on signal: sigaction refused the signal");
			goto out;
		}
		sigdump.signo = signo;
	}
	free(sigdump.path);
	sigdump.path = copy;
	copy = NULL;
	sigdump.format = format;
out:
	pthread_mutex_unlock(&sigdump.mu);
	free(copy);
	return rc;
}

#else /* !LL_MONITOR */

int ll_monitor_dump(FILE *f, enum ll_dump_format format)
{
	if (!f || (format != LL_DUMP_TEXT && format != LL_DUMP_JSON))
		return EINVAL;
	if (format == LL_DUMP_JSON)
		fputs("{\"locklab_monitor\":0,\"locks\":[]}\n", f);
	else
		fputs("LOCKLAB MONITOR: not built in (LL_MONITOR=0)\n", f);
	return 0;
}

int ll_monitor_dump_on_signal(int signo, const char *path, enum ll_dump_format format,
			      struct ll_error *err)
{
	(void)signo;
	(void)path;
	(void)format;
	if (err)
		snprintf(err->msg, sizeof(err->msg), "the monitor is not built in (LL_MONITOR=0)");
	return ENOSYS;
}

#endif
