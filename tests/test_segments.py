"""Where and when a run ran (``islands.output.segments``): the record a resume appends to,
and its brief (segments, machines, UTC days, hours)."""

from islands.output import segments


def test_a_segment_names_this_machine_and_its_utc_times():
    s = segments.segment(1_795_000_000.0, 1_795_007_200.0, "interrupted", 1234, "abc123")
    m = segments.machine()
    assert {k: s[k] for k in ("host", "boot", "cpus")} == {k: m[k] for k in ("host", "boot",
                                                                           "cpus")}
    assert s["cpus"] >= 1 and s["commit"] == "abc123"
    assert s["started"].endswith("+00:00") and s["hours"] == 2.0
    assert (s["stop_reason"], s["episodes"]) == ("interrupted", 1234)
    assert segments.segment(0.0, 1.0, "raised KeyboardInterrupt", None, "x")["episodes"] is None


def test_segments_append_across_resumes_and_sum_up(tmp_path):
    assert segments.read(tmp_path) == [] and segments.where_ran([])["segments"] == 0
    a = {"host": "vm", "boot": "aa", "started": "2026-11-28T23:00:00+00:00",
         "ended": "2026-11-29T00:30:00+00:00", "hours": 1.5}
    b = {"host": "vm", "boot": "bb", "started": "2026-12-01T08:00:00+00:00",
         "ended": "2026-12-01T09:00:00+00:00", "hours": 1.0}
    segments.append(tmp_path, a)
    assert segments.append(tmp_path, b) == [a, b] == segments.read(tmp_path)
    assert segments.where_ran([a, b]) == {
        "segments": 2, "machines": 2, "days": 3, "hours": 2.5,
        "first": "2026-11-28T23:00:00+00:00", "last": "2026-12-01T09:00:00+00:00"}
    assert segments.where_ran([a, a])["machines"] == 1


def test_an_unreadable_record_reads_as_none_rather_than_failing_a_report(tmp_path):
    (tmp_path / segments.SEGMENTS_FILE).write_text("{not json")
    assert segments.read(tmp_path) == []
    (tmp_path / segments.SEGMENTS_FILE).write_text('{"a": 1}')
    assert segments.read(tmp_path) == []


def test_a_segment_keeps_the_commit_read_when_it_started(tmp_path, monkeypatch):
    code = segments.commit()  # read at the start, as the drivers do
    assert code != "unknown"  # the tests run from the project's checkout
    monkeypatch.setenv("PATH", "")  # at the end git cannot run (a Ctrl-C killed it)
    assert segments.commit() == "unknown"
    (seg,) = segments.log_segment(tmp_path, 0.0, "raised SystemExit", None, code)
    assert seg["commit"] == code


def test_a_segment_is_open_while_it_runs_and_a_later_start_finds_an_unclosed_one_lost(
        tmp_path):
    """Opened at the start, its end moved forward at each flush, closed at the end: a
    process killed before closing it (a machine lost, a Tune trial killed) still leaves
    where it ran until its last flush, and the next start marks it lost."""
    (first,) = segments.open_segment(tmp_path, 1_795_000_000.0, "abc")
    assert first["stop_reason"] == segments.RUNNING and first["episodes"] is None
    segments.touch(tmp_path, 120)
    (seen,) = segments.read(tmp_path)
    assert seen["started"] == first["started"] and seen["ended"] > first["ended"]
    assert seen["episodes"] == 120 and seen["hours"] > 0
    # killed here: never closed. The resumed run opens its own and closes it
    segments.open_segment(tmp_path, 1_795_100_000.0, "abc")
    segs = segments.log_segment(tmp_path, 1_795_100_000.0, "target", 300, "abc")
    assert [s["stop_reason"] for s in segs] == [segments.LOST, "target"]
    assert segs[0]["episodes"] == 120 and segs[1]["episodes"] == 300
    segments.touch(tmp_path, 999)  # nothing open: nothing changes
    assert segments.read(tmp_path) == segs
    # a segment never opened (a record from before) is appended when it closes
    assert len(segments.log_segment(tmp_path, 1_795_200_000.0, "interrupted", 400, "x")) == 3


