"""The verdict (which lock, by how much, how sure), crossings beyond the noise, and how
the report's charts and tables read; on synthetic stores and the fake locklab-bench."""
import csv
import re
import sqlite3

import pytest

from conftest import locklab
from locklab.report import render, verdict
from locklab.sweep import store
from locklab.sweep.store import Point

MACHINE = {"cpu_model": "test", "cores": 2, "kernel": "Linux", "glibc": "glibc 2.36",
           "version": "0"}


def synthetic(tmp_path, curves, hold=0):
    """A stored run: CURVES maps lock -> threads -> ns per iteration of each repeat;
    its rows as the report reads them."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    conn = store.connect(tmp_path / "v.db", create=True)
    run = store.new_run(conn, {}, MACHINE, {})
    for lock, by_threads in curves.items():
        for threads, reps in by_threads.items():
            for rep, ns in enumerate(reps):
                store.record_point(conn, run, Point(lock, "", threads, 1, hold, 0, rep),
                                   error=None, wall_s=0.1, raw=None,
                                   result={"ns_per_iter": ns, "ops_per_sec": 1e9 / ns})
    return store.points(conn, run)


def jitter(ns, share):
    """Three repeats: NS, and NS +- SHARE."""
    return [ns * (1 - share), ns, ns * (1 + share)]


def test_verdict_picks_the_lock_and_its_margins(tmp_path):
    rows = synthetic(tmp_path, {
        # One thread: everyone within everyone's spread, so pthread stays.
        "pthread": {1: jitter(20, 0.05), 4: jitter(30, 0.02), 64: jitter(45, 0.02)},
        "futex": {1: jitter(20.5, 0.05), 4: jitter(15, 0.02), 64: jitter(30, 0.02)},
        "ll": {1: jitter(19.5, 0.05), 4: jitter(10, 0.02), 64: jitter(10, 0.02)},
    })
    first, second = verdict.verdict(rows)
    assert first["threads"] == [1] and first["kind"] == "keep"
    assert set(first["locks"]) == {"pthread", "futex", "ll"}
    assert second["threads"] == [4, 64] and second["kind"] == "use"
    assert second["locks"] == ["ll"]
    assert second["vs_pthread"] == pytest.approx((3.0, 4.5))
    assert second["vs_runner"] == pytest.approx((1.5, 3.0))
    assert second["runners"] == ["futex"]
    assert second["spread"] == pytest.approx(0.02)
    text = verdict.terminal(rows, 1).splitlines()
    assert text[0].startswith("verdict of run 1: the mutex to use, by ns per iteration "
                              "(median of 3 repeats")
    assert text[1].startswith("  1 mutex, hold 0 ns, 1 thread: pthread: no lock beats it")
    assert text[2] == ("  1 mutex, hold 0 ns, 4-64 threads: ll: 3.00-4.50x pthread's "
                       "throughput, 1.50-3.00x the runner-up's (futex); repeats +-2%")


def test_a_margin_inside_the_spread_is_a_tie(tmp_path):
    curves = {"pthread": {8: jitter(30, 0.02)}, "ll": {8: jitter(10, 0.05)},
              "futex": {8: jitter(10.6, 0.05)}}
    (line,) = verdict.verdict(synthetic(tmp_path / "wide", curves))
    # 6% apart, each repeat +-5%: the ranges overlap.
    assert line["kind"] == "tie" and line["locks"] == ["ll", "futex"]
    assert line["vs_runner"] == pytest.approx((1.06, 1.06))
    assert line["vs_pthread"] == pytest.approx((3.0, 3.0))
    assert "ll and futex tie (1.06x apart, inside the repeats' spread)" in verdict.line_text(line)
    # The same 6% with repeats within +-1%: ll is apart.
    curves["ll"][8], curves["futex"][8] = jitter(10, 0.01), jitter(10.6, 0.01)
    (line,) = verdict.verdict(synthetic(tmp_path / "narrow", curves))
    assert line["kind"] == "use" and line["locks"] == ["ll"]
    assert line["vs_runner"] == pytest.approx((1.06, 1.06))


def test_a_wide_margin_inside_a_wide_spread_is_undecided(tmp_path):
    # A busy machine (a fresh clone's `make run`): ll's median twice pthread's at hold
    # 1000, 64-256 threads, but the repeats spread +-82%. It was "keep pthread"; the
    # data cannot say that, nor the opposite.
    curves = {"pthread": {t: [1000.0, 2400.0, 4280.0] for t in (64, 256)},
              "ll": {t: [600.0, 1200.0, 2000.0] for t in (64, 256)}}
    (line,) = verdict.verdict(synthetic(tmp_path, curves, hold=1000))
    assert line["kind"] == "undecided" and line["threads"] == [64, 256]
    assert line["locks"] == ["ll", "pthread"]
    assert line["vs_pthread"] == pytest.approx((2.0, 2.0))
    assert line["spread"] == pytest.approx(0.68, abs=0.01)
    # The interval (0.5..7.1x, the range with 3 repeats) has a half-width, in logs,
    # 1.9 times the margin's distance from 1: 3 x 1.9^2 repeats would bring it below.
    assert line["settle"] == 12
    assert verdict.pick_text(line) == "undecided: ll, pthread"
    assert verdict.line_text(line) == (
        "undecided between ll and pthread (2.00x apart, inside the repeats' spread; about 12 "
        "repeats would settle it); ll 2.00x pthread's throughput")
    # The same margin with repeats within +-5%: ll, apart.
    curves = {"pthread": {t: [2280.0, 2400.0, 2520.0] for t in (64, 256)},
              "ll": {t: [1140.0, 1200.0, 1260.0] for t in (64, 256)}}
    (line,) = verdict.verdict(synthetic(tmp_path / "narrow", curves, hold=1000))
    assert line["kind"] == "use" and line["locks"] == ["ll"]


def test_one_repeat_ties_under_ten_percent(tmp_path):
    rows = synthetic(tmp_path, {"pthread": {2: [30.0], 4: [30.0]}, "ll": {2: [28.0], 4: [20.0]}})
    keep, use = verdict.verdict(rows)
    assert keep["kind"] == "keep" and keep["threads"] == [2] and keep["spread"] is None
    assert use["kind"] == "use" and use["locks"] == ["ll"] and use["threads"] == [4]
    assert "one repeat: margins under 10% are ties" in verdict.terminal(rows, 1)


def test_crossings_count_only_points_apart(tmp_path):
    # pthread +-20% per repeat; innodb56 wobbles around it by 10-15% (medians) from 2 to 8
    # threads, inside that spread, and is clearly faster at 1 and slower from 16.
    rows = synthetic(tmp_path, {
        "pthread": {t: jitter(30, 0.2) for t in (1, 2, 4, 8, 16, 64)},
        "innodb56": {1: jitter(10, 0.05), 2: jitter(34, 0.05), 4: jitter(26, 0.05),
                     8: jitter(35, 0.05), 16: jitter(60, 0.05), 64: jitter(90, 0.05)},
    })
    (crossed,) = verdict.crossings(rows)
    assert (crossed["faster_below"], crossed["faster_above"]) == ("innodb56", "pthread")
    assert (crossed["between_lo"], crossed["between_hi"]) == (1, 16)
    assert 1 < crossed["threads"] < 16
    # The medians alone, as one repeat each: the wobbles are more than 10%, and cross.
    medians = synthetic(tmp_path / "one", {
        "pthread": {t: [30.0] for t in (1, 2, 4, 8, 16, 64)},
        "innodb56": {1: [10.0], 2: [34.0], 4: [26.0], 8: [35.0], 16: [60.0], 64: [90.0]}})
    assert len(verdict.crossings(medians)) == 3


def test_sweep_prints_the_verdict_and_the_report_writes_it(fake, tmp_path):
    db, out_dir = tmp_path / "l.db", tmp_path / "r"
    env = fake.env()
    out = locklab("sweep", "--locks", "innodb56,pthread", "--threads", "1,2,4,8", "--repeat", "2",
                  "--duration", "0.01", "--warmup", "0", "--db", db, env=env)
    assert out.returncode == 0, out.stderr
    # The fake: innodb56 20 ns per thread, pthread a flat 60.
    assert out.stdout.splitlines() == [
        "verdict of run 1: the mutex to use, by ns per iteration (median of 2 repeats; "
        "apart where the 95% interval on their ratio excludes 1)",
        "  1 mutex, hold 0 ns, 1-2 threads: innodb56: 1.50-3.00x pthread's throughput "
        "(the runner-up); repeats +-0.0%",
        "  1 mutex, hold 0 ns, 4-8 threads: pthread: 1.33-2.67x the runner-up's (innodb56); "
        "repeats +-0.0%",
    ]
    out = locklab("report", "1", "--db", db, "--out", out_dir, env=env)
    assert out.returncode == 0, out.stderr
    index_line, *told = out.stdout.splitlines()
    assert index_line == str(out_dir / "index.html")
    assert told[0].startswith("verdict of run 1") and len(told) == 3
    assert (out_dir / verdict.VERDICT_FILE).read_text().splitlines() == told
    with open(out_dir / "crossings.csv", newline="") as f:
        reader = csv.reader(f)
        assert next(reader) == list(verdict.CROSSING_COLUMNS)
        assert list(reader) == [["1", "0", "0", "innodb56", "pthread", "3.0", "2", "4"]]
    index = (out_dir / "index.html").read_text()
    # The verdict opens the page, before the machine and the charts.
    assert index.index('<section id="verdict">') < index.index("<h2>Machine</h2>")
    assert '<td class="pick">innodb56</td>' in index
    assert "<td>2 and 4</td>" in index
    # Every chart says what it shows; the wait chart names its floor.
    assert index.count('<p class="caption">') == 7
    assert "is the timing's own cost: two clock reads" in index
    # No header row of empty cells; key/value tables have their keys as row headers.
    assert "<th></th>" not in index
    assert re.search(r'<tr><th scope="row">CPU</th><td>[^<]+</td></tr>', index)


def test_a_run_without_mutex_points_has_no_verdict(tmp_path):
    assert verdict.terminal([], 1) == "" and verdict.html_section([]) == ""


def test_tick_labels_read_one_way():
    assert [render.tick_text(v) for v in (30, 500, 1000, 1500, 1e4, 1e5, 1e6, 2.5e6, 0.25, 0)] \
        == ["30", "500", "1k", "1.5k", "10k", "100k", "1M", "2.5M", "0.25", "0"]
    assert render.tick_text(999.6) == "1k"


def test_every_panel_has_its_y_label_and_one_tick_format(tmp_path):
    wide = {t: 30.0 * t ** 2 for t in (1, 4, 16, 64, 256, 1024)}  # 30 to 31M: many decades
    narrow = {t: 1000.0 + 10 * t for t in (1, 4, 16)}              # 1k to 1.16k
    grid = [[("wide", {"a": wide}), ("narrow", {"a": narrow})],
            [("zeros", {"a": {1: 0.0, 2: 0.0}}), ("linear", {"a": {1: 0.5, 2: 1.0}})]]
    fig = render.line_panels(grid, ["a"], "ns (lower is better)", True, tmp_path / "p.png")
    fig.canvas.draw()
    threads = []
    for ax in fig.axes[:4]:
        assert ax.get_ylabel() == "ns (lower is better)", ax.get_title()
        labels = [t.get_text() for t in ax.get_yticklabels(which="both") if t.get_text()]
        assert labels, ax.get_title()
        for text in labels:
            assert re.fullmatch(r"-?[0-9]+(\.[0-9]+)?[kMG]?", text), (ax.get_title(), text)
        lo, hi = ax.get_xlim()  # the bottom row's threads, in view: plain integers
        threads += [t.get_text() for t in ax.get_xticklabels()
                    if lo <= t.get_position()[0] <= hi and t.get_text()]
    assert threads and all(re.fullmatch(r"[0-9]+", text) for text in threads), threads
    wide = " ".join(t.get_text() for t in fig.axes[0].get_yticklabels(which="both"))
    assert re.search(r"\d+k", wide) and re.search(r"\d+M", wide), wide


def test_a_verdict_from_an_incomplete_set_of_locks_names_what_it_lacks(tmp_path):
    # A sweep stopped at 4 threads: futex measured at 1 thread only.
    rows = synthetic(tmp_path, {
        "pthread": {1: jitter(30, 0.02), 4: jitter(30, 0.02)},
        "ll": {1: jitter(10, 0.02), 4: jitter(10, 0.02)},
        "futex": {1: jitter(20, 0.02)},
    })
    first, second = verdict.verdict(rows)
    assert (first["lacks"], second["lacks"]) == ([], ["futex"])
    told = verdict.terminal(rows, 1).splitlines()
    assert told[1].endswith("repeats +-2%")
    assert told[2].startswith("  1 mutex, hold 0 ns, 4 threads: ll: ")
    assert told[2].endswith("; lacks futex (not measured here: the run is incomplete)")
    # A lock of the grid measured nowhere yet is named from the run's planned points.
    planned = [Point(lock, "", t, 1, 0, 0, 0) for t in (1, 4)
               for lock in ("pthread", "ll", "futex", "mcs")]
    first, second = verdict.verdict(rows, planned)
    assert (first["lacks"], second["lacks"]) == (["mcs"], ["futex", "mcs"])
    page = verdict.html_section(rows, planned)
    assert page.count("lacks futex, mcs (not measured here") == 1
    assert page.count("lacks mcs (not measured here") == 1
    # Thread counts with the same answer but different locks missing are two lines.
    rows = synthetic(tmp_path / "split", {
        "pthread": {t: jitter(30, 0.02) for t in (1, 2, 4)},
        "ll": {t: jitter(10, 0.02) for t in (1, 2, 4)},
        "futex": {1: jitter(20, 0.02), 4: jitter(20, 0.02)},
    })
    assert [(line["threads"], line["lacks"]) for line in verdict.verdict(rows)] == \
        [([1], []), ([2], ["futex"]), ([4], [])]


def test_a_failed_point_and_an_unfinished_run_are_named_in_both_verdicts(fake, tmp_path):
    db, out_dir = tmp_path / "l.db", tmp_path / "r"
    env = fake.env(crash=[{"lock": "futex", "threads": 8}])
    out = locklab("sweep", "--locks", "innodb56,pthread,pthread-adaptive,futex", "--threads",
                  "1,8",
                  "--duration", "0.01", "--warmup", "0", "--db", db, env=env)
    assert out.returncode == 1, out.stderr
    told = out.stdout.splitlines()
    assert told[1].startswith("  1 mutex, hold 0 ns, 1 thread: innodb56: ")
    assert "lacks" not in told[1]
    assert told[2].startswith("  1 mutex, hold 0 ns, 8 threads: pthread: no lock beats it")
    assert told[2].endswith("; lacks futex (not measured here: the run is incomplete)")
    # A sweep stopped before innodb56 ran at 8 threads: report's terminal and HTML say so.
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM points WHERE lock = 'innodb56' AND threads = 8")
    conn.execute("UPDATE runs SET finished = NULL")
    conn.commit()
    conn.close()
    out = locklab("report", "1", "--db", db, "--out", out_dir, env=fake.env())
    assert out.returncode == 0, out.stderr
    (eight,) = [line for line in out.stdout.splitlines() if "8 threads" in line]
    assert eight.endswith("; lacks innodb56, futex (not measured here: the run is incomplete)")
    assert "lacks innodb56, futex (not measured here" in (out_dir / "index.html").read_text()
