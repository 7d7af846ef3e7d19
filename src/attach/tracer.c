/*
 * tracer.c: what every part of locklab-attach shares (tracer.h): its one
 * way of saying what went wrong.
 */
#include <stdarg.h>
#include <stdio.h>

#include "tracer.h"

void attach_say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("locklab-attach: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
