#!/usr/bin/env python3
"""Unit tests of python_probes.py's handling of names (XPU_TIMER_HOST_TRACING_FUNC
and the built-in list): the parser's exact output, and a lookup that finds
functions, methods and submodules without importing or running any of the
program's code; and of the thread namer: which threads it asks the library
to name, with which bytes, once each. The script is loaded as the library runs it, into a private
namespace. Run by ctest (python_probes_test)."""

import ctypes
import os
import sys
import threading
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PROBES = {}
with open(os.path.join(HERE, "python_probes.py")) as f:
    exec(compile(f.read(), "python_probes.py", "exec"), PROBES)
parse = PROBES["_xpu_timer_parse_traced"]
lookup = PROBES["_xpu_timer_lookup"]
thread_namer = PROBES["_xpu_timer_thread_namer"]
comm_namer = PROBES["_xpu_timer_comm_namer"]


class ParseTraced(unittest.TestCase):
    def test_the_three_forms_and_their_names(self):
        good, bad = parse("torch@cuda@synchronize, torch.cuda@Stream@wait_event,train_step,,"
                          "torch.distributed@all_reduce")
        self.assertEqual(good, [
            ("torch@cuda@synchronize", "torch", ["cuda", "synchronize"],
             "torch.cuda.synchronize"),
            ("torch.cuda@Stream@wait_event", "torch.cuda", ["Stream", "wait_event"],
             "torch.cuda.Stream.wait_event"),
            ("train_step", "__main__", ["train_step"], "train_step"),
            ("torch.distributed@all_reduce", "torch.distributed", ["all_reduce"],
             "torch.distributed.all_reduce"),
        ])
        self.assertEqual(bad, [])

    def test_malformed_specs_are_set_apart(self):
        good, bad = parse("a@b@c@d,a@@b,@f,mod.1x@f,f(),\u00e9t\u00e9@f,x'); import os,a.b@c")
        self.assertEqual(bad, ["a@b@c@d", "a@@b", "@f", "mod.1x@f", "f()", "\u00e9t\u00e9@f",
                               "x'); import os"])
        self.assertEqual([g[0] for g in good], ["a.b@c"])

    def test_long_names_keep_their_last_components(self):
        good, _ = parse("megatron.core.pipeline_parallel@schedules@backward_step")
        self.assertEqual(good[0][3], "core.pipeline_parallel.schedules.backward_step")
        good, _ = parse("m@" + "f" * 60)
        self.assertEqual(good[0][3], "f" * 47)

    def test_the_builtin_list_parses_whole(self):
        good, bad = parse(",".join(PROBES["_XPU_TIMER_BUILTIN_TRACED"]))
        self.assertEqual(bad, [])
        self.assertEqual(len(good), 10)
        self.assertTrue(all(len(g[3]) <= 47 for g in good))


class Lookup(unittest.TestCase):
    def setUp(self):
        def f():
            pass

        class Base:
            def method(self):
                pass

            @staticmethod
            def static():
                pass

            @property
            def prop(self):
                raise AssertionError("a property ran")

        class Derived(Base):
            pass

        def module_getattr(name):
            raise AssertionError("a module __getattr__ ran for " + name)

        pkg = types.ModuleType("pkg")
        pkg.__getattr__ = module_getattr  # a lazy module (PEP 562)
        sub = types.ModuleType("pkg.sub")
        sub.f, sub.Derived = f, Derived
        self.f, self.base, self.derived, self.sub = f, Base, Derived, sub
        self.sys = types.SimpleNamespace(modules={"pkg": pkg, "pkg.sub": sub})

    def test_functions_methods_and_submodules_are_found(self):
        # pkg.sub is not an attribute of pkg yet, but an imported module.
        self.assertEqual(lookup(self.sys, types, "pkg", ["sub", "f"]), (self.sub, "f", self.f))
        owner, attr, value = lookup(self.sys, types, "pkg.sub", ["Derived", "method"])
        self.assertIs(owner, self.derived)  # the class named, the method inherited
        self.assertEqual(attr, "method")
        self.assertIs(value, vars(self.base)["method"])
        value = lookup(self.sys, types, "pkg.sub", ["Derived", "static"])[2]
        self.assertIsInstance(value, staticmethod)

    def test_what_is_not_there_is_none_and_nothing_runs(self):
        self.assertIsNone(lookup(self.sys, types, "pkg", ["missing"]))
        self.assertIsNone(lookup(self.sys, types, "not_imported", ["f"]))
        self.assertIsNone(lookup(self.sys, types, "pkg.sub", ["f", "attr_of_a_function"]))
        self.assertIsInstance(lookup(self.sys, types, "pkg.sub", ["Derived", "prop"])[2], property)


