#!/usr/bin/env python3
"""Helpers for scripts/check-api.

  api-symbols.py strip DIR            drop package and internal declarations from the digester's
                                      baseline JSON files in DIR (they are not API: changing them
                                      must not fail the check)
  api-symbols.py list SYMBOLGRAPHS M… the public symbols of modules M… (one USR and name a line,
                                      sorted), from `swift package dump-symbol-graph
                                      --minimum-access-level public`
"""
import glob
import json
import os
import sys


def strip(directory):
    def keep(node):
        return not (isinstance(node, dict) and node.get("isInternal"))

    def walk(node):
        if isinstance(node, dict) and isinstance(node.get("children"), list):
            node["children"] = [walk(child) for child in node["children"] if keep(child)]
        return node

    for path in glob.glob(os.path.join(directory, "*.json")):
        with open(path) as handle:
            document = json.load(handle)
        walk(document.get("ABIRoot", document))
        with open(path, "w") as handle:
            json.dump(document, handle, indent=1, sort_keys=True)
            handle.write("\n")


def listing(directory, modules):
    lines = set()
    for module in modules:
        for path in glob.glob(os.path.join(directory, module + ".symbols.json")) + glob.glob(
            os.path.join(directory, module + "@*.symbols.json")
        ):
            with open(path) as handle:
                graph = json.load(handle)
            for symbol in graph.get("symbols", []):
                if symbol.get("accessLevel") not in ("public", "open"):
                    continue
                name = ".".join(symbol.get("pathComponents", []))
                lines.add(f"{module}\t{symbol['identifier']['precise']}\t{name}")
    sys.stdout.write("".join(line + "\n" for line in sorted(lines, key=lambda text: text.encode())))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "strip":
        strip(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "list":
        listing(sys.argv[2], sys.argv[3:])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
