/*
 * cli.h: subcommands of locklab-bench and what they share.
 */
#ifndef LOCKLAB_BENCH_CLI_H
#define LOCKLAB_BENCH_CLI_H

/* Exit status for bad input: a one-line error was printed to stderr. */
#define EXIT_USAGE 2

int cmd_list(int argc, char **argv);

/* Print "locklab: <message>" on one line to stderr; returns EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