class FakeLibrary:
    """The library's two entry points the namer calls, recording their calls."""

    def __init__(self, fail=False):
        self.named, self.debug_lines = [], []

        def name_thread(tid, name):
            if fail:
                raise OSError("no /proc")
            self.named.append((tid, name))
            return 1

        def debug(line):
            self.debug_lines.append(line)

        self.xpu_timer_python_name_thread, self.xpu_timer_python_debug = name_thread, debug


class ThreadNamer(unittest.TestCase):
    def setUp(self):
        self.release = threading.Event()
        self.threads = []

    def tearDown(self):
        self.release.set()
        for t in self.threads:
            t.join()

    def start(self, name):
        t = threading.Thread(target=self.release.wait, name=name, daemon=True)
        t.start()  # returns once the thread set its native_id
        self.threads.append(t)
        return t

    def ours(self, named):
        mine = {t.native_id for t in self.threads}
        return [(tid, name) for tid, name in named if tid in mine]

    def test_each_thread_is_named_once_with_its_name_encoded_and_cut_to_15_bytes(self):
        lib = FakeLibrary()
        fake_sys = types.SimpleNamespace(version_info=(3, 13), modules=sys.modules,
                                         getfilesystemencoding=lambda: "utf-8")
        name_new_threads = thread_namer(fake_sys, ctypes, lib, True)
        prefetch = self.start("data-prefetch")
        # 3.14 cuts bytes, even within a character ("\u00e9" is 2 bytes).
        long = self.start("prefetch-data-\u00e9t\u00e9")
        name_new_threads()
        self.assertEqual(self.ours(lib.named), [(prefetch.native_id, b"data-prefetch"),
                                                (long.native_id, b"prefetch-data-\xc3")])
        self.assertNotIn(threading.main_thread().native_id, [tid for tid, _ in lib.named])
        late = self.start("late-loader")
        lib.named.clear()
        name_new_threads()  # only the thread not seen yet
        self.assertEqual(self.ours(lib.named), [(late.native_id, b"late-loader")])
        lib.named.clear()
        name_new_threads()
        self.assertEqual(lib.named, [])

    def test_off_on_3_14_and_with_the_opt_out(self):
        lib = FakeLibrary()
        py314 = types.SimpleNamespace(version_info=(3, 14), modules=sys.modules,
                                      getfilesystemencoding=lambda: "utf-8")
        self.assertIsNone(thread_namer(py314, ctypes, lib, True))
        self.assertIsNone(thread_namer(sys, ctypes, lib, False))  # XPU_TIMER_NAME_THREADS=0
        self.assertIsNone(thread_namer(sys, ctypes, object(), True))

    def test_a_failure_is_said_once_and_never_raised(self):
        lib = FakeLibrary(fail=True)
        fake_sys = types.SimpleNamespace(version_info=(3, 13), modules=sys.modules,
                                         getfilesystemencoding=lambda: "utf-8")
        name_new_threads = thread_namer(fake_sys, ctypes, lib, True)
        self.start("data-prefetch")
        name_new_threads()
        self.start("another")
        name_new_threads()
        self.assertEqual(lib.debug_lines, [b"Python thread names: off after OSError('no /proc')"])

    def test_nothing_without_threading_imported(self):
        lib = FakeLibrary()
        no_threading = types.SimpleNamespace(version_info=(3, 13), modules={},
                                             getfilesystemencoding=lambda: "utf-8")
        thread_namer(no_threading, ctypes, lib, True)()
        self.assertEqual(lib.named, [])


