/*
 * unbuilt.c: locklab-attach in a build without the eBPF tracer (LL_WITH_BPF,
 * src/attach/CMakeLists.txt).  It says so, and why, to whoever runs it:
 * `--check --json` is how the CLI learns it (the same members as a built
 * tracer's answer), any other use gets one line and status 1.
 */
#include <stdio.h>
#include <string.h>

#include "attach_config.h"
#include "core/json.h"

int main(int argc, char **argv)
{
	int check = 0, json = 0;
	for (int i = 1; i < argc; i++) {
		check |= !strcmp(argv[i], "--check");
		json |= !strcmp(argv[i], "--json");
		if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "--help")) {
			printf("locklab-attach %s: not built: %s\n", LL_VERSION, LL_BPF_NOTE);
			return 0;
		}
	}
	if (check && json) {
		printf("{\"tool\":\"locklab-attach\",\"version\":\"%s\",\"built\":false,\"note\":",
		       LL_VERSION);
		ll_json_string(LL_BPF_NOTE, ll_json_to_file, stdout);
		printf(",\"ready\":false,\"hook\":null,\"problem\":");
		ll_json_string(LL_BPF_NOTE, ll_json_to_file, stdout);
		printf("}\n");
	} else {
		fprintf(check ? stdout : stderr, "locklab-attach: not built: %s\n", LL_BPF_NOTE);
	}
	return 1;
}
