"""The season scene's salt: a shaker of grains on a rack beside the plate, and the tool change that
puts it on the spatula.

Added to the egg-flip scene (``envs/egg_flip/scene.xml``) by ``add_salt`` only for a task
``with_salt`` (a season's, or a recipe's that ends in one): the grains cost physics time that no
other skill should pay.

- **Grains** are real MuJoCo bodies (``GRAINS`` spheres, three slide joints each: a rolling grain's
  spin changes nothing here). They collide only where it matters: with the shaker's inside
  (frictionless: they pour), and with the egg, the plate, the pan and the floor (with friction: they
  land, rest or spill). Grains do not collide with each other, so nothing jams in the shaker; what
  comes out is set by the hole and by how the shaker is moved.
- **The shaker** is a free body: a cup whose cap has one hole. It stands in a rack beside the
  plate, held there by a weld (``shaker_rack``); the tool change switches that weld off and
  ``shaker_grip`` (shaker to spatula) on, with the shaker's base seated on the blade's centre.
  ``ToolChanger`` decides the switch between control steps from the state alone, as a real tool
  changer latches when docked: the weld flags are part of the saved state (``mjSTATE_EQ_ACTIVE``),
  so a saved state replays bit for bit.
- The shaker collides with nothing but its grains (a simplification: it can pass through the egg
  and the plate; a season's progress rewards holding it above them).

In this scene the overview camera (videos) frames the plate and the rack as well as the pan.

Sensors appended after the scene's (so every other sensor keeps its columns): ``shaker_pos`` and
``shaker_quat`` (the hole's position from the pan centre, the shaker's orientation), ``shaker_grip``
(the shaker's base from the blade centre, in the blade's frame: zero when held) and one
``grain{i}`` per grain (its position in the egg's frame), from which the scorer tells what was
dispensed, what lies on the egg and what spilled (``robo_coevolve.scoring.salt``).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from robo_coevolve.task_spec import (
    BLADE_THICKNESS,
    GRAINS,
    HOLE_RADIUS,
    RACK_SEAT,
    SHAKER_HEIGHT,
    SHAKER_RADIUS,
    SHAKER_WALL,
)

GRAIN_RADIUS = 0.0012  # m: coarse salt, big enough for the 2 ms step
GRAIN_MASS = 1.6e-5  # kg: a sphere of GRAIN_RADIUS of rock salt (2,160 kg/m^3)
SHAKER_MASS = 0.05  # kg, empty
# Tool change: the blade's centre within this distance of the shaker's base (m), the two axes within
# this angle (rad) and the blade slower than this (m/s) latches the shaker onto the blade.
DOCK_DISTANCE = 0.01
DOCK_ANGLE = 0.25
DOCK_SPEED = 0.1

# Collision bits: grains are type 4; what they land on has affinity 4; the shaker's inside is type 8
# and the grains have affinity 8. Nothing else in the scene has either bit.
_GRAIN_BIT, _SHAKER_BIT = 4, 8
_LANDING_GEOMS = ("egg_white", "yolk", "plate_bottom", "pan_bottom", "floor")
_LANDING_RIMS = ("plate_rim",)  # replicated: every copy
_SALT_RGBA = (0.93, 0.62, 0.6, 1.0)  # pink rock salt: visible on the white


def _shaker_geoms(body: mujoco.MjsBody) -> None:
    """The cup: a base, a ring of wall boxes and a cap ring around the hole, all of type 8."""
    glass = (0.85, 0.88, 0.92, 0.35)
    steel = (0.6, 0.62, 0.66, 1.0)
    # priority: the contact takes the shaker's condim 1 (frictionless), not the grain's 3.
    inside = dict(contype=_SHAKER_BIT, conaffinity=0, condim=1, priority=1)
    t = SHAKER_WALL
    body.add_geom(
        name="shaker_base",
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[SHAKER_RADIUS + t, t / 2, 0],
        pos=[0, 0, t / 2],
        mass=0.4 * SHAKER_MASS,
        rgba=steel,
        **inside,
    )
    walls = 16
    half_chord = (SHAKER_RADIUS + t) * math.tan(math.pi / walls)
    for k in range(walls):
        a = 2 * math.pi * k / walls
        r = SHAKER_RADIUS + t / 2
        body.add_geom(
            name=f"shaker_wall{k}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[t / 2, half_chord, SHAKER_HEIGHT / 2],
            pos=[r * math.cos(a), r * math.sin(a), t + SHAKER_HEIGHT / 2],
            euler=[0, 0, a],
            mass=0.4 * SHAKER_MASS / walls,
            rgba=glass,
            **inside,
        )
    sectors = 12
    width = (SHAKER_RADIUS + t - HOLE_RADIUS) / 2
    middle = HOLE_RADIUS + width
    for k in range(sectors):
        a = 2 * math.pi * k / sectors
        body.add_geom(
            name=f"shaker_cap{k}",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[width, middle * math.tan(math.pi / sectors) + 0.0005, 0.0015],
            pos=[middle * math.cos(a), middle * math.sin(a), t + SHAKER_HEIGHT + 0.0015],
            euler=[0, 0, a],
            mass=0.2 * SHAKER_MASS / sectors,
            rgba=steel,
            **inside,
        )
    body.add_site(name="shaker_base", pos=[0, 0, 0], size=[0.002, 0, 0], rgba=[0, 0, 0, 0])
    body.add_site(
        name="shaker_hole", pos=[0, 0, t + SHAKER_HEIGHT + 0.003], size=[0.002, 0, 0], rgba=[0, 0, 0, 0]
    )


def _grain_start(i: int) -> tuple[float, float, float]:
    """Grain ``i``'s place in the shaker before it settles: a lattice filling the cup from the base."""
    per_layer = 37  # a hexagonal patch of 3 rings fits the cup
    layer, k = divmod(i, per_layer)
    spacing = 2.2 * GRAIN_RADIUS * 2
    # Hexagonal rings around the axis: 1 + 6 + 12 + 18 places.
    ring, index = 0, k
    while index >= max(1, 6 * ring):
        index -= max(1, 6 * ring)
        ring += 1
    angle = 2 * math.pi * index / max(1, 6 * ring)
    r = ring * spacing
    return (r * math.cos(angle), r * math.sin(angle), SHAKER_WALL + GRAIN_RADIUS * 1.5 + layer * spacing)


