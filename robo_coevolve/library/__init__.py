"""The skill library: refined segments per skill in robomimic's HDF5 layout, and its exports."""

from robo_coevolve.library.skill_library import SCHEMA_VERSION, LibraryError, SkillLibrary

__all__ = ["SCHEMA_VERSION", "LibraryError", "SkillLibrary"]
