/*
 * names.c: the traced process's names, as the profiler gives them inside a
 * process: the shared symboliser (src/preload/symbols.c) over the objects in
 * its /proc/PID/maps, serving the report's prof_sym_* calls; what glibc's
 * frames on a stack say a futex word is; and file:line for the text and the
 * JSON by the profiler's line lookup (src/prof/lines/lookup.c).
 *
 * The objects are read when the trace starts, and again before a report
 * when a frame fell in none of them (a library loaded since).  The old list
 * stays until a new one is read whole: after the process has exited its maps
 * are gone, and its last report still names everything.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer.h"
#include "preload/symbols.h"
#include "prof/lines/lookup.h"

/* Two lists, the one in use and the one being read, each with its arena. */
static struct pl_syms lists[2];
static struct pl_arena arenas[2];
static int in_use;
static int stale;          /* a frame lay in no known object: read the maps again */
static pid_t traced;
static char exe[512];
static char *(*cxa_demangle)(const char *, char *, size_t *, int *);

static int read_objects(void)
{
	int next = !in_use;
	pl_syms_end(&lists[next]);
	pl_arena_reset(&arenas[next]);
	lists[next].arena = &arenas[next];
	lists[next].cxa_demangle = cxa_demangle;
	if (pl_syms_begin_pid(&lists[next], traced) != 0 || !lists[next].nobjs)
		return -1;
	in_use = next;
	stale = 0;
	return 0;
}

int attach_names_begin(pid_t pid)
{
	char path[64];
	traced = pid;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0)
		exe[n] = 0;
	else
		snprintf(exe, sizeof(exe), "?");
	/* C++ names: libstdc++'s demangler, if this machine has it (we are C). */
	void *cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (cxx)
		cxa_demangle = (__typeof__(cxa_demangle))dlsym(cxx, "__cxa_demangle");
	in_use = 1;
	if (read_objects() != 0) {
		attach_say("cannot read the objects of process %d (/proc/%d/maps)", (int)pid, (int)pid);
		return -1;
	}
	return 0;
}

struct where;
static void forget_lines(void);

void attach_names_end(void)
{
	for (int i = 0; i < 2; i++) {
		pl_syms_end(&lists[i]);
		pl_arena_reset(&arenas[i]);
	}
	forget_lines();
}

static struct pl_syms *syms(void)
{
	return &lists[in_use];
}

/* ------------------------------------------ the report's names (prof.h) */

void prof_sym_begin(void)
{
	if (stale)
		read_objects();   /* keeps the list in use when this fails */
}

void prof_sym_end(void)
{
}

int prof_sym_code(uintptr_t pc, char *buf, size_t len)
{
	struct pl_where w;
	if (pc && pl_sym_where(syms(), pc, &w) < 0)
		stale = 1;
	return pl_sym_code(syms(), pc, buf, len);
}

int prof_sym_where(uintptr_t pc, struct pl_where *w)
{
	return pl_sym_where(syms(), pc, w);
}

int prof_sym_object(int index, struct pl_where *w)
{
	return pl_sym_object(syms(), index, w);
}

int prof_sym_data(uintptr_t addr, char *buf, size_t len)
{
	return pl_sym_data(syms(), addr, buf, len);
}

const char *prof_exe_name(void)
{
	return exe;
}

/* ------------------------------------------------- what glibc's frames say */

/* Whether pc lies in glibc: libc.so.6, or libpthread of a glibc before 2.34. */
static int in_glibc(uintptr_t pc)
{
	struct pl_where w;
	if (pl_sym_where(syms(), pc, &w) < 0)
		return 0;
	const char *base = strrchr(w.path, '/');
	base = base ? base + 1 : w.path;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) ||
	       !strncmp(base, "libpthread", 10);
}

/* The function's name alone: "libc.so.6`___pthread_mutex_lock+0x14" -> its symbol. */
static void function_of(uintptr_t pc, char *buf, size_t len)
{
	char name[512];
	pl_sym_code(syms(), pc, name, sizeof(name));
	const char *tick = strchr(name, '`');
	const char *fn = tick ? tick + 1 : "";
	size_t n = strcspn(fn, "+");
	snprintf(buf, len, "%.*s", (int)n, fn);
}

/*
 * glibc's names for its lock functions change between versions and builds
 * (___pthread_mutex_lock, __pthread_mutex_lock_full, __GI___lll_lock_wait;
 * only the exported ones where no debug symbols are installed), so a frame is
 * matched by the part they share; the innermost frame that says which kind of
 * lock it is (or that it is none: a join, a barrier) decides.  __lll_lock_wait alone (no pthread frame above it) is a
 * lock inside glibc (malloc's arenas, stdio): a mutex.
 */
