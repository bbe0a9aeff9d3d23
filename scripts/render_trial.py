"""Render a saved trial to mp4 with the score overlay: ``python scripts/render_trial.py TRIAL.npz``.

Same as the ``robo-coevolve-render`` console script; see ``robo_coevolve.video``.
"""

from robo_coevolve.video import main

if __name__ == "__main__":
    main()
