# Python-side probes of a rank, run once by libxpu_timer_inject.so (inject/
# python_probes.h) in a private namespace, with the GIL held: what the rank's
# interpreter does between GPU calls. What runs at each event is C, made by
# the library as callables (inject/python_tracer.h): no Python code of ours
# runs at a collection or a traced call.
#  - garbage collection: a gc.callbacks entry times every collection (start to
#    stop) and counts it per generation, with the objects it freed;
#  - traced functions: the built-in ones below and those named by
#    XPU_TIMER_HOST_TRACING_FUNC (module@object@function, module@function, or
#    a function of the entry script), each call timed (docs/usage.md "Python
#    function tracing"). On Python >= 3.12 through sys.monitoring local events
#    on those code objects only (never a profiler hook, so it never clashes
#    with torch.profiler or a debugger; an exception leaving any Python frame
#    costs a C call, PY_UNWIND being global only); before 3.12 by wrapping the
#    function where it is defined (its __wrapped__ kept);
#  - the DataLoader: the time the training loop spends in the iterator's
#    __next__ (waiting for a batch), per batch: a traced function whose calls
#    count as batches (only those that return) instead;
#  - training steps: a global optimizer step post-hook (torch's
#    register_optimizer_step_post_hook, or the "module:function" given) notes
#    the end of every optimizer step; the time between two is a step. It
#    notes no step when XPU_TIMER_STEP_RANGE names an NVTX range for steps;
#  - communicator names: PyTorch passes no name to NCCL; each process group's
#    description ("default_pg", new_group(group_desc="tp")) is given to its
#    communicator (ProcessGroupNCCL._comm_ptr()) when new ones were
#    registered, at an optimizer step or at most once a second at a garbage
#    collection;
#  - thread names: before CPython 3.14 (which does it itself) a
#    threading.Thread's OS thread keeps the process's name, so stack files
#    could not tell Python threads apart. Each thread that did not name
#    itself gets its Python name as OS name, once: those running when the
#    probes start, then the new ones at each optimizer step (never at a
#    garbage collection: it may run at any allocation). XPU_TIMER_NAME_THREADS=0
#    turns it off.
# Names are looked up without importing anything or running any code of the
# program; one not found yet (its module is imported later) is looked up
# again at every optimizer step and at most once a second at a garbage
# collection, when a module was imported since (or it is in the entry
# script). They report through functions the library exports, called with
# ctypes (PyDLL: the GIL stays held). Nothing here may raise into the user's
# program.

_XPU_TIMER_BUILTIN_TRACED = (
    "torch@cuda@synchronize",
    "torch.cuda@Event@synchronize",
    "torch.cuda@Event@wait",
    "torch.cuda@Stream@synchronize",
    "torch.cuda@Stream@wait_event",
    "torch.cuda@Stream@wait_stream",
    "torch@autograd@backward",
    "torch@autograd@grad",
    "megatron.core.pipeline_parallel@schedules@forward_step",
    "megatron.core.pipeline_parallel@schedules@backward_step",
)
_XPU_TIMER_NAME_BYTES = 47  # proto::kRangeNameBytes - 1


def _xpu_timer_parse_traced(text):
    """XPU_TIMER_HOST_TRACING_FUNC's value -> ([(spec, module, attrs, name)],
    [specs that are none of the three forms]). `name` is the dotted spec, cut
    to its last components that fit a range name."""
    good, bad = [], []
    for spec in text.split(","):
        spec = spec.strip()
        if not spec:
            continue
        parts = spec.split("@")
        module = "__main__" if len(parts) == 1 else parts[0]
        attrs = parts[1:] if len(parts) > 1 else parts
        if (len(parts) > 3 or not spec.isascii()
                or not all(m.isidentifier() for m in module.split("."))
                or not all(a.isidentifier() for a in attrs)):
            bad.append(spec)
            continue
        name = ".".join(parts)
        while len(name) > _XPU_TIMER_NAME_BYTES and "." in name:
            name = name.split(".", 1)[1]
        good.append((spec, module, attrs, name[-_XPU_TIMER_NAME_BYTES:]))
    return good, bad


