"""The call sites of inject/call_sites.h, read from this interpreter's own
frames: run by ctest once per interpreter (3.8 to 3.13) with the injected
library preloaded (LD_PRELOAD). ctypes.CDLL releases the GIL around the call,
as PyTorch does around a collective, so the capture runs as in a hook.

Usage: LD_PRELOAD=libxpu_timer_inject.so python call_sites_test.py
"""
import ctypes
import os
import subprocess
import sys
import threading
import unittest

LIB = ctypes.CDLL(None)
CAPTURE = LIB.xpu_timer_bench_call_site
CAPTURE.argtypes = [ctypes.c_long, ctypes.POINTER(ctypes.c_ulonglong)]
CAPTURE.restype = ctypes.c_int
TEXT = LIB.xpu_timer_bench_call_site_text
TEXT.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_ulong]
TEXT.restype = ctypes.c_int

HERE = os.path.abspath(__file__)
TORCH_C10D = "/opt/venv/lib/python3/site-packages/torch/distributed/distributed_c10d.py"
TORCH_LOGGER = "/opt/venv/lib/python3/site-packages/torch/distributed/c10d_logger.py"


def site_of(site_id):
    """(function, file, line) of a site id, None for -1."""
    if site_id < 0:
        return None
    buf = ctypes.create_string_buffer(512)
    n = TEXT(site_id, buf, len(buf))
    assert n > 0, site_id
    function, file, line = buf.value.decode().split("\t")
    return function, file, int(line)


def library(path, source):
    """The functions of `source` as if they were in the library file `path`."""
    namespace = {"CAPTURE": CAPTURE}
    exec(compile(source, path, "exec"), namespace)
    return namespace


# torch.distributed.all_reduce as PyTorch lays it out: a logging wrapper
# around the collective, both in torch's package.
C10D = library(TORCH_C10D, "def all_reduce():\n    return CAPTURE(1, None)\n")
LOGGER = library(TORCH_LOGGER, "def wrapper(fn):\n    return fn()\n")


def user_all_reduce():
    return LOGGER["wrapper"](C10D["all_reduce"])


class CallSitesTest(unittest.TestCase):
    def test_the_line_that_called_is_the_site(self):
        line = sys._getframe().f_lineno + 1
        got = site_of(CAPTURE(1, None))
        self.assertEqual(got, ("test_the_line_that_called_is_the_site", HERE, line))

    def test_library_frames_are_passed_over(self):
        line = sys._getframe().f_lineno + 1
        got = site_of(user_all_reduce())
        # user_all_reduce's own line is the first outside the library.
        self.assertEqual(got[0], "user_all_reduce")
        self.assertEqual(got[1], HERE)
        self.assertNotEqual(got[2], line)
        self.assertEqual(got[2], user_all_reduce.__code__.co_firstlineno + 1)

    def test_two_lines_two_sites_one_line_one_site(self):
        ids = [CAPTURE(1, None) for _ in range(3)]
        other = CAPTURE(1, None)
        self.assertEqual(len(set(ids)), 1)
        self.assertNotEqual(ids[0], other)
        self.assertEqual(site_of(other)[2], site_of(ids[0])[2] + 1)

    def test_methods_generators_and_threads(self):
        class Model:
            def step(self):
                return CAPTURE(1, None)

        def gen():
            yield CAPTURE(1, None)

        self.assertEqual(site_of(Model().step())[0], "step")
        self.assertEqual(site_of(next(gen()))[0], "gen")
        out = []

        def worker():
            out.append(CAPTURE(1, None))

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        self.assertEqual(site_of(out[0])[0], "worker")

    def test_a_new_code_object_at_an_old_address_gets_its_own_line(self):
        # Functions made and dropped in turn: their code objects may reuse
        # addresses, the per-thread caches must not answer with an old line.
        for pad in range(40):
            ns = library(HERE + ".generated",
                         "\n" * pad + "def f():\n    return CAPTURE(1, None)\n")
            got = site_of(ns["f"]())
            self.assertEqual(got, ("f", HERE + ".generated", pad + 2))
            del ns

    def test_many_calls_cost_little_and_agree(self):
        spent = ctypes.c_ulonglong()
        first = CAPTURE(1, None)
        site = CAPTURE(100000, ctypes.byref(spent))
        self.assertEqual(site_of(site)[0], "test_many_calls_cost_little_and_agree")
        self.assertNotEqual(site, first)  # another line
        self.assertGreater(spent.value, 0)

    def test_the_environment_turns_it_off_or_changes_the_library(self):
        def run(env):
            code = ("import ctypes, sys; sys.path.insert(0, %r); import call_sites_test as t; "
                    "print(t.site_of(t.user_all_reduce()))" % os.path.dirname(HERE))
            full = dict(os.environ)
            full.update(env)
            return subprocess.run([sys.executable, "-B", "-c", code], env=full, check=True,
                                  stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()

        self.assertEqual(run({"XPU_TIMER_CALL_SITES": "0"}), "None")
        # Nothing is library code: the innermost frame, in torch's file.
        self.assertEqual(run({"XPU_TIMER_CALL_SITE_SKIP": ""}),
                         str(("all_reduce", TORCH_C10D, 2)))
        # Only the logger is: the collective's own function.
        self.assertEqual(run({"XPU_TIMER_CALL_SITE_SKIP": "c10d_logger"}),
                         str(("all_reduce", TORCH_C10D, 2)))
        self.assertIn("'user_all_reduce'", run({}))


if __name__ == "__main__":
    unittest.main()
