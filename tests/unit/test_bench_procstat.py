"""The bench's memory figure: a process tree's resident memory, a spawning JVM counted once."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from geokafka.bench.procstat import TreeSampler, busy_percent, cpu_at, jit_cpu, machine_cpu, summed_rss

JAVA, CHMOD, PY = "/usr/lib/jvm/bin/java", "/usr/bin/chmod", "/usr/bin/python3"
GB = 1 << 30


def test_a_child_caught_before_exec_repeats_its_parent_and_is_not_added() -> None:
    tree = {10: (None, PY, 90 << 20), 11: (10, JAVA, GB), 12: (11, JAVA, GB - (4 << 20))}  # vfork: its parent's pages
    assert summed_rss(tree) == (90 << 20) + GB


def test_children_running_their_own_programs_are_added() -> None:
    tree = {10: (None, PY, 90 << 20), 11: (10, JAVA, GB), 12: (11, CHMOD, 2 << 20), 13: (11, JAVA, 300 << 20)}
    # chmod after exec, and a JVM child with memory of its own (a second JVM, not a copy of its parent)
    assert summed_rss(tree) == (90 << 20) + GB + (2 << 20) + (300 << 20)


def test_a_process_whose_program_is_unknown_is_added() -> None:
    assert summed_rss({1: (None, "", 5), 2: (1, "", 5)}) == 10


def test_the_sampler_adds_a_real_child_with_its_own_memory() -> None:
    code = "import time; b = bytearray(200 << 20); time.sleep(1.5)"
    parent = subprocess.Popen([sys.executable, "-c",
                               f"import subprocess, sys; subprocess.run([sys.executable, '-c', {code!r}])"])
    try:
        sampler = TreeSampler(parent.pid, interval_s=0.1).start()
        parent.wait(30)
        sampler.stop()
    finally:
        if parent.poll() is None:
            parent.kill()
    assert sampler.peak_rss > 200 << 20  # the child's 200 MB, though it runs its parent's program
    assert sampler.processes >= 2


def test_jit_cpu_is_zero_for_a_process_without_compiler_threads_or_gone() -> None:
    assert jit_cpu(os.getpid()) == 0.0  # Python: no "C1/C2 CompilerThre" threads
    assert jit_cpu(2**22 + 7) == 0.0  # no such process


def test_the_sampler_keeps_the_cpu_of_a_compiler_thread_the_jvm_retired(monkeypatch: pytest.MonkeyPatch) -> None:
    # HotSpot starts extra compiler threads for a burst of work and retires them once idle: the
    # JIT CPU of a window must not go down (the quick bench once gave 0.0 s for geokafka's JVM)
    from geokafka.bench import procstat

    live = {7: {100: 2.0, 101: 3.0}}
    monkeypatch.setattr(procstat, "_tree", lambda root: [(7, None)])
    monkeypatch.setattr(procstat, "jit_threads", lambda pid: dict(live.get(pid, {})))
    sampler = TreeSampler(7)
    at_first_record = sampler.jit_cpu_s()
    live[7] = {100: 2.5}  # thread 101 retired; thread 100 compiled for another 0.5 s
    assert sampler.jit_cpu_s() - at_first_record == 0.5


def test_the_machine_s_busy_share_leaves_out_idle_and_iowait_only() -> None:
    # /proc/stat's first line: user nice system idle iowait irq softirq steal guest guest_nice (guests are in user)
    before = machine_cpu("cpu  100 0 50 800 50 0 0 0 40 0\ncpu0 1 2 3\n")
    after = machine_cpu("cpu  400 0 150 900 50 10 10 30 200 0\ncpu0 1 2 3\n")
    assert before == (150, 1000) and after == (600, 1550)
    assert busy_percent(before, after) == round(100 * 450 / 550, 1)  # 450 of 550 ticks busy, steal counted busy
    assert busy_percent(after, after) == 0.0


def test_this_machine_s_reading_grows_and_stays_within_its_total() -> None:
    first = machine_cpu()
    sum(i * i for i in range(2_000_000))  # spend a little CPU
    second = machine_cpu()
    assert 0 <= first[0] <= first[1] and second[1] >= first[1] and second[0] >= first[0]
    assert 0.0 <= busy_percent(first, second) <= 100.0


def test_the_cpu_at_a_moment_between_two_samples_is_interpolated_and_outside_them_is_the_nearest() -> None:
    history = [(10.0, 1.0), (10.5, 2.0), (11.0, 4.0)]
    assert cpu_at(history, 10.25) == pytest.approx(1.5)
    assert cpu_at(history, 10.75) == pytest.approx(3.0)
    assert cpu_at(history, 10.5) == 2.0
    assert cpu_at(history, 9.0) == 1.0  # before the first sample
    assert cpu_at(history, 12.0) == 4.0  # after the last: nothing later is known
    assert cpu_at([], 1.0) == 0.0
