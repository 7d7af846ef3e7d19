"""`locklab advise -- CMD`: from a program's hot locks to a measured recommendation.

The loop the seeds' engineers closed by hand: profile the program under its load,
keep its hottest mutexes and rwlocks, swap each alone for each candidate lock in
passes where the native program and every variant take turns, and judge each
lock against native with the statistics every verdict shares (locklab/stats.py).

  candidates  the locks tried by default, in one place, and those given checked
  workloads   what one run of the program is and the figure it gives: a batch by
              its wall time or a number in its output, a server under a load
              command, memcached or MariaDB through the program sweep's drivers;
              the run under the profiler and its locks ranked
  plan        what an advise run is (its spec) and the runs it makes, in order
  runner      the runs made and stored, interleaved, the collapse limit, resume
  verdict     each lock's verdict from the stored runs
  output      the verdict as text, JSON and the report's page
"""
