/*
 * json.h: the one JSON string writer of the project, for every C part that
 * prints JSON: the monitor's dumps (liblocklab), locklab-bench's lines and the
 * profiler's reports.  Header-only and allocation-free, so the profiler, which
 * links nothing of liblocklab and writes from signal handlers, can use it too.
 *
 * A string becomes a JSON string literal, quotes included: '"' and '\' are
 * escaped, control bytes and DEL become \n, \t, \r or \u00XX, valid UTF-8
 * passes as it is and any other byte becomes \ufffd (a thread or file name
 * is whatever bytes the program gave it); NULL becomes null.
 */
#ifndef LOCKLAB_CORE_JSON_H
#define LOCKLAB_CORE_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Receives the literal in pieces: n bytes at p. */
typedef void (*ll_json_sink)(void *ctx, const char *p, size_t n);

/* The length of the UTF-8 sequence starting at p, or 0 when it is not one. */
static inline size_t ll_json_utf8_len(const unsigned char *p)
{
	size_t n = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
		   : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

static inline void ll_json_string(const char *s, ll_json_sink out, void *ctx)
{
	if (!s) {
		out(ctx, "null", 4);
		return;
	}
	out(ctx, "\"", 1);
	const unsigned char *p = (const unsigned char *)s, *run = p;
	while (*p) {
		size_t n = *p < 0x80 ? 1 : ll_json_utf8_len(p);
		int plain = *p >= 0x20 && *p != 0x7f && *p != '"' && *p != '\\' && n;
		if (plain) {
			p += n;
			continue;
		}
		if (p > run)   /* the plain bytes before this one, in one piece */
			out(ctx, (const char *)run, (size_t)(p - run));
		char esc[8];
		int len = *p == '"' || *p == '\\' ? snprintf(esc, sizeof(esc), "\\%c", *p)
			  : *p == '\n'            ? snprintf(esc, sizeof(esc), "\\n")
			  : *p == '\t'            ? snprintf(esc, sizeof(esc), "\\t")
			  : *p == '\r'            ? snprintf(esc, sizeof(esc), "\\r")
			  : *p < 0x80             ? snprintf(esc, sizeof(esc), "\\u%04x", *p)
						  : snprintf(esc, sizeof(esc), "\\ufffd");
		out(ctx, esc, (size_t)len);
		run = ++p;
	}
	if (p > run)
		out(ctx, (const char *)run, (size_t)(p - run));
	out(ctx, "\"", 1);
}

/* The sink for a stdio stream. */
static inline void ll_json_to_file(void *f, const char *p, size_t n)
{
	fwrite(p, 1, n, (FILE *)f);
}

#endif