def _xpu_timer_lookup(sys, types, module, attrs):
    """(owner, attribute, value) that module@attrs names, read from module
    and class dictionaries only (no import, no getattr hook runs); None if
    it is not there (yet)."""
    obj, path, owner = sys.modules.get(module), module, None
    for name in attrs:
        owner, value = obj, None
        if isinstance(obj, type):
            for klass in obj.__mro__:
                if name in vars(klass):
                    value = vars(klass)[name]
                    break
        elif isinstance(obj, types.ModuleType):
            value = vars(obj).get(name)
            if value is None:
                value = sys.modules.get(path + "." + name)
        if value is None:
            return None
        path, obj = path + "." + name, value
    return owner, attrs[-1], obj


def _xpu_timer_thread_namer(sys, ctypes, lib, wanted):
    """A function giving each threading.Thread not seen yet its Python name as
    OS name (inject/os_thread_names.h: unless it named itself), as CPython
    3.14 does when a thread starts: the name encoded in the filesystem
    encoding ("replace"), cut to 15 bytes. None where there is nothing to do.
    It never raises; its first failure is logged (debug), the others not.
    `wanted`: XPU_TIMER_NAME_THREADS (inject/settings.h)."""
    if sys.version_info >= (3, 14) or not wanted:
        return None
    try:
        name_thread = lib.xpu_timer_python_name_thread
        debug = lib.xpu_timer_python_debug
        import weakref
    except (AttributeError, ImportError):
        return None
    name_thread.argtypes = [ctypes.c_int, ctypes.c_char_p]
    name_thread.restype = ctypes.c_int
    debug.argtypes = [ctypes.c_char_p]
    debug.restype = None
    encoding = sys.getfilesystemencoding()
    # The threads done with: id -> weak reference, which leaves with its
    # thread. Cheaper per step than a WeakSet (no reference made per lookup).
    seen = {}

    def done(thread):
        key = id(thread)  # not reused before the callback ran: the object is alive until then
        seen[key] = weakref.ref(thread, lambda _, key=key: seen.pop(key, None))
    state = {"failed": False}

    def name_new_threads():
        # Never imported here: threading imported on a thread other than the
        # main one would take that thread for the main thread.
        threading = sys.modules.get("threading")
        if threading is None or state["failed"]:
            return
        try:
            main = threading.main_thread()
            dummy = getattr(threading, "_DummyThread", ())  # a foreign thread: not ours to name
            for thread in threading.enumerate():
                known = seen.get(id(thread))
                if known is not None and known() is thread:
                    continue
                tid = getattr(thread, "native_id", None)
                if thread is not main and not isinstance(thread, dummy):
                    if tid is None:
                        continue  # starting: named at the next step
                    name = thread.name
                    if isinstance(name, str) and name:
                        name_thread(tid, name.encode(encoding, "replace")[:15])
                done(thread)
        except Exception as e:
            state["failed"] = True
            debug(("Python thread names: off after %r" % (e,)).encode("utf-8", "replace"))

    return name_new_threads


def _xpu_timer_comm_namer(sys, ctypes, lib):
    """A function giving the NCCL communicators of torch's process groups
    their group's name, which PyTorch never passes to NCCL: the group's
    description ("default_pg", "tp" as given to new_group(group_desc=...)),
    else "pg" and its group name. It looks only when the library registered
    communicators since its last look (lazily created ones appear at a
    group's first collective) and only at process groups that exist; it
    imports nothing. None where the library lacks the entry points. It never
    raises; its first failure is logged (debug) and ends it."""
    try:
        count = lib.xpu_timer_python_comm_count
        name_comm = lib.xpu_timer_python_name_comm
        debug = lib.xpu_timer_python_debug
    except AttributeError:
        return None
    count.argtypes = []
    count.restype = ctypes.c_uint32
    name_comm.argtypes = [ctypes.c_uint64, ctypes.c_char_p]
    name_comm.restype = ctypes.c_int
    debug.argtypes = [ctypes.c_char_p]
    debug.restype = None
    state = {"seen": 0, "failed": False}

    def name_comms():
        if state["failed"]:
            return
        registered = count()
        if registered == state["seen"]:
            return
        c10d = sys.modules.get("torch.distributed.distributed_c10d")
        torch = sys.modules.get("torch")
        if c10d is None or torch is None:
            return
        try:
            world = getattr(c10d, "_world", None)
            names = getattr(world, "pg_names", None)
            if not names:
                return
            device = torch.device("cuda", torch.cuda.current_device())
            for pg, group_name in list(names.items()):
                desc = getattr(pg, "group_desc", "")
                label = desc if isinstance(desc, str) and desc and desc != "undefined" \
                    else "pg%s" % (group_name,)
                try:  # a group without NCCL, or whose communicator is not made yet
                    ptr = int(pg._get_backend(device)._comm_ptr())
                except Exception:
                    continue
                if ptr:
                    name_comm(ptr, label.encode("ascii", "replace")[:31])
            state["seen"] = registered
        except Exception as e:
            state["failed"] = True
            debug(("communicator names: off after %r" % (e,)).encode("utf-8", "replace"))

    return name_comms


