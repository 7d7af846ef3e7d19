/*
 * collect.c: what the kernel half counted, into the profiler's records, so
 * that the profiler's report renders it (attach.h draws the maps).
 *
 * Counts are exact per key (futex word, thread, frame-pointer stack); stacks
 * are samples.  Each sample is unwound (unwind.c), cut at glibc's lock
 * functions, which also say what kind of lock the word is (names.c), and
 * becomes one of its key's "shares".  At each report, what a key counted
 * since the last one is split between its shares in proportion to how often
 * each was sampled (exact when a key has one stack, as a thread waiting at one
 * call site has), and added to the records of (lock, stack) of its thread.  A
 * key not sampled yet borrows its word's first share (another thread's sample
 * of the same lock); a word never sampled is a raw futex with no stack, named
 * by its symbol if it is static.
 *
 * Sites: a lock with no symbol of its own is named, as in the profiler, by the
 * site that first waited on it: the caller in its first waiter's sample (a
 * waker's when it came first, until a waiter's arrives before the lock is
 * reported).
 *
 * Condvar waits (pthread_cond_wait waiting for a signal) are not contention:
 * left out and counted, unless --condvar; so are waits on words that are no
 * locks at all (pthread_join, barriers), always.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer.h"
#include "attach.h"

/* The libc frames a sample may carry above the profiler's depth. */
#define UNWIND_MAX (PROF_MAX_DEPTH + 32)

/* One stack sampled under a key. */
struct share {
	uint32_t stack;      /* the profiler's stack id (0: none) */
	uint8_t event, kind;
	uintptr_t lock;      /* the lock the word belongs to */
	uintptr_t caller;    /* the frame below glibc's: the lock call's return address */
	uint32_t samples;
};

/* Entries of the tables below start with a node; keys are two words. */
struct node {
	struct node *next;
	uint64_t k0, k1;
};

#define BUCKETS 65536
struct table {
	struct node *bucket[BUCKETS];
};

struct keyst {               /* a key of waits (or of wakes) */
	struct node node;
	struct attach_key key;
	uint64_t count, total;   /* what is in the records already */
	uint32_t hist[ATTACH_HIST];
	struct share *shares;
	int nshares, cap;
};

struct wordst {              /* a futex word */
	struct node node;
	struct share first;
	int has_first, first_from_wait;
};

struct lockst {              /* a lock: the site naming it, its kind */
	struct node node;
	uintptr_t site;
	uint8_t kind, kind_known, site_from_wait, named;
};

struct threadst {
	struct node node;
	struct prof_thread *t;
};

static struct table *waits_t, *wakes_t, *words_t, *locks_t, *threads_t;
static const struct attach_opts *opts;
static enum attach_hook hook_used;
static int fd_waits, fd_wakes, fd_threads, fd_stacks, fd_drops;
static uint64_t nsamples, drops[ATTACH_NDROPS];
/* Waits not reported: condvar waits for a signal (unless --condvar), and waits on
 * words that are no locks (a join, a barrier). */
static struct prof_sum left_out, not_locks;

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 31);
}

/* The entry of (k0, k1), made zero (size bytes) when new; NULL when out of memory. */
static void *entry(struct table *t, uint64_t k0, uint64_t k1, size_t size)
{
	struct node **b = &t->bucket[mix(k0, k1) % BUCKETS];
	for (struct node *n = *b; n; n = n->next)
		if (n->k0 == k0 && n->k1 == k1)
			return n;
	struct node *n = calloc(1, size);
	if (!n)
		return NULL;
	*n = (struct node){ *b, k0, k1 };
	*b = n;
	return n;
}

/* keys: a table of struct keyst, whose shares are freed too. */
static void free_table(struct table *t, int keys)
{
	for (size_t i = 0; t && i < BUCKETS; i++)
		while (t->bucket[i]) {
			struct node *n = t->bucket[i];
			t->bucket[i] = n->next;
			if (keys)
				free(((struct keyst *)n)->shares);
			free(n);
		}
	free(t);
}

static struct keyst *key_of(const struct attach_key *key, int wake)
{
	struct keyst *k = entry(wake ? wakes_t : waits_t, key->uaddr,
				(uint64_t)key->tid << 32 | (uint32_t)key->stack, sizeof(*k));
	if (k)
		k->key = *key;
	return k;
}

