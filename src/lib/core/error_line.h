/*
 * error_line.h: "locklab: <message>" as one line on stderr, the way the
 * library's environment switches (monitor/env.c) and this tree's programs
 * refuse bad input.
 */
#ifndef LOCKLAB_CORE_ERROR_LINE_H
#define LOCKLAB_CORE_ERROR_LINE_H

#include <stdarg.h>
#include <stdio.h>

static inline void ll_error_line(const char *fmt, va_list ap)
{
	fputs("locklab: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

#endif
