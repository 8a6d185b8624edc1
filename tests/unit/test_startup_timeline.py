"""A flow's start-up timeline: steps timed once, milestones from the process start."""

from __future__ import annotations

import time

from geokafka.pipeline.startup import StartupTimeline, process_age_s


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_steps_and_milestones_count_their_first_occurrence_only() -> None:
    clock = Clock()
    timeline = StartupTimeline(clock=clock, origin=90.0)
    with timeline.step("writers fenced"):
        clock.now += 0.4
    with timeline.step("writers fenced"):  # a restart's fencing does not replace the first start's
        clock.now += 5.0
    timeline.took("Spark session", 3.25)
    assert timeline.reached("query started") is True
    clock.now += 2.0
    assert timeline.reached("query started") is False
    assert timeline.reached("first records committed") is True
    assert timeline.as_dict() == {"milestones_s": {"query started": 15.4, "first records committed": 17.4},
                                  "steps_s": {"writers fenced": 0.4, "Spark session": 3.25}}
    assert timeline.summary() == ("from the process start: query started 15.4 s, first records committed 17.4 s; "
                                  "steps: writers fenced 0.4 s, Spark session 3.2 s")


def test_a_failed_step_is_not_recorded() -> None:
    timeline = StartupTimeline(clock=Clock())
    try:
        with timeline.step("clusters checked"):
            raise OSError("unreachable")
    except OSError:
        pass
    assert timeline.steps == {}


def test_the_origin_is_this_process_start() -> None:
    age = process_age_s()
    assert 0.0 < age < time.monotonic()  # this test process started a while ago, after the machine did
    timeline = StartupTimeline.of_process()
    assert timeline.reached("now")
    assert abs(timeline.milestones["now"] - age) < 1.0
