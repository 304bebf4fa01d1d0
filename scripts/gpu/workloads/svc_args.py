"""The command-line options of svc_hp.py and svc_be.py, in one place and
without torch, so that scripts/gpu/issue15_fake_svc.py (which plays both on
the simulated GPU for the harness's tests) accepts exactly what they do."""
import argparse
import os
import time


def _parser(prog):
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=0)
    return ap


def wait_for(path, timeout_s):
    """svc_hp.py --after: waits until PATH exists, at most TIMEOUT_S;
    returns the seconds waited and whether it appeared."""
    t0 = time.perf_counter()
    while not os.path.exists(path) and time.perf_counter() - t0 < timeout_s:
        time.sleep(0.01)
    return round(time.perf_counter() - t0, 3), os.path.exists(path)


def hp_parser():
    ap = _parser("svc_hp.py")
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--preroll", type=int, default=0,
                    help="requests made at the arrival schedule, after --after's wait and "
                         "before the measured ones, and not recorded: the run is measured in "
                         "its steady state, past the daemon's learning of the request")
    ap.add_argument("--gap-ms", type=float, default=0.0,
                    help="the open-loop period between request arrivals, ms (the mean under "
                         "--arrivals poisson); 0: back to back")
    ap.add_argument("--arrivals", choices=("periodic", "poisson"), default="periodic")
    ap.add_argument("--seed", type=int, default=0, help="the Poisson arrivals' seed")
    ap.add_argument("--touch-after", nargs=2, metavar=("N", "FILE"),
                    help="create FILE once the N-th measured request has ended (a fault "
                         "test's cue that requests are being served)")
    ap.add_argument("--latencies")
    ap.add_argument("--mark", action="store_true")
    ap.add_argument("--eager", action="store_true",
                    help="launch kernel by kernel instead of replaying a CUDA graph of the step")
    ap.add_argument("--after")
    ap.add_argument("--after-timeout", type=float, default=60.0)
    ap.add_argument("--after-settle", type=float, default=0.0,
                    help="seconds more once --after's file is there (the BE job's first steps)")
    return ap


def be_parser():
    ap = _parser("svc_be.py")
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--ready")
    ap.add_argument("--steps-log", help="write each step's end as Unix time, one a line")
    return ap
