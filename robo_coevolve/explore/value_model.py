"""Early stopping of hopeless trials: a small value model predicts success from a trial's start.

``prefix_features`` summarises the first ``steps`` control steps of a trial: where the egg and
the blade are at that moment (relative to the egg's start), how they move, what touches the egg,
snapshots of the egg earlier in the prefix, and aggregates over it (highest egg, peak force, time
on the blade, fastest spin). A ``ValueModel`` (a two-layer MLP on standardised features, trained
on past trials with torch) maps them to a probability of success. ``EarlyStop`` judges a trial at
one or more checkpoints (control steps) and cuts it at the first one where the prediction falls
below that checkpoint's threshold. Each checkpoint's predictor is a cross-fitted ensemble: the past
trials are split into folds (each with its share of the successes), one model is fitted without
each fold, and the threshold is the ``cut_rate`` quantile of every past success's out-of-fold
prediction, so that at most ``cut_rate`` of them would have been cut over all checkpoints. New
trials are judged by the mean of the fold models. (A single held-back calibration share leaves
few successes to set the quantile by, and cut several times more true successes than asked.)

``physics_cost`` counts what a batch of trials costs with and without early stopping: a cut trial
costs the physics steps up to its cut, the others their full length. Predictions read only the
prefix, so the counts are the steps an explorer that stops there would spend.

Where to judge differs by skill (a catch that will fail shows it early, a scoop later), and
choosing the checkpoint on the trials it is then measured on would flatter it: ``EarlyStop.select``
chooses among candidate checkpoints on the past trials alone, by the physics steps per success
their own out-of-fold predictions would have spent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from robo_coevolve.trajectory import Trajectory

SNAPSHOTS = (0.25, 0.5, 0.75)  # fractions of the prefix where the egg is also described
FEATURES = 27 + 5 * len(SNAPSHOTS)


def prefix_features(traj: Trajectory, steps: int) -> np.ndarray:
    """(FEATURES,) float32 summary of the first ``steps`` control steps of ``traj`` (fewer when the
    trial ended sooner). Positions in m from the pan centre, velocities m/s and rad/s, force N."""
    r = {k: np.nan_to_num(v[: max(1, steps)]) for k, v in traj.record().items()}
    egg0 = r["egg_pos"][0]
    last = {k: v[-1] for k, v in r.items()}
    blade_rel = last["blade_pos"] - last["egg_pos"]
    pose = np.nan_to_num(traj.proprio[min(steps, len(traj.proprio) - 1), :5])
    n = len(r["egg_pos"])
    snaps = []
    for frac in SNAPSHOTS:
        i = min(n - 1, int(frac * steps))
        snaps += [*(r["egg_pos"][i] - egg0), r["egg_up"][i, 2], float(r["egg_on_blade"][i, 0] > 0)]
    out = np.concatenate(
        [
            snaps,
            last["egg_pos"] - egg0,  # 3
            last["egg_up"],  # 3
            last["egg_linvel"],  # 3
            last["egg_angvel"],  # 3
            blade_rel,  # 3
            last["blade_up"],  # 3
            pose[3:5],  # 2: blade pitch and roll
            [
                float(last["egg_on_blade"][0] > 0),
                float(last["egg_on_pan"][0] > 0),
                r["egg_pos"][:, 2].max() - egg0[2],
                r["egg_touch"][:, 0].max(),
                float(np.mean(r["egg_on_blade"][:, 0] > 0)),
                np.linalg.norm(r["egg_angvel"], axis=1).max(),
                float(len(traj) < steps),  # the trial already ended (egg on the floor)
            ],
        ]
    )
    return out.astype(np.float32)


class ValueModel:
    """P(success | prefix features): standardisation + MLP(hidden, hidden) + sigmoid.

    Args:
        hidden: units per hidden layer.
        steps: Adam steps of full-batch training.
        seed: torch seed of the initialisation (the same data and seed give the same model).
    """

    def __init__(self, hidden: int = 32, steps: int = 200, lr: float = 3e-3, seed: int = 0):
        self.hidden, self.steps, self.lr, self.seed = hidden, steps, lr, seed
        self.mean = np.zeros(FEATURES, np.float32)
        self.std = np.ones(FEATURES, np.float32)
        self.net: torch.nn.Module | None = None

    def fit(self, x: np.ndarray, y: np.ndarray) -> ValueModel:
        """Train on features ``x`` (N, FEATURES) and outcomes ``y`` (N,) of past trials."""
        x = np.asarray(x, np.float32)
        y = np.asarray(y, np.float32)
        if len(x) < 10 or y.min() == y.max():
            raise ValueError(
                f"a value model needs >= 10 past trials with both outcomes, got {len(x)} "
                f"({int(y.sum())} successes): run more trials first"
            )
        self.mean, self.std = x.mean(0), np.maximum(x.std(0), 1e-3)
        torch.manual_seed(self.seed)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(x.shape[1], self.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(self.hidden, self.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(self.hidden, 1),
        )
        xt = torch.from_numpy((x - self.mean) / self.std)
        yt = torch.from_numpy(y)
        opt = torch.optim.Adam(self.net.parameters(), lr=self.lr, weight_decay=1e-3)
        pos = float(y.mean())
        loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor((1 - pos) / pos))
        for _ in range(self.steps):
            opt.zero_grad()
            loss = loss_fn(self.net(xt).squeeze(1), yt)
            loss.backward()
            opt.step()
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        """(N,) float64 predicted probabilities of success."""
        if self.net is None:
            raise RuntimeError("ValueModel.predict before fit: train it on past trials first")
        with torch.no_grad():
            z = torch.from_numpy((np.asarray(x, np.float32) - self.mean) / self.std)
            return torch.sigmoid(self.net(z).squeeze(1)).double().numpy()


def stratified_folds(y: np.ndarray, folds: int, seed: int = 0) -> list[np.ndarray]:
    """Split indices ``0..len(y)-1`` into ``folds`` shuffled parts, each with its share of the
    successes (``y > 0``) and of the failures."""
    rng = np.random.default_rng(seed)
    parts = [[] for _ in range(folds)]
    for idx in (np.flatnonzero(y > 0), np.flatnonzero(y <= 0)):
        for i, chunk in enumerate(np.array_split(rng.permutation(idx), folds)):
            parts[i].append(chunk)
    return [np.sort(np.concatenate(p)) for p in parts]


@dataclass
class EarlyStop:
    """Judge trials at ``checkpoints`` (control steps, increasing) and cut each at the first one
    where the mean prediction of ``models[i]`` (that checkpoint's fold models) is below
    ``thresholds[i]``."""

    models: list[list[ValueModel]]
    checkpoints: list[int]
    thresholds: list[float]
    # per checkpoint, each past trial's prediction by the fold model that did not see it (train)
    out_of_fold: list[np.ndarray] = field(default_factory=list, repr=False)

    @classmethod
    def train(
        cls,
        trajs: Sequence[Trajectory],
        checkpoints: Sequence[int],
        cut_rate: float = 0.03,
        seed: int = 0,
        folds: int = 5,
    ) -> EarlyStop:
        """Fit ``folds`` models per checkpoint on ``trajs`` (past trials), each without one fold,
        and set the thresholds so that at most ``cut_rate`` of the past successes would be cut by
        their out-of-fold predictions (``cut_rate / len(checkpoints)`` per checkpoint)."""
        checkpoints = sorted(int(c) for c in checkpoints)
        if not checkpoints or checkpoints[0] < 1:
            raise ValueError(f"early stopping needs checkpoints >= 1 control step, got {checkpoints}")
        if folds < 2:
            raise ValueError(f"early stopping needs folds >= 2 to calibrate out of fold, got {folds}")
        y = np.array([t.success for t in trajs], np.float32)
        if y.sum() < folds:
            raise ValueError(
                f"early stopping needs >= folds={folds} past successes to calibrate, got {int(y.sum())} "
                f"of {len(trajs)} trials: run more trials first"
            )
        parts = stratified_folds(y, folds, seed)
        models, thresholds, predictions = [], [], []
        for c in checkpoints:
            x = np.stack([prefix_features(t, c) for t in trajs])
            out_of_fold = np.zeros(len(trajs))
            fold_models = []
            for k, held in enumerate(parts):
                fit = np.setdiff1d(np.arange(len(trajs)), held)
                model = ValueModel(seed=seed + k).fit(x[fit], y[fit])
                out_of_fold[held] = model.predict(x[held])
                fold_models.append(model)
            models.append(fold_models)
            predictions.append(out_of_fold)
            thresholds.append(float(np.quantile(out_of_fold[y > 0], cut_rate / len(checkpoints))))
        return cls(models, checkpoints, thresholds, predictions)

    @classmethod
    def select(
        cls,
        trajs: Sequence[Trajectory],
        candidates: Sequence[int],
        substeps: int,
        cut_rate: float = 0.03,
        seed: int = 0,
        folds: int = 5,
    ) -> tuple[EarlyStop, dict[int, float]]:
        """Train one judge per candidate checkpoint on ``trajs`` and keep the one whose cuts, by
        its out-of-fold predictions on those same past trials, spend the fewest physics steps
        per success found. Returns it and, per candidate, the estimated ratio of steps per
        success without and with it (no fresh trial is looked at)."""
        if not candidates:
            raise ValueError("EarlyStop.select needs at least one candidate checkpoint")
        base = physics_cost(trajs, substeps)["steps_per_success"]
        best, estimates = None, {}
        for c in candidates:
            stop = cls.train(trajs, [c], cut_rate, seed, folds)
            cut = (stop.out_of_fold[0] < stop.thresholds[0]) & np.array([len(t) > c for t in trajs])
            cost = physics_cost(trajs, substeps, np.where(cut, c, -1))["steps_per_success"]
            estimates[int(c)] = float(base / cost)
            if best is None or estimates[int(c)] > estimates[best.checkpoints[0]]:
                best = stop
        return best, estimates

    def _predict(self, i: int, x: np.ndarray) -> np.ndarray:
        """(N,) the mean success probability of checkpoint ``i``'s fold models for features ``x``."""
        return np.mean([m.predict(x) for m in self.models[i]], axis=0)

    def cuts(self, traj: Trajectory, step: int) -> bool:
        """Whether ``traj``, simulated up to ``step`` (one of the checkpoints), is cut there: what
        ``OpenLoopSimulator`` asks while a trial with this judge runs."""
        i = self.checkpoints.index(step)
        return bool(self._predict(i, prefix_features(traj, step)[None])[0] < self.thresholds[i])

    def stops(self, trajs: Sequence[Trajectory]) -> np.ndarray:
        """(N,) int: the control step at which each trial is cut, -1 for trials run to the end
        (judged on finished trials: the same cuts ``cuts`` makes while they run)."""
        out = np.full(len(trajs), -1)
        for i, c in enumerate(self.checkpoints):
            live = [j for j in range(len(trajs)) if out[j] < 0 and len(trajs[j]) > c]
            if not live:
                break
            p = self._predict(i, np.stack([prefix_features(trajs[j], c) for j in live]))
            out[[j for j, q in zip(live, p, strict=True) if q < self.thresholds[i]]] = c
        return out


def physics_cost(trajs: Sequence[Trajectory], substeps: int, stops: np.ndarray | None = None) -> dict:
    """Physics steps spent on ``trajs`` and per success found, each trial stopped at its
    ``stops`` control step (-1: run to its end; None: none cut). Returns ``trials``, ``steps``
    (physics steps), ``successes`` (found, i.e. not cut), ``cut``, ``cut_successes`` (true
    successes lost) and ``steps_per_success`` (inf without a success)."""
    lengths = np.array([len(t) for t in trajs])
    stops = np.full(len(trajs), -1) if stops is None else np.asarray(stops)
    cut = stops >= 0
    spent = np.where(cut, np.minimum(lengths, stops), lengths) * substeps
    success = np.array([t.success for t in trajs], bool)
    found = int((success & ~cut).sum())
    return {
        "trials": len(trajs),
        "steps": int(spent.sum()),
        "successes": found,
        "cut": int(cut.sum()),
        "cut_successes": int((success & cut).sum()),
        "steps_per_success": float(spent.sum() / found) if found else float("inf"),
    }
