/*
 * symbols.c: names for code and static data, as plockstat prints them
 * ("object`symbol+0x1c"); see symbols.h for who uses it, and how.
 *
 * The loaded objects come from dl_iterate_phdr (or, for a process traced from
 * outside, from its /proc/PID/maps); each one's symbols from its file on disk, the full .symtab when it has one (static functions and
 * variables, which .dynsym lacks), else from its separate debug file found
 * by build-id (/usr/lib/debug/.build-id/xx/yyyy.debug, as Debian's -dbgsym
 * packages install them), else .dynsym.  Addresses without a symbol print as
 * "object`+0xOFF", OFF being the link-time address, so the name is the same
 * in every run whatever the load address.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols.h"

#define MAX_OBJS 1024

#if __SIZEOF_POINTER__ == 8
#define ELFCLASSNATIVE_ ELFCLASS64
#define ELF_ST_TYPE_(i) ELF64_ST_TYPE(i)
#else
#define ELFCLASSNATIVE_ ELFCLASS32
#define ELF_ST_TYPE_(i) ELF32_ST_TYPE(i)
#endif

struct sym {
	uintptr_t addr;   /* link-time */
	uint64_t size;
	const char *name;
};

struct symtab {
	struct sym *v;
	size_t n;
};

struct pl_obj {
	const char *path, *base;
	uintptr_t bias;
	const ElfW(Phdr) *phdr;
	int phnum;
	/* Another process's object: its file as mapped here (map[0]), where the
	 * program headers and notes are read; NULL for one of this process. */
	const char *image;
	int loaded;
	struct symtab funcs, data;
	void *map[2];
	size_t maplen[2];
	void *map_start;   /* pl_syms_know()'s key (NULL: collected by pl_syms_begin) */
};

static char exe_path[512];

const char *pl_exe_name(void)
{
	if (!exe_path[0]) {
		ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
		if (n <= 0)
			strcpy(exe_path, "a.out");
		else
			exe_path[n] = 0;
	}
	return exe_path;
}

void pl_exe_forget(void)
{
	exe_path[0] = 0;
}

static void *map_file(const char *path, size_t *len);

static void obj_set(struct pl_obj *o, const char *path, uintptr_t bias, const ElfW(Phdr) *phdr,
		    int phnum)
{
	memset(o, 0, sizeof(*o));
	o->path = path;
	const char *slash = strrchr(path, '/');
	o->base = slash ? slash + 1 : path;
	o->bias = bias;
	o->phdr = phdr;
	o->phnum = phnum;
}

static const char *keep_path(struct pl_syms *s, const char *path)
{
	if (!path || !*path)
		path = pl_exe_name();
	size_t len = strlen(path) + 1;
	char *copy = pl_arena_alloc(s->arena, len);
	if (copy)
		memcpy(copy, path, len);
	return copy;
}

static int room(struct pl_syms *s)
{
	if (!s->objs)
		s->objs = pl_arena_alloc(s->arena, sizeof(*s->objs) * MAX_OBJS);
	return s->objs && s->nobjs < MAX_OBJS;
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct pl_syms *s = arg;
	const char *path = room(s) ? keep_path(s, info->dlpi_name) : NULL;
	if (!path)
		return 1;
	obj_set(&s->objs[s->nobjs++], path, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum);
	return 0;
}

void pl_syms_begin(struct pl_syms *s)
{
	s->objs = NULL;
	s->nobjs = 0;
	dl_iterate_phdr(collect, s);
}

