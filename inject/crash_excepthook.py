# Run once inside a rank's own interpreter by libxpu_timer_inject.so (see
# crash_python_hook.h), in a private namespace. It chains a sys.excepthook
# that reports an uncaught exception (type, message, traceback) to the
# supervisor on a new connection to $XPU_TIMER_SOCKET, as one kPythonException
# message (protocol header + JSON), then calls the hook it replaced. With no
# supervisor listening it writes the JSON to
# $XPU_TIMER_CRASH_DIR (or the cwd)/xpu_timer_exception-rank<R>-<pid>.json.
# Plugins never run here: the supervisor runs them in its own child python3.
# Nothing in this hook may raise into the interpreter's exit path.
#
# Every protocol constant comes from the caller (common/rank_messages.h, through
# crash_python_hook.cc): the header's struct format (fields magic, version,
# type, bytes, reserved), their values and the size limit; and so do the
# library's settings (inject/settings.h): the socket path and the crash
# folder, as bytes (empty: none).


def _xpu_timer_install(header_format, magic, version, msg_type, max_bytes, socket_path,
                       crash_dir):
    import os
    import struct
    import sys

    previous = sys.excepthook
    if getattr(previous, "_xpu_timer_hook", False):
        return
    pid = os.getpid()
    try:
        rank = int(os.environ.get("RANK", "0"))
    except ValueError:
        rank = 0
    socket_path = os.fsdecode(socket_path)
    crash_dir = os.fsdecode(crash_dir) or os.getcwd()
    header_bytes = struct.calcsize(header_format)

    def describe(exc_type, exc_value, exc_tb):
        import time
        import traceback

        frames = [{"file": f.filename, "func": f.name, "line": f.lineno}
                  for f in traceback.extract_tb(exc_tb)]
        try:
            message = str(exc_value)
        except Exception:  # a broken __str__ must not hide the crash
            message = "<str() failed>"
        try:
            args = [repr(a)[:1000] for a in getattr(exc_value, "args", ())][:16]
        except Exception:
            args = []
        try:
            formatted = "".join(traceback.format_exception(exc_type, exc_value, exc_tb))
        except Exception:
            formatted = ""
        return {
            "pid": pid,
            "rank": rank,
            "time": time.time(),
            "type": {
                "module": getattr(exc_type, "__module__", "builtins"),
                "qualname": getattr(exc_type, "__qualname__", str(exc_type)),
                "mro": [[getattr(c, "__module__", ""), getattr(c, "__qualname__", "")]
                        for c in getattr(exc_type, "__mro__", ())],
            },
            "message": message[:16384],
            "args": args,
            "traceback": frames[-200:],
            "formatted": formatted[-16384:],
        }

    def encode(doc):
        import json

        body = json.dumps(doc).encode("utf-8", "replace")
        if header_bytes + len(body) > max_bytes:
            doc = dict(doc, formatted="", args=[], traceback=doc["traceback"][-50:],
                       message=doc["message"][:2000])
            body = json.dumps(doc).encode("utf-8", "replace")
        size = header_bytes + len(body)
        return struct.pack(header_format, magic, version, msg_type, size, 0) + body

    def send(data):
        import socket

        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.settimeout(2.0)
            s.connect(socket_path)
            s.send(data)
        finally:
            s.close()

    def write_file(doc):
        import json

        path = os.path.join(crash_dir, "xpu_timer_exception-rank%d-%d.json" % (rank, pid))
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)

    def hook(exc_type, exc_value, exc_tb):
        # A fork child (DataLoader worker) is not the rank.
        if os.getpid() == pid:
            try:
                doc = describe(exc_type, exc_value, exc_tb)
                try:
                    if not socket_path:
                        raise OSError("no supervisor")
                    send(encode(doc))
                except Exception:
                    write_file(doc)
            except BaseException:
                pass
        previous(exc_type, exc_value, exc_tb)

    hook._xpu_timer_hook = True
    hook.__wrapped__ = previous
    sys.excepthook = hook
