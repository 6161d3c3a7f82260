"""The flow's progress artifact is updated at most every ``min_interval`` seconds, and at
the last step."""

from __future__ import annotations

import flows.progress as progress


def test_progress_artifact_updates_are_throttled_and_the_last_step_always_lands(monkeypatch):
    updates: list[float] = []
    clock = iter([0.0] + [0.1 * i for i in range(1, 40)] + [100.0])
    monkeypatch.setattr(progress, "create_progress_artifact", lambda *a, **k: "artifact")
    monkeypatch.setattr(progress, "update_progress_artifact",
                        lambda artifact, value: updates.append(value))
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    bar = progress.GroupProgress(40, 20, "test", min_interval=1.0)
    for i in range(40):
        bar.step("built" if i % 2 else None)
    # steps at t = 0.1 .. 3.9 s: an update at 1.0, 2.0, 3.0 s and the last step's 100 %
    assert updates == [25.0, 50.0, 75.0, 100.0]