int attach_classify(const uintptr_t *pcs, int n, int wake, uint8_t *event, uint8_t *kind)
{
	int skip = 0, decided = 0, low_level = 0;
	*kind = PROF_FUTEX;
	*event = wake ? PROF_EV_BLAME : PROF_EV_FUTEX;
	for (; skip < n && in_glibc(pcs[skip]); skip++) {
		char fn[256];
		if (decided)
			continue;
		function_of(pcs[skip], fn, sizeof(fn));
		decided = 1;
		if (strstr(fn, "join") || strstr(fn, "pthread_barrier_")) {
			*kind = ATTACH_NOT_A_LOCK;   /* pthread_join, __pthread_clockjoin_ex */
		} else if (strstr(fn, "pthread_mutex_cond_lock")) {   /* pthread_cond_wait's reacquire */
			*kind = PROF_MUTEX;
			*event = PROF_EV_COND;
		} else if (strstr(fn, "pthread_cond_")) {
			*kind = PROF_CONDVAR;
			*event = PROF_EV_SIGNAL;
		} else if (strstr(fn, "pthread_rwlock_")) {
			*kind = PROF_RWLOCK;
			*event = strstr(fn, "wrlock") ? PROF_EV_WRITE : PROF_EV_READ;
		} else if (strstr(fn, "pthread_mutex_")) {
			*kind = PROF_MUTEX;
			*event = PROF_EV_MUTEX;
		} else {
			low_level |= strstr(fn, "lll_lock_wa") != NULL;   /* _wait, _wake */
			decided = 0;
		}
	}
	if (!decided && low_level) {
		*kind = PROF_MUTEX;
		*event = PROF_EV_MUTEX;
	}
	if (wake)
		*event = PROF_EV_BLAME;
	return skip;
}

/*
 * A mutex's futex word is its first (glibc's __lock), so its address is the
 * mutex's.  An rwlock (glibc 2.25 and later) waits on two words inside it:
 * __wrphase_futex at +8 and __writers_futex at +12, the lock being 8-byte
 * aligned; both are the rwlock at the address 8 or 12 below.
 */
uintptr_t attach_lock_of(uintptr_t uaddr, uint8_t kind)
{
	if (kind != PROF_RWLOCK)
		return uaddr;
	return uaddr - (uaddr % 8 == 4 ? 12 : 8);
}

/* ------------------------------------------------------------ file:line */

/* A frame's lines, looked up once: the text's "FILE:LINE" and the JSON "lines" value. */
struct where {
	struct where *next;
	uintptr_t pc;
	char *text, *json;
};

#define WHERE_BUCKETS 4096
static struct where *where_memo[WHERE_BUCKETS];

struct gather {
	struct prof_buf json;
	char first_file[512], first_fn[256], last_fn[256];
	int first_line, n;
};

static void on_line(void *arg, const char *function, const char *file, int line)
{
	struct gather *g = arg;
	char fn[256] = "";
	if (function)
		pl_sym_demangle(syms(), function, fn, sizeof(fn));
	if (!g->n) {
		snprintf(g->first_file, sizeof(g->first_file), "%s", file ? file : "");
		snprintf(g->first_fn, sizeof(g->first_fn), "%s", fn);
		g->first_line = line;
	}
	snprintf(g->last_fn, sizeof(g->last_fn), "%s", fn);
	prof_buf_printf(&g->json, "%s{\"function\":", g->n ? "," : "[");
	prof_buf_json_str(&g->json, fn);
	prof_buf_printf(&g->json, ",\"file\":");
	prof_buf_json_str(&g->json, file ? file : "");
	prof_buf_printf(&g->json, ",\"line\":%d}", line > 0 ? line : 0);
	g->n++;
}

/* As the CLI words it (python/locklab/profile/lines.py, where()): "planted.c:88",
 * or with inlining "planted.c:70 (fx_lock, inlined into worker)". */
static struct where *where_of(uintptr_t pc)
{
	struct where **b = &where_memo[(pc >> 2) % WHERE_BUCKETS];
	for (struct where *w = *b; w; w = w->next)
		if (w->pc == pc)
			return w;
	struct where *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	struct gather g = { 0 };
	struct pl_where obj;
	if (pl_sym_where(syms(), pc, &obj) >= 0)
		ll_lines_lookup(obj.path, pc - obj.bias - 1, on_line, &g);
	char text[sizeof(g.first_file) + sizeof(g.first_fn) + sizeof(g.last_fn) + 48] = "";
	if (g.n && g.first_file[0] && g.n > 1)
		snprintf(text, sizeof(text), "%s:%d (%s, inlined into %s)", g.first_file,
			 g.first_line, g.first_fn, g.last_fn);
	else if (g.n && g.first_file[0])
		snprintf(text, sizeof(text), "%s:%d", g.first_file, g.first_line);
	if (g.n)
		prof_buf_printf(&g.json, "]");
	w->pc = pc;
	w->text = strdup(text);
	w->json = strdup(g.n && g.json.p && !g.json.failed ? g.json.p : "null");
	prof_buf_free(&g.json);
	w->next = *b;
	*b = w;
	return w;
}

static void forget_lines(void)
{
	for (int i = 0; i < WHERE_BUCKETS; i++)
		while (where_memo[i]) {
			struct where *w = where_memo[i];
			where_memo[i] = w->next;
			free(w->text);
			free(w->json);
			free(w);
		}
}

const char *attach_text_where(uintptr_t pc)
{
	struct where *w = where_of(pc);
	return w && w->text ? w->text : "";
}

void attach_json_lines(struct prof_buf *b, uintptr_t pc)
{
	struct where *w = pc ? where_of(pc) : NULL;
	prof_buf_printf(b, "%s", w && w->json ? w->json : "null");
}
