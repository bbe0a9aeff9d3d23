"""The loop's settings, one dataclass per config group: when a run stops (``budget``), how each
iteration clones and selects policies (``train``), task co-evolution (``coevolve``) and the
per-iteration videos (``workspace.video``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from robo_coevolve.coevolve import AnswerSearch, TaskAdversary, TaskSynthesizer
from robo_coevolve.learn import TrainConfig


@dataclass(frozen=True)
class Budget:
    """When a run stops: after ``iterations``, after ``minutes`` of wall time, after ``trials``
    trials (None: no limit), or once the nodes in ``until`` (None: every node) are mastered.

    With ``trials``, an iteration explores at most what is left of it after its synthesis
    trials, so that the run ends on that count exactly. A node's first search is not cut, nor
    are synthesis trials (solvability checks, the adversary's episodes, an answer search): a
    run may end past ``trials`` by those.

    With ``consolidate``, mastering them is not yet the end: while any mastered node's latest
    held-out success is below its mastery threshold (training later skills made the policy
    forget it), the loop trains that node again, rehearsing all the others in equal shares with
    it, so that the final policy holds every skill at its bar. Such a round fine-tunes the kept
    policy (``train.finetune_steps``, its normalisation kept) rather than cloning a fresh one:
    the kept policy already holds the other skills, and a fresh clone only moves the shortfall
    to another of them (README, "the whole tree").

    With ``past_mastery``, the nodes in ``until`` are trained on, as if not yet mastered, until
    ``iterations`` or ``minutes`` run out: the last of them once all are mastered. Benchmarks
    use it to compare arms at the same trial budget (``python -m benchmarks.coevolve``)."""

    iterations: int = 6
    minutes: float | None = None
    trials: int | None = None
    until: Sequence[str] | None = ("scoop",)
    consolidate: bool = False
    past_mastery: bool = False

    def __post_init__(self) -> None:
        if self.iterations < 1:
            raise ValueError(f"budget.iterations={self.iterations} must be >= 1")
        if self.minutes is not None and self.minutes <= 0:
            raise ValueError(f"budget.minutes={self.minutes} must be > 0 or null")
        if self.trials is not None and self.trials < 1:
            raise ValueError(f"budget.trials={self.trials} must be >= 1 or null")
        if self.until is not None:
            object.__setattr__(self, "until", tuple(self.until))
        if self.past_mastery and not self.until:
            raise ValueError(
                "budget.past_mastery=true needs the nodes to train on past their mastery in "
                "budget.until (e.g. budget.until=[scoop])"
            )


@dataclass(frozen=True)
class CloneConfig:
    """Per-iteration behaviour cloning on the latest ``max_segments`` segments of each skill.

    With ``refit`` every iteration trains a fresh policy for ``train.steps`` (normalisation from
    that iteration's data): the policy is the clone of the library as it now stands, whose latest
    segments are mostly the policy's own successes. Without it, a node's first iteration starts a
    new stage (fresh normalisation, ``train.steps``) and later ones fine-tune the weights for
    ``finetune_steps``.

    With ``select_episodes`` > 0 the newly trained policy is a *candidate*: it and the current
    policy run closed loop on that many selection tasks of the node and of each node it keeps
    (its ancestors and the other mastered nodes; fresh each iteration, from a seed stream that
    neither exploration nor the held-out evaluation uses), and the candidate replaces the current
    policy only if it scores at least as well there (:func:`selection_score`: first the least
    total shortfall below the nodes' mastery bars, then the mean success; a node's first
    training always takes it). Cloned policies differ by 10-60 points of closed-loop success
    between training seeds on the same data (README), so picking by rollouts, as robomimic
    picks checkpoints, keeps a bad draw from undoing a good one.

    ``candidates`` > 1 trains that many policies per iteration, each from its own seeds, and the
    selection tasks pick the best of them (it then faces the current policy as above): the seed
    lottery is drawn several times instead of once. It needs ``select_episodes`` > 0.

    ``redraws``: while no candidate holds every bar on the selection tasks (the node's and those
    it keeps), train up to that many more rounds of ``candidates`` clones per data set, each from
    its own seeds, and choose among them all. Clones of one data set are often bimodal: of six
    catch clones of seed 4's data, one kept flip (98%) and four flipped 0-2%; of eight flip
    clones rehearsing scoop, four flipped 0-6% and four 60-86% (README, "A new stage's
    clones"). A round costs a training and its selection episodes, and only where a bar is
    missed (a node still short of its own bar draws every round). It needs ``select_episodes``
    > 0.

    ``compare_examples``: when a node's first search ends with an answer under
    ``explore.demo_bar``, clone both the search's successes and the answer's successful
    demonstrations (``SearchResult.contenders``, ``candidates`` policies each) and let the
    selection tasks decide, on the node's own success first (a clone's forgetting of the other
    skills is its training seed's draw; the set is kept for good); only the winning set's
    segments enter the library. The policy kept is chosen apart, by :func:`selection_score`
    like any other: in three of six such comparisons the clone of the better set for the node
    had lost an ancestor (flip 24% and 20%, scoop 18%) where the other clone held it (82%, 98%,
    100%). Below the bar neither set is reliably the better teacher (README, "Which examples
    below the bar"): the demonstrations of a flip answer at ~90%
    cloned to 52-55% against 53-79% from the search's successes, those of a catch answer at 87%
    to 79-82% against 29-61%. It needs ``select_episodes`` > 0. Off, the bar alone decides (the
    search's successes).

    ``split_sources``: in a node's later iterations, clone each teacher's segments apart (the
    latest ``max_segments`` of the motion primitives' successes, the first search's examples
    among them, and of the policy's own noisy successes; :func:`segment_source`), ``candidates``
    policies each, and let selection choose; a kept node is then rehearsed from the source its
    policy was last cloned from. Offline, one flip library's primitive segments cloned to
    99/100% and its latest policy segments to 86/95%, but the two mixed to 40/43% (README,
    "One teacher per clone"). It needs ``select_episodes`` > 0. Off, the latest ``max_segments``
    segments whatever their source. ``min_source_segments``: a source with fewer segments is
    not cloned on its own while another source has enough, except in consolidation, which
    fine-tunes the kept policy. In the previous release's five full runs, selection took a
    fresh policy-source clone only at 234 and 252 segments, none of the six from 47-180 (one
    from 74 flipped 0%), and each costs a training (~15 min for the image policy); a
    consolidation's fine-tune on 47 was taken.

    ``workers``: how many of a round's clones (its data sets times ``candidates``) train at
    once, each in a process of its own (:func:`~robo_coevolve.learn.fit_clones`; None: one per
    core, 1: one after another in this process). The clones are the same either way."""

    fit: TrainConfig = field(default_factory=TrainConfig)
    finetune_steps: int = 1000
    max_segments: int = 400
    refit: bool = True
    select_episodes: int = 50
    candidates: int = 1
    redraws: int = 2
    compare_examples: bool = True
    split_sources: bool = True
    min_source_segments: int = 200
    workers: int | None = None

    def __post_init__(self) -> None:
        if self.workers is None:
            object.__setattr__(self, "workers", os.cpu_count() or 1)
        if self.workers < 1:
            raise ValueError(f"train.workers={self.workers} must be >= 1, or null for one per core")
        if self.min_source_segments < 0:
            raise ValueError(f"train.min_source_segments={self.min_source_segments} must be >= 0")
        if self.finetune_steps < 1 or self.max_segments < 1:
            raise ValueError(
                f"train.finetune_steps={self.finetune_steps} and train.max_segments={self.max_segments} "
                "must be >= 1"
            )
        if self.select_episodes < 0:
            raise ValueError(f"train.select_episodes={self.select_episodes} must be >= 0 (0: no selection)")
        if self.candidates < 1:
            raise ValueError(f"train.candidates={self.candidates} must be >= 1")
        if self.candidates > 1 and not self.select_episodes:
            raise ValueError(
                f"train.candidates={self.candidates} needs train.select_episodes > 0 to choose among them"
            )
        if self.redraws < 0:
            raise ValueError(f"train.redraws={self.redraws} must be >= 0 (0: never)")
        if self.redraws and not self.select_episodes:
            raise ValueError(
                f"train.redraws={self.redraws} needs train.select_episodes > 0 to see that no clone holds "
                "the bars: set one, or train.redraws=0"
            )
        for name in ("compare_examples", "split_sources"):
            if getattr(self, name) and not self.select_episodes:
                raise ValueError(
                    f"train.{name}=true needs train.select_episodes > 0 to compare the clones of "
                    f"its data sets: set one, or train.{name}=false"
                )


@dataclass(frozen=True)
class CoEvolveConfig:
    """Agent-data co-evolution (``robo_coevolve.coevolve``): with a ``synthesizer``, each node's
    exploration tasks come from its ``TaskPool``, which the synthesizer grows near the weak spots
    and re-weights every iteration after the node's first search; None keeps the node's own
    distribution (uniform sampling). With an ``adversary`` too (the adversarial curriculum), each
    round also searches the task parameters for what the current policy fails and offers those
    tasks to the synthesizer, whose checks they must pass like any other (its policy episodes
    count in the iteration's trials). With an ``answer`` search, a variant no motion solves gets a
    primitive search of its own, whose answer becomes the node's when it solves that variant
    without losing the node's own tasks; its demonstrations then compete as the iteration's
    examples (``AnswerSearch``). Evaluation tasks are the node's own held-out ones either way.

    With ``select_episodes``, choosing between a new policy and the current one
    (``train.select_episodes``) also runs each on that many tasks drawn from the node's pool by
    weight, once it holds variants beyond the node's own distribution: their success counts beside
    the node's own in the selection score's mean (with no bar of its own), so that a new clone
    that only ties on the node's own tasks does not replace one that does better on the pool's.
    Without it, a clone that tied at 100% replaced one that scored 14 points more on the held-out
    hard set (README, "Co-evolving the tasks")."""

    synthesizer: TaskSynthesizer | None = None
    adversary: TaskAdversary | None = None
    answer: AnswerSearch | None = None
    select_episodes: int = 0

    def __post_init__(self) -> None:
        for name in ("adversary", "answer"):
            if getattr(self, name) is not None and self.synthesizer is None:
                raise ValueError(f"coevolve.{name} needs coevolve.synthesizer (use coevolve=adversarial)")
        if self.select_episodes < 0:
            raise ValueError(f"coevolve.select_episodes must be >= 0 (0: off), got {self.select_episodes}")
        if self.select_episodes and self.synthesizer is None:
            raise ValueError("coevolve.select_episodes needs coevolve.synthesizer (use coevolve=adversarial)")

    @property
    def enabled(self) -> bool:
        return self.synthesizer is not None


@dataclass(frozen=True)
class VideoConfig:
    every: int = 1  # iterations between videos (0: none)
    camera: str = "overview"
    size: tuple[int, int] = (480, 360)
    frame_every: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", tuple(self.size))