static struct prof_thread *thread_of(uint32_t tid)
{
	struct threadst *ts = entry(threads_t, tid, 0, sizeof(*ts));
	if (!ts)
		return NULL;
	if (!ts->t) {
		char path[64], name[32] = "";
		snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)opts->pid, tid);
		FILE *f = fopen(path, "re");
		if (f) {
			if (fgets(name, sizeof(name), f))
				name[strcspn(name, "\n")] = 0;
			fclose(f);
		}
		ts->t = prof_thread_new((pid_t)tid, name);
	}
	return ts->t;
}

/* A stack of this key's, innermost first as unwound: classified, cut, kept. */
static void add_stack(const struct attach_key *key, int wake, const uintptr_t *pcs, int n)
{
	uint8_t event, kind;
	int skip = attach_classify(pcs, n, wake, &event, &kind);
	if (skip >= n)
		skip = 0;   /* nothing but glibc was unwound: keep its frames */
	int depth = n - skip < prof_cfg.depth ? n - skip : prof_cfg.depth;
	struct share s = { prof_stack_intern(pcs + skip, depth), event, kind,
			   attach_lock_of(key->uaddr, kind), pcs[skip], 1 };
	struct keyst *k = key_of(key, wake);
	if (!k)
		return;
	int j = 0;
	while (j < k->nshares && (k->shares[j].stack != s.stack || k->shares[j].event != s.event))
		j++;
	if (j < k->nshares) {
		k->shares[j].samples++;
	} else {
		if (k->nshares == k->cap) {
			int cap = k->cap ? 2 * k->cap : 2;
			struct share *more = realloc(k->shares, (size_t)cap * sizeof(*more));
			if (!more)
				return;
			k->shares = more;
			k->cap = cap;
		}
		k->shares[k->nshares++] = s;
	}
	struct wordst *w = entry(words_t, key->uaddr, 0, sizeof(*w));
	if (w && (!w->has_first || (!w->first_from_wait && !wake))) {
		w->first = s;
		w->has_first = 1;
		w->first_from_wait = !wake;
	}
	struct lockst *l = entry(locks_t, s.lock, 0, sizeof(*l));
	if (l && !l->named && (!l->site || (!l->site_from_wait && !wake))) {
		l->site = s.caller;
		l->site_from_wait = !wake;
	}
	if (l && !wake && !l->kind_known) {
		l->kind = kind;
		l->kind_known = 1;
	}
}

void attach_collect_sample(const void *data, size_t size)
{
	const struct attach_sample *s = data;
	if (size < sizeof(*s))
		return;
	uintptr_t pcs[UNWIND_MAX];
	int n = attach_unwind(s, pcs, UNWIND_MAX);
	if (!n) {
		pcs[0] = (uintptr_t)s->regs[ATTACH_REG_IP];
		n = 1;
	}
	nsamples++;
	add_stack(&s->key, s->what == ATTACH_SAMPLE_WAKE, pcs, n);
}

/* What a word is, as far as its waiters' samples tell (a raw futex until one does). */
static void word_is(uint64_t uaddr, uint8_t *event, uint8_t *kind, uintptr_t *lock, uintptr_t *site)
{
	struct wordst *w = entry(words_t, uaddr, 0, sizeof(*w));
	int known = w && w->has_first && w->first_from_wait;
	*event = known ? w->first.event : PROF_EV_FUTEX;
	*kind = known ? w->first.kind : PROF_FUTEX;
	*lock = known ? w->first.lock : (uintptr_t)uaddr;
	struct lockst *l = entry(locks_t, *lock, 0, sizeof(*l));
	*site = l ? l->site : 0;
}

/* One acquisition on the thread's timeline (--trace). */
static void add_timed(uint32_t tid, uint64_t uaddr, uint64_t start_ns, uint64_t wait_ns)
{
	uint8_t event, kind;
	uintptr_t lock, site;
	word_is(uaddr, &event, &kind, &lock, &site);
	struct prof_thread *t = thread_of(tid);
	if (t && kind != ATTACH_NOT_A_LOCK && (kind != PROF_CONDVAR || opts->condvar))
		prof_trace_add(t, event, kind, lock, site, start_ns, wait_ns);
}

