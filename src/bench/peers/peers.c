/*
 * peers.c: public locks of other projects, run by the benchmark beside the
 * library's own.  Each peer is a struct ll_lock_ops in its own file:
 * Concurrency Kit's spinlocks in ck.c, abseil's absl::Mutex in absl.cc.
 */
#include "../locks.h"

extern const struct ll_lock_ops ll_ck_mcs_ops, ll_ck_ticket_ops, ll_ck_fas_ops, ll_absl_ops;

const struct ll_lock_ops *const ll_peer_locks[] = {
	&ll_ck_mcs_ops, &ll_ck_ticket_ops, &ll_ck_fas_ops, &ll_absl_ops,
};
const size_t ll_peer_lock_count = LL_COUNT(ll_peer_locks);
