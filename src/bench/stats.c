/*
 * stats.c: medians and per-thread spread for the benchmark (stats.h).
 */
#include <stdlib.h>

#include "stats.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void spread_add(struct spread *s, uint64_t count)
{
	if (s->n == 0 || count < s->min)
		s->min = count;
	if (count > s->max)
		s->max = count;
	s->n++;
	s->total += count;
	s->sum_sq += (double)count * (double)count;
}

double spread_jain(const struct spread *s)
{
	double sum = (double)s->total;
	return s->sum_sq > 0 ? sum * sum / ((double)s->n * s->sum_sq) : 0;
}
