# Python-side probes of a rank, run once by libxpu_timer_inject.so (inject/
# python_probes.h) in a private namespace, with the GIL held: what the rank's
# interpreter does between GPU calls.
#  - garbage collection: a gc.callbacks entry times every collection (start to
#    stop) and counts it per generation, with the objects it freed;
#  - the DataLoader: the time the training loop spends in the iterator's
#    __next__ (waiting for a batch), per batch. On Python >= 3.12 through
#    sys.monitoring local events on that one function (no profiler hook, so
#    it never clashes with torch.profiler or a debugger); before 3.12 by
#    wrapping the class's __next__.
#  - training steps: a global optimizer step post-hook (torch's
#    register_optimizer_step_post_hook, or the "module:function" given) notes
#    the end of every optimizer step; the time between two is a step. Not
#    installed when XPU_TIMER_STEP_RANGE names an NVTX range for steps.
# They report through functions the library exports, called with ctypes
# (PyDLL: the GIL stays held, no thread switch). Nothing here may raise into
# the user's program: every callback is guarded.


def _xpu_timer_probes(loader_target, monitoring_tool, step_target):
    import ctypes
    import gc
    import sys
    import time

    clock = time.perf_counter_ns
    lib = ctypes.PyDLL(None)
    try:
        note_gc = lib.xpu_timer_python_gc
        note_loader = lib.xpu_timer_python_dataloader
    except AttributeError:
        return "the library's entry points are not in the process"
    note_gc.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
    note_gc.restype = None
    note_loader.argtypes = [ctypes.c_uint64]
    note_loader.restype = None
    installed = []

    started = [0]

    def on_gc(phase, info):
        try:
            if phase == "start":
                started[0] = clock()
            elif started[0]:
                note_gc(int(info.get("generation", 0)), clock() - started[0],
                        int(info.get("collected", 0)))
                started[0] = 0
        except Exception:
            pass

    gc.callbacks.append(on_gc)
    installed.append("gc")

    import os
    if not os.environ.get("XPU_TIMER_STEP_RANGE"):
        hook_module, _, hook_name = step_target.partition(":")
        register = getattr(sys.modules.get(hook_module), hook_name, None)
        try:
            note_step = lib.xpu_timer_python_step
            note_step.argtypes = []
            note_step.restype = None
        except AttributeError:
            register = None
        if callable(register):
            def on_step(optimizer, args, kwargs):
                try:
                    note_step()
                except Exception:
                    pass

            try:
                register(on_step)
                installed.append("optimizer")
            except Exception:
                pass

    module_name, _, class_name = loader_target.partition(":")
    module = sys.modules.get(module_name)
    cls = getattr(module, class_name, None) if module is not None else None
    nxt = cls.__dict__.get("__next__") if isinstance(cls, type) else None
    if nxt is None or not hasattr(nxt, "__code__"):
        return ",".join(installed) + "; no DataLoader probe: %s not loaded" % loader_target

    pending = [0]
    if sys.version_info >= (3, 12):
        mon = sys.monitoring
        tool = monitoring_tool
        if mon.get_tool(tool) is not None:
            return ",".join(installed) + "; no DataLoader probe: sys.monitoring tool %d is taken" % tool
        mon.use_tool_id(tool, "xpu_timer")
        events = mon.events

        def on_start(code, offset):
            pending[0] = clock()

        def on_return(code, offset, value):
            try:
                if pending[0]:
                    note_loader(clock() - pending[0])
                    pending[0] = 0
            except Exception:
                pass

        mon.register_callback(tool, events.PY_START, on_start)
        mon.register_callback(tool, events.PY_RETURN, on_return)
        # A __next__ that raises (StopIteration at an epoch's end) is not a
        # batch: its start is overwritten by the next call.
        mon.set_local_events(tool, nxt.__code__, events.PY_START | events.PY_RETURN)
        installed.append("dataloader:sys.monitoring")
    else:
        def timed_next(self, _next=nxt):
            t = clock()
            batch = _next(self)
            try:
                note_loader(clock() - t)
            except Exception:
                pass
            return batch

        timed_next.__wrapped__ = nxt
        setattr(cls, "__next__", timed_next)
        installed.append("dataloader:wrapped")
    return ",".join(installed)