class FakeCommLibrary:
    """The library's side of communicator naming: a registry of `count`
    communicators, and the names it was given."""

    def __init__(self):
        self.count, self.named, self.debug_lines = 0, [], []
        self.xpu_timer_python_comm_count = lambda: self.count
        self.xpu_timer_python_name_comm = lambda ptr, name: self.named.append((ptr, name)) or 1

        def debug(line):
            self.debug_lines.append(line)

        self.xpu_timer_python_debug = debug


class FakeGroup:
    def __init__(self, desc, ptr):
        self.group_desc, self.ptr, self.asked = desc, ptr, 0

    def _get_backend(self, device):
        self.asked += 1
        if self.ptr is None:
            raise RuntimeError("no NCCL backend for this group")
        return types.SimpleNamespace(_comm_ptr=lambda: self.ptr)


def fake_torch(groups):
    """sys as the namer sees it: torch and its c10d world with `groups`
    ({group: group_name})."""
    torch = types.SimpleNamespace(device=lambda kind, index: (kind, index),
                                  cuda=types.SimpleNamespace(current_device=lambda: 0))
    c10d = types.SimpleNamespace(_world=types.SimpleNamespace(pg_names=groups))
    return types.SimpleNamespace(modules={"torch": torch,
                                          "torch.distributed.distributed_c10d": c10d})


class CommNamer(unittest.TestCase):
    def test_each_groups_communicator_gets_its_description_or_its_group_name(self):
        lib = FakeCommLibrary()
        default, tp, undescribed, gloo, lazy = (
            FakeGroup("default_pg", 0x1000), FakeGroup("tp", 0x2000),
            FakeGroup("undefined", 0x3000), FakeGroup("gloo_only", None), FakeGroup("dp", 0))
        groups = {default: "0", tp: "1", undescribed: "2", gloo: "3", lazy: "4"}
        name_comms = comm_namer(fake_torch(groups), ctypes, lib)
        lib.count = 3
        name_comms()
        self.assertEqual(lib.named, [(0x1000, b"default_pg"), (0x2000, b"tp"), (0x3000, b"pg2")])
        # Nothing new registered: torch is not asked again.
        asked = tp.asked
        name_comms()
        self.assertEqual(tp.asked, asked)
        # dp's communicator made at its first collective: named at the next look.
        lazy.ptr = 0x4000
        lib.count = 4
        lib.named.clear()
        name_comms()
        self.assertIn((0x4000, b"dp"), lib.named)
        self.assertEqual(lib.debug_lines, [])

    def test_nothing_before_torch_distributed_is_imported(self):
        lib = FakeCommLibrary()
        lib.count = 2
        comm_namer(types.SimpleNamespace(modules={}), ctypes, lib)()
        self.assertEqual(lib.named, [])

    def test_a_failure_is_said_once_and_never_raised(self):
        lib = FakeCommLibrary()
        sys_view = fake_torch({FakeGroup("tp", 0x2000): "1"})
        sys_view.modules["torch"].cuda.current_device = lambda: 1 / 0
        name_comms = comm_namer(sys_view, ctypes, lib)
        lib.count = 1
        name_comms()
        lib.count = 2
        name_comms()
        self.assertEqual(lib.debug_lines,
                         [b"communicator names: off after ZeroDivisionError('division by zero')"])

    def test_none_without_the_librarys_entry_points(self):
        self.assertIsNone(comm_namer(sys, ctypes, object()))


if __name__ == "__main__":
    unittest.main()