int pl_syms_know(struct pl_syms *s, uintptr_t addr)
{
	struct dl_find_object fo;
	if (_dl_find_object((void *)addr, &fo) != 0)
		return 0;
	const struct link_map *lm = fo.dlfo_link_map;
	/* Known already: the same object at the same place. */
	for (int i = 0; s->objs && i < s->nobjs; i++)
		if (s->objs[i].bias == lm->l_addr && s->objs[i].map_start == fo.dlfo_map_start)
			return 1;
	/* Its program headers, where the ELF header's first load segment maps them. */
	const ElfW(Ehdr) *eh = fo.dlfo_map_start;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || !eh->e_phoff ||
	    (uintptr_t)fo.dlfo_map_start + eh->e_phoff + (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) >
		    (uintptr_t)fo.dlfo_map_end)
		return 0;
	const char *path = room(s) ? keep_path(s, lm->l_name) : NULL;
	if (!path)
		return 0;
	struct pl_obj *o = &s->objs[s->nobjs];
	obj_set(o, path, lm->l_addr,
		(const ElfW(Phdr) *)((const char *)fo.dlfo_map_start + eh->e_phoff), eh->e_phnum);
	o->map_start = fo.dlfo_map_start;
	s->nobjs++;
	return 1;
}

/* /proc/PID/maps line: "start-end perms offset dev inode   path"; 1 when it maps a file. */
static int maps_line(char *line, uintptr_t *start, uintptr_t *end, uintptr_t *offset, char **path)
{
	int at = 0;
	if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %" SCNxPTR " %*s %*s %n", start, end, offset,
		   &at) != 3 || !at)
		return 0;
	char *p = line + at;
	p[strcspn(p, "\n")] = 0;
	if (*p != '/')
		return 0;   /* anonymous memory, [stack], [vdso], [heap] */
	size_t n = strlen(p);
	if (n > 10 && !strcmp(p + n - 10, " (deleted)"))
		p[n - 10] = 0;
	*path = p;
	return 1;
}

/* The file mapped at [start, end) of pid: the very file through map_files (root
 * only), else by its name in the process's root. */
static void *map_pid_file(pid_t pid, uintptr_t start, uintptr_t end, const char *path,
			  size_t *len)
{
	char at[600];
	snprintf(at, sizeof(at), "/proc/%d/map_files/%" PRIxPTR "-%" PRIxPTR, (int)pid, start, end);
	void *img = map_file(at, len);
	if (!img) {
		snprintf(at, sizeof(at), "/proc/%d/root%s", (int)pid, path);
		img = map_file(at, len);
	}
	return img;
}

/* An object of pid from the mapping of its file at `offset` (usually 0, its
 * headers): program headers from the file, the bias from where the segment
 * holding that offset was placed.  0 when the file is not a usable ELF object. */
static int obj_of_pid(struct pl_syms *s, pid_t pid, uintptr_t start, uintptr_t end,
		      uintptr_t offset, const char *path)
{
	size_t len = 0;
	char *img = room(s) ? map_pid_file(pid, start, end, path, &len) : NULL;
	if (!img)
		return 0;
	const ElfW(Ehdr) *eh = (const void *)img;
	const char *kept = NULL;
	if (eh->e_ident[EI_CLASS] == ELFCLASSNATIVE_ && eh->e_phoff &&
	    eh->e_phoff + (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) <= len)
		kept = keep_path(s, path);
	const ElfW(Phdr) *ph = kept ? (const void *)(img + eh->e_phoff) : NULL;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	for (int k = 0; ph && k < eh->e_phnum; k++) {
		if (ph[k].p_type != PT_LOAD || (ph[k].p_offset & ~(page - 1)) != offset)
			continue;
		struct pl_obj *o = &s->objs[s->nobjs++];
		obj_set(o, kept, start - (ph[k].p_vaddr & ~(page - 1)), ph, eh->e_phnum);
		o->image = img;
		o->map[0] = img;
		o->maplen[0] = len;
		return 1;
	}
	munmap(img, len);
	return 0;
}

int pl_syms_begin_pid(struct pl_syms *s, pid_t pid)
{
	char path[64], line[4200];
	s->objs = NULL;
	s->nobjs = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	/* An object's mappings are one run of lines of its path; a new run starts
	 * at another path, or at offset 0 of the same one (mapped twice). */
	char last[4096] = "";
	while (fgets(line, sizeof(line), f)) {
		uintptr_t start, end, offset;
		char *file;
		if (!maps_line(line, &start, &end, &offset, &file) ||
		    (!strcmp(file, last) && offset != 0))
			continue;
		snprintf(last, sizeof(last), "%s", file);
		obj_of_pid(s, pid, start, end, offset, file);
	}
	int failed = ferror(f);
	fclose(f);
	if (failed)
		errno = EIO;
	return failed ? -1 : 0;
}

