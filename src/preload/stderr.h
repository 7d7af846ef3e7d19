/*
 * stderr.h: how the preloaded libraries (liblocklab-prof.so,
 * liblocklab-swap.so) write: whole writes, and their messages and stderr
 * reports to the stderr the program had when the library loaded, never to a
 * descriptor the program owns now.  A program that closes fd 2 and opens a
 * data file, which becomes fd 2, must not find a report appended to its data.
 *
 *   at load     the file fd 2 is (device, inode) is recorded; a library that
 *               will write a report at exit also keeps a private duplicate,
 *               close-on-exec, at fd 100 or above (out of the numbers a
 *               program counts on); a fork child keeps it, an exec image
 *               takes its own at load
 *   a write     goes to the duplicate if it is still that file, else to fd 2
 *               if it is still that file, else nowhere: a program that
 *               closed every descriptor (closefrom, close_range) may have
 *               given the duplicate's number to a file of its own
 *
 * The duplicate keeps stderr open for as long as the program runs: a reader
 * of that pipe waiting for its end waits for the program (a daemon that
 * detaches with dup2 included), which is why only a stderr report takes one.
 */
#ifndef LOCKLAB_PRELOAD_STDERR_H
#define LOCKLAB_PRELOAD_STDERR_H

#include <stddef.h>

/* All of p to fd, through EINTR; gives up on an error. */
void pl_write_all(int fd, const void *p, size_t len);
/* Record what fd 2 is (once), and with copy keep the duplicate (once). */
void pl_stderr_keep(int copy);
/* All of p to the stderr of load time, or nothing (above); through EINTR. */
void pl_stderr_write(const void *p, size_t len);

#endif
