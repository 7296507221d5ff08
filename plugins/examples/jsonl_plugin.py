"""Example xpu-timer exit-hook plugin: one JSON line per call.

Appends to $XPU_TIMER_PLUGIN_JSONL (default ./xpu_timer_crashes.jsonl, in the
supervisor's working directory). Use it with
  XPU_TIMER_EXIT_HOOK_PLUGIN=/path/to/jsonl_plugin.py xpu_timer_supervisor -- ...
"""

import json
import os
import traceback


def _append(doc):
    path = os.environ.get("XPU_TIMER_PLUGIN_JSONL", "./xpu_timer_crashes.jsonl")
    line = (json.dumps(doc) + "\n").encode()
    # One write with O_APPEND: lines from plugin hosts running at once do not mix.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def xpu_timer_parse_cpp_exception(stack_infos):
    _append({"hook": "cpp", "stack_infos": stack_infos})


def xpu_timer_parse_python_exception(exc_type, exc_value, exc_traceback, infos):
    _append({
        "hook": "python",
        "infos": infos,
        "exc_type": exc_type.__name__,
        "exc_module": exc_type.__module__,
        "exc_type_is_exception_class": isinstance(exc_type, type)
        and issubclass(exc_type, BaseException),
        "exc_value": str(exc_value),
        "exc_value_is_instance": isinstance(exc_value, exc_type),
        "traceback_type": type(exc_traceback).__name__,
        "traceback": [{"file": f.filename, "func": f.name, "line": f.lineno}
                      for f in traceback.extract_tb(exc_traceback)],
    })
