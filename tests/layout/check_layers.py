#!/usr/bin/env python3
"""The include graph runs one way (ARCHITECTURE.md): every #include "dir/file" of a source file
must point into its own module or one that module may depend on. Prints each upward or sideways
include and exits 1 if there is one. Usage: check_layers.py SOURCE_DIR"""
import re
import sys
from pathlib import Path

# What each module may include directly (besides itself). A module may also include whatever
# the modules it may include may include: the rules are closed transitively below.
DIRECT = {
    "common": [],
    "schema": [],
    "proto": ["common"],
    "storage": ["common"],
    "onvif": ["common"],
    "archive": ["common"],
    "admission": ["storage", "common"],
    "catalog": ["admission", "storage", "proto", "schema", "common"],
    "server/core": ["catalog"],
    "server/net": ["catalog"],
    "server/disks": ["server/core", "archive"],
    "server/recording": ["server/disks"],
    "server/playback": ["server/disks"],
    "server/media": ["server/disks", "server/net"],
    "server/wire": ["server/recording", "server/playback", "server/net"],
    "server/api": ["server/media", "server/recording", "server/playback", "server/net", "onvif"],
    "server/app": ["server/api", "server/wire"],
    "client/wire": ["proto", "common"],
    "client/rtsp": ["common"],
    "client/proxy": ["client/wire"],
    "bench": ["client/wire", "catalog", "archive"],
    "client/tools": ["catalog"],
    "client/cli": ["client/tools", "client/proxy", "client/rtsp", "onvif", "bench"],
}
# admission sees only these of storage/ (ARCHITECTURE.md): the device and the service model.
NARROW = {"admission": {"storage": {"device.hpp", "service_model.hpp", "clock.hpp", "hdd_model.hpp",
                                    "simulated_disk.hpp", "file_device.hpp"}}}
SOURCE_DIRS = ["common", "schema", "proto", "onvif", "archive", "storage", "admission", "catalog", "server", "client", "bench"]


def closure():
    allowed = {}

    def visit(m):
        if m in allowed:
            return allowed[m]
        out = set()
        for d in DIRECT[m]:
            out.add(d)
            out |= visit(d)
        allowed[m] = out
        return out

    for m in DIRECT:
        visit(m)
    return allowed


def module_of(rel):
    parts = rel.split("/")
    for n in (2, 1):
        key = "/".join(parts[:n])
        if key in DIRECT and len(parts) > n:
            return key
    return None


def self_test():
    """The check can fail: an upward include and a too-wide admission include are both caught."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "storage").mkdir()
        (t / "storage" / "a.hpp").write_text('#include "server/core/metrics.hpp"\n')
        (t / "admission").mkdir()
        (t / "admission" / "b.cpp").write_text('#include "storage/cycle_scheduler.hpp"\n#include "storage/device.hpp"\n')
        (t / "server" / "disks").mkdir(parents=True)
        (t / "server" / "disks" / "c.cpp").write_text('#include "server/core/metrics.hpp"\n')
        r = subprocess.run([sys.executable, __file__, tmp], capture_output=True, text=True)
        lines = [l for l in r.stdout.splitlines() if ": includes " in l]
        ok = r.returncode == 1 and len(lines) == 2 and "storage/a.hpp" in lines[0] + lines[1]
        print(r.stdout + ("self-test: ok" if ok else "self-test: FAILED"))
        return 0 if ok else 1


def main():
    if sys.argv[1] == "--self-test":
        return self_test()
    root = Path(sys.argv[1])
    allowed = closure()
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    bad, files = [], 0
    for top in SOURCE_DIRS:
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in (".cpp", ".hpp", ".h") or "node_modules" in path.parts:
                continue
            rel = path.relative_to(root).as_posix()
            src = module_of(rel)
            if src is None:
                bad.append(f"{rel}: in no module of the layer map (tests/layout/check_layers.py)")
                continue
            files += 1
            for target in include.findall(path.read_text(errors="replace")):
                dst = module_of(target)
                if dst is None or dst == src:
                    continue
                if dst not in allowed[src]:
                    bad.append(f"{rel}: includes {target} ({src} may not depend on {dst})")
                elif dst in NARROW.get(src, {}) and target.split("/")[-1] not in NARROW[src][dst]:
                    bad.append(f"{rel}: includes {target} ({src} sees only {sorted(NARROW[src][dst])} of {dst})")
    for b in bad:
        print(b)
    print(f"check_layers: {files} files, {len(bad)} upward or sideways includes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
