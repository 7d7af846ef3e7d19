/*
 * consumer.c: a program built against an installed liblocklab, the way a user
 * builds one (tests/packaging/install.cmake: through pkg-config, then through
 * find_package(locklab)).  Exits 0 only if every step did what the API says:
 * the generic mutex by name, and the direct types of locklab/locks/ and
 * locklab/rwlocks/, whose fast paths inline from the installed headers.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <locklab/locklab.h>
#include <locklab/locks/ll.h>
#include <locklab/rwlocks/ll.h>

static int failed;

#define CHECK(cond, ...)                                   \
	do {                                               \
		if (!(cond)) {                             \
			fprintf(stderr, "consumer: ");     \
			fprintf(stderr, __VA_ARGS__);      \
			fputc('\n', stderr);               \
			failed = 1;                        \
		}                                          \
	} while (0)

static void exercise(const char *algo)
{
	ll_mutex_t m;
	struct ll_error err;
	int rc;

	rc = ll_mutex_init(&m, algo, NULL, &err);
	if (rc) {
		CHECK(0, "%s: init returned %d: %s", algo, rc, err.msg);
		return;
	}
	CHECK(!strcmp(ll_mutex_algo(&m), algo), "%s: init gave '%s'", algo, ll_mutex_algo(&m));
	ll_mutex_lock(&m);
	rc = ll_mutex_trylock(&m);
	CHECK(rc == EBUSY, "%s: trylock of a held mutex returned %d, not EBUSY", algo, rc);
	ll_mutex_unlock(&m);
	rc = ll_mutex_trylock(&m);
	CHECK(rc == 0, "%s: trylock of a free mutex returned %d", algo, rc);
	if (rc == 0)
		ll_mutex_unlock(&m);
	ll_mutex_destroy(&m);
}

static void exercise_direct(void)
{
	ll_ll_t l;
	ll_rw_ll_t rw;

	CHECK(ll_ll_init(&l, NULL) == 0, "ll_ll_init failed");
	ll_ll_lock(&l);
	CHECK(ll_ll_trylock(&l) == EBUSY, "ll_ll_trylock of a held lock did not return EBUSY");
	ll_ll_unlock(&l);
	ll_ll_destroy(&l);

	CHECK(ll_rw_ll_init(&rw, NULL) == 0, "ll_rw_ll_init failed");
	CHECK(ll_rw_ll_wrlock(&rw) == 0 && ll_rw_ll_unlock(&rw) == 0, "ll_rw_ll_t: write lock failed");
	CHECK(ll_rw_ll_rdlock(&rw) == 0 && ll_rw_ll_unlock(&rw) == 0, "ll_rw_ll_t: read lock failed");
	CHECK(ll_rw_ll_unlock(&rw) == EPERM, "ll_rw_ll_unlock of a free lock did not return EPERM");
	ll_rw_ll_destroy(&rw);
}

int main(void)
{
	ll_mutex_t m;
	struct ll_error err;

	exercise("ll");
	exercise("futex");
	exercise_direct();
	CHECK(ll_mutex_init(&m, "no-such-lock", NULL, &err) == EINVAL,
	      "init by an unknown name did not fail with EINVAL");
	if (!failed)
		puts("consumer: ll and futex by name, ll_ll_t and ll_rw_ll_t direct: ok");
	return failed;
}
