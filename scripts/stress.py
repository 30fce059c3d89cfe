#!/usr/bin/env python3
"""Stress one data directory with concurrent maploader processes and random SIGKILLs.

Runs random install / uninstall / update / groups / list / verify / repair / check-update
processes in parallel against one data directory while the publisher moves the site from
v1 to v2 to v3, and kills a share of them with SIGKILL at random instants. Afterwards:
`verify` must pass, every installed group must equal exactly the published release files
of the installed version, and every exit code must be 0 or a documented refusal.

    scripts/stress.py --seconds 60 --workers 4 --kill-rate 0.15 --seed 1

Prints one summary line: operations, kills, failures (expected: 0); exits 1 on a failure.
"""
import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Exit codes a command may end with under contention: success, update available, a
# package not installed (uninstall of one another process just removed).
ALLOWED = {
    "install": {0}, "uninstall": {0, 4}, "update": {0}, "groups": {0}, "list": {0},
    "verify": {0}, "repair": {0}, "check-update": {0, 3},
}


def tree_files(folder):
    """{relative path: sha256} of every file below folder."""
    result = {}
    for base, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(base, name)
            with open(path, "rb") as handle:
                result[os.path.relpath(path, folder)] = hashlib.sha256(handle.read()).hexdigest()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="how long to run (default 60)")
    parser.add_argument("--workers", type=int, default=4, help="processes at once (default 4)")
    parser.add_argument("--kill-rate", type=float, default=0.15, help="share of processes killed (default 0.15)")
    parser.add_argument("--seed", type=int, default=1, help="randomness seed (default 1)")
    parser.add_argument("--binary", default=os.environ.get("MAPLOADER_BIN", os.path.join(ROOT, ".build/debug/maploader")))
    args = parser.parse_args()
    if not os.path.exists(args.binary):
        subprocess.run(["swift", "build", "--product", "maploader"], cwd=ROOT, check=True)

    work = tempfile.mkdtemp(prefix="maploader-stress-")
    releases, site, data = os.path.join(work, "releases"), os.path.join(work, "site"), os.path.join(work, "data")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts/gen-sample.py"), "--out", releases],
                   check=True, stdout=subprocess.DEVNULL)
    key = subprocess.run([args.binary, "keygen", os.path.join(work, "publisher.key")],
                         check=True, capture_output=True, text=True).stdout.split()[-1]

    def publish(version):
        subprocess.run([args.binary, "publish", os.path.join(releases, version), "--site", site, "--version", version,
                        "--level", "3", "--key", os.path.join(work, "publisher.key")],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    publish("v1")
    server = subprocess.Popen([args.binary, "serve", site, "--port", "0", "--quiet", "--json"],
                              stdout=subprocess.PIPE, text=True)
    lines = []
    while not lines or lines[-1].rstrip() != "}":  # one pretty-printed JSON object
        lines.append(server.stdout.readline())
    url = json.loads("".join(lines))["url"]
    env = dict(os.environ, MAPLOADER_SERVER=url, MAPLOADER_DATA_DIR=data, MAPLOADER_TRUST_KEY=key)
    with open(os.path.join(releases, "v1", "tree.json")) as handle:
        tree = json.load(handle)

    def leaf_ids(node):
        children = node.get("children")
        return [node["id"]] if not children else [i for c in children for i in leaf_ids(c)]

    leaves = leaf_ids(tree["root"])
    groups = [g["id"] for g in tree["groups"] if not g.get("required")]

    rng = random.Random(args.seed)
    lock = threading.Lock()
    stats = {"operations": 0, "kills": 0, "failures": []}
    deadline = time.monotonic() + args.seconds

    def command():
        op = rng.choice(["install", "install", "uninstall", "update", "groups", "list", "verify", "repair", "check-update"])
        if op == "install":
            return op, ["install"] + rng.sample(leaves, rng.randint(1, 3))
        if op == "uninstall":
            return op, ["uninstall", rng.choice(leaves)]
        if op == "groups":
            return op, ["groups", rng.choice(["select", "deselect"]), rng.choice(groups)]
        return op, [op]

    def worker(seed):
        local = random.Random(seed)
        while time.monotonic() < deadline:
            with lock:
                op, arguments = command()
            process = subprocess.Popen([args.binary] + arguments, env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, text=True)
            killed = False
            if local.random() < args.kill_rate:
                try:
                    process.wait(timeout=local.uniform(0, 0.5))
                except subprocess.TimeoutExpired:
                    process.send_signal(signal.SIGKILL)
                    killed = True
            _, errors = process.communicate()
            with lock:
                stats["operations"] += 1
                if killed:
                    stats["kills"] += 1
                elif process.returncode not in ALLOWED[op]:
                    stats["failures"].append(f"{' '.join(arguments)} exited {process.returncode}: {errors.strip()[-300:]}")

    def publisher():
        for version, at in (("v2", 1 / 3), ("v3", 2 / 3)):
            time.sleep(max(0, deadline - args.seconds * (1 - at) - time.monotonic()))
            publish(version)

    threads = [threading.Thread(target=worker, args=(args.seed * 1000 + i,)) for i in range(args.workers)]
    threads.append(threading.Thread(target=publisher))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Afterwards: the directory verifies, and what list says is installed is exactly the
    # published files of the installed version.
    verify = subprocess.run([args.binary, "verify"], env=env, capture_output=True, text=True)
    if verify.returncode != 0:
        stats["failures"].append(f"final verify exited {verify.returncode}: {verify.stderr.strip()}")
    listed = json.loads(subprocess.run([args.binary, "list", "--installed", "--json"], env=env,
                                       capture_output=True, text=True, check=True).stdout)
    checked = 0
    for package in listed["packages"]:
        if not package["isLeaf"]:
            continue
        for group in package["groups"]:
            installed = tree_files(os.path.join(data, "current", package["id"], group))
            published = tree_files(os.path.join(releases, package["version"], "data", package["id"], group))
            checked += 1
            if installed != published:
                stats["failures"].append(f"{package['id']}/{group} differs from release {package['version']}")
    server.send_signal(signal.SIGTERM)
    server.wait()
    print(f"stress: {stats['operations']} operations in {args.seconds:.0f} s with {args.workers} workers, "
          f"{stats['kills']} killed with SIGKILL, {checked} installed groups compared, "
          f"{len(stats['failures'])} failures")
    print(f"stress: {stats['operations'] - len(stats['failures'])} passed, {len(stats['failures'])} failed")
    for failure in stats["failures"][:20]:
        print("  failure:", failure)
    if not stats["failures"]:
        subprocess.run(["rm", "-rf", work])
    else:
        print("  kept for inspection:", work)
    return 1 if stats["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