void pl_syms_end(struct pl_syms *s)
{
	for (int i = 0; s->objs && i < s->nobjs; i++)
		for (int k = 0; k < 2; k++)
			if (s->objs[i].map[k])
				munmap(s->objs[i].map[k], s->objs[i].maplen[k]);
	s->objs = NULL;
	s->nobjs = 0;
}

static void *map_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *p = NULL;
	if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(ElfW(Ehdr))) {
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			p = NULL;
		*len = (size_t)st.st_size;
	}
	close(fd);
	if (p && memcmp(p, ELFMAG, SELFMAG) != 0) {
		munmap(p, *len);
		p = NULL;
	}
	return p;
}

/* Add the symbols of one section of type `type` (SHT_SYMTAB or SHT_DYNSYM); 0 if none. */
static size_t read_syms(const char *img, size_t len, unsigned type, struct pl_obj *o, int count_only)
{
	const ElfW(Ehdr) *eh = (const void *)img;
	if (eh->e_ident[EI_CLASS] != ELFCLASSNATIVE_ || !eh->e_shoff ||
	    eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > len)
		return 0;
	const ElfW(Shdr) *sh = (const void *)(img + eh->e_shoff);
	size_t added = 0;
	for (int s = 0; s < eh->e_shnum; s++) {
		if (sh[s].sh_type != type || sh[s].sh_link >= eh->e_shnum ||
		    sh[s].sh_offset + sh[s].sh_size > len)
			continue;
		const ElfW(Shdr) *strs = &sh[sh[s].sh_link];
		if (strs->sh_offset + strs->sh_size > len)
			continue;
		const ElfW(Sym) *sym = (const void *)(img + sh[s].sh_offset);
		size_t n = sh[s].sh_size / sizeof(ElfW(Sym));
		for (size_t k = 0; k < n; k++) {
			unsigned t = ELF_ST_TYPE_(sym[k].st_info);
			if (!sym[k].st_value || sym[k].st_shndx == SHN_UNDEF ||
			    sym[k].st_name >= strs->sh_size ||
			    (t != STT_FUNC && t != STT_GNU_IFUNC && t != STT_OBJECT))
				continue;
			added++;
			if (count_only)
				continue;
			struct symtab *tab = t == STT_OBJECT ? &o->data : &o->funcs;
			tab->v[tab->n++] = (struct sym){ sym[k].st_value, sym[k].st_size,
							 img + strs->sh_offset + sym[k].st_name };
		}
	}
	return added;
}

static int has_section(const char *img, size_t len, unsigned type)
{
	const ElfW(Ehdr) *eh = (const void *)img;
	if (!eh->e_shoff || eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > len)
		return 0;
	const ElfW(Shdr) *sh = (const void *)(img + eh->e_shoff);
	for (int s = 0; s < eh->e_shnum; s++)
		if (sh[s].sh_type == type && sh[s].sh_size)
			return 1;
	return 0;
}

/* The loaded object's GNU build-id note: its bytes and their number (0: none). */
static const unsigned char *build_id(const struct pl_obj *o, unsigned *n)
{
	for (int i = 0; i < o->phnum; i++) {
		if (o->phdr[i].p_type != PT_NOTE)
			continue;
		const char *p = o->image ? o->image + o->phdr[i].p_offset
					 : (const char *)(o->bias + o->phdr[i].p_vaddr);
		const char *end = p + (o->image ? o->phdr[i].p_filesz : o->phdr[i].p_memsz);
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			const char *name = p + sizeof(*nh);
			const unsigned char *desc =
				(const unsigned char *)name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && nh->n_descsz >= 2 &&
			    (const char *)desc + nh->n_descsz <= end) {
				*n = nh->n_descsz;
				return desc;
			}
			p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	*n = 0;
	return NULL;
}

