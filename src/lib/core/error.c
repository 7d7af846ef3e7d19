/*
 * error.c: the library's one-line errors (struct ll_error), and the one way an
 * unknown name is refused: "unknown lock 'x' (valid: a, b, c)".
 */
#include <stdarg.h>
#include <stdio.h>

#include "locklab/ops.h"

void ll_error_set(struct ll_error *err, const char *fmt, ...)
{
	if (!err)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

void ll_error_unknown(struct ll_error *err, const char *kind, const char *name, const char *where,
		      size_t n, const char *(*name_at)(size_t i, const void *ctx), const void *ctx)
{
	if (!err)
		return;
	char names[384];
	size_t used = 0;
	names[0] = '\0';
	if (!name_at)
		n = 0;
	for (size_t i = 0; i < n && used < sizeof(names); i++) {
		int w = snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
				 name_at(i, ctx));
		if (w < 0)
			break;
		used += (size_t)w;
	}
	ll_error_set(err, "unknown %s '%s'%s%s (valid: %s)", kind ? kind : "", name ? name : "",
		     where ? " " : "", where ? where : "", n ? names : "none");
}
