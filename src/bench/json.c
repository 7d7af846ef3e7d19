/*
 * json.c: JSON strings in the C tools' output, through the project's one
 * writer (src/lib/core/json.h).
 */
#include "json.h"
#include "core/json.h"

void json_string(FILE *f, const char *s)
{
	ll_json_string(s, ll_json_to_file, f);
}
