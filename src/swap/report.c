/*
 * report.c: what the swapper counts and tells.
 *
 * With the stats on (LOCKLAB_SWAP_STATS, LOCKLAB_SWAP_STATS_JSON), each
 * thread counts its acquisitions in its own swap_tls and adds them to the
 * totals every 1024, and at its exit; the totals are read once, at the
 * process's exit, for one line on stderr (the program's at load:
 * preload/stderr.h) and one JSON line appended to a file.
 * LOCKLAB_SWAP_SITES_JSON appends which sites matched how many mutexes.
 * locklab_swap_describe tells the profiler, when both libraries are
 * preloaded, which locks serve the program (preload/handoff.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "swap.h"

#include "preload/stderr.h"

#include "core/json.h"
#include "preload/handoff.h"

static const char *const pass_names[PASS_N] = { "pshared", "robust", "pi", "pp" };

static struct {
	atomic_ulong acquisitions, contended, conds;
	atomic_ulong rwlocks, rw_acquisitions;   /* rwlocks: inits, acquisitions */
	atomic_ulong rw_contended, rw_pshared;   /* ..., left to glibc */
	atomic_ulong passthrough[PASS_N];
	atomic_uint waiting, max_waiting;   /* threads inside a contended lock: now, at most */
} totals;

static pthread_key_t flush_key;
/*
 * glibc keeps the values of a thread's first 32 keys in the thread itself;
 * pthread_setspecific on a later key callocs a block, which must not happen
 * inside a lock (the exit flush is then left out: counts of a thread that
 * exits between flushes are lost).
 */
#define KEYS_IN_THREAD 32
static int flush_keyed;

static void flush_counts(void)
{
	/* Relaxed: totals are read once, at exit, after every flush we can wait for. */
	if (swap_tls.acq)
		atomic_fetch_add_explicit(&totals.acquisitions, swap_tls.acq, memory_order_relaxed);
	if (swap_tls.cont)
		atomic_fetch_add_explicit(&totals.contended, swap_tls.cont, memory_order_relaxed);
	if (swap_tls.rw)
		atomic_fetch_add_explicit(&totals.rw_acquisitions, swap_tls.rw, memory_order_relaxed);
	if (swap_tls.rwc)
		atomic_fetch_add_explicit(&totals.rw_contended, swap_tls.rwc, memory_order_relaxed);
	swap_tls.acq = swap_tls.cont = swap_tls.rw = swap_tls.rwc = 0;
}

static void flush_at_thread_exit(void *unused)
{
	(void)unused;
	flush_counts();
}

void swap_report_setup(void)
{
	if (swap_counting())
		flush_keyed = !pthread_key_create(&flush_key, flush_at_thread_exit) &&
			      flush_key < KEYS_IN_THREAD;
}

void swap_waiting_enter(void)
{
	/* Relaxed: a gauge and its maximum, read at exit. */
	unsigned n = atomic_fetch_add_explicit(&totals.waiting, 1, memory_order_relaxed) + 1;
	unsigned m = atomic_load_explicit(&totals.max_waiting, memory_order_relaxed);
	while (n > m && !atomic_compare_exchange_weak_explicit(&totals.max_waiting, &m, n,
							       memory_order_relaxed,
							       memory_order_relaxed))
		;
}

void swap_waiting_leave(void)
{
	atomic_fetch_sub_explicit(&totals.waiting, 1, memory_order_relaxed);
}

/* The thread's first count registers its exit flush. */
static inline void count_thread(void)
{
	if (unlikely(!swap_tls.keyed)) {
		swap_tls.keyed = 1;
		/* A value under the key makes the thread's exit run the flush. */
		if (flush_keyed)
			pthread_setspecific(flush_key, &swap_tls);
	}
}

void swap_count(int contended)
{
	count_thread();
	swap_tls.cont += (uint32_t)contended;
	if (unlikely(++swap_tls.acq >= 1024))
		flush_counts();
}

void swap_rw_count(int contended)
{
	count_thread();
	swap_tls.rwc += (uint32_t)contended;
	if (unlikely(++swap_tls.rw >= 1024))
		flush_counts();
}

