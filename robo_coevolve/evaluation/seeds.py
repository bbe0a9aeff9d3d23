"""Held-out seed streams, one per command, none of them a stream the evolution loop draws from
(its exploration and evaluation seeds derive from ``SeedSequence([seed, k])`` and ``eval_seed``).
A command's tasks are reproducible from its constant alone, so its figures in docs/ can be rerun."""

# benchmarks.evaluate run: node i's held-out tasks are drawn from RUN + i (every arm the same).
RUN = 777_777
# benchmarks.evaluate start-states: the fresh start states added to a node's clones.
START_STATES = 123_456
# evaluate_policy's own default: the stage command's and the learn commands' held-out tasks.
POLICY = 10_000
# benchmarks.learn clone: selection tasks among candidate clones (never the held-out ones).
SELECTION = 20_000
# benchmarks.evaluate policy-noise: the tasks every temperature runs.
POLICY_NOISE = 5
# benchmarks.evaluate distill: the teacher's and the student's tasks.
DISTILL = 12_000
# benchmarks.evaluate diversity: iteration k's exploration draws from SeedSequence([DIVERSITY, k]).
DIVERSITY = 4242
# benchmarks.coevolve and benchmarks.learn answer-clone: hard variant i from HARD_SET + i, the
# standard set from HARD_SET - 1.
HARD_SET = 515_151
# benchmarks.learn answer-clone: the tasks an answer demonstrates on.
DEMOS = 123
# benchmarks.explore search: a search of seed s is judged on tasks of SEARCH + s; baselines on BASELINE.
SEARCH = 10_000
BASELINE = 123
# robo-coevolve-tree evaluate --suite robustness: node i's tasks of family f (its index in
# evaluation.perturbations.FAMILIES, 0 for the unperturbed row) come from (ROBUSTNESS, i, f + 1),
# the oracle's searches from (ORACLE, i, f + 1).
ROBUSTNESS = 393_939
ORACLE = 616_161
# benchmarks.evaluate sweep: its tasks
SWEEP = 737_373
# A run's recipe evaluation: recipe r's start states come from (seed, RECIPE, r's index).
RECIPE = 858_585
