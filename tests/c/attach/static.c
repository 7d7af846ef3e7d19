/*
 * static.c: a statically linked program for the attach tracer to refuse:
 * it sleeps SECONDS and exits.
 */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 5);
	return 0;
}