def add_salt(spec: mujoco.MjSpec, pan_height: float) -> None:
    """Add the shaker in its rack, its grains, the tool-change welds and the salt sensors to ``spec``
    (the egg-flip scene with its pan surface at ``pan_height``)."""
    seat = np.array(RACK_SEAT) + (0.0, 0.0, pan_height)
    world = spec.worldbody
    # The overview camera (videos) steps back to frame the pan, the plate, the rack and the air
    # above the egg where the shaker turns over.
    overview = spec.camera("overview")
    overview.pos = [0.55, -0.45, 0.38]
    overview.targetbody = "plate"
    # The rack: a post and a ring around the shaker's waist (for the eye; the welds hold the shaker).
    rack_rgba = (0.25, 0.22, 0.2, 1.0)
    world.add_geom(
        name="rack_post",
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[0.008, seat[2] / 2 + 0.015, 0],
        pos=[seat[0], seat[1] + SHAKER_RADIUS + 0.02, seat[2] / 2 + 0.015],
        rgba=rack_rgba,
        contype=0,
        conaffinity=0,
    )
    world.add_geom(
        name="rack_arm",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[0.006, 0.012, 0.004],
        pos=[seat[0], seat[1] + SHAKER_RADIUS + 0.012, seat[2] + 0.03],
        rgba=rack_rgba,
        contype=0,
        conaffinity=0,
    )
    shaker = world.add_body(name="shaker", pos=seat.tolist())
    shaker.add_freejoint(name="shaker")
    _shaker_geoms(shaker)
    for i in range(GRAINS):
        x, y, z = _grain_start(i)
        grain = world.add_body(name=f"grain{i}", pos=[seat[0] + x, seat[1] + y, seat[2] + z])
        for axis in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
            grain.add_joint(type=mujoco.mjtJoint.mjJNT_SLIDE, axis=list(axis))
        grain.add_geom(
            type=mujoco.mjtGeom.mjGEOM_SPHERE,
            size=[GRAIN_RADIUS, 0, 0],
            mass=GRAIN_MASS,
            contype=_GRAIN_BIT,
            conaffinity=_SHAKER_BIT,
            condim=3,
            friction=[0.6, 0.005, 0.0001],
            solref=[0.004, 1],
            rgba=list(_SALT_RGBA),
        )
    for geom in spec.geoms:
        if geom.name in _LANDING_GEOMS or geom.name.startswith(_LANDING_RIMS):
            geom.conaffinity = geom.conaffinity | _GRAIN_BIT
    # The welds (the shaker's pose in the holder's frame): in the rack at the start, on the blade
    # once docked. data = anchor (3), the pose of body2 in body1's frame (3 + 4), torque scale.
    for name, holder, position, active in (
        ("shaker_rack", "world", seat.tolist(), True),
        ("shaker_grip", "spatula", [0.0, 0.0, BLADE_THICKNESS], False),
    ):
        spec.add_equality(
            name=name,
            type=mujoco.mjtEq.mjEQ_WELD,
            objtype=mujoco.mjtObj.mjOBJ_BODY,
            name1=holder,
            name2="shaker",
            data=[0, 0, 0, *position, 1, 0, 0, 0, 1, 0],
            solref=[0.004, 1],
            active=active,
        )
    spec.add_sensor(
        name="shaker_pos",
        type=mujoco.mjtSensor.mjSENS_FRAMEPOS,
        objtype=mujoco.mjtObj.mjOBJ_SITE,
        objname="shaker_hole",
        reftype=mujoco.mjtObj.mjOBJ_XBODY,
        refname="pan",
    )
    spec.add_sensor(
        name="shaker_quat",
        type=mujoco.mjtSensor.mjSENS_FRAMEQUAT,
        objtype=mujoco.mjtObj.mjOBJ_XBODY,
        objname="shaker",
    )
    spec.add_sensor(
        name="shaker_grip",
        type=mujoco.mjtSensor.mjSENS_FRAMEPOS,
        objtype=mujoco.mjtObj.mjOBJ_SITE,
        objname="shaker_base",
        reftype=mujoco.mjtObj.mjOBJ_SITE,
        refname="blade_centre",
    )
    for i in range(GRAINS):
        spec.add_sensor(
            name=f"grain{i}",
            type=mujoco.mjtSensor.mjSENS_FRAMEPOS,
            objtype=mujoco.mjtObj.mjOBJ_XBODY,
            objname=f"grain{i}",
            reftype=mujoco.mjtObj.mjOBJ_XBODY,
            refname="egg",
        )


