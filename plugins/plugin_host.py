"""Runs one xpu-timer exit-hook plugin on one crash report.

Started by xpu_timer_supervisor as `python3 plugin_host.py PLUGIN.py`, once
per plugin and report, never inside the crashed process, with the report on
stdin as JSON:

  {"hook": "cpp", "stack_infos": {signal, rank, ip, pod_name, job_name, time,
                                  frame_infos: [{address, offset, function_name,
                                                 module, module_offset, build_id}],
                                  python_stacks: [{thread_id, thread_name, crashed,
                                                   holds_gil, frames: [{func, file, line}]}],
                                  death_cause}}
  {"hook": "python", "infos": {time, rank, ip, pod_name, job_name},
   "exception": {module, qualname, mro, message, args, traceback: [{file, func, line}]}}

(xpu-timer's keys, then ours: `function_name` of a frame no symbol table names
is "MODULE+0xOFFSET"; `python_stacks` are the Python threads read while the
rank waited in its handler, the crashed thread first, frames innermost first,
empty when not read; `death_cause` names a death no handler saw, else null),
where ip, pod_name and job_name are the supervisor's POD_IP, POD_NAME and
ENV_ARGO_WORKFLOW_NAME (else XPU_TIMER_JOB_NAME), "NOT_SET" when unset, as in
xpu-timer; and calls xpu_timer's functions with xpu_timer's argument shapes:
`xpu_timer_parse_cpp_exception(stack_infos)` and
`xpu_timer_parse_python_exception(exc_type, exc_value, exc_traceback, infos)`.
For the Python hook the exception is rebuilt here: exc_type is a class with
the original name and module, deriving from the nearest built-in exception
of the original's MRO (the class itself when it is a built-in), exc_value an
instance of it whose str() is the original message, and exc_traceback a real
traceback object whose frames carry the original file names, function names
and line numbers (so the traceback module formats it as the rank would have).

Everything this host prints ends up in the supervisor's log, a line starting
"error: " (and the indented traceback under it) as a warning; the supervisor
kills it after XPU_TIMER_PLUGIN_TIMEOUT seconds. Exit status: 0 plugin ran or
lacks the hook, 1 the plugin failed, 2 bad input.
"""

import ast
import builtins
import importlib.util
import json
import os
import sys
import time
import traceback


def load_plugin(path):
    name = "xpu_timer_plugin_" + "".join(c if c.isalnum() else "_" for c in path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("not a Python file: %s" % path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(module)
    return module


def rebuild_type(module, qualname, mro, message):
    base = Exception
    for m, q in mro:  # most derived first
        candidate = getattr(builtins, q, None) if m == "builtins" else None
        if isinstance(candidate, type) and issubclass(candidate, BaseException):
            base = candidate
            break
    if module == "builtins" and base.__qualname__ == qualname:
        return base
    return type(qualname.rsplit(".", 1)[-1], (base,), {
        "__module__": module,
        "__qualname__": qualname,
        "__str__": lambda self: message,
        "xpu_timer_rebuilt": True,
    })


def rebuild_value(exc_type, message, arg_reprs):
    try:
        args = tuple(ast.literal_eval(a) for a in arg_reprs)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        args = (message,)
    for attempt in (args, (message,)):
        try:
            value = exc_type(*attempt)
            if str(value) == message:
                return value
        except Exception:  # a constructor with other required arguments
            pass
    value = exc_type.__new__(exc_type)
    value.args = (message,)
    return value


def rebuild_traceback(frames, exc_value):
    """A real traceback through functions compiled at the original places."""
    functions = []
    for i, f in enumerate(frames):
        line = f.get("line") or 1
        stmt = "raise __xpu_exc__" if i == len(frames) - 1 else "__xpu_next__()"
        namespace = {"__xpu_exc__": exc_value}
        code = compile("\n" * (max(int(line), 1) - 1) + "def _f(): " + stmt, f["file"], "exec")
        exec(code, namespace)
        fn = namespace["_f"]
        changes = {"co_name": f["func"]}
        if hasattr(fn.__code__, "co_qualname"):
            changes["co_qualname"] = f["func"]
        fn.__code__ = fn.__code__.replace(**changes)
        functions.append((fn, namespace))
    for (fn, namespace), following in zip(functions, functions[1:] + [(None, None)]):
        namespace["__xpu_next__"] = following[0]
    if not functions:
        return None
    try:
        functions[0][0]()
    except BaseException as e:  # the exception we built, raised at the innermost frame
        tb = e.__traceback__.tb_next  # drop this function's own frame
        return tb
    return None


def run_python_hook(plugin, doc):
    fn = getattr(plugin, "xpu_timer_parse_python_exception", None)
    if fn is None:
        print("plugin has no xpu_timer_parse_python_exception: skipped")
        return
    e = doc["exception"]
    exc_type = rebuild_type(e["module"], e["qualname"], e.get("mro", []), e.get("message", ""))
    exc_value = rebuild_value(exc_type, e.get("message", ""), e.get("args", []))
    exc_tb = rebuild_traceback(e.get("traceback", []), exc_value)
    exc_value = exc_value.with_traceback(exc_tb)
    fn(exc_type, exc_value, exc_tb, doc["infos"])


def run_cpp_hook(plugin, doc):
    fn = getattr(plugin, "xpu_timer_parse_cpp_exception", None)
    if fn is None:
        print("plugin has no xpu_timer_parse_cpp_exception: skipped")
        return
    fn(doc["stack_infos"])


def main(argv):
    if len(argv) != 2:
        print("usage: plugin_host.py PLUGIN.py < report.json")
        return 2
    try:
        doc = json.load(sys.stdin)
        hook = doc["hook"]
    except (ValueError, KeyError) as e:
        print("error: bad report on stdin: %s" % e)
        return 2
    started = time.monotonic()
    try:
        plugin = load_plugin(argv[1])
    except BaseException as e:
        print("error: cannot load plugin %s: %s: %s" % (argv[1], type(e).__name__, e))
        return 1
    try:
        if hook == "python":
            run_python_hook(plugin, doc)
        else:
            run_cpp_hook(plugin, doc)
    except BaseException as e:
        print("error: plugin raised %s: %s" % (type(e).__name__, e))
        for line in traceback.format_exc().rstrip().splitlines():
            print("  " + line)
        return 1
    print("%s hook done in %.3f s" % (hook, time.monotonic() - started))
    return 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(main(sys.argv))