def test_a_segment_left_open_by_a_stopped_trial_is_closed_by_its_experiment(tmp_path):
    """Tune ends a stopped trial's process without letting the run return: the
    experiment's driver closes the open segment as stopped (its end: the last flush); the
    trial's own close, if its process was still ending, replaces it, never adds one."""
    segments.open_segment(tmp_path, 1_795_000_000.0, "abc")
    segments.touch(tmp_path, 120)
    (flushed,) = segments.read(tmp_path)
    assert segments.close_open(tmp_path) is True
    (closed,) = segments.read(tmp_path)
    assert closed == flushed | {"stop_reason": segments.STOPPED}
    assert segments.close_open(tmp_path) is False  # nothing open any more
    segments.touch(tmp_path, 999)  # a late flush of the ending process: no change
    assert segments.read(tmp_path) == [closed]
    (last,) = segments.log_segment(tmp_path, 1_795_000_000.0, "raised SystemExit", None,
                                   "abc")  # the process closed it after all
    assert last["stop_reason"] == "raised SystemExit"
    # the next start keeps a stopped segment as it is (not lost)
    segments.close_open(tmp_path)  # nothing open
    segs = segments.open_segment(tmp_path, 1_795_100_000.0, "abc")
    assert [s["stop_reason"] for s in segs] == ["raised SystemExit", segments.RUNNING]
    assert segments.close_open(tmp_path / "never-ran") is False  # no record at all


def test_an_interrupted_run_closes_its_segment_stopped_with_its_last_flush(tmp_path):
    """Ctrl-C or Tune ending a trial reaches the run as KeyboardInterrupt or SystemExit:
    a stop, closed as stopped with the episodes of its last flush (not ``raised`` with
    none), and never over a close its experiment made first; a crash is ``raised``."""
    for i, error in enumerate((SystemExit(), KeyboardInterrupt())):
        run = tmp_path / f"run-{i}"
        run.mkdir()
        segments.open_segment(run, 1_795_000_000.0, "abc")
        segments.touch(run, 19_680)
        (flushed,) = segments.read(run)
        (seg,) = segments.close_raised(run, 1_795_000_000.0, error, "abc")
        assert seg == flushed | {"stop_reason": segments.STOPPED}, seg
        assert seg["episodes"] == 19_680
        assert segments.close_raised(run, 1_795_000_000.0, error, "abc") == [seg]
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    segments.open_segment(crashed, 1_795_000_000.0, "abc")
    segments.touch(crashed, 50)
    (seg,) = segments.close_raised(crashed, 1_795_000_000.0, ValueError("bad"), "abc")
    assert seg["stop_reason"] == "raised ValueError" and seg["episodes"] is None


INTEL = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz
stepping\t: 7
flags\t\t: fpu sse4_2 avx avx2 fma

processor\t: 1
model name\t: another
"""
ARM = "processor\t: 0\nFeatures\t: fp asimd evtstrm\nCPU implementer\t: 0x41\n"


def test_the_cpu_record_names_the_model_its_vector_width_and_a_digest_of_its_flags():
    """Two machines with one model name but other flags tell apart (a replay is bit for bit
    only on one machine: virtual-time.md, stage 13)."""
    intel = segments.cpu(INTEL)  # the first CPU's block only
    assert intel["model"] == ("Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz "
                              "(cpu family 6, model 85, stepping 7)")
    assert intel["simd"] == "avx2" and len(intel["flags"]) == 8
    wider = segments.cpu(INTEL.replace("fma", "fma avx512f"))
    assert wider["simd"] == "avx512f" and wider["flags"] != intel["flags"]
    assert segments.cpu(ARM)["simd"] == "asimd"
    assert segments.cpu("")["flags"] == "" and segments.cpu_text(None) == ""
    assert segments.cpu_text(intel) == (f" ({intel['model']}, avx2, flags {intel['flags']})")
    assert segments.machine()["cpu"] == segments.cpu()  # this machine's, as a segment has it
