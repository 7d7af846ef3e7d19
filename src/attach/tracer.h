/*
 * tracer.h: locklab-attach's user half (the kernel half: attach.bpf.c, the
 * layout both share: attach.h).
 *
 * One thread does everything, in this order (main.c):
 *
 *   check     checks.c   one line for each reason it cannot trace
 *   load      load.c     the skeleton opened, set up for the target, loaded,
 *                        attached; destroyed on every way out
 *   collect   collect.c  the ring buffers' stack samples, unwound (unwind.c)
 *                        and named (names.c), and timeline entries, as they
 *                        come; the kernel's counts, into the profiler's records
 *                        (src/prof/records.c), at each report
 *   report    output.c   the profiler's report (src/prof/report.c) of those
 *                        records, text or JSON, to stdout or a file; the
 *                        timeline to its own
 *
 * The records, stacks and report are the profiler's own, so the names, the
 * text and the JSON are the profiler's: only what differs is here.
 */
#ifndef LOCKLAB_ATTACH_TRACER_H
#define LOCKLAB_ATTACH_TRACER_H

#include <stdint.h>
#include <sys/types.h>

#include "prof/prof.h"

/* Exit statuses: as the CLI's (0 done, 1 could not trace, 2 bad usage). */
enum { ATTACH_EXIT_OK = 0, ATTACH_EXIT_FAIL = 1, ATTACH_EXIT_USAGE = 2 };

enum attach_stacks { ATTACH_STACKS_DWARF, ATTACH_STACKS_FP };
enum attach_hook { ATTACH_HOOK_AUTO, ATTACH_HOOK_SYSCALL, ATTACH_HOOK_RAW };

struct attach_opts {
	pid_t pid;
	double duration_s;          /* 0: until a signal or the target's exit */
	double interval_s;          /* 0: no interval reports */
	int json;
	const char *output;         /* NULL: stdout */
	enum attach_stacks stacks;
	unsigned sample_every;      /* DWARF stacks: sample 1 acquisition in N per key */
	enum attach_hook hook;
	int condvar;                /* report condvar waits (not contention) too */
	const char *trace;          /* the timeline's file (NULL: none) */
};

/* tracer.c: one line "locklab-attach: ..." on stderr. */
void attach_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* checks.c: each returns 0, or -1 with the one line that says why in `why`. */
int attach_check_target(pid_t pid, char *why, size_t len);  /* a 64-bit, dynamic process */
/* /proc/PID/stat's state letter (Z: a zombie) and parent; -1 when unreadable. */
int attach_proc_stat(pid_t pid, char *state, pid_t *ppid);
int attach_check_kernel(char *why, size_t len);             /* privileges, BPF, BTF */
/* Which hook to attach by: the syscall tracepoints where tracefs has them, else raw
 * tracepoints; `why` says so (a note, not a failure) when the user asked for neither. */
int attach_choose_hook(enum attach_hook asked, enum attach_hook *chosen, char *why, size_t len);
int attach_has_tracepoint(const char *name);   /* tracefs has syscalls/NAME */
/* --check: what this build and this machine allow, as text or JSON; the exit status. */
int attach_check_report(int json);

/* load.c */
struct attach_bpf;
/* Where the ring buffers' records go as they are drained (collect.c's). */
struct attach_sinks {
	void (*sample)(const void *sample, size_t size);
	void (*timed)(const void *timed, size_t size);
};
struct attach_bpf *attach_load(const struct attach_opts *o, enum attach_hook hook,
			       const struct attach_sinks *sinks);
/* The programs off (the maps stay, to be read once more), then everything freed. */
void attach_detach(struct attach_bpf *b);
void attach_unload(struct attach_bpf *b);
int attach_samples_fd(struct attach_bpf *b);   /* to poll */
/* Hand every sample waiting in the ring buffer to collect; -1 on error. */
int attach_drain(struct attach_bpf *b);
/* The maps, for collect.c. */
int attach_map_fd(struct attach_bpf *b, const char *name);

/* unwind.c: the return addresses of a sample's stack, innermost first (pcs[0]: the
 * instruction after the syscall); how many (at most max). */
int attach_unwind_begin(pid_t pid);
int attach_unwind(const void *sample, uintptr_t *pcs, int max);
void attach_unwind_end(void);

/* names.c: the target's objects and symbols, and what its frames say. */
int attach_names_begin(pid_t pid);
void attach_names_end(void);
/* A word that is no lock: a thread's end awaited (pthread_join), a barrier. */
#define ATTACH_NOT_A_LOCK PROF_NKINDS
/* The lock implementation's frames (glibc's) at the top of a stack: how many, and
 * the event and kind they say the word is (PROF_EV_*, PROF_* or ATTACH_NOT_A_LOCK);
 * wake: an unlock's. */
int attach_classify(const uintptr_t *pcs, int n, int wake, uint8_t *event, uint8_t *kind);
/* The lock a futex word belongs to (an rwlock's words lie inside it). */
uintptr_t attach_lock_of(uintptr_t uaddr, uint8_t kind);
/* The report's file:line hooks (prof_subject). */
const char *attach_text_where(uintptr_t pc);
void attach_json_lines(struct prof_buf *b, uintptr_t pc);

/* collect.c */
int attach_collect_begin(const struct attach_opts *o, struct attach_bpf *b, enum attach_hook hook);
void attach_collect_sample(const void *sample, size_t size);   /* from the ring buffer */
void attach_collect_timed(const void *timed, size_t size);     /* from the timeline's */
/* The kernel's counts into the records; last: also the acquisitions still open. */
void attach_collect_counts(int last);
void attach_collect_notes(struct prof_buf *b);         /* text lines under the header */
void attach_collect_json(struct prof_buf *b);          /* JSON members */
void attach_collect_end(void);

/* output.c: one report to the output; 0, or -1 when it cannot be written (said). */
int attach_output_begin(const struct attach_opts *o);
int attach_output_report(enum prof_dump_reason why);
void attach_output_end(void);

#endif
