"""The synthesizer with real physics: invalid tasks are rejected, solvable ones enter the pool."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from robo_coevolve.coevolve import PoolEntry, TaskPool, TaskSpace, TaskSynthesizer, check_physics
from robo_coevolve.coevolve.task_pool import OWN
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.explore.search import trial_score
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec, TaskSpecError


def test_the_physics_check_passes_default_starts_and_rejects_an_egg_that_will_not_stay():
    assert check_physics(TaskSpec.for_skill("scoop")).valid
    assert check_physics(TaskSpec.for_skill("flip")).valid
    assert check_physics(TaskSpec.for_skill("toss")).valid
    assert check_physics(TaskSpec.for_skill("serve", egg_side_up="white")).valid
    # tip up, so the egg slides back into the pan (tipped down it can reach the plate)
    steep = check_physics(TaskSpec.for_skill("flip", spatula_pose=(0.0, 0.0, 0.08, -0.8, 0.0)))
    assert not steep.valid and "fell" in steep.reason


def test_the_task_space_maps_tasks_to_the_unit_cube_and_back():
    space = TaskSpace()
    base = TaskSpec.for_skill("scoop")
    task = space.task_at(base, np.full(space.dim, 0.5))
    assert np.allclose(space.features(task), 0.5)
    with pytest.raises(TaskSpecError, match="outside the pan"):
        space.task_at(base, np.ones(space.dim))  # the egg's corner offset leaves the pan
    with pytest.raises(TaskSpecError, match="egg_mass"):
        TaskSpace({"egg_mass": (0.01, 0.5)})
    with pytest.raises(TaskSpecError, match="unknown parameter 'colour'"):
        TaskSpace({"colour": (0, 1)})


def weak_pool(base: TaskDistribution) -> TaskPool:
    pool = TaskPool.seeded(base)
    for i in range(20):
        pool.record(0, bool(i % 2), 1)  # a 50/50 task: the boundary signal makes it weak
    return pool


def test_physically_invalid_synthesized_tasks_are_rejected(backend, scoop_modes):
    base = TaskDistribution(TaskSpec.for_skill("flip", spatula_pose=(0.0, 0.0, 0.08, -0.8, 0.0)))
    pool = weak_pool(base)
    synth = TaskSynthesizer(TaskSpace({"egg_mass": (0.03, 0.08)}), rare_proposals=0, proposals_per_weak=3)
    report, successes = synth.evolve(pool, scoop_modes, backend, np.random.default_rng(0), iteration=2)
    assert report.proposed == 3 and report.invalid_physics == 3 and report.validation_trials == 0
    assert len(pool) == 1 and not successes
    assert report.reasons == {"egg fell off while the spatula held still": 3}


def test_specs_off_the_pan_are_rejected_and_solvable_variants_enter_the_pool(backend, scoop_modes):
    pool = weak_pool(TaskDistribution.for_skill("scoop"))
    synth = TaskSynthesizer(
        TaskSpace({"egg_x": (0.07, 0.08), "egg_mass": (0.04, 0.06)}), rare_proposals=0, proposals_per_weak=2
    )
    report, _ = synth.evolve(pool, scoop_modes, backend, np.random.default_rng(0), iteration=2)
    assert report.invalid_spec == report.proposed == 2 and len(pool) == 1  # 7 cm off-centre: off the pan

    synth = TaskSynthesizer(new_per_round=2, rare_proposals=1, proposals_per_weak=4, solve_trials=8)
    report, successes = synth.evolve(pool, scoop_modes, backend, np.random.default_rng(1), iteration=2)
    assert report.admitted >= 1 and len(pool) == 1 + report.admitted
    assert report.validation_trials == 8 * (report.admitted + report.set_aside)
    assert successes and all(t.success for t in successes)
    new = pool.entries[1]
    assert new.origin == "synthesized" and new.iteration == 2 and any(s for _, s in new.outcomes)
    assert len(pool.visits) == 8 * report.admitted
    assert pool.entries[0].weight / sum(e.weight for e in pool.entries) >= synth.seed_share - 1e-9


def test_an_unsolved_candidate_is_set_aside_retried_and_dropped(backend):
    pool = weak_pool(TaskDistribution.for_skill("scoop"))
    useless = [np.zeros(len(np.zeros(15)))]  # a primitive that never scoops
    synth = TaskSynthesizer(rare_proposals=0, proposals_per_weak=1, solve_trials=4, max_retries=2)
    report, _ = synth.evolve(pool, useless, backend, np.random.default_rng(0), iteration=2)
    assert report.set_aside == 1 and len(pool.set_aside) == 1 and len(pool) == 1
    assert len(pool.set_aside[0]["elites"]) == 4  # its retries search from its best trials
    synth = TaskSynthesizer(rare_proposals=0, proposals_per_weak=0, solve_trials=4, max_retries=2)
    report, _ = synth.evolve(pool, useless, backend, np.random.default_rng(0), iteration=3)
    assert report.retried == 1 and report.set_aside == 0 and not pool.set_aside  # second failure: dropped


def test_a_candidate_the_node_modes_already_solve_is_too_easy(backend, scoop_modes):
    def retry(synth):
        pool = TaskPool.seeded(TaskDistribution.for_skill("scoop"))
        task = TaskSpec.for_skill("scoop").replace(seed=0).to_dict()  # the standard egg itself
        pool.set_aside.append({"task": task, "parent": 0, "why": "weak", "tries": 1})
        report, wins = synth.evolve(pool, scoop_modes, backend, np.random.default_rng(0), iteration=2)
        return pool, report, wins

    synth = TaskSynthesizer(rare_proposals=0, proposals_per_weak=0, solve_trials=8)
    pool, report, wins = retry(synth)
    solved = np.mean([s for _, s in pool.entries[1].outcomes])
    assert report.admitted == 1 and solved >= 0.5  # the modes solve it: admitted by default
    pool, report, easy = retry(replace(synth, too_easy=solved - 0.01))
    assert report.too_easy == 1 and report.admitted == 0 and len(pool) == 1 and not pool.set_aside
    assert len(easy) == len(wins) and len(pool.visits) == 8  # its trials are kept all the same


def test_rare_proposals_step_one_parameter_into_the_least_visited_side(backend):
    pool = TaskPool.seeded(TaskDistribution.for_skill("scoop"))
    space = TaskSpace({"egg_x": (-0.05, 0.05), "egg_mass": (0.025, 0.1)})
    centre = space.features(pool.entries[0].base)
    heavy = centre + [0.0, 0.2]
    for _ in range(50):  # trials ran at the centre and on heavier eggs: not yet on lighter ones
        pool.visit(centre)
        pool.visit(heavy)
    useless = [np.zeros(15)]  # no candidate is solved: each is set aside
    synth = TaskSynthesizer(space, rare_proposals=2, proposals_per_weak=0, solve_trials=2, new_per_round=4)
    report, _ = synth.evolve(pool, useless, backend, np.random.default_rng(0), iteration=2)
    assert report.set_aside == 2 and [c["why"] for c in pool.set_aside] == ["rare", "rare"]
    moved = [space.features(TaskSpec.from_dict(c["task"])) - centre for c in pool.set_aside]
    assert np.allclose(moved[0], [0.0, -synth.rare_step])  # a lighter egg: away from the visits
    assert np.allclose(np.abs(moved[1]), [synth.rare_step, 0.0])  # then off-centre, either side
    assert len(pool.visits) == 100 + 2 * 2  # the set-aside candidates' trials count as visits


def test_weights_favour_weak_variants_and_starve_mastered_ones():
    pool = TaskPool.seeded(TaskDistribution.for_skill("scoop"))
    from robo_coevolve.coevolve import PoolEntry

    for mass in (0.04, 0.06):
        pool.add(PoolEntry(TaskDistribution.for_skill("scoop", egg_mass=mass, egg_mass_range=0.05)))
    for i in range(10):
        pool.record(1, True, 1)  # mastered
        pool.record(2, bool(i % 2), 1)  # boundary
    TaskSynthesizer(seed_share=0.0).reweight(pool)
    w = [e.weight for e in pool.entries]
    assert w[1] == pytest.approx(0.1) and w[2] > 0.5


def test_a_variant_failed_where_the_rest_succeed_outweighs_a_wavering_one():
    from robo_coevolve.coevolve import PoolEntry

    pool = TaskPool.seeded(TaskDistribution.for_skill("scoop"))
    for mass in (0.03, 0.06):
        pool.add(PoolEntry(TaskDistribution.for_skill("scoop", egg_mass=mass, egg_mass_range=0.05)))
    for i in range(40):
        pool.record(0, i % 10 < 7, 1)  # the node's own tasks: 70% under exploration noise
    for i in range(20):
        pool.record(1, i == 0, 1)  # light egg: 1 in 20
        pool.record(2, bool(i % 2), 1)  # 50/50
    synth = TaskSynthesizer(seed_share=0.0)
    synth.reweight(pool)
    light, wavering = pool.entries[1].weight, pool.entries[2].weight
    assert light > 1.3 * wavering
    TaskSynthesizer(seed_share=0.0, signal_weights=(1.0, 1.0, 0.5)).reweight(pool)  # without deficit
    assert pool.entries[1].weight < 0.6 * pool.entries[2].weight


def test_a_slippery_eggs_own_search_beats_the_node_modes_there_and_becomes_a_mode(backend, scoop_modes):
    """Rounds of primitive trials on an egg that slides on the blade (friction 0.05), as the loop
    runs them: each trial around the arm the variant chooses (a node mode, or its own search once
    it has scored trials)."""
    pool = TaskPool.seeded(TaskDistribution.for_skill("scoop"))
    slippery = pool.add(
        PoolEntry(TaskDistribution.for_skill("scoop", egg_blade_friction=0.05, egg_mass_range=0.05))
    )
    rng = np.random.default_rng(0)
    for k in range(1, 11):
        which, params = pool.primitive_params([slippery] * 20, scoop_modes, rng, jitter=0.03)
        tasks = pool.entries[slippery].tasks.sample_many(rng, 20)
        trajs = backend.run_trials([Trial(t, PrimitivePlan(p)) for t, p in zip(tasks, params, strict=True)])
        for t, m, p in zip(trajs, which, params, strict=True):
            pool.record(slippery, t.success, k, mode=m, elite=(trial_score(t.outcome), p))
    own = [s for k, m, s in pool.entries[slippery].mode_outcomes if m == OWN and k > 6]
    modes = [s for k, m, s in pool.entries[slippery].mode_outcomes if m != OWN and k > 6]
    assert len(own) >= 20 and np.mean(own) >= 0.15  # the node modes lift it too steeply: it slides off
    assert np.mean(modes) <= 0.1 if modes else True
    # its motion becomes a node mode once it solves the variant often enough
    rate, n, best = pool.entries[slippery].own_success(10)
    synth = TaskSynthesizer(promote_rate=rate, promote_margin=0.0, max_modes=len(scoop_modes) + 1)
    promoted = synth.promote(pool, scoop_modes, 10)
    assert (
        n >= 4
        and len(promoted) == 1
        and np.allclose(promoted[0], pool.entries[slippery].own_mode()[0], atol=1e-6)
    )
    assert not replace(synth, promote_rate=min(1.0, rate + 0.01)).promote(pool, scoop_modes, 10)
    assert not replace(synth, mode_distance=0.5).promote(pool, scoop_modes, 10)  # too close to a mode
    assert not TaskSynthesizer(max_modes=len(scoop_modes)).promote(pool, scoop_modes, 10)
    # and a variant proposed next to it is validated with its motion, half of the trials
    synth = TaskSynthesizer(
        TaskSpace({"egg_blade_friction": (0.05, 0.07)}),
        rare_proposals=0,
        proposals_per_weak=1,
        new_per_round=1,
        solve_trials=16,  # its own motion solves about one in five here
    )
    report, _ = synth.evolve(pool, scoop_modes, backend, np.random.default_rng(1), iteration=11)
    child = pool.entries[-1]
    assert report.admitted == 1 and child.parent == slippery and child.base.egg_blade_friction != 0.05
    assert sum(m == OWN for _, m, _ in child.mode_outcomes) == synth.solve_trials // 2
    assert len(child.elites) == synth.solve_trials  # its own search starts from these
