"""A main-job run's policies on held-out tasks, one subcommand per question."""

from benchmarks.commands import main
from benchmarks.evaluate import distill, diversity, policy_noise, run, stage, start_states, sweep

main(
    "python -m benchmarks.evaluate",
    __doc__,
    {
        "run": run,
        "stage": stage,
        "start-states": start_states,
        "policy-noise": policy_noise,
        "distill": distill,
        "diversity": diversity,
        "sweep": sweep,
    },
)
