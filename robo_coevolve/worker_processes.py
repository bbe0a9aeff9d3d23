"""Worker process pools that end with the job that started them, however it ends (SIGKILL too).

Pools start their workers from multiprocessing's forkserver (a fork of a process already running
torch's or MuJoCo's threads can hang). Killed outright, the job would leave the forkserver, its
workers and multiprocessing's resource tracker running as orphans, so on Linux the forkserver and
every worker ask the kernel for SIGKILL when their parent dies (``prctl(PR_SET_PDEATHSIG)``): the
job's death takes the forkserver, the forkserver's the workers, and the resource tracker exits
once the last of them has closed its pipe. Elsewhere nothing changes.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# Imported by the forkserver as it starts: the module that makes it end with the job.
FORKSERVER_PRELOAD = "robo_coevolve.forkserver_preload"


def end_with_parent() -> None:
    """Have this process SIGKILLed when its parent dies (Linux; a no-op elsewhere), and exit at
    once if the parent died before the request took effect."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        os._exit(1)


def process_context() -> multiprocessing.context.BaseContext:
    """The start method for worker processes: forkserver (ending with the job, once its server
    starts from here), else spawn."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    # '__main__' is multiprocessing's default preload; a server already running keeps its own.
    context.set_forkserver_preload(["__main__", FORKSERVER_PRELOAD])
    return context


def process_pool(workers: int) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` of ``workers`` processes that end with this one."""
    return ProcessPoolExecutor(workers, mp_context=process_context(), initializer=end_with_parent)
