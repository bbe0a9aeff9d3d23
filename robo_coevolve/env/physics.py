"""The egg-flip scene's physics: model building for a TaskSpec, named read-outs, state save/restore.

dm_control's pattern: the scene (``envs/egg_flip/scene.xml``) and this module are a pair, and the
quantities that tasks and the scorer talk about are named methods here (``egg_height()``,
``spatula_pose()``), so that nothing else indexes ``qpos`` by hand.

Geometry that a TaskSpec changes (pan height, egg size) is compiled in with ``mujoco.MjSpec``;
properties that MuJoCo reads at run time (egg mass, frictions) are written into the compiled model,
and what MuJoCo derives from the masses at compile time is recomputed after a mass change.
"""

from __future__ import annotations

from functools import cache

import mujoco
import numpy as np

from robo_coevolve.env.salt import ToolChanger, add_salt
from robo_coevolve.resources import scene_path
from robo_coevolve.task_spec import TaskSpec

SPATULA_JOINTS = ("x", "y", "z", "pitch", "roll")
# Sensors whose per-control-step value is the maximum over the physics substeps (a force peak or
# a contact that happened at any substep); all other sensors report their last substep.
PEAK_SENSORS = ("egg_touch", "egg_on_blade", "egg_on_pan", "egg_on_floor", "egg_on_burner", "egg_on_plate")
# Every qpos/qvel/act/ctrl/warmstart/applied-force entry: enough to continue bit for bit.
STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION

_INSTABILITY_WARNINGS = (
    mujoco.mjtWarning.mjWARN_BADQPOS,
    mujoco.mjtWarning.mjWARN_BADQVEL,
    mujoco.mjtWarning.mjWARN_BADQACC,
)
# m below the pan surface where each stand's column starts (the burner's, the plate's)
_STAND_TOPS = {"stand": 0.03, "plate_stand": 0.006}


@cache
def _scene_xml(env_name: str) -> str:
    return str(scene_path(env_name))


def build_model(
    pan_height: float, egg_size: float, env_name: str = "egg_flip", salt: bool = False
) -> mujoco.MjModel:
    """Compile the scene with the pan surface at ``pan_height`` m and the egg scaled by ``egg_size``;
    with ``salt``, the shaker, its rack and its grains too (``robo_coevolve.env.salt``)."""
    spec = mujoco.MjSpec.from_file(_scene_xml(env_name))
    for name in ("stove", "pan", "spatula_base", "plate"):
        body = spec.body(name)
        body.pos = [body.pos[0], body.pos[1], pan_height]
    for name, top in _STAND_TOPS.items():
        stand = spec.geom(name)
        half = (pan_height - top) / 2
        stand.size = [stand.size[0], half, 0.0]
        stand.pos = [0.0, 0.0, -(top + half)]
    if egg_size != 1.0:
        spec.mesh("egg_white").scale = [egg_size] * 3
        for name in ("yolk", "egg_shell"):
            element = spec.geom(name) if name == "yolk" else spec.site(name)
            element.size = np.asarray(element.size) * egg_size
            element.pos = np.asarray(element.pos) * egg_size
    if salt:
        add_salt(spec, pan_height)
    return spec.compile()


def _layout(m: mujoco.MjModel) -> dict[str, slice]:
    return {
        m.sensor(i).name: slice(m.sensor_adr[i], m.sensor_adr[i] + m.sensor_dim[i]) for i in range(m.nsensor)
    }


@cache
def sensor_layout(env_name: str = "egg_flip", salt: bool = False) -> dict[str, slice]:
    """Columns of each named sensor in a ``sensordata`` row: the same for every task geometry; the
    salt's sensors come after the scene's (``robo_coevolve.env.salt``)."""
    return _layout(build_model(0.45, 1.0, env_name, salt))


def _geometry(task: TaskSpec) -> tuple[float, float, bool]:
    """What of ``task`` is compiled into the model: pan height, egg size, the salt."""
    return (task.pan_height, task.egg_size, task.with_salt)


