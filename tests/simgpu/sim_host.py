"""Host-side functions of the Python sim trainer for xpu-timer's function
tracing (sim_trainer.py --traced-calls): the trainer imports this module only
after its first step, as a program imports a module late."""


def synchronize(fail=False):
    """Stands in for torch.cuda.synchronize; raises when asked to (a call
    that an exception ends)."""
    if fail:
        raise RuntimeError("simulated failure")


class Stream:
    """Stands in for torch.cuda.Stream."""

    def wait_event(self, event):
        return event


def batches(n):
    """A generator: each run from its start or resume to its yield or return
    is one traced call (Python 3.12+)."""
    for i in range(n):
        yield i
