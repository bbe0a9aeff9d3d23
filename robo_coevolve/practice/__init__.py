"""Practice past the teacher: the policy improves on its own tries."""
