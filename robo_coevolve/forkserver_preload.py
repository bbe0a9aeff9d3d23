"""Imported by multiprocessing's forkserver as it starts (``worker_processes.process_context``
preloads it): the forkserver ends with the job that started it."""

from robo_coevolve.worker_processes import end_with_parent

end_with_parent()