class EggFlipPhysics:
    """MjModel + MjData of one task geometry, with the named quantities of the egg-flip scene."""

    def __init__(self, task: TaskSpec, env_name: str = "egg_flip"):
        self.env_name = env_name
        self.geometry = _geometry(task)
        self.model = build_model(*self.geometry[:2], env_name, task.with_salt)
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.egg_body = m.body("egg").id
        self.egg_qpos = m.jnt_qposadr[m.joint("egg").id]
        self.egg_qvel = m.jnt_dofadr[m.joint("egg").id]
        self.spatula_qpos = np.array([m.jnt_qposadr[m.joint(j).id] for j in SPATULA_JOINTS])
        self.spatula_qvel = np.array([m.jnt_dofadr[m.joint(j).id] for j in SPATULA_JOINTS])
        self.ctrl_low = m.actuator_ctrlrange[:, 0].astype(np.float32)
        self.ctrl_high = m.actuator_ctrlrange[:, 1].astype(np.float32)
        self._egg_inertia = m.body_inertia[self.egg_body].copy()
        self._egg_mass = float(m.body_mass[self.egg_body])
        self._kp = m.actuator_gainprm[:, 0].copy()  # position actuators: force = kp (ctrl - q) - kv qdot
        self._servo_gain = 1.0
        self._pairs = {m.pair(i).name: i for i in range(m.npair)}
        self.sensor_slices = sensor_layout(env_name, task.with_salt)
        self.tool_changer = ToolChanger(m) if task.with_salt else None
        self._peak_columns = np.concatenate(
            [np.arange(self.sensor_slices[n].start, self.sensor_slices[n].stop) for n in PEAK_SENSORS]
        )
        self.state_size = mujoco.mj_stateSize(m, STATE_SPEC)
        self.apply_task(task)

    def matches(self, task: TaskSpec) -> bool:
        """Whether ``task`` has this model's compiled geometry (else build a new physics)."""
        return _geometry(task) == self.geometry

    def apply_task(self, task: TaskSpec) -> None:
        """Write the task's egg mass, frictions and servo gain into the model (no recompilation)."""
        if not self.matches(task):
            raise ValueError(
                f"TaskSpec geometry (pan_height, egg_size, with_salt)={_geometry(task)} differs from "
                f"this model's {self.geometry}: build a new EggFlipPhysics"
            )
        m = self.model
        mass = float(m.body_mass[self.egg_body])
        if task.egg_mass != mass:
            m.body_mass[self.egg_body] = task.egg_mass
            m.body_inertia[self.egg_body] = self._egg_inertia * (task.egg_mass / self._egg_mass)
            self._recompute_mass_constants()
        for pair, mu in (("egg_pan", task.egg_pan_friction), ("egg_blade", task.egg_blade_friction)):
            m.pair_friction[self._pairs[pair], :2] = mu
        if task.servo_gain != self._servo_gain:
            kp = self._kp * task.servo_gain
            m.actuator_gainprm[:, 0] = kp
            m.actuator_biasprm[:, 1] = -kp
            self._servo_gain = task.servo_gain

    def _recompute_mass_constants(self) -> None:
        """Recompute what MuJoCo derives from the masses at compile time (``mj_setConst``).

        A stale ``body_subtreemass`` puts the egg's centre of mass, about which MuJoCo expresses
        its motion, at the wrong place, and a spinning egg's integration then gains energy until it
        diverges; stale ``invweight0`` values also mis-scale the egg's contact softness.
        ``mj_setConst`` resets the data to ``qpos0``, so the state is saved and restored around it.
        """
        state = self.get_state()
        mujoco.mj_setConst(self.model, self.data)
        self.set_state(state)

    # ------------------------------------------------------------------ named read-outs
    def sensor_columns(self, *names: str) -> np.ndarray:
        """Column indices in ``sensordata`` of the first value of each named sensor."""
        return np.array([self.sensor_slices[n].start for n in names])

    def sensor(self, name: str) -> np.ndarray:
        return self.data.sensordata[self.sensor_slices[name]]

    def spatula_pose(self) -> np.ndarray:
        """(x, y, z, pitch, roll) of the blade, m and rad, from the pan surface centre."""
        return self.data.qpos[self.spatula_qpos]

    def spatula_velocity(self) -> np.ndarray:
        return self.data.qvel[self.spatula_qvel]

    def egg_position(self) -> np.ndarray:
        """Egg frame origin (bottom centre of the white), m, from the pan surface centre."""
        return self.sensor("egg_pos")

    def egg_height(self) -> float:
        """m of the egg's frame above the pan surface."""
        return float(self.sensor("egg_pos")[2])

    def egg_up(self) -> np.ndarray:
        """World direction of the egg's top (its frame's z axis); z < 0 means upside down."""
        return self.sensor("egg_up")

    def egg_state(self) -> np.ndarray:
        """(13,) float64: egg position from the pan centre, quaternion, linear and angular velocity."""
        return np.concatenate(
            [
                self.sensor("egg_pos"),
                self.sensor("egg_quat"),
                self.sensor("egg_linvel"),
                self.sensor("egg_angvel"),
            ]
        )

    def set_egg(self, position, quat, linvel=(0, 0, 0), angvel=(0, 0, 0)) -> None:
        """Place the egg (position from the pan surface centre) and set its velocity."""
        pan_z = self.model.body("pan").pos[2]
        q = self.data.qpos
        q[self.egg_qpos : self.egg_qpos + 3] = np.asarray(position) + (0.0, 0.0, pan_z)
        q[self.egg_qpos + 3 : self.egg_qpos + 7] = quat
        v = self.data.qvel
        v[self.egg_qvel : self.egg_qvel + 3] = linvel
        v[self.egg_qvel + 3 : self.egg_qvel + 6] = angvel

    def set_spatula(self, pose) -> None:
        """Put the spatula at ``pose`` at rest, with the servos commanded to hold it."""
        self.data.qpos[self.spatula_qpos] = pose
        self.data.qvel[self.spatula_qvel] = 0.0
        self.data.ctrl[:] = pose

    def blade_top(self) -> np.ndarray:
        """World position of the blade's top face at its centre."""
        site = self.model.site("blade_centre").id
        return self.data.site_xpos[site] + self.data.site_xmat[site].reshape(3, 3)[:, 2] * 0.0015

    def set_push(self, force_xy) -> None:
        """Apply a horizontal force (N) at the egg's centre of mass until changed."""
        self.data.xfrc_applied[self.egg_body, :2] = force_xy

    # ------------------------------------------------------------------ state
    def get_state(self) -> np.ndarray:
        """Full integration state (float64): restoring it and applying the same controls
        reproduces the continuation bit for bit."""
        state = np.empty(self.state_size)
        mujoco.mj_getState(self.model, self.data, state, STATE_SPEC)
        return state

    def set_state(self, state: np.ndarray) -> None:
        state = np.asarray(state, dtype=np.float64)
        if state.shape != (self.state_size,):
            raise ValueError(
                f"sim state has shape {state.shape}, this model needs ({self.state_size},): "
                "was it saved from another scene or MuJoCo version?"
            )
        mujoco.mj_setState(self.model, self.data, state, STATE_SPEC)
        # Warning counters are not part of the state: clear them, or an earlier divergence would
        # mark every continuation from this state as diverged.
        for w in self.data.warning:
            w.number = 0
        mujoco.mj_forward(self.model, self.data)

    def diverged(self) -> bool:
        """Non-finite state or a MuJoCo instability warning since the last reset."""
        d = self.data
        bad = sum(d.warning[w].number for w in _INSTABILITY_WARNINGS)
        return bool(bad) or not (np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all())

    # ------------------------------------------------------------------ sensor records
    def reduce_substeps(self, sensordata: np.ndarray, substeps: int) -> np.ndarray:
        """Physics-rate sensor rows (T * substeps, nsensordata) to control-rate rows (T, nsensordata):
        force peaks and contacts are the maximum over each control step's substeps (a 2 ms impact
        must not be missed), every other sensor is the control step's last substep."""
        rows = np.asarray(sensordata).reshape(-1, substeps, sensordata.shape[-1])
        out = rows[:, -1, :].copy()
        out[:, self._peak_columns] = rows[:, :, self._peak_columns].max(axis=1)
        return out

    def record(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Split sensor rows (T, nsensordata) into named arrays (T, dim) for the scorer."""
        rows = np.asarray(rows)
        return {name: rows[:, s] for name, s in self.sensor_slices.items()}
