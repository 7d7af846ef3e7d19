/*
 * json.h: the little JSON the C tools print (one object per line or value).
 */
#ifndef LOCKLAB_BENCH_JSON_H
#define LOCKLAB_BENCH_JSON_H

#include <stdio.h>

/* Write s as a JSON string literal, quotes included. */
void json_string(FILE *f, const char *s);

#endif