class ToolChanger:
    """Moves the shaker from the rack to the spatula between control steps, by the state.

    The latch: the shaker is in the rack and the blade's centre is docked at its base (within
    ``DOCK_DISTANCE``, the blade's normal within ``DOCK_ANGLE`` of the shaker's axis, the blade
    slower than ``DOCK_SPEED``); the rack's weld then switches off and the grip's on. The welds'
    active flags are part of the saved state. (No task needs the shaker put back, so it stays held.)
    """

    def __init__(self, model: mujoco.MjModel):
        self.rack = model.equality("shaker_rack").id
        self.grip = model.equality("shaker_grip").id
        self.blade_site = model.site("blade_centre").id
        self.base_site = model.site("shaker_base").id
        self.blade_velocity = model.sensor("blade_linvel").adr[0]

    def update(self, data: mujoco.MjData) -> bool:
        """Latch the shaker if the blade is docked at it; whether it did. Reads positions and the
        blade's velocity as the last ``mj_step`` left them."""
        if data.eq_active[self.grip]:
            return False
        velocity = data.sensordata[self.blade_velocity : self.blade_velocity + 3]
        if float(velocity @ velocity) > DOCK_SPEED**2:
            return False
        blade_up = data.site_xmat[self.blade_site].reshape(3, 3)[:, 2]
        base_up = data.site_xmat[self.base_site].reshape(3, 3)[:, 2]
        if float(blade_up @ base_up) < math.cos(DOCK_ANGLE):
            return False
        if np.linalg.norm(data.site_xpos[self.blade_site] - data.site_xpos[self.base_site]) > DOCK_DISTANCE:
            return False
        data.eq_active[self.rack], data.eq_active[self.grip] = 0, 1
        return True
