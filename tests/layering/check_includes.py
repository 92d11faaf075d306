#!/usr/bin/env python3
"""Checks plait's include structure: every file on its floor, no cycles.

  check_includes.py INCLUDE_DIR    checks the tree, lists every violation, exits 1 if any
  check_includes.py --self-test    runs the checks on small made-up trees that break each
                                   rule and on one that keeps them, so the check can fail

Rules:
  1. A header under plait/transport/<name>/ includes only plait/core/ and
     plait/transport/<name>/: a transport moves bytes and knows nothing of
     algorithms, layouts, operations or other transports. A header directly in
     plait/transport/ includes only plait/core/.
  2. A header under plait/levels/ (its subfolders included) includes only
     plait/core/, plait/transport/ and plait/levels/: levels compose
     transports and sit under the operations; what the collectives keep per
     two_level is op/'s own (op/hierarchical_state.hpp).
  3. No include cycle. An implementation file (.ipp) that its header includes
     at its end and that includes that header back is part of the header, not
     a cycle: it is how plait splits declarations from definitions.
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"(plait/[^"]+)"', re.M)


def read_tree(root):
    files = {}
    for directory, _, names in os.walk(os.path.join(root, "plait")):
        for name in names:
            path = os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/")
            with open(os.path.join(root, path), encoding="utf-8") as f:
                files[path] = INCLUDE.findall(f.read())
    return files


LEVELS_FLOOR = ("plait/core/", "plait/transport/", "plait/levels/")


def floor_violations(files):
    found = []
    for path, includes in sorted(files.items()):
        parts = path.split("/")
        if len(parts) >= 3 and parts[1] == "levels":
            for target in includes:
                if not target.startswith(LEVELS_FLOOR):
                    found.append(f"{path} includes {target}: a levels header may include only "
                                 "plait/core/, plait/transport/ and plait/levels/")
            continue
        if len(parts) < 3 or parts[1] != "transport":
            continue
        in_root = len(parts) == 3 or parts[2] == "impl"
        own = "plait/transport/" if in_root else "/".join(parts[:3]) + "/"
        for target in includes:
            if target.startswith("plait/core/"):
                continue
            rest = target[len(own):].split("/") if target.startswith(own) else None
            if rest and (not in_root or len(rest) == 1 or rest[0] == "impl"):
                continue
            allowed = "plait/core/ and " + (own + " (not its subfolders)" if in_root else own)
            found.append(f"{path} includes {target}: a transport header may include only {allowed}")
    return found


def units(files):
    """Maps each file to the header it belongs to (an .ipp to the header that
    includes it and that it includes back)."""
    owner = {path: path for path in files}
    for path, includes in files.items():
        if path.endswith(".ipp"):
            for header in includes:
                if path in files.get(header, ()):
                    owner[path] = header
                    break
    return owner


def cycles(files):
    owner = units(files)
    graph = {}
    for path, includes in files.items():
        edges = graph.setdefault(owner[path], set())
        for target in includes:
            if target in owner and owner[target] != owner[path]:
                edges.add(owner[target])
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append("include cycle: " + " -> ".join(sorted(component)))

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def check(root):
    files = read_tree(root)
    return floor_violations(files) + cycles(files)


def self_test():
    cases = {
        "keeps the rules": ({
            "plait/core/a.hpp": [],
            "plait/core/impl/a.ipp": ["plait/core/a.hpp"],
            "plait/transport/shm/c.hpp": ["plait/core/a.hpp", "plait/transport/shm/impl/c.ipp"],
            "plait/transport/shm/impl/c.ipp": ["plait/transport/shm/c.hpp"],
            "plait/levels/l.hpp": ["plait/core/a.hpp", "plait/transport/shm/c.hpp", "plait/levels/impl/l.ipp"],
            "plait/levels/impl/l.ipp": ["plait/levels/l.hpp"],
            "plait/levels/mpi/m.hpp": ["plait/levels/l.hpp", "plait/transport/shm/c.hpp"],
            "plait/op/o.hpp": ["plait/transport/shm/c.hpp", "plait/levels/l.hpp"],
        }, 0),
        "a transport includes an operation": ({
            "plait/op/o.hpp": [],
            "plait/transport/mpi/c.hpp": ["plait/op/o.hpp"],
        }, 1),
        "a transport includes another transport": ({
            "plait/transport/shm/c.hpp": [],
            "plait/transport/mpi/c.hpp": ["plait/transport/shm/c.hpp"],
        }, 1),
        "a level includes an operation": ({
            "plait/op/o.hpp": [],
            "plait/levels/l.hpp": ["plait/op/o.hpp"],
        }, 1),
        "a level's subfolder includes an algorithm and a layout": ({
            "plait/algorithm/a.hpp": [],
            "plait/layout/c.hpp": [],
            "plait/levels/mpi/m.hpp": ["plait/algorithm/a.hpp", "plait/layout/c.hpp"],
        }, 2),
        "a level's implementation file includes an operation": ({
            "plait/op/o.hpp": [],
            "plait/levels/l.hpp": ["plait/levels/impl/l.ipp"],
            "plait/levels/impl/l.ipp": ["plait/levels/l.hpp", "plait/op/o.hpp"],
        }, 1),
        "two headers include each other": ({
            "plait/op/a.hpp": ["plait/op/b.hpp"],
            "plait/op/b.hpp": ["plait/op/a.hpp"],
        }, 1),
    }
    failed = 0
    for name, (tree, expected) in cases.items():
        with tempfile.TemporaryDirectory() as root:
            for path, includes in tree.items():
                os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
                with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                    f.write("".join(f'#include "{target}"\n' for target in includes))
            got = len(check(root))
            if got != expected:
                print(f"self-test '{name}': {got} violations, expected {expected}")
                failed += 1
    print(f"self-test: {len(cases) - failed} of {len(cases)} cases as expected")
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check(sys.argv[1])
    for problem in problems:
        print(problem)
    print(f"{len(problems)} layering violations" if problems else "layering: every header on its floor, no include cycle")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
