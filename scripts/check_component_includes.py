#!/usr/bin/env python3
"""Fails the build when a component includes another component's private header.

Every component keeps its headers next to its sources and is included by path
("stack/collector.h"), so the compiler alone cannot tell a public header from a
private one. Each component's CMakeLists.txt names its public headers
(xpu_timer_public_headers); this check runs on every build and rejects any
#include "<other component>/<header>" that is not on that list. A component
may be a subfolder of another ("supervisor/analysis"): a file belongs to the
deepest component whose folder holds it, and so does an included header.

usage: check_component_includes.py SOURCE_DIR STAMP COMPONENT=hdr1,hdr2 ...
(an empty list: nothing of that component may be included from outside).
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+/[A-Za-z0-9_/.]+)"', re.M)


def owner(path, components):
    """The deepest component whose folder holds `path` (relative, '/'-separated)."""
    best = None
    for comp in components:
        if path.startswith(comp + "/") and (best is None or len(comp) > len(best)):
            best = comp
    return best


def main():
    root, stamp = sys.argv[1], sys.argv[2]
    public = {}
    for arg in sys.argv[3:]:
        comp, _, headers = arg.partition("=")
        public[comp] = set(h for h in headers.split(",") if h)
    errors = []
    for comp in sorted(public):
        for dirpath, _, files in os.walk(os.path.join(root, comp)):
            for name in sorted(files):
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                if owner(os.path.relpath(path, root).replace(os.sep, "/"), public) != comp:
                    continue  # a file of a subcomponent, checked as that one
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    included = m.group(1)
                    other = owner(included, public)
                    if other is None or other == comp:
                        continue
                    header = included[len(other) + 1:]
                    if header in public[other]:
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    errors.append("%s:%d: includes %s/%s, a private header of %s/ (public: %s)" % (
                        os.path.relpath(path, root), line, other, header, other,
                        ", ".join(sorted(public[other])) or "none"))
    if errors:
        sys.stderr.write("\n".join(errors) + "\n")
        sys.stderr.write("error: a component may include only the public headers of another "
                         "(xpu_timer_public_headers in its CMakeLists.txt)\n")
        return 1
    with open(stamp, "w") as f:
        f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
