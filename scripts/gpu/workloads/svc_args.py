"""The command-line options of svc_hp.py and svc_be.py, in one place and
without torch, so that scripts/gpu/issue15_fake_svc.py (which plays both on
the simulated GPU for the harness's tests) accepts exactly what they do."""
import argparse


def hp_parser():
    ap = argparse.ArgumentParser(prog="svc_hp.py")
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--gap-ms", type=float, default=0.0)
    ap.add_argument("--latencies")
    ap.add_argument("--mark", action="store_true")
    ap.add_argument("--eager", action="store_true",
                    help="launch kernel by kernel instead of replaying a CUDA graph of the step")
    ap.add_argument("--after")
    ap.add_argument("--after-timeout", type=float, default=60.0)
    return ap


def be_parser():
    ap = argparse.ArgumentParser(prog="svc_be.py")
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--ready")
    ap.add_argument("--steps-log", help="write each step's end as Unix time, one a line")
    return ap
