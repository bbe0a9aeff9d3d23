"""The practice stage's settings (the ``practice`` config group): which method improves a node's
selected clone from its own closed-loop episodes, on how many tasks of which kinds, and each
method's hyper-parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from robo_coevolve.explore.noise import NoiseSpec

METHODS = ("off", "rl", "dpo")


@dataclass(frozen=True)
class RLConfig:
    """Residual PPO (``practice.rl``): a residual head on the frozen clone, a value MLP on the same
    features, clipped-ratio updates of the episodes' decisions (CleanRL's PPO).

    Args:
        residual_scale: the residual's correction times this, in normalised delta units
            (``PolicyConfig.residual_scale``): small, so the base's motion stays the backbone.
        history: earlier control steps of proprioception the residual reads
            (``PolicyConfig.residual_history``; 0: the current observation only).
        init_log_std: starting log std of the Gaussian on the residual's (unscaled) output.
        episodes_per_update: episodes run with one set of weights before each update.
        gamma: discount per decision (one decision runs the chunk's executed steps).
        gae_lambda: GAE's lambda.
        epochs: passes over an update's decisions.
        minibatch: decisions per gradient step.
        lr: Adam's learning rate (residual, log std and value together).
        clip: PPO's ratio clip.
        value_coef: weight of the value loss.
        value_warmup: first updates that fit the value only (a fresh critic's advantages are noise).
        anchor: weight of the KL from the zero-residual policy (the base), 0: off.
        max_grad_norm: gradient clip.
        success_bonus: reward of a success on top of its progress (``rl.progress_rewards``).
    """

    residual_scale: float = 0.3
    history: int = 0
    init_log_std: float = 0.0
    episodes_per_update: int = 64
    gamma: float = 0.99
    gae_lambda: float = 0.95
    epochs: int = 10
    minibatch: int = 256
    lr: float = 1e-3
    clip: float = 0.2
    value_coef: float = 0.5
    value_warmup: int = 1
    anchor: float = 0.0
    max_grad_norm: float = 0.5
    success_bonus: float = 1.0

    def __post_init__(self) -> None:
        checks = {
            "residual_scale": self.residual_scale > 0.0,
            "history": self.history >= 0,
            "episodes_per_update": self.episodes_per_update >= 1,
            "gamma": 0.0 < self.gamma <= 1.0,
            "gae_lambda": 0.0 <= self.gae_lambda <= 1.0,
            "epochs": self.epochs >= 1,
            "minibatch": self.minibatch >= 1,
            "lr": self.lr > 0.0,
            "clip": self.clip > 0.0,
            "value_coef": self.value_coef >= 0.0,
            "value_warmup": self.value_warmup >= 0,
            "anchor": self.anchor >= 0.0,
            "max_grad_norm": self.max_grad_norm > 0.0,
            "success_bonus": self.success_bonus >= 0.0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            name = bad[0]
            raise ValueError(
                f"practice.rl.{name}={getattr(self, name)!r} is out of range: see RLConfig's docstring"
            )


@dataclass(frozen=True)
class PreferenceConfig:
    """Preference-practice settings (the episode budget is ``len(tasks) * samples``).

    Args:
        samples: noisy tries of the input policy per task.
        noise_kind: exploration noise ("pink", "ou" or "white"; ``explore.noise``).
        temperature: the noise's standard deviation in normalised action units.
        noise_scale: per action dimension (x, y, z, pitch, roll) multipliers of the noise.
        pairs_per_task: most (success, failure) pairs a task contributes.
        beta: DPO inverse temperature: how far the policy may move from the reference.
        length_normalise: a try's log-likelihood is its mean over steps, not its sum.
        bc_weight: weight of the chosen tries' per-step chunk NLL beside the DPO loss (0: off).
        head_only: train the mixture head alone; the shared features, and with them the
            learned end of the motion (``predict_end``), stay the clone's.
        lr: Adam learning rate.
        epochs: passes over the pairs.
        batch_pairs: pairs per optimiser step.
        grad_clip: max gradient norm.
    """

    samples: int = 8
    noise_kind: str = "pink"
    temperature: float = 0.01
    noise_scale: tuple[float, ...] = (1.0, 1.0, 0.3, 1.0, 1.0)
    pairs_per_task: int = 4
    beta: float = 0.1
    length_normalise: bool = True
    bc_weight: float = 0.0
    head_only: bool = False
    lr: float = 1e-4
    epochs: int = 2
    batch_pairs: int = 8
    grad_clip: float = 1.0

    def __post_init__(self) -> None:
        for name in ("pairs_per_task", "epochs", "batch_pairs"):
            if getattr(self, name) < 1:
                raise ValueError(f"preference.{name}={getattr(self, name)} must be >= 1")
        if self.samples < 2:
            raise ValueError(f"preference.samples={self.samples} must be >= 2: a pair needs two tries")
        for name in ("beta", "lr", "grad_clip"):
            if not getattr(self, name) > 0:
                raise ValueError(f"preference.{name}={getattr(self, name)} must be > 0")
        if not self.bc_weight >= 0:
            raise ValueError(f"preference.bc_weight={self.bc_weight} must be >= 0")
        object.__setattr__(self, "noise_scale", tuple(float(s) for s in self.noise_scale))
        self.noise  # noqa: B018 (a bad kind, temperature or scale is named here, not mid-run)

    @property
    def noise(self) -> NoiseSpec:
        return NoiseSpec(self.noise_kind, self.temperature, self.noise_scale)


@dataclass(frozen=True)
class PracticeConfig:
    """After a node's clone is selected, its policy practises closed loop and is kept only if it
    then does at least as well on the loop's selection tasks (``practice.stage``).

    Args:
        method: "off", "rl" (residual PPO, ``practice.rl``) or "dpo" (preferences,
            ``practice.preference``).
        episodes: practice episodes per node practised: the node and each node it keeps get as many.
        weak_share: share of the tasks from each node's weak stratum (the lightest fifth of its
            egg masses).
        perturbed_share: share of perturbed tasks, each from the *training* range of a perturbation
            family of the robustness suite (``evaluation.perturbations``) drawn per task.
        gate_episodes: selection episodes per node for the gate when the loop gives none.
        rl: residual PPO's settings.
        dpo: the preference method's settings (``practice.preference``); its budget is the same
            episodes, ``dpo.samples`` tries on each of a ``1 / dpo.samples`` share of the tasks.
    """

    method: str = "off"
    episodes: int = 1024
    weak_share: float = 0.2
    perturbed_share: float = 0.5
    gate_episodes: int = 50
    rl: RLConfig = field(default_factory=RLConfig)
    dpo: PreferenceConfig = field(default_factory=PreferenceConfig)

    def __post_init__(self) -> None:
        if isinstance(self.dpo, Mapping):
            object.__setattr__(self, "dpo", PreferenceConfig(**self.dpo))
        if isinstance(self.rl, Mapping):
            object.__setattr__(self, "rl", RLConfig(**self.rl))
        if self.method not in METHODS:
            raise ValueError(f"practice.method={self.method!r}: choose one of {', '.join(METHODS)}")
        if self.episodes < 1 or self.gate_episodes < 1:
            raise ValueError(
                f"practice.episodes={self.episodes} and practice.gate_episodes={self.gate_episodes} "
                "must be >= 1"
            )
        if min(self.weak_share, self.perturbed_share) < 0.0 or self.weak_share + self.perturbed_share > 1.0:
            raise ValueError(
                f"practice.weak_share={self.weak_share} and perturbed_share={self.perturbed_share} must "
                "be >= 0 and sum to at most 1 (the rest are nominal tasks)"
            )

    @property
    def enabled(self) -> bool:
        return self.method != "off"
