#!/usr/bin/env python3
"""Unit tests of python_probes.py's handling of names (XPU_TIMER_HOST_TRACING_FUNC
and the built-in list): the parser's exact output, and a lookup that finds
functions, methods and submodules without importing or running any of the
program's code. The script is loaded as the library runs it, into a private
namespace. Run by ctest (python_probes_test)."""

import os
import sys
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PROBES = {}
with open(os.path.join(HERE, "python_probes.py")) as f:
    exec(compile(f.read(), "python_probes.py", "exec"), PROBES)
parse = PROBES["_xpu_timer_parse_traced"]
lookup = PROBES["_xpu_timer_lookup"]


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


if __name__ == "__main__":
    unittest.main()
