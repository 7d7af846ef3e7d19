/*
 * real.c: glibc's own functions, found once, and the swapper's thread ids.
 */
#include "swap.h"

#include "preload/once.h"

struct swap_real swap_real;
atomic_int swap_real_ready;
__thread struct swap_tls swap_tls __attribute__((tls_model("initial-exec")));
static atomic_uint next_self;

void swap_real_resolve(void)
{
	static atomic_int state;   /* one thread resolves; the others wait for it */
	if (!pl_once_claim(&state, &swap_real_ready))
		return;
	/* dlsym may come back to us (an allocator, another preloaded library's
	 * wrapper of dl functions): those calls see setup (GLIBC_CALL). */
	swap_tls.busy++;
	swap_tls.setup++;
#ifdef LL_SWAP_DIRECT
#define R(field, name, ver) swap_real.field = name;
#else
#define R(field, name, ver) swap_real.field = (__typeof__(swap_real.field))pl_glibc_find(#name, ver);
#endif
	PL_GLIBC_LOCKS(R)
	R(mutex_consistent, pthread_mutex_consistent, NULL)
#undef R
	swap_tls.busy--;
	swap_tls.setup--;
	pl_once_done(&swap_real_ready);   /* the pointers above complete before anyone sees it */
}

void swap_self_assign(void)
{
	unsigned id;
	do   /* relaxed: only uniqueness matters, nothing is published with it */
		id = atomic_fetch_add_explicit(&next_self, 1, memory_order_relaxed) + 1;
	while (!id);
	swap_tls.self = id;
}