def _xpu_timer_probes(loader_target, monitoring_tool, step_target, count_steps, name_threads,
                     traced):
    """The library's settings (inject/settings.h) come as arguments: the
    iterator and the step hook ("module:name"), the sys.monitoring tool id,
    whether optimizer steps are steps (no XPU_TIMER_STEP_RANGE), whether
    threads get their Python names, and XPU_TIMER_HOST_TRACING_FUNC (bytes)."""
    import ctypes
    import functools
    import gc
    import sys
    import types

    lib = ctypes.PyDLL(None)
    try:
        builtin = lib.xpu_timer_python_builtin
        trace_code = lib.xpu_timer_python_trace
        set_retry = lib.xpu_timer_python_set_retry
        warn = lib.xpu_timer_python_warn
        report = lib.xpu_timer_python_probes
    except AttributeError:
        return "the library's entry points are not in the process"
    builtin.argtypes = [ctypes.c_char_p]
    builtin.restype = ctypes.py_object
    trace_code.argtypes = [ctypes.py_object, ctypes.c_char_p, ctypes.c_int]
    trace_code.restype = ctypes.c_int
    set_retry.argtypes = [ctypes.py_object]
    set_retry.restype = None
    warn.argtypes = [ctypes.c_char_p]
    warn.restype = None
    report.argtypes = [ctypes.c_char_p]
    report.restype = None
    installed = []

    try:
        gc.callbacks.append(builtin(b"gc"))
        installed.append("gc")
    except Exception:
        pass

    name_threads = _xpu_timer_thread_namer(sys, ctypes, lib, name_threads)
    if name_threads is not None:
        name_threads()  # the threads running now; before the step hook, which may run at once
        installed.append("thread-names")
    name_comms = _xpu_timer_comm_namer(sys, ctypes, lib)
    if name_comms is not None:
        name_comms()
        installed.append("comm-names")
    pending = []  # what is not found yet: (module, attrs, name, loader, spec)
    if count_steps or name_threads is not None or name_comms is not None:
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
                    if count_steps:
                        note_step()
                    if name_threads is not None:
                        name_threads()
                    if name_comms is not None:
                        name_comms()
                    if pending:
                        retry()  # defined below; a step during the install waits
                except Exception:
                    pass

            try:
                register(on_step)
                if count_steps:
                    installed.append("optimizer")
            except Exception:
                pass

    try:
        begin, end, unwind = builtin(b"begin"), builtin(b"end"), builtin(b"unwind")
    except Exception:
        return ",".join(installed) + "; no tracing: the library's callables are missing"
    monitoring = sys.version_info >= (3, 12)
    state = {"tool": None, "functions": 0, "loader": None}
    keep = []  # the traced code objects: the library holds their addresses

    def start_monitoring():
        # Our tool's callbacks, and the two events that cannot be local:
        # PY_UNWIND (a traced call left by an exception) and PY_THROW (a
        # traced generator resumed by throw()).
        mon = sys.monitoring
        if mon.get_tool(monitoring_tool) is not None:
            return "sys.monitoring tool %d is taken" % monitoring_tool
        mon.use_tool_id(monitoring_tool, "xpu_timer")
        e = mon.events
        for event, callback in ((e.PY_START, begin), (e.PY_RESUME, begin), (e.PY_THROW, begin),
                                (e.PY_RETURN, end), (e.PY_YIELD, end), (e.PY_UNWIND, unwind)):
            mon.register_callback(monitoring_tool, event, callback)
        mon.set_events(monitoring_tool, e.PY_UNWIND | e.PY_THROW)
        state["tool"] = monitoring_tool
        return None

    def wrap(fn, code):
        def traced(*args, **kwargs):
            begin(code)
            try:
                result = fn(*args, **kwargs)
            except BaseException:
                unwind(code)
                raise
            end(code)
            return result

        return functools.update_wrapper(traced, fn)

    def install(module, attrs, name, loader):
        """None once traced (or traced already), "" if not found yet, else
        why it cannot be."""
        try:
            return install_found(module, attrs, name, loader)
        except Exception as e:  # whatever the program put under that name
            return "failed: %r" % (e,)

    def install_found(module, attrs, name, loader):
        found = _xpu_timer_lookup(sys, types, module, attrs)
        if found is None:
            return ""
        owner, attr, value = found
        method_kind = type(value) if isinstance(value, (staticmethod, classmethod)) else None
        fn = value.__func__ if method_kind is not None else value
        if not isinstance(fn, types.FunctionType):
            return "not a Python function"
        inner = fn  # a decorator's wrapper code is shared: trace the function's own
        for _ in range(8):
            wrapped = vars(inner).get("__wrapped__")
            if not isinstance(wrapped, types.FunctionType):
                break
            inner = wrapped
        code = inner.__code__
        if monitoring:
            if state["tool"] is None:
                why = start_monitoring()
                if why:
                    return why
        elif code.co_flags & 0x2a0:  # CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR
            return "a generator or coroutine: traced on Python 3.12+ only"
        rc = trace_code(code, name.encode(), 1 if loader else 0)
        if rc < 0:
            return "too many traced functions"
        if rc == 1:
            return None
        keep.append(code)
        if monitoring:
            e = sys.monitoring.events
            sys.monitoring.set_local_events(
                monitoring_tool, code, e.PY_START | e.PY_RESUME | e.PY_RETURN | e.PY_YIELD)
        else:
            traced = wrap(fn, code)
            setattr(owner, attr, method_kind(traced) if method_kind is not None else traced)
        if loader:
            state["loader"] = "dataloader:" + ("sys.monitoring" if monitoring else "wrapped")
        else:
            state["functions"] += 1
        return None

    def summary():
        parts = list(installed)
        if state["loader"]:
            parts.append(state["loader"])
        if state["functions"]:
            parts.append("functions:%d" % state["functions"])
        return ",".join(parts)

    # (module, attrs, name, loader, the user's spec or None for a built-in)
    module_name, _, class_name = loader_target.partition(":")
    wanted = [(module_name, [class_name, "__next__"], "DataLoader", True, None)]
    for spec in _XPU_TIMER_BUILTIN_TRACED:
        for _, module, attrs, name in _xpu_timer_parse_traced(spec)[0]:
            wanted.append((module, attrs, name, False, None))
    user, invalid = _xpu_timer_parse_traced(traced.decode("utf-8", "replace"))
    for spec, module, attrs, name in user:
        wanted.append((module, attrs, name, False, spec))

    problems = ["%s (not module@object@function)" % s for s in invalid]
    for item in wanted:
        why = install(*item[:4])
        if why == "":
            pending.append(item)
            if item[4] is not None:
                problems.append("%s (not found yet: traced once it is)" % item[4])
        elif why is not None and (item[4] is not None or item[3]):
            problems.append("%s (%s)" % (item[4] or loader_target, why))
    if problems:
        warn(("Python function tracing: not traced now: " + ", ".join(problems)).encode(
            "utf-8", "replace"))

    last_modules = [len(sys.modules)]

    def retry():
        """Names new communicators; looks the pending names up again when a
        module was imported since or one is in the entry script. True while
        there is something to do at later collections."""
        if name_comms is not None:
            name_comms()  # a group's communicators before the first optimizer step
        try:
            count = len(sys.modules)
            if count == last_modules[0] and not any(p[0] == "__main__" for p in pending):
                return bool(pending) or name_comms is not None
            last_modules[0] = count
            before = summary()
            late = []
            for item in list(pending):
                why = install(*item[:4])
                if why != "":
                    pending.remove(item)
                if why and item[4] is not None:
                    late.append("%s (%s)" % (item[4], why))
            if late:  # the user's names found since, which cannot be traced
                warn(("Python function tracing: not traced: " + ", ".join(late)).encode(
                    "utf-8", "replace"))
            if summary() != before:
                report(summary().encode())
            return bool(pending) or name_comms is not None
        except Exception:
            return name_comms is not None

    if pending or name_comms is not None:
        set_retry(retry)
    return summary()
