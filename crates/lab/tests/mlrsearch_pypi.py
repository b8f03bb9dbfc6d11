"""Runs FD.io's MLRsearch library (PyPI `MLRsearch`, 1.2.1) against a measurer on the other end
of stdin/stdout: each trial request is one JSON line out, each answer one JSON line in. The Rust
test `mlrsearch_pypi.rs` answers with the lab's simulated DUT, so both searches face the same
device. Usage: python3 mlrsearch_pypi.py '<config JSON>'; the last line is `RESULT <json>`."""

import json
import sys

from MLRsearch import (
    AbstractMeasurer,
    Config,
    MeasurementResult,
    MultipleLossRatioSearch,
    SearchGoal,
)


class PipeMeasurer(AbstractMeasurer):
    """Asks the parent process for every trial."""

    def __init__(self):
        self.trial_seconds = 0.0

    def measure(self, intended_duration, intended_load):
        print(json.dumps({"duration": intended_duration, "load": intended_load}), flush=True)
        answer = json.loads(sys.stdin.readline())
        self.trial_seconds += intended_duration
        return MeasurementResult(
            intended_duration=intended_duration,
            intended_load=intended_load,
            offered_count=answer["offered"],
            forwarding_count=answer["received"],
        )


def main():
    cfg = json.loads(sys.argv[1])
    goals = [
        SearchGoal(
            loss_ratio=g["loss_ratio"],
            exceed_ratio=g["exceed_ratio"],
            relative_width=g["relative_width"],
            initial_trial_duration=g["initial_trial_duration"],
            final_trial_duration=g["final_trial_duration"],
            duration_sum=g["duration_sum"],
        )
        for g in cfg["goals"]
    ]
    config = Config()
    config.goals = goals
    config.min_load = cfg["min_load"]
    config.max_load = cfg["max_load"]
    config.warmup_duration = None
    # The simulated device answers instantly; the budget is in wall-clock seconds.
    config.search_duration_max = 600.0
    measurer = PipeMeasurer()
    results = MultipleLossRatioSearch(config).search(measurer, debug=lambda _msg: None)
    out = []
    for goal in goals:
        r = results[goal]
        lower = r.relevant_lower_bound
        upper = r.relevant_upper_bound
        ct = r.conditional_throughput
        out.append(
            {
                "lower": float(lower) if lower is not None else None,
                "upper": float(upper) if upper is not None else None,
                "conditional_throughput": float(ct) if ct is not None else None,
            }
        )
    print("RESULT " + json.dumps({"goals": out, "trial_seconds": measurer.trial_seconds}), flush=True)


if __name__ == "__main__":
    main()