/* /usr/lib/debug/.build-id/ab/cdef....debug from the loaded object's GNU build-id note. */
static int debug_path(const struct pl_obj *o, char *out, size_t outlen)
{
	unsigned nid;
	const unsigned char *id = build_id(o, &nid);
	if (!id)
		return 0;
	int n = snprintf(out, outlen, "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (unsigned k = 1; k < nid && (size_t)n + 3 < outlen; k++)
		n += snprintf(out + n, outlen - (size_t)n, "%02x", id[k]);
	snprintf(out + n, outlen - (size_t)n, ".debug");
	return 1;
}

/* Sort by address: heapsort, in place (the reporter does not allocate). */
static void sift(struct sym *v, size_t i, size_t n)
{
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && v[c + 1].addr > v[c].addr)
			c++;
		if (v[c].addr <= v[i].addr)
			return;
		struct sym t = v[i];
		v[i] = v[c];
		v[c] = t;
		i = c;
	}
}

static void sort_syms(struct symtab *tab)
{
	size_t n = tab->n;
	for (size_t i = n / 2; i-- > 0;)
		sift(tab->v, i, n);
	for (size_t end = n; end-- > 1;) {
		struct sym t = tab->v[0];
		tab->v[0] = tab->v[end];
		tab->v[end] = t;
		sift(tab->v, 0, end);
	}
}

static void load(struct pl_syms *syms, struct pl_obj *o)
{
	o->loaded = 1;
	char dbg[600];
	const char *img = NULL;
	size_t len = 0;
	unsigned type = SHT_SYMTAB;

	if (!o->map[0])
		o->map[0] = map_file(o->path, &o->maplen[0]);
	if (o->map[0] && has_section(o->map[0], o->maplen[0], SHT_SYMTAB)) {
		img = o->map[0];
		len = o->maplen[0];
	} else if (debug_path(o, dbg, sizeof(dbg)) &&
		   (o->map[1] = map_file(dbg, &o->maplen[1])) != NULL &&
		   has_section(o->map[1], o->maplen[1], SHT_SYMTAB)) {
		img = o->map[1];
		len = o->maplen[1];
	} else if (o->map[0]) {
		img = o->map[0];
		len = o->maplen[0];
		type = SHT_DYNSYM;
	}
	if (!img)
		return;
	size_t n = read_syms(img, len, type, o, 1);
	o->funcs.v = pl_arena_alloc(syms->arena, n * sizeof(struct sym));
	o->data.v = pl_arena_alloc(syms->arena, n * sizeof(struct sym));
	if (!o->funcs.v || !o->data.v)
		return;
	read_syms(img, len, type, o, 0);
	/* .symtab lacks nothing .dynsym has, except in a debug file's own view:
	 * add the exported symbols too when the names come from elsewhere. */
	if (type == SHT_SYMTAB && img != o->map[0] && o->map[0]) {
		size_t more = read_syms(o->map[0], o->maplen[0], SHT_DYNSYM, o, 1);
		struct sym *f = pl_arena_alloc(syms->arena, (o->funcs.n + more) * sizeof(struct sym));
		struct sym *d = pl_arena_alloc(syms->arena, (o->data.n + more) * sizeof(struct sym));
		if (f && d) {
			memcpy(f, o->funcs.v, o->funcs.n * sizeof(struct sym));
			memcpy(d, o->data.v, o->data.n * sizeof(struct sym));
			o->funcs.v = f;
			o->data.v = d;
			read_syms(o->map[0], o->maplen[0], SHT_DYNSYM, o, 0);
		}
	}
	sort_syms(&o->funcs);
	sort_syms(&o->data);
}

/* The object holding addr, in a loadable segment (writable ones only when data). */
static struct pl_obj *find_obj(struct pl_syms *syms, uintptr_t addr, int data)
{
	for (int i = 0; syms->objs && i < syms->nobjs; i++) {
		struct pl_obj *o = &syms->objs[i];
		for (int k = 0; k < o->phnum; k++) {
			const ElfW(Phdr) *ph = &o->phdr[k];
			if (ph->p_type != PT_LOAD || (data && !(ph->p_flags & PF_W)))
				continue;
			uintptr_t lo = o->bias + ph->p_vaddr;
			if (addr >= lo && addr < lo + ph->p_memsz)
				return o;
		}
	}
	return NULL;
}

