#!/usr/bin/env python3
"""svc_hp.py and svc_be.py played by the C demo programs on the simulated GPU.

  issue15_fake_svc.py PATH/svc_hp.py|PATH/svc_be.py [their options]

Only for scripts/gpu/issue15_dry_test.sh --gpu-path, which puts
issue15_fake_python/ first in PATH so that scripts/gpu/issue15_services.sh
runs its GPU path (svc_hp.py's and svc_be.py's options, files and JSON
lines, Unix-time stamps, --after and --ready) without torch. The kernels are
the arbiter evaluation's convolutions, as under DRY=sim; ISSUE15_FAKE_BIN
names the directory of hp_service and be_trainer. Nothing here measures a
GPU: it checks the harness's plumbing.

A BE job that dies (scripts/gpu/issue15_dead_be_test.sh): with
ISSUE15_FAKE_BE_DIE=TEXT a svc_be.py whose --ready path holds TEXT exits 1
after 0.3 s of "start-up", before its ready file, with a CUDA error on
stderr as the static row's cuDNN did on the H200 (call 3 of 2026-12-02);
with ISSUE15_FAKE_BE_DIE_LATE=TEXT it dies so 1 s after its ready file."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads"))
import svc_args  # noqa: E402

HP_KERNELS = ["_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808",
              "_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976",
              "_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192"]
BE_KERNELS = ["_Z9k_conv3x3PKfS0_Pfiiii|grid=16,4,32|block=16,16,1|dsmem=14976",
              "_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976"]
BIN = os.environ.get("ISSUE15_FAKE_BIN", "")


def mono_to_unix():
    return time.time() - time.monotonic()


def kernels(keys):
    out = []
    for k in keys:
        out += ["--kernel", k]
    return out


def hp(argv):
    a = svc_args.hp_parser().parse_args(argv)
    waited, found = svc_args.wait_for(a.after, a.after_timeout) if a.after else (None, False)
    if found and a.after_settle > 0:
        time.sleep(a.after_settle)
    with tempfile.TemporaryDirectory() as d:
        # svc_hp.py's --gap-ms is an open-loop period: hp_service's --period-ms.
        cmd = [os.path.join(BIN, "hp_service"), "--requests", str(a.requests), "--warmup", "3",
               "--preroll", str(a.preroll),
               "--gap-ms", "0", "--period-ms", str(a.gap_ms), "--latencies", f"{d}/l",
               "--times", f"{d}/t"] + kernels(HP_KERNELS)
        if a.touch_after:
            cmd += ["--touch-after"] + list(a.touch_after)
        if a.arrivals != "periodic":
            sys.stderr.write(f"fake svc_hp: --arrivals {a.arrivals} is played periodic (hp_service has no other)\n")
        r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.stderr.write(f"fake svc_hp: hp_service exited {r.returncode}\n")
            return r.returncode
        off = mono_to_unix()
        rows = [l.split() for l in open(f"{d}/t") if l.strip()]
        if a.latencies and a.latencies != "/dev/null":
            with open(a.latencies, "w") as f:
                f.write("".join(f"{float(b):.4f} {float(s) / 1e3 + off:.6f}\n" for s, b in rows))
    j = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])
    # hp_service's first scheduled request (the pre-roll's), monotonic ms.
    first = j.pop("first_start_ms", None)
    j.update({"program": "svc_hp", "model": a.model, "launch": "fake (hp_service on the simulated GPU)",
              "waited_for_after_s": waited, "gap_ms": a.gap_ms,
              "first_request_unix": None if first is None else first / 1e3 + off})
    print(json.dumps(j), flush=True)
    return 0


def be(argv):
    a = svc_args.be_parser().parse_args(argv)
    batch = a.batch or 64
    die, late = os.environ.get("ISSUE15_FAKE_BE_DIE"), os.environ.get("ISSUE15_FAKE_BE_DIE_LATE")
    if die and a.ready and die in a.ready:
        time.sleep(0.3)
        sys.stderr.write("fake svc_be: start-up\nRuntimeError: CUDA error: cluster misconfiguration "
                         "(fake: ISSUE15_FAKE_BE_DIE)\n\n")
        return 1
    with tempfile.TemporaryDirectory() as d:
        cmd = [os.path.join(BIN, "be_trainer"), "--seconds", str(a.seconds), "--step-times", f"{d}/s"] + \
            kernels(BE_KERNELS)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        signal.signal(signal.SIGTERM, lambda *_: p.send_signal(signal.SIGTERM))
        # svc_be makes the ready file after its warm-up steps; be_trainer
        # has none, so after a moment.
        time.sleep(0.2)
        if a.ready:
            open(a.ready, "w").close()
        if late and a.ready and late in a.ready:
            time.sleep(1.0)
            p.kill()
            p.wait()
            sys.stderr.write("RuntimeError: CUDA error: an illegal memory access (fake: ISSUE15_FAKE_BE_DIE_LATE)\n")
            return 1
        out, _ = p.communicate()
        off = mono_to_unix()
        if a.steps_log:
            steps = [float(l) for l in open(f"{d}/s") if l.strip()] if os.path.exists(f"{d}/s") else []
            with open(a.steps_log, "w") as f:
                f.write("".join(f"{x / 1e3 + off:.6f}\n" for x in steps))
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        sys.stderr.write(f"fake svc_be: be_trainer exited {p.returncode}\n")
        return p.returncode or 1
    j = json.loads(lines[-1])
    j.update({"program": "svc_be", "model": a.model, "batch": batch,
              "samples_per_s": j["steps_per_s"] * batch})
    print(json.dumps(j), flush=True)
    return 0


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: issue15_fake_svc.py svc_hp.py|svc_be.py [options]")
    prog, rest = os.path.basename(sys.argv[1]), sys.argv[2:]
    if prog == "svc_hp.py":
        return hp(rest)
    if prog == "svc_be.py":
        return be(rest)
    sys.exit(f"issue15_fake_svc.py: {prog} is neither svc_hp.py nor svc_be.py")


if __name__ == "__main__":
    sys.exit(main())
