/*
 * peers.c: public locks of other projects, run by the benchmark beside the
 * library's own.  Each peer is a struct ll_lock_ops in its own file.
 */
#include "../locks.h"

const struct ll_lock_ops *const ll_peer_locks[] = { NULL };
const size_t ll_peer_lock_count = 0;