void attach_collect_timed(const void *data, size_t size)
{
	const struct attach_timed *e = data;
	if (size >= sizeof(*e))
		add_timed(e->tid, e->uaddr, e->start_ns, e->wait_ns);
}

/* Frame-pointer stacks: the kernel's stack map has the key's frames. */
static void fp_share(const struct attach_key *key, int wake)
{
	__u64 ips[ATTACH_FP_DEPTH] = { 0 };
	__u32 id = (__u32)key->stack - 1;
	if (key->stack <= 0 || bpf_map_lookup_elem(fd_stacks, &id, ips))
		return;
	uintptr_t pcs[ATTACH_FP_DEPTH];
	int n = 0;
	while (n < ATTACH_FP_DEPTH && ips[n]) {
		pcs[n] = (uintptr_t)ips[n];
		n++;
	}
	if (n)
		add_stack(key, wake, pcs, n);
}

/* v split by the shares' samples: floors, then what is left one by one to the
 * most sampled (the shares are sorted so). */
static void split(uint64_t v, const struct share *sh, int n, uint64_t *out)
{
	uint64_t all = 0, given = 0;
	for (int j = 0; j < n; j++)
		all += sh[j].samples;
	for (int j = 0; j < n; j++) {
		out[j] = all ? (uint64_t)((unsigned __int128)v * sh[j].samples / all) : 0;
		given += out[j];
	}
	for (int j = 0; given < v && n; j = (j + 1) % n, given++)
		out[j]++;
}

static int by_samples(const void *a, const void *b)
{
	const struct share *x = a, *y = b;
	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

/* What a key counted since the last report, into its thread's records. */
static void feed(struct keyst *k, int wake, const struct prof_sum *d)
{
	struct share fallback = { 0, wake ? PROF_EV_BLAME : PROF_EV_FUTEX, PROF_FUTEX,
				  (uintptr_t)k->key.uaddr, 0, 1 };
	const struct share *sh = k->shares;
	int n = k->nshares;
	if (!n) {
		/* A waiter's share says what a word is; a waker's says only where it is woken. */
		struct wordst *w = entry(words_t, k->key.uaddr, 0, sizeof(*w));
		if (w && w->has_first && (wake || w->first_from_wait)) {
			fallback = w->first;
			fallback.samples = 1;
			if (wake)
				fallback.event = PROF_EV_BLAME;
		}
		sh = &fallback;
		n = 1;
	} else {
		qsort(k->shares, (size_t)n, sizeof(*k->shares), by_samples);
	}
	struct prof_thread *t = thread_of(k->key.tid);
	uint64_t *parts = calloc((size_t)n * (2 + ATTACH_HIST), sizeof(uint64_t));
	if (!t || !parts) {
		free(parts);
		return;
	}
	split(d->count, sh, n, parts);
	split(d->total_ns, sh, n, parts + n);
	for (int b = 0; b < ATTACH_HIST; b++)
		split(d->hist[b], sh, n, parts + (size_t)(2 + b) * (size_t)n);
	for (int j = 0; j < n; j++) {
		struct prof_sum part = { parts[j], parts[n + j], d->max_ns, { 0 } };
		if (!part.count && !part.total_ns)
			continue;   /* a share too small for a whole one this time */
		for (int b = 0; b < ATTACH_HIST; b++)
			part.hist[b] = (uint32_t)parts[(size_t)(2 + b) * (size_t)n + (size_t)j];
		struct lockst *l = entry(locks_t, sh[j].lock, 0, sizeof(*l));
		uint8_t kind = wake && l && l->kind_known ? l->kind : sh[j].kind;
		if (kind == ATTACH_NOT_A_LOCK || (kind == PROF_CONDVAR && !opts->condvar)) {
			struct prof_sum *out = kind == PROF_CONDVAR ? &left_out : &not_locks;
			if (!wake) {   /* a signal's wake is not a wait */
				out->count += part.count;
				out->total_ns += part.total_ns;
			}
			continue;
		}
		if (l)
			l->named = 1;   /* its records carry this site from now on */
		prof_record_add(t, sh[j].event, kind, sh[j].lock, l ? l->site : 0, sh[j].caller,
				sh[j].stack, &part);
	}
	free(parts);
}

/* Every key of one map (waits or wakes): what it counted since the last report. */
static void collect_map(int fd, int wake)
{
	struct attach_key key, next;
	int first = 1;
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		first = 0;
		key = next;
		struct attach_wait w;
		struct attach_wake wk;
		if (bpf_map_lookup_elem(fd, &key, wake ? (void *)&wk : (void *)&w))
			continue;
		struct keyst *k = key_of(&key, wake);
		if (!k)
			continue;
		if (opts->stacks == ATTACH_STACKS_FP && !k->nshares)
			fp_share(&key, wake);
		struct prof_sum d = { 0 };
		if (wake) {
			d.count = wk.count - k->count;
			d.total_ns = wk.blame_ns - k->total;
			k->count = wk.count;
			k->total = wk.blame_ns;
		} else {
			d.count = w.count - k->count;
			d.total_ns = w.total_ns - k->total;
			d.max_ns = w.max_ns;
			for (int b = 0; b < ATTACH_HIST; b++) {
				d.hist[b] = w.hist[b] - k->hist[b];
				k->hist[b] = w.hist[b];
			}
			k->count = w.count;
			k->total = w.total_ns;
		}
		if (d.count || d.total_ns)
			feed(k, wake, &d);
	}
}

