/*
 * checks.c: every reason the tracer cannot run, found before anything is
 * loaded, each told in one line: the privileges, the kernel (BPF, BTF), the
 * way to attach (tracefs or raw tracepoints) and the process (one that exists,
 * a process and not a thread, 64-bit, dynamically linked).
 *
 * A statically linked program is refused: its futex calls are all seen, but
 * with glibc inside the program its pthread functions are not a library the
 * stack can be cut at, and the report could not say which waits are for
 * locks.  `--check` runs the same checks on this machine alone.
 */
#include <bpf/libbpf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer.h"
#include "core/json.h"

/* Effective capability `cap` (capget: no libcap). */
static int has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return 0;
	return (data[cap / 32].effective >> (cap % 32)) & 1;
}

int attach_check_kernel(char *why, size_t len)
{
	if (!has_cap(CAP_SYS_ADMIN) && !(has_cap(CAP_BPF) && has_cap(CAP_PERFMON))) {
		snprintf(why, len, "needs root, or the capabilities CAP_BPF and CAP_PERFMON (run it "
				   "with sudo)");
		return -1;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(why, len, "this kernel has no BTF (/sys/kernel/btf/vmlinux: %s; "
				   "CONFIG_DEBUG_INFO_BTF): the tracer's CO-RE programs need it",
			 strerror(errno));
		return -1;
	}
	/* A program of the tracer's first type, loaded and dropped: ENOSYS without BPF. */
	errno = 0;
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACEPOINT, NULL) != 1) {
		int e = errno;
		if (e == ENOSYS || e == 0)
			snprintf(why, len, "this kernel has no BPF for tracing (CONFIG_BPF_SYSCALL, "
					   "CONFIG_BPF_EVENTS)");
		else
			snprintf(why, len, "the kernel does not let this process load BPF programs: %s",
				 strerror(e));
		return -1;
	}
	return 0;
}

int attach_has_tracepoint(const char *name)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[256];
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/syscalls/%s/id", roots[i], name);
		if (access(path, R_OK) == 0)
			return 1;
	}
	return 0;
}

int attach_choose_hook(enum attach_hook asked, enum attach_hook *chosen, char *why, size_t len)
{
	int syscall_tp = attach_has_tracepoint("sys_enter_futex");
	int raw = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL) == 1;
	why[0] = 0;
	if (asked == ATTACH_HOOK_SYSCALL && !syscall_tp) {
		snprintf(why, len, "no syscall tracepoints: tracefs is not mounted (mount -t tracefs "
				   "nodev /sys/kernel/tracing) or has no events/syscalls; --hook raw "
				   "attaches by raw tracepoints instead");
		return -1;
	}
	if (asked == ATTACH_HOOK_RAW && !raw) {
		snprintf(why, len, "this kernel has no raw tracepoints for BPF");
		return -1;
	}
	if (asked == ATTACH_HOOK_AUTO && !syscall_tp && !raw) {
		snprintf(why, len, "no way to attach: tracefs is not mounted (mount -t tracefs nodev "
				   "/sys/kernel/tracing) and the kernel has no raw tracepoints for BPF");
		return -1;
	}
	*chosen = asked != ATTACH_HOOK_AUTO ? asked : syscall_tp ? ATTACH_HOOK_SYSCALL
								  : ATTACH_HOOK_RAW;
	if (asked == ATTACH_HOOK_AUTO && !syscall_tp)
		snprintf(why, len, "tracefs is not mounted: attaching by raw tracepoints, which every "
				   "syscall of the machine passes through a filter (mount -t tracefs "
				   "nodev /sys/kernel/tracing for the futex tracepoints alone)");
	return 0;
}

/* The ELF class of the process's program (ELFCLASS64...), 0 when unknown. */
static int exe_class(pid_t pid)
{
	char path[64];
	unsigned char ident[EI_NIDENT];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, ident, sizeof(ident));
	close(fd);
	return n == (ssize_t)sizeof(ident) && !memcmp(ident, ELFMAG, SELFMAG) ? ident[EI_CLASS] : 0;
}

/* What the process has mapped: glibc (libc.so.6, or an older libpthread), and the
 * dynamic loader. A dynamically linked program caught between its exec and the
 * loader's mapping of libc has the loader alone: not to be called static. */
enum { MAPS_LIBC = 1, MAPS_LOADER = 2 };

