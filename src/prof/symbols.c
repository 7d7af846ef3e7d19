/*
 * symbols.c: the reporter's names for code and static data, by the shared
 * symboliser (src/preload/symbols.c), over the report's arena.  C++ names are
 * demangled with libstdc++'s __cxa_demangle when the program has it loaded,
 * except in a report written in a hurry (prof_sym_plain; see control.c).
 */
#include <dlfcn.h>

#include "prof.h"
#include "preload/symbols.h"

int prof_sym_plain;
static struct pl_syms syms;

void prof_sym_begin(void)
{
	pl_exe_forget();   /* after an exec this is another program */
	syms.arena = &prof_report_arena;
	/* Not for a report written on the way out of a signal or _exit: dlsym takes
	 * the loader's lock and __cxa_demangle calls malloc, either of which the
	 * interrupted thread may hold.  Such a report keeps the mangled names. */
	syms.cxa_demangle = prof_sym_plain ? NULL
					   : (__typeof__(syms.cxa_demangle))dlsym(RTLD_DEFAULT,
										  "__cxa_demangle");
	pl_syms_begin(&syms);
}

void prof_sym_end(void)
{
	pl_syms_end(&syms);
}

int prof_sym_code(uintptr_t pc, char *buf, size_t len)
{
	return pl_sym_code(&syms, pc, buf, len);
}

int prof_sym_where(uintptr_t pc, struct pl_where *w)
{
	return pl_sym_where(&syms, pc, w);
}

int prof_sym_object(int index, struct pl_where *w)
{
	return pl_sym_object(&syms, index, w);
}

int prof_sym_data(uintptr_t addr, char *buf, size_t len)
{
	return pl_sym_data(&syms, addr, buf, len);
}

const char *prof_exe_name(void)
{
	return pl_exe_name();
}
