/*
 * json_check.c: a JSON checker (RFC 8259 syntax), for the monitor's dumps.
 */
#include <string.h>

#include "suite.h"

struct json {
	const char *p;
	int depth;
};

static void json_ws(struct json *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static int json_value(struct json *j);

static int json_string(struct json *j)
{
	if (*j->p++ != '"')
		return 0;
	for (;;) {
		unsigned char c = (unsigned char)*j->p++;
		if (c == '"')
			return 1;
		if (c < 0x20)
			return 0;   /* control characters must be escaped (and NUL ends the text) */
		if (c != '\\')
			continue;
		c = (unsigned char)*j->p++;
		if (c == 'u') {
			for (int k = 0; k < 4; k++, j->p++)
				if (!strchr("0123456789abcdefABCDEF", *j->p) || !*j->p)
					return 0;
		} else if (!c || !strchr("\"\\/bfnrt", c)) {
			return 0;
		}
	}
}

static int json_digits(struct json *j)
{
	const char *start = j->p;
	while (*j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > start;
}

static int json_number(struct json *j)
{
	if (*j->p == '-')
		j->p++;
	if (*j->p == '0')
		j->p++;
	else if (!json_digits(j))
		return 0;
	if (*j->p == '.') {
		j->p++;
		if (!json_digits(j))
			return 0;
	}
	if (*j->p == 'e' || *j->p == 'E') {
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		if (!json_digits(j))
			return 0;
	}
	return 1;
}

static int json_word(struct json *j, const char *w)
{
	size_t n = strlen(w);
	if (strncmp(j->p, w, n))
		return 0;
	j->p += n;
	return 1;
}

static int json_items(struct json *j, char close, int keyed)
{
	j->p++;
	json_ws(j);
	if (*j->p == close) {
		j->p++;
		return 1;
	}
	for (;;) {
		if (keyed) {
			if (!json_string(j))
				return 0;
			json_ws(j);
			if (*j->p++ != ':')
				return 0;
		}
		if (!json_value(j))
			return 0;
		json_ws(j);
		if (*j->p == close) {
			j->p++;
			return 1;
		}
		if (*j->p++ != ',')
			return 0;
		json_ws(j);
	}
}

static int json_value(struct json *j)
{
	int ok;
	json_ws(j);
	if (++j->depth > 64)
		return 0;
	switch (*j->p) {
	case '{': ok = json_items(j, '}', 1); break;
	case '[': ok = json_items(j, ']', 0); break;
	case '"': ok = json_string(j); break;
	case 't': ok = json_word(j, "true"); break;
	case 'f': ok = json_word(j, "false"); break;
	case 'n': ok = json_word(j, "null"); break;
	default: ok = json_number(j); break;
	}
	j->depth--;
	json_ws(j);
	return ok;
}

/* 1 when text is one JSON value and nothing else. */
int json_valid(const char *text)
{
	struct json j = { text, 0 };
	return json_value(&j) && *j.p == '\0';
}
