/*
 * output.c: the reports, as the profiler writes them (src/prof/report.c),
 * to stdout or -o FILE: text, or JSON with one report per line (the interval
 * reports first, as they come, then the last).  Text reports are separated
 * by a blank line.  The frames carry file:line, which the profiler leaves to
 * the CLI: here the tracer has the debug information at hand already.  With
 * --trace, the last report also writes the timeline of waits, in the
 * profiler's format (report.c), to its own file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tracer.h"

static const struct attach_opts *opts;
static int out_fd = -1;
static unsigned written;

static int trace_fd = -1;

int attach_output_begin(const struct attach_opts *o)
{
	opts = o;
	out_fd = 1;
	/* Both files opened now: a path that cannot be written is said before the trace. */
	if (o->output) {
		out_fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (out_fd < 0) {
			attach_say("-o %s: %s", o->output, strerror(errno));
			return -1;
		}
	}
	if (o->trace) {
		trace_fd = open(o->trace, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (trace_fd < 0) {
			attach_say("--trace %s: %s", o->trace, strerror(errno));
			return -1;
		}
	}
	prof_subject.text_where = attach_text_where;
	prof_subject.json_lines = attach_json_lines;
	prof_subject.text_notes = attach_collect_notes;
	prof_subject.json_members = attach_collect_json;
	return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int attach_output_report(enum prof_dump_reason why)
{
	struct prof_buf text = { 0 }, json = { 0 }, trace = { 0 };
	struct prof_buf *b = opts->json ? &json : &text;
	int timeline = trace_fd >= 0 && why != PROF_DUMP_INTERVAL;
	prof_report(why, opts->json ? NULL : &text, opts->json ? &json : NULL,
		    timeline ? &trace : NULL);
	int rc = b->failed || !b->p ? -1 : 0;
	if (!rc && opts->json) {
		/* One line: JSON strings escape their newlines, so each one is layout. */
		size_t k = 0;
		for (size_t i = 0; i < json.len; i++)
			if (json.p[i] != '\n')
				json.p[k++] = json.p[i];
		json.p[k++] = '\n';
		json.len = k;
	}
	if (!rc && !opts->json && written)
		rc = write_all(out_fd, "\n", 1);
	if (!rc)
		rc = write_all(out_fd, b->p, b->len);
	if (rc)
		attach_say("cannot write the report%s%s: %s", opts->output ? " to " : "",
			   opts->output ? opts->output : "", b->failed ? "out of memory" : strerror(errno));
	if (timeline && (trace.failed || !trace.p || write_all(trace_fd, trace.p, trace.len))) {
		attach_say("cannot write the timeline to %s: %s", opts->trace,
			   trace.failed || !trace.p ? "out of memory" : strerror(errno));
		rc = -1;
	}
	written++;
	prof_buf_free(&text);
	prof_buf_free(&json);
	prof_buf_free(&trace);
	return rc;
}

void attach_output_end(void)
{
	if (out_fd > 2)
		close(out_fd);
	if (trace_fd >= 0)
		close(trace_fd);
	out_fd = trace_fd = -1;
}