/* Acquisitions still open when the trace ends (attach.h): closed here as the
 * kernel would have closed them at the thread's next futex call. */
static void close_open(void)
{
	__u32 tid, next;
	int first = 1;
	while (bpf_map_get_next_key(fd_threads, first ? NULL : &tid, &next) == 0) {
		first = 0;
		tid = next;
		struct attach_thread t;
		if (bpf_map_lookup_elem(fd_threads, &tid, &t) || !t.acq_uaddr || !t.acq_end)
			continue;
		uint64_t ns = t.acq_end - t.acq_start;
		unsigned b = ns ? 63u - (unsigned)__builtin_clzll(ns) : 0;
		struct prof_sum d = { 1, ns, ns, { 0 } };
		d.hist[b < ATTACH_HIST ? b : ATTACH_HIST - 1] = 1;
		struct attach_key key = { t.acq_uaddr, tid, t.acq_stack };
		struct keyst *k = key_of(&key, 0);
		if (k)
			feed(k, 0, &d);
		if (opts->trace)
			add_timed(tid, t.acq_uaddr, t.acq_start, ns);
		if (!t.acq_waker)
			continue;
		struct attach_key wkey = { t.acq_uaddr, t.acq_waker, t.acq_waker_stack };
		struct prof_sum blame = { 0, ns, 0, { 0 } };
		if ((k = key_of(&wkey, 1)))
			feed(k, 1, &blame);
	}
}

static void read_drops(void)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *per_cpu = ncpu > 0 ? calloc((size_t)ncpu, sizeof(__u64)) : NULL;
	for (__u32 i = 0; per_cpu && i < ATTACH_NDROPS; i++) {
		if (bpf_map_lookup_elem(fd_drops, &i, per_cpu))
			continue;
		drops[i] = 0;
		for (int c = 0; c < ncpu; c++)
			drops[i] += per_cpu[c];
	}
	free(per_cpu);
}

void attach_collect_counts(int last)
{
	collect_map(fd_waits, 0);   /* first: the waits tell the wakes their lock's kind */
	collect_map(fd_wakes, 1);
	if (last)
		close_open();
	read_drops();
}

int attach_collect_begin(const struct attach_opts *o, struct attach_bpf *b, enum attach_hook hook)
{
	opts = o;
	hook_used = hook;
	fd_waits = attach_map_fd(b, "waits");
	fd_wakes = attach_map_fd(b, "wakes");
	fd_threads = attach_map_fd(b, "threads");
	fd_stacks = attach_map_fd(b, "stacks");
	fd_drops = attach_map_fd(b, "drops");
	waits_t = calloc(1, sizeof(struct table));
	wakes_t = calloc(1, sizeof(struct table));
	words_t = calloc(1, sizeof(struct table));
	locks_t = calloc(1, sizeof(struct table));
	threads_t = calloc(1, sizeof(struct table));
	if (fd_waits < 0 || fd_wakes < 0 || fd_threads < 0 || fd_stacks < 0 || fd_drops < 0 ||
	    !waits_t || !wakes_t || !words_t || !locks_t || !threads_t) {
		attach_say("cannot set up the collector: %s", fd_waits < 0 ? "no maps" : "no memory");
		return -1;
	}
	return 0;
}

