/*
 * auto_ctl.c: the `auto` gate's controller (auto.c's header comment states
 * it): from one interval's measurements to the next N.  No clock, no I/O, no
 * locking: auto.c measures and serialises, and a test can drive it directly.
 */
#include <math.h>

#include "gate/gate_impl.h"

#define HOLD_MIN 2
#define HOLD_MAX 64
#define PAIRS_MIN 2
#define PAIRS_MAX 8
#define BLOCK 2
#define GAIN_UP 1.01
#define KEEP_DOWN 0.98
#define CLAMP 0.15
#define STARVED_CPUS 0.25
#define SLACK 1.5
#define WARMUP_INTERVALS 2

static int64_t clamp_n(const struct auto_ctl *c, int64_t n)
{
	return n < c->min ? c->min : n > c->max ? c->max : n;
}

void auto_ctl_init(struct auto_ctl *c, int64_t n, int64_t min, int64_t max)
{
	*c = (struct auto_ctl){ .min = min, .max = max < min ? min : max, .dir = +1 };
	c->n = clamp_n(c, n);
}

/* Begin a probe from N towards `dir`; 0 if N is at its bound that way. */
static int start_probe(struct auto_ctl *c, int dir, int starved)
{
	int64_t to = clamp_n(c, dir > 0 ? c->n * (starved ? 4 : 2) : c->n / 2);
	if (to == c->n)
		return 0;
	c->dir = dir;
	c->from = c->n;
	c->to = to;
	c->starved_probe = starved;
	c->pairs = 0;
	c->r_sum = c->r_sq = 0;
	c->probing = 1;
	c->intervals = 0;
	c->queued = 0;
	c->n = to;
	return 1;
}

static void hold(struct auto_ctl *c)
{
	c->probing = 0;
	c->intervals = 0;
	c->queued = 0;
	c->inside_peak = 0;
}

/*
 * A probe's verdict from the pairs so far: +1 keep N', -1 keep N, 0 not yet.
 * Each pair gives r = log(X at N' / X at N), clamped to +-CLAMP (15%): a dip
 * to half (a preempted holder, a neighbour's burst) then weighs as a clear
 * difference, not as four of them, and does not swamp the standard error,
 * which real differences of a few percent must clear.  With the mean m and its standard error e: up is kept when m - e
 * clears log(GAIN_UP) and dropped when m + e does not; down is dropped when
 * m + e is below log(KEEP_DOWN) and kept when m - e is above it.  After
 * PAIRS_MAX pairs a doubt keeps N as it was, either way: a doubt that kept
 * the smaller N would let noise walk N down where a larger N pays.
 */
static int verdict(const struct auto_ctl *c)
{
	if (c->pairs < PAIRS_MIN)
		return 0;
	double k = c->pairs, m = c->r_sum / k;
	double var = (c->r_sq - k * m * m) / (k - 1);
	double e = sqrt((var > 0 ? var : 0) / k);
	double bar = log(c->dir > 0 ? GAIN_UP : KEEP_DOWN);
	if (m - e >= bar)
		return +1;
	if (m + e < bar)
		return -1;
	if (c->pairs < PAIRS_MAX)
		return 0;
	return -1;
}

/* A probe's interval: blocks of BLOCK intervals, at N' and at N in turns. */
static void probe_step(struct auto_ctl *c, double x)
{
	/* Only a block's last interval counts: the first carries what the other
	 * N left behind (threads still to leave, parked in a lock's queue). */
	int k = c->intervals++, block = k / BLOCK, v = 0;
	if (c->intervals % BLOCK == 0) {
		if (block % 2 == 0) {
			c->x_to = x;
		} else {
			double r = x > 0 && c->x_to > 0 ? log(c->x_to / x) : c->x_to > 0 ? CLAMP : -CLAMP;
			r = r > CLAMP ? CLAMP : r < -CLAMP ? -CLAMP : r;
			c->pairs++;
			c->r_sum += r;
			c->r_sq += r * r;
			v = verdict(c);
		}
	}
	if (!v) {
		c->n = (c->intervals / BLOCK) % 2 ? c->from : c->to;
		return;
	}
	if (v > 0) {
		c->n = c->to;
		c->rejects = 0;
		/* Go on the same way at once (upwards only while N binds). */
		if ((c->dir < 0 || c->queued) && start_probe(c, c->dir, 0))
			return;
	} else {
		c->n = c->from;
		if (c->starved_probe)
			c->starved_off = 1;
		c->dir = -c->dir;
		if ((HOLD_MIN << c->rejects) < HOLD_MAX)
			c->rejects++;
	}
	hold(c);
}

int64_t auto_ctl_step(struct auto_ctl *c, double x, double idle, int queued, uint32_t inside)
{
	/* The first intervals: threads still starting, nothing measured says anything about N. */
	if (++c->seen <= WARMUP_INTERVALS)
		return c->n;
	c->queued |= queued;
	if (c->probing) {
		probe_step(c, x);
		return c->n;
	}
	if (inside > c->inside_peak)
		c->inside_peak = inside;
	c->intervals++;
	if (idle < STARVED_CPUS)
		c->starved_off = 0;
	if (queued && idle >= STARVED_CPUS && !c->starved_off) {
		if (!start_probe(c, +1, 1))
			hold(c);
	} else if (c->intervals >= (HOLD_MIN << c->rejects)) {
		if (!c->queued) {
			/* N does not bind. Where it is far above what is used, bring it down
			 * (that changes nothing now, and lets a later change be seen).  A
			 * step down below the threads seen inside would only throttle them:
			 * N got above them by an up-probe that paid, or by the clients'
			 * own count, so nothing is probed. */
			int64_t used = (int64_t)(SLACK * c->inside_peak) + 1;
			if (used < c->n && c->n > c->min)
				c->n = clamp_n(c, used);
			else if (c->n / 2 >= (int64_t)c->inside_peak)
				start_probe(c, -1, 0);
			if (!c->probing)
				hold(c);
		} else if (!start_probe(c, c->dir, 0) && !start_probe(c, -c->dir, 0)) {
			hold(c);
		}
	}
	return c->n;
}
