#!/usr/bin/env python3
"""The library's house rules, checked from `swift package describe` and the sources:

1. System calls go through one portable layer: in every Swift target of Sources (the
   library, the publisher, the test server, the CLI and the tools), only MapPlatform
   imports a C library's module (Glibc, Darwin, Android, Musl) or names a platform
   (`os(Linux)`, `os(macOS)`, `canImport(Darwin)`…); in the targets an app links, only
   MapPlatform calls the file system through Foundation's FileManager.
2. The planner is pure: MapPlanner depends on MapModel only, and its files import
   nothing but MapModel and Foundation.
3. The model holds values: MapModel depends on no C module (no system library or C
   target, directly) and its files import none.
4. The client library never links the publisher or the server.
5. The module graph has no cycle (SwiftPM refuses one anyway; printed for the record).

Prints the module graph and one line per rule; exits 1 on the first broken rule.
"""
import json, re, subprocess, sys
from pathlib import Path

describe = json.loads(subprocess.run(["swift", "package", "describe", "--type", "json"],
                                     capture_output=True, text=True, check=True).stdout)
targets = {t["name"]: t for t in describe["targets"]}
deps = {name: t.get("target_dependencies", []) for name, t in targets.items()}

def closure(roots):
    seen, stack = set(), list(roots)
    while stack:
        name = stack.pop()
        if name in seen or name not in targets:
            continue
        seen.add(name)
        stack.extend(deps[name])
    return seen

library = closure(["MapLoader"])
checked = sorted(n for n in library | closure(["MapPublisher"]) if targets[n]["type"] == "library"
                 and targets[n].get("module_type") == "SwiftTarget")
failures = []

print("module graph (library targets, each -> what it imports):")
for name in checked:
    print(f"  {name:14} -> {', '.join(sorted(d for d in deps[name])) or '(nothing of ours)'}")

system_import = re.compile(
    r"^\s*(@preconcurrency\s+)?((public|package|internal)\s+)?import\s+(Glibc|Darwin|Musl|Android|Bionic)\b"
    r"|canImport\((Glibc|Darwin|Musl|Android|Bionic)\)|\bos\((Linux|macOS|iOS|tvOS|watchOS|visionOS|Android|Windows)\)"
    r"|\b(Glibc|Darwin|Musl)\.\w", re.M)
sources = sorted(n for n, t in targets.items() if t.get("module_type") == "SwiftTarget"
                 and t["path"].startswith("Sources/"))
platform_files, offenders = 0, []
for name in sources:
    for path in sorted(Path(targets[name]["path"]).rglob("*.swift")):
        if system_import.search(path.read_text()):
            if name == "MapPlatform":
                platform_files += 1
            else:
                offenders.append(str(path))
if offenders:
    failures.append("a platform is named outside MapPlatform: " + ", ".join(offenders))
print(f"platform: {sum(len(list(Path(targets[n]['path']).rglob('*.swift'))) for n in sources)} files in {len(sources)} targets; "
      f"platforms named in {platform_files} MapPlatform files and {len(offenders)} others")

file_manager = [str(p) for n in library if n != "MapPlatform" and targets[n].get("module_type") == "SwiftTarget"
                for p in sorted(Path(targets[n]["path"]).rglob("*.swift"))
                if re.search(r"^(?!\s*///).*\bFileManager\b", p.read_text(), re.M)]
if file_manager:
    failures.append("FileManager used outside MapPlatform: " + ", ".join(file_manager))
print(f"file system: FileManager in MapPlatform only" if not file_manager else f"FileManager in {len(file_manager)} other files")

# An operation's state (its pause control, progress, cancellation) travels as values in
# its context and sources, never as task-local state that a layer reads unseen.
task_locals = [str(p) for n in library if targets[n].get("module_type") == "SwiftTarget"
               for p in sorted(Path(targets[n]["path"]).rglob("*.swift"))
               if re.search(r"^(?!\s*///).*@TaskLocal\b", p.read_text(), re.M)]
if task_locals:
    failures.append("task-local state in the client library: " + ", ".join(task_locals))
print("operation state: no task-local values in the client library" if not task_locals else f"task-locals in {len(task_locals)} files")

planner_imports = set()
for path in Path(targets["MapPlanner"]["path"]).rglob("*.swift"):
    planner_imports |= set(re.findall(r"^\s*(?:(?:public|package|internal)\s+)?import\s+(\w+)", path.read_text(), re.M))
if deps["MapPlanner"] != ["MapModel"] or not planner_imports <= {"MapModel", "Foundation"}:
    failures.append(f"MapPlanner must depend on MapModel only (depends on {deps['MapPlanner']}, imports {sorted(planner_imports)})")
print(f"planner: depends on {', '.join(deps['MapPlanner'])}; imports {', '.join(sorted(planner_imports))}")

c_modules = {n for n, t in targets.items() if t.get("module_type") in ("SystemLibraryTarget", "ClangTarget")}
model_imports = set()
for path in Path(targets["MapModel"]["path"]).rglob("*.swift"):
    model_imports |= set(re.findall(r"^\s*(?:@preconcurrency\s+)?(?:(?:public|package|internal)\s+)?import\s+(\w+)", path.read_text(), re.M))
model_c = (set(deps["MapModel"]) | model_imports) & c_modules
if model_c:
    failures.append(f"MapModel uses C modules {sorted(model_c)}: values only, the platform layer wraps C")
print(f"model: depends on {', '.join(deps['MapModel'])}; no C module" if not model_c else f"model uses C modules {sorted(model_c)}")

leaked = library & {"MapPublisher", "ManifestServer"}
if leaked:
    failures.append(f"the MapLoader product links {sorted(leaked)}")
print(f"client library: {len(library)} targets, publisher and server not among them" if not leaked else "client library links publisher or server")

for failure in failures:
    print("check-layers: FAILED: " + failure)
sys.exit(1 if failures else 0)