/* Relaxed, all of them: totals read at exit. */
void swap_note_passthrough(enum swap_pass why)
{
	atomic_fetch_add_explicit(&totals.passthrough[why], 1, memory_order_relaxed);
}

void swap_note_cond_wait(void)
{
	atomic_fetch_add_explicit(&totals.conds, 1, memory_order_relaxed);
}

void swap_note_rwlock_init(int pshared)
{
	if (swap_counting())
		atomic_fetch_add_explicit(&totals.rwlocks, 1, memory_order_relaxed);
	if (swap_hot.rw_rest && pshared)
		atomic_fetch_add_explicit(&totals.rw_pshared, 1, memory_order_relaxed);
}

/* In a forked child: the parent's totals are the parent's. */
void swap_report_after_fork(void)
{
	memset(&totals, 0, sizeof(totals));
	atomic_store_explicit(&swap_mutex_slots.made, 0, memory_order_relaxed);
	atomic_store_explicit(&swap_rw_slots.made, 0, memory_order_relaxed);
	for (int i = 0; i <= swap_nsites; i++)
		atomic_store_explicit(&swap_classes[i].matched, 0, memory_order_relaxed);
	atomic_store_explicit(&swap_glibc_class.matched, 0, memory_order_relaxed);
	for (int i = 0; i <= swap_hot.rw_nsites; i++)
		atomic_store_explicit(&swap_rwclasses[i].matched, 0, memory_order_relaxed);
	atomic_store_explicit(&swap_rw_glibc_class.matched, 0, memory_order_relaxed);
	swap_tls.acq = swap_tls.cont = swap_tls.rw = swap_tls.rwc = 0;
}

/* Text built without malloc, into a buffer of the caller's: cut short when full. */
struct out {
	char *p;
	size_t len, cap;
};

static void out_printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(struct out *o, const char *fmt, ...)
{
	if (o->len + 1 >= o->cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len = o->len + (size_t)n < o->cap ? o->len + (size_t)n : o->cap - 1;
}

static void out_sink(void *ctx, const char *p, size_t n)
{
	struct out *o = ctx;
	out_printf(o, "%.*s", (int)n, p);
}

static void out_str(struct out *o, const char *s)
{
	ll_json_string(s, out_sink, o);
}

static unsigned long load(atomic_ulong *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* One site of a sites list: {"site", "lock", "lock_opts"[, "matched"]}. */
static void put_site_json(struct out *o, const char *site, const char *name, const char *opts,
			  atomic_ulong *matched, int counts)
{
	out_printf(o, "{\"site\": ");
	out_str(o, site);
	out_printf(o, ", \"lock\": ");
	out_str(o, name);
	out_printf(o, ", \"lock_opts\": ");
	out_str(o, opts);
	if (counts)
		out_printf(o, ", \"matched\": %lu", load(matched));
	out_printf(o, "}");
}

/* "lock": ..., "lock_opts": ..., "lock_for": [...]: the mutexes' (the profiler's
 * describe); with the counts (a process's record), "rwlock_for": [...] too. */
static void put_config_json(struct out *o, int counts)
{
	const struct swap_class *c0 = &swap_classes[0];
	out_printf(o, "\"lock\": ");
	out_str(o, swap_rest == GLIBC_CLASS ? NULL : c0->name);
	out_printf(o, ", \"lock_opts\": ");
	out_str(o, swap_rest == GLIBC_CLASS ? "" : c0->opts);
	out_printf(o, ", \"lock_for\": [");
	for (int i = 1; i <= swap_nsites; i++) {
		struct swap_class *c = &swap_classes[i];
		out_printf(o, "%s", i > 1 ? ", " : "");
		put_site_json(o, c->site, c->name, c->opts, &c->matched, counts);
	}
	out_printf(o, "]");
	if (!counts)
		return;
	out_printf(o, ", \"not_chosen\": %lu, \"rwlock_for\": [", load(&swap_glibc_class.matched));
	for (int i = 1; i <= swap_hot.rw_nsites; i++) {
		struct swap_rwclass *c = &swap_rwclasses[i];
		out_printf(o, "%s", i > 1 ? ", " : "");
		put_site_json(o, c->site, c->name, c->opts, &c->matched, counts);
	}
	out_printf(o, "], \"rwlocks_not_chosen\": %lu", load(&swap_rw_glibc_class.matched));
}

/* The rest's rwlock, or NULL where the rest stay glibc's. */
static const struct swap_rwclass *rw_rest_swapped(void)
{
	return swap_hot.rw_rest == RW_GLIBC_CLASS ? NULL : swap_hot.rw_rest;
}

/* "NAME" or "NAME (OPTS)" */
static void put_class_text(struct out *o, const struct swap_class *c)
{
	out_printf(o, "%s%s%s%s", c->name, c->opts[0] ? " (" : "", c->opts, c->opts[0] ? ")" : "");
}

EXPORT void locklab_swap_describe(int json, char *buf, size_t len)
{
	struct out o = { buf, 0, len };
	if (!len)
		return;
	buf[0] = 0;
	swap_configured();
	if (json) {
		out_printf(&o, "{");
		put_config_json(&o, 0);
		out_printf(&o, "}");
		return;
	}
	int rest = swap_rest != GLIBC_CLASS;
	if (rest)
		put_class_text(&o, &swap_classes[0]);
	for (int i = 1; i <= swap_nsites; i++) {
		out_printf(&o, "%s", i > 1 || rest ? "; " : "");
		put_class_text(&o, &swap_classes[i]);
		out_printf(&o, " for %s", swap_classes[i].site);
	}
	if (swap_nsites)
		out_printf(&o, "; %s for the rest", rest ? swap_classes[0].name : "glibc");
}

/* One write with O_APPEND: processes appending at once do not interleave. */
static void append_line(const char *path, const struct out *o)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		swap_say("locklab: swap: %s: %s", path, strerror(errno));
		return;
	}
	ssize_t w = write(fd, o->p, o->len);
	(void)w;
	close(fd);
}

