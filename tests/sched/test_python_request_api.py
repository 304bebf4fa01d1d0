"""python/mosaic against the shim, without torch: one API request open at a
time (a second end() is MOSAIC_EINVAL, -1), and REQUEST_RANGE is the name
the shim's NVTX injection matches (preload/nvtx.c)."""
import os
import re
import subprocess
import sys

shim, nvtx_c = sys.argv[1], sys.argv[2]
probe = ("import mosaic\n"
         "print(mosaic.REQUEST_RANGE, mosaic.begin(), mosaic.begin(), mosaic.end(), mosaic.end())\n")
env = dict(os.environ)
env.pop("LD_PRELOAD", None)
out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                     check=True).stdout.split()
# Without the shim every call is a no-op returning 0.
assert out == ["mosaic:request", "0", "0", "0", "0"], out
with open(nvtx_c) as f:
    m = re.search(r'#define REQUEST_NAME "([^"]*)"', f.read())
assert m and m.group(1) == out[0], (m and m.group(1), out[0])

env.update(LD_PRELOAD=shim, MOSAIC_ROLE="hp", MOSAIC_SCHED_SOCKET="/nonexistent/mosaic.sock")
r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
if r.returncode != 0 and "AddressSanitizer" in r.stderr:
    print("skipped the preloaded half: the shim is built with ASan")
    sys.exit(0)
assert r.returncode == 0, r.stderr
out = r.stdout.split()
# No daemon: begin, begin (ending the first) and end reach the shim and say
# disconnected (-104); the second end finds no API request open (-1).
assert out == ["mosaic:request", "-104", "-104", "-104", "-1"], out
print("ok")
