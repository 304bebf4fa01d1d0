"""python/mosaic: a no-op without the shim; with the shim preloaded as an HP
client and no daemon, begin/end reach it and return MOSAIC_EDISCONNECTED."""
import os
import subprocess
import sys

shim = sys.argv[1]
probe = ("import mosaic, sys\n"
         "with mosaic.request():\n"
         "    pass\n"
         "print(mosaic.active(), mosaic.begin(), mosaic.end())\n")
env = dict(os.environ)
env.pop("LD_PRELOAD", None)
out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                     check=True).stdout.split()
assert out == ["False", "0", "0"], out
env.update(LD_PRELOAD=shim, MOSAIC_ROLE="hp", MOSAIC_SCHED_SOCKET="/nonexistent/mosaic.sock")
if "asan" in shim or os.environ.get("ASAN_OPTIONS"):
    # An ASan-built shim cannot be preloaded into an uninstrumented Python.
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    if r.returncode != 0 and "AddressSanitizer" in r.stderr:
        print("skipped the preloaded half: the shim is built with ASan")
        sys.exit(0)
out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                     check=True).stdout.split()
# -104: MOSAIC_EDISCONNECTED (include/mosaic/mosaic.h): no daemon, run uncontrolled.
assert out == ["True", "-104", "-104"], out
print("ok")
