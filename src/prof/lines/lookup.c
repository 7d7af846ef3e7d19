/*
 * lookup.c: file:line of code addresses by elfutils' libdwfl (lookup.h).
 *
 * Debug information is found as libdwfl finds it: in the object itself, by
 * .gnu_debuglink, under /usr/lib/debug (by build-id: Debian's -dbgsym
 * packages), and through debuginfod when DEBUGINFOD_URLS names a server.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "lookup.h"

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* One session per object: each is reported at its link-time addresses, which
 * overlap between shared objects (all start near 0). */
struct object {
	char *path;
	Dwfl *dwfl;
	Dwfl_Module *mod;
};

#define MAX_OBJECTS 1024
static struct object objects[MAX_OBJECTS];
static int nobjects;

static Dwfl_Module *module_of(const char *path)
{
	for (int i = 0; i < nobjects; i++)
		if (!strcmp(objects[i].path, path))
			return objects[i].mod;
	if (nobjects == MAX_OBJECTS)
		return NULL;
	struct object *o = &objects[nobjects++];
	o->path = strdup(path);
	o->dwfl = dwfl_begin(&callbacks);
	o->mod = o->dwfl ? dwfl_report_elf(o->dwfl, path, path, -1, 0, false) : NULL;
	if (o->dwfl)
		dwfl_report_end(o->dwfl, NULL, NULL);
	return o->mod;
}

/* The name a function is linked by (C++: mangled, for the caller to demangle),
 * else its source name; following abstract origins of inlined copies. */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (!name && dwarf_attr_integrate(die, DW_AT_name, &attr))
		name = dwarf_formstring(&attr);
	return name;
}

static int lookup(Dwfl_Module *mod, Dwarf_Addr addr, ll_line_fn fn, void *arg)
{
	const char *file = NULL;
	int line = 0;
	Dwfl_Line *l = dwfl_module_getsrc(mod, addr);
	if (l)
		file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
	Dwarf_Die *scopes = NULL;
	int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (cu)
		dwarf_getsrcfiles(cu, &files, &nfiles);
	int shown = 0;
	for (int i = 0; i < n;) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) {
			i++;
			continue;
		}
		fn(arg, die_name(&scopes[i]), file, line);
		shown++;
		if (tag == DW_TAG_subprogram)
			break;
		/* The inlined copy was called from the enclosing function at its call site. */
		Dwarf_Attribute attr;
		Dwarf_Word cf = 0, cl = 0;
		file = NULL;
		line = 0;
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &cf) == 0 &&
		    files && cf < nfiles)
			file = dwarf_filesrc(files, cf, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &cl) == 0)
			line = (int)cl;
		/* The scopes after an inlined copy are its abstract definition's: go on
		 * from the scopes around the copy itself, which start with it. */
		Dwarf_Die copy = scopes[i], *outer = NULL;
		int m = dwarf_getscopes_die(&copy, &outer);
		free(scopes);
		scopes = outer;
		n = m;
		i = 1;
	}
	free(scopes);
	if (!shown && (file || dwfl_module_addrname(mod, addr))) {
		fn(arg, dwfl_module_addrname(mod, addr), file, line);
		shown++;
	}
	return shown;
}

int ll_lines_lookup(const char *path, uint64_t addr, ll_line_fn fn, void *arg)
{
	Dwfl_Module *mod = module_of(path);
	return mod ? lookup(mod, (Dwarf_Addr)addr, fn, arg) : 0;
}