/* The exit's figures, read once. */
struct figures {
	unsigned long pass[PASS_N], npass, mx, acq, cont, conds;
	unsigned long rwl, rwa, rws, rwc, rwp, slots, rw_slots;
	unsigned maxw;
	struct swap_slab_gauges slab;
};

static struct figures figures_now(void)
{
	struct figures f = {
		.mx = load(&swap_mutex_slots.made), .acq = load(&totals.acquisitions),
		.cont = load(&totals.contended), .conds = load(&totals.conds),
		.rwl = load(&totals.rwlocks), .rwa = load(&totals.rw_acquisitions),
		.rws = load(&swap_rw_slots.made), .rwc = load(&totals.rw_contended),
		.rwp = load(&totals.rw_pshared), .slots = load(&swap_mutex_slots.in_use),
		.rw_slots = load(&swap_rw_slots.in_use), .slab = swap_slab_gauges(),
		.maxw = atomic_load_explicit(&totals.max_waiting, memory_order_relaxed),
	};
	for (int i = 0; i < PASS_N; i++)
		f.npass += f.pass[i] = load(&totals.passthrough[i]);
	return f;
}

static void put_stats_line(struct out *o, const struct figures *f)
{
	out_printf(o, "locklab: swap pid %d lock %s: %lu mutexes (%zu bytes each), "
		   "%lu acquisitions, %lu contended, %lu passed to glibc, %lu condvar waits, "
		   "at most %u waiting at once; ",
		   (int)getpid(), swap_rest == GLIBC_CLASS ? "glibc" : swap_classes[0].name, f->mx,
		   swap_mutex_slots.bytes, f->acq, f->cont, f->npass, f->conds, f->maxw);
	if (swap_hot.rw_rest)
		out_printf(o, "rwlocks %s: %lu initialised, %lu swapped (%zu bytes each), "
			   "%lu acquisitions, %lu contended, %lu process-shared left to glibc",
			   rw_rest_swapped() ? rw_rest_swapped()->name : "glibc", f->rwl, f->rws,
			   swap_rw_slots.bytes, f->rwa, f->rwc, f->rwp);
	else
		out_printf(o, "glibc's rwlocks: %lu initialised, %lu acquisitions", f->rwl, f->rwa);
	out_printf(o, "; in use: %lu slots, %lu rwlock slots, %lu blocks of the "
		   "algorithms' (%lu bytes)", f->slots, f->rw_slots, f->slab.blocks,
		   f->slab.block_bytes);
	for (int i = 1; i <= swap_nsites; i++) {
		unsigned long n = load(&swap_classes[i].matched);
		out_printf(o, "%s%s %s: %lu%s", i == 1 ? "; lock-for " : ", ", swap_classes[i].site,
			   swap_classes[i].name, n, n ? "" : " (matched nothing)");
	}
	if (swap_nsites)
		out_printf(o, "; %lu not chosen", load(&swap_glibc_class.matched));
	for (int i = 1; i <= swap_hot.rw_nsites; i++) {
		unsigned long n = load(&swap_rwclasses[i].matched);
		out_printf(o, "%s%s %s: %lu%s", i == 1 ? "; rwlock-for " : ", ",
			   swap_rwclasses[i].site, swap_rwclasses[i].name, n,
			   n ? "" : " (matched nothing)");
	}
	if (swap_hot.rw_nsites)
		out_printf(o, "; %lu rwlocks not chosen", load(&swap_rw_glibc_class.matched));
	out_printf(o, "\n");
}

