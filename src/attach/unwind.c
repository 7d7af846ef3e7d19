/*
 * unwind.c: a sample's stack, unwound from DWARF call frame information by
 * elfutils' libdwfl, as perf's dwarf mode does: the kernel half copied the
 * user registers and the stack above the stack pointer (attach.h); libdwfl
 * reads the objects' .eh_frame/.debug_frame and steps from frame to frame,
 * reading saved registers and return addresses out of that copy.  Programs
 * built without frame pointers (Debian's glibc, mariadbd, memcached) unwind
 * this way; where no CFI covers a frame libdwfl tries the frame pointer.
 *
 * One Dwfl for the whole trace: the process's objects reported once from its
 * /proc/PID/maps, again when a sample's instruction lies in none of them (a
 * library loaded since), and its "thread" is whichever sample is being
 * unwound, whose memory is the copy and nothing else.  The process is never
 * stopped or read from: only the sample is.
 */
#include <elfutils/libdwfl.h>
#include <string.h>
#include <time.h>

#include "tracer.h"
#include "attach.h"

static char *debuginfo_path;

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static Dwfl *dwfl;
static pid_t traced;
static time_t last_report;

/* The sample being unwound, and where its frames go. */
static struct {
	const struct attach_sample *s;
	uintptr_t *pcs;
	int n, max;
} cur;

static pid_t no_next_thread(Dwfl *d, void *arg, void **thread_arg)
{
	(void)d;
	(void)arg;
	(void)thread_arg;
	return 0;
}

static bool the_sample(Dwfl *d, pid_t tid, void *arg, void **thread_arg)
{
	(void)d;
	(void)tid;
	*thread_arg = arg;
	return true;
}

/* The copied stack, and only it: an address outside it ends the unwinding there. */
static bool read_copy(Dwfl *d, Dwarf_Addr addr, Dwarf_Word *out, void *arg)
{
	(void)d;
	(void)arg;
	const struct attach_sample *s = cur.s;
	if (addr < s->base || addr - s->base > (Dwarf_Addr)s->size - sizeof(*out) ||
	    s->size < sizeof(*out))
		return false;
	memcpy(out, s->stack + (addr - s->base), sizeof(*out));
	return true;
}

/* x86-64 DWARF register numbers: rbx 3, rbp 6, rsp 7, r12-r15 12-15. */
static bool initial_registers(Dwfl_Thread *thread, void *arg)
{
	(void)arg;
	const __u64 *r = cur.s->regs;
	Dwarf_Word bx = r[ATTACH_REG_BX];
	Dwarf_Word bp_sp[2] = { r[ATTACH_REG_BP], r[ATTACH_REG_SP] };
	Dwarf_Word r12_15[4] = { r[ATTACH_REG_R12], r[ATTACH_REG_R13], r[ATTACH_REG_R14],
				 r[ATTACH_REG_R15] };
	dwfl_thread_state_register_pc(thread, r[ATTACH_REG_IP]);
	return dwfl_thread_state_registers(thread, 3, 1, &bx) &&
	       dwfl_thread_state_registers(thread, 6, 2, bp_sp) &&
	       dwfl_thread_state_registers(thread, 12, 4, r12_15);
}

static const Dwfl_Thread_Callbacks sample_callbacks = {
	.next_thread = no_next_thread,
	.get_thread = the_sample,
	.memory_read = read_copy,
	.set_initial_registers = initial_registers,
};

static int report_modules(void)
{
	if (dwfl_linux_proc_report(dwfl, traced) != 0)
		return -1;
	return dwfl_report_end(dwfl, NULL, NULL);
}

int attach_unwind_begin(pid_t pid)
{
	traced = pid;
	dwfl = dwfl_begin(&proc_callbacks);
	if (!dwfl)
		return -1;
	dwfl_report_begin(dwfl);
	if (report_modules() != 0 || !dwfl_attach_state(dwfl, NULL, pid, &sample_callbacks, NULL)) {
		attach_say("cannot read the objects of process %d for unwinding: %s", (int)pid,
			   dwfl_errmsg(-1));
		dwfl_end(dwfl);
		dwfl = NULL;
		return -1;
	}
	last_report = time(NULL);
	return 0;
}

static int on_frame(Dwfl_Frame *frame, void *arg)
{
	(void)arg;
	Dwarf_Addr pc;
	if (!dwfl_frame_pc(frame, &pc, NULL) || !pc)
		return DWARF_CB_ABORT;
	cur.pcs[cur.n++] = (uintptr_t)pc;
	return cur.n < cur.max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

int attach_unwind(const void *sample, uintptr_t *pcs, int max)
{
	const struct attach_sample *s = sample;
	if (!dwfl || max < 1)
		return 0;
	/* A library loaded since the last look: its objects again, at most once a second. */
	if (!dwfl_addrmodule(dwfl, s->regs[ATTACH_REG_IP]) && time(NULL) != last_report) {
		last_report = time(NULL);
		dwfl_report_begin_add(dwfl);
		report_modules();
	}
	cur.s = s;
	cur.pcs = pcs;
	cur.n = 0;
	cur.max = max;
	/* Its end (a frame it could not step past) is where the stack ends. */
	dwfl_getthread_frames(dwfl, (pid_t)s->key.tid, on_frame, NULL);
	return cur.n;
}

void attach_unwind_end(void)
{
	if (dwfl)
		dwfl_end(dwfl);
	dwfl = NULL;
}