static const struct sym *lookup(const struct symtab *tab, uintptr_t a)
{
	size_t lo = 0, hi = tab->n;
	while (lo < hi) {   /* first symbol above a */
		size_t mid = (lo + hi) / 2;
		if (tab->v[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Among symbols at or below a, the nearest one that covers it (sizes may nest). */
	for (size_t i = lo; i-- > 0 && lo - i <= 8;) {
		const struct sym *s = &tab->v[i];
		if (a < s->addr + (s->size ? s->size : 1))
			return s;
	}
	return NULL;
}

void pl_sym_demangle(struct pl_syms *syms, const char *name, char *buf, size_t len)
{
	int status = -1;
	char *dm = syms->cxa_demangle && name[0] == '_' && name[1] == 'Z'
			   ? syms->cxa_demangle(name, NULL, NULL, &status)
			   : NULL;
	snprintf(buf, len, "%s", dm && status == 0 ? dm : name);
	free(dm);
	if (status != 0)
		return;
	int depth = 0;
	char *cut = NULL;
	for (char *p = buf; *p && !cut; p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>')
			depth--;
		else if (*p == '(' && depth == 0 && !(p - buf >= 8 && !strncmp(p - 8, "operator", 8)))
			cut = p;
	}
	if (cut)
		*cut = 0;
}

static int name_in(struct pl_syms *syms, struct pl_obj *o, const struct symtab *tab, uintptr_t addr, uintptr_t shown,
		   char *buf, size_t len)
{
	if (!o->loaded)
		load(syms, o);
	uintptr_t link = addr - o->bias;
	const struct sym *s = lookup(tab, link);
	if (!s) {
		snprintf(buf, len, "%s`+0x%lx", o->base, (unsigned long)(shown - o->bias));
		return 0;
	}
	char name[256];
	pl_sym_demangle(syms, s->name, name, sizeof(name));
	uintptr_t off = shown - o->bias - s->addr;
	if (off)
		snprintf(buf, len, "%s`%s+0x%lx", o->base, name, (unsigned long)off);
	else
		snprintf(buf, len, "%s`%s", o->base, name);
	return 1;
}

int pl_sym_code(struct pl_syms *syms, uintptr_t pc, char *buf, size_t len)
{
	/* A return address: the call is the byte before it (which matters after a
	 * call to a noreturn function, the last instruction of its caller). */
	struct pl_obj *o = pc ? find_obj(syms, pc - 1, 0) : NULL;
	if (!o) {
		snprintf(buf, len, "0x%lx", (unsigned long)pc);
		return 0;
	}
	return name_in(syms, o, &o->funcs, pc - 1, pc, buf, len);
}

int pl_sym_object(struct pl_syms *syms, int index, struct pl_where *w)
{
	if (!syms->objs || index < 0 || index >= syms->nobjs)
		return -1;
	const struct pl_obj *o = &syms->objs[index];
	memset(w, 0, sizeof(*w));
	w->path = o->path;
	w->bias = o->bias;
	for (int k = 0; k < o->phnum; k++) {
		const ElfW(Phdr) *ph = &o->phdr[k];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			w->start = o->bias + ph->p_vaddr;
			w->limit = w->start + ph->p_memsz;
			w->offset = ph->p_offset;
			break;
		}
	}
	unsigned nid;
	const unsigned char *id = build_id(o, &nid);
	for (unsigned k = 0; id && k < nid && k < 20; k++)
		snprintf(w->build_id + 2 * k, 3, "%02x", id[k]);
	return index;
}

int pl_sym_where(struct pl_syms *syms, uintptr_t pc, struct pl_where *w)
{
	struct pl_obj *o = pc ? find_obj(syms, pc - 1, 0) : NULL;
	return o ? pl_sym_object(syms, (int)(o - syms->objs), w) : -1;
}

int pl_sym_data(struct pl_syms *syms, uintptr_t addr, char *buf, size_t len)
{
	struct pl_obj *o = find_obj(syms, addr, 1);
	if (!o)
		return 0;
	name_in(syms, o, &o->data, addr, addr, buf, len);
	return 1;
}
