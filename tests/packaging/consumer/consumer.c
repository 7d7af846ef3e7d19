/*
 * consumer.c: a program built against an installed liblocklab, the way a user
 * builds one (tests/packaging/install.cmake: through pkg-config, then through
 * find_package(locklab)).  Exits 0 only if every step did what the API says.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <locklab/locklab.h>

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

int main(void)
{
	ll_mutex_t m;
	struct ll_error err;

	exercise("ll");
	exercise("futex");
	CHECK(ll_mutex_init(&m, "no-such-lock", NULL, &err) == EINVAL,
	      "init by an unknown name did not fail with EINVAL");
	if (!failed)
		puts("consumer: ll and futex: init, lock, trylock, unlock, destroy: ok");
	return failed;
}