static int maps_of(pid_t pid)
{
	char path[64], line[4200];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	int found = 0;
	while (f && !(found & MAPS_LIBC) && fgets(line, sizeof(line), f)) {
		const char *slash = strrchr(line, '/');
		if (slash && (!strncmp(slash, "/libc.so", 8) || !strncmp(slash, "/libc-", 6) ||
			      !strncmp(slash, "/libpthread", 11)))
			found |= MAPS_LIBC;
		if (slash && !strncmp(slash, "/ld-linux", 9))
			found |= MAPS_LOADER;
	}
	if (f)
		fclose(f);
	return found;
}

/* "Tgid:" of /proc/PID/status: the process a thread belongs to; 0 when unknown. */
static pid_t tgid_of(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	long tgid = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	if (f)
		fclose(f);
	return (pid_t)tgid;
}

int attach_proc_stat(pid_t pid, char *state, pid_t *ppid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	/* The last ')' ends the name, which may hold any character. */
	const char *close = strrchr(buf, ')');
	int parent = 0;
	if (!close || sscanf(close + 1, " %c %d", state, &parent) != 2)
		return -1;
	*ppid = (pid_t)parent;
	return 0;
}

int attach_check_target(pid_t pid, char *why, size_t len)
{
	char path[64], exe[512], comm[64] = "";
	if (kill(pid, 0) != 0 && errno == ESRCH) {
		snprintf(why, len, "no process %d", (int)pid);
		return -1;
	}
	pid_t tgid = tgid_of(pid);
	if (tgid && tgid != pid) {
		snprintf(why, len, "%d is a thread of process %d: give the process's id, -p %d",
			 (int)pid, (int)tgid, (int)tgid);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	/* A zombie has no exe link either: not to be taken for a kernel thread. */
	char state = 0;
	pid_t ppid;
	if (attach_proc_stat(pid, &state, &ppid) == 0 && state == 'Z') {
		snprintf(why, len, "process %d (%s) has exited (its parent has not yet reaped it)",
			 (int)pid, comm);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0 && errno == ENOENT) {
		snprintf(why, len, "process %d (%s) is a kernel thread: it has no user-space locks",
			 (int)pid, comm);
		return -1;
	}
	if (n < 0) {
		snprintf(why, len, "cannot read process %d (%s): %s", (int)pid, comm, strerror(errno));
		return -1;
	}
	int cls = exe_class(pid);
	if (cls && cls != ELFCLASS64) {
		snprintf(why, len, "process %d (%s) is a 32-bit program: locklab-attach traces 64-bit "
				   "programs only", (int)pid, comm);
		return -1;
	}
	int maps = maps_of(pid);
	if (!(maps & MAPS_LIBC) && (maps & MAPS_LOADER)) {
		snprintf(why, len, "process %d (%s) has not loaded libc.so.6 yet (it has only just "
				   "started, or is stopped there): attach again once it runs",
			 (int)pid, comm);
		return -1;
	}
	if (!(maps & MAPS_LIBC)) {
		snprintf(why, len, "process %d (%s) is statically linked (no libc.so.6 in its maps): "
				   "its lock waits cannot be told from its other futex calls; not traced",
			 (int)pid, comm);
		return -1;
	}
	return 0;
}

int attach_check_report(int json)
{
	char kernel[512] = "", hook_note[512] = "";
	enum attach_hook hook = ATTACH_HOOK_AUTO;
	int ready = attach_check_kernel(kernel, sizeof(kernel)) == 0;
	if (ready && attach_choose_hook(ATTACH_HOOK_AUTO, &hook, hook_note, sizeof(hook_note)))
		ready = 0;
	const char *problem = kernel[0] ? kernel : !ready ? hook_note : NULL;
	const char *how = !ready ? NULL : hook == ATTACH_HOOK_SYSCALL ? "syscall" : "raw";
	if (json) {
		printf("{\"tool\":\"locklab-attach\",\"version\":\"%s\",\"built\":true,\"note\":null,"
		       "\"ready\":%s,\"hook\":",
		       LL_VERSION, ready ? "true" : "false");
		ll_json_string(how, ll_json_to_file, stdout);
		printf(",\"problem\":");
		ll_json_string(problem, ll_json_to_file, stdout);
		printf("}\n");
	} else if (ready) {
		printf("locklab-attach %s: built; this machine can trace (%s tracepoints)\n",
		       LL_VERSION, how);
	} else {
		printf("locklab-attach %s: built; this machine cannot trace: %s\n", LL_VERSION,
		       problem);
	}
	return ready ? ATTACH_EXIT_OK : ATTACH_EXIT_FAIL;
}