void attach_collect_end(void)
{
	free_table(waits_t, 1);
	free_table(wakes_t, 1);
	free_table(words_t, 0);
	free_table(locks_t, 0);
	free_table(threads_t, 0);
	waits_t = wakes_t = words_t = locks_t = threads_t = NULL;
}

void attach_collect_notes(struct prof_buf *b)
{
	if (opts->stacks == ATTACH_STACKS_DWARF)
		prof_buf_printf(b, "stacks: unwound from DWARF CFI, sampled 1 acquisition in %u per "
				   "thread and word (%llu samples",
				opts->sample_every, (unsigned long long)nsamples);
	else
		prof_buf_printf(b, "stacks: frame pointers, walked in the kernel (every acquisition");
	if (drops[ATTACH_DROP_SAMPLES])
		prof_buf_printf(b, ", %llu lost: the ring buffer was full",
				(unsigned long long)drops[ATTACH_DROP_SAMPLES]);
	if (drops[ATTACH_DROP_TIMELINE])
		prof_buf_printf(b, "; %llu waits not on the timeline: its ring buffer was full",
				(unsigned long long)drops[ATTACH_DROP_TIMELINE]);
	prof_buf_printf(b, "); attached by %s tracepoints\n",
			hook_used == ATTACH_HOOK_SYSCALL ? "syscall" : "raw");
	if (left_out.count)
		prof_buf_printf(b, "left out: %llu condvar waits (%.3f ms) for a signal, not a lock "
				   "(--condvar shows them)\n",
				(unsigned long long)left_out.count, (double)left_out.total_ns / 1e6);
	if (not_locks.count)
		prof_buf_printf(b, "left out: %llu waits (%.3f ms) in pthread_join or "
				   "pthread_barrier_wait, which are not locks\n",
				(unsigned long long)not_locks.count, (double)not_locks.total_ns / 1e6);
	if (drops[ATTACH_DROP_KEYS] || drops[ATTACH_DROP_THREADS])
		prof_buf_printf(b, "not counted (tables full): %llu acquisitions or wakes, the "
				   "futex calls of %llu threads\n",
				(unsigned long long)drops[ATTACH_DROP_KEYS],
				(unsigned long long)drops[ATTACH_DROP_THREADS]);
}

void attach_collect_json(struct prof_buf *b)
{
	prof_buf_printf(b, ",\"attach\":{\"hook\":\"%s\",\"stacks\":\"%s\",\"sample_every\":%u,"
			   "\"samples\":%llu,\"samples_lost\":%llu,\"timeline_lost\":%llu,"
			   "\"dropped_keys\":%llu,"
			   "\"dropped_threads\":%llu,\"not_locks\":{\"count\":%llu,\"wait_ns\":%llu},"
			   "\"condvar_left_out\":{\"count\":%llu,"
			   "\"wait_ns\":%llu}}",
			hook_used == ATTACH_HOOK_SYSCALL ? "syscall" : "raw",
			opts->stacks == ATTACH_STACKS_DWARF ? "dwarf" : "fp",
			opts->stacks == ATTACH_STACKS_DWARF ? opts->sample_every : 0,
			(unsigned long long)nsamples,
			(unsigned long long)drops[ATTACH_DROP_SAMPLES],
			(unsigned long long)drops[ATTACH_DROP_TIMELINE],
			(unsigned long long)drops[ATTACH_DROP_KEYS],
			(unsigned long long)drops[ATTACH_DROP_THREADS],
			(unsigned long long)not_locks.count, (unsigned long long)not_locks.total_ns,
			(unsigned long long)left_out.count, (unsigned long long)left_out.total_ns);
}
