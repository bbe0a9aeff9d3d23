"""Workspaces: what ``python -m robo_coevolve`` runs, each built from its config group."""