static void put_stats_json(struct out *o, const struct figures *f)
{
	out_printf(o, "{\"pid\": %d, ", (int)getpid());
	put_config_json(o, 1);
	out_printf(o, ", \"mutexes\": %lu, \"slot_bytes\": %zu, \"acquisitions\": %lu, "
		   "\"contended\": %lu, \"passthrough\": {\"%s\": %lu, \"%s\": %lu, "
		   "\"%s\": %lu, \"%s\": %lu}, \"conds\": %lu, \"max_waiting\": %u, "
		   "\"rwlocks\": {\"lock\": ",
		   f->mx, swap_mutex_slots.bytes, f->acq, f->cont, pass_names[0], f->pass[0],
		   pass_names[1], f->pass[1], pass_names[2], f->pass[2], pass_names[3], f->pass[3],
		   f->conds, f->maxw);
	out_str(o, rw_rest_swapped() ? rw_rest_swapped()->name : NULL);
	out_printf(o, ", \"lock_opts\": ");
	out_str(o, rw_rest_swapped() ? rw_rest_swapped()->opts : "");
	out_printf(o, ", \"initialised\": %lu, \"acquisitions\": %lu, \"swapped\": %lu, "
		   "\"slot_bytes\": %zu, \"contended\": %lu, \"pshared\": %lu}, "
		   "\"in_use\": {\"slots\": %lu, \"rw_slots\": %lu, \"blocks\": %lu, "
		   "\"block_bytes\": %lu}}\n",
		   f->rwl, f->rwa, f->rws, swap_rw_slots.bytes, f->rwc, f->rwp, f->slots, f->rw_slots,
		   f->slab.blocks, f->slab.block_bytes);
}

static char report_buf[1 << 17];   /* the exit reports' text (64 sites of 511 bytes fit) */

__attribute__((destructor)) static void swap_dtor(void)
{
	if (!atomic_load_explicit(&swap_config_ready, memory_order_acquire))
		return;
	struct out o = { report_buf, 0, sizeof(report_buf) };
	if (swap_out.sites_json[0]) {
		out_printf(&o, "{\"pid\": %d, ", (int)getpid());
		put_config_json(&o, 1);
		out_printf(&o, "}\n");
		append_line(swap_out.sites_json, &o);
	}
	if (!swap_counting())
		return;
	flush_counts();
	struct figures f = figures_now();
	if (swap_out.stats_line) {
		o.len = 0;
		put_stats_line(&o, &f);
		pl_stderr_write(o.p, o.len);
	}
	if (swap_out.stats_json[0]) {
		o.len = 0;
		put_stats_json(&o, &f);
		append_line(swap_out.stats_json, &o);
	}
}
