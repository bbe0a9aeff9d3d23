"""The console commands, one module per verb (each also runs as ``python -m robo_coevolve.cli.<verb>``):

- ``robo-coevolve-tree``: follow, continue and evaluate a skill-tree run (``tree``);
- ``robo-coevolve-export``: a skill library to robomimic/LeRobot, a policy to ONNX (``export``);
- ``robo-coevolve-render``: a policy checkpoint's episodes or a saved trial to mp4 (``render``);
- ``robo-coevolve-distill``: distill a policy into a student (``distill``);
- ``robo-coevolve-plot``: redraw a run's progress plots (``plot``).

The main job, ``robo-coevolve`` (``python -m robo_coevolve``), is the Hydra app in ``__main__``.
"""
