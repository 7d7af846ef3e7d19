/*
 * fork.c: a forked child's repair of the swapper's process-wide state
 * (registered with pthread_atfork by the constructor, config.c).
 *
 * Nothing is taken before fork: other prepare handlers (an allocator's,
 * locking all its mutexes) may still make slots, or name mutexes, after
 * ours.  The child, which has one thread, mends what the parent's other
 * threads may have left half done (each part its own: slab.c, choose.c,
 * cond.c, report.c), and moves to a new fork generation: every lock used
 * before now is looked at once more at its first use (slot.c).
 */
#include "swap.h"

void swap_after_fork_child(void)
{
	swap_slab_after_fork();
	swap_choose_after_fork();
	swap_hot.fork_gen = (swap_hot.fork_gen + 1) & GEN_MASK;
	swap_cond_after_fork();
	swap_report_after_fork();
}
