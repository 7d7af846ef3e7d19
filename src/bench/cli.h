/*
 * cli.h: the subcommands of locklab-bench, which main.c dispatches to.
 */
#ifndef LOCKLAB_BENCH_CLI_H
#define LOCKLAB_BENCH_CLI_H

int cmd_list(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* server.c: bench's --workload dispatch, and the server workload (docs/admission.md). */
int cmd_bench_workload(int argc, char **argv);
int cmd_server(int argc, char **argv);
/* rw.c: the rwlock workload, --workload rw. */
int cmd_bench_rw(int argc, char **argv);
int cmd_floor(int argc, char **argv);
/* moncost.c: what the lock monitor costs an uncontended lock+unlock. */
int cmd_moncost(int argc, char **argv);

#endif
