#!/usr/bin/env python3
"""Fault tests of the arbiter on the simulated GPU, under load (issue 10).

The HP service and the BE trainer (tests/simgpu) run under
LD_PRELOAD=libmosaic.so with the mosaic policy, as in
scripts/arbiter_eval.sh's eval setup, and something is killed mid-run:

  daemon-hold, daemon-run: the daemon is SIGKILLed and restarted OUTAGE_S
      later, with be-on-timeout hold and run. The design (docs/sched.md,
      "Failure behaviour") promises: HP continues at once without control;
      BE waits be-timeout-ms, then stays held (hold) or runs uncontrolled
      (run); both clients reconnect to the new daemon; nothing is killed.
      So: with hold, no HP request in the outage is over p x the isolated
      p99 and BE makes no step from one step after the kill to the restart;
      with run, no request that ended before be-timeout-ms is over p, BE
      does make steps after it (requests may then go over p: that is what
      uncontrolled means, counted and printed), and no request waits on the
      absent daemon (every one under WAIT_S on the host, NOT_BLOCKED x the
      isolated p99 on the GPU). Both:
      BE steps after the restart, status --json lists both clients by pid,
      both programs exit 0.
  client-kill: an HP client is SIGKILLed in the middle of a request while
      a BE kernel is held for it, then a BE client with a kernel granted;
      the daemon must free each one's state: status no longer lists it,
      no HP request stays in flight, the held BE kernel is decided again at
      once (the BE trainer steps within HELD_REDECIDED_S, not after
      hp-request-timeout-ms nor the policy's restart grace), and a second BE trainer and a new HP service
      carry on, no HP request waiting on the dead client (under WAIT_S
      and NOT_BLOCKED x the isolated p99).

The tests in tests/sched/test_sched_daemon.c cover the same faults with the
client library alone and no simulated work; this file is about what the HP
service and the BE trainer see.

"Over p" is about a request's GPU span (events around it, the simulated
GPU's time: what interference changes) against p x the isolated p99 of
spans, as in scripts/arbiter_eval.sh; "waits on the daemon" is about its
host latency against WAIT_S, and its span against NOT_BLOCKED x the
isolated p99 of spans. Host latencies
also hold the loaded host's scheduling delays, which put requests over p
under any control.

    arbiter_faults.py BUILD_DIR [daemon-hold|daemon-run|client-kill]...

Environment: ARBITER_EVAL_PRELOAD (the clients' LD_PRELOAD, default the
build's libmosaic.so; the sanitizer build puts the ASan runtime first).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

P = 1.25
# be-timeout-ms of the daemon under test: short, so that the outage holds
# the waiting and the uncontrolled part, and long beside a request (23 ms).
BE_TIMEOUT_S = 0.6
OUTAGE_S = 1.5
# No request's GPU span may be this many isolated p99s while the daemon is
# away: uncontrolled conv beside conv measured at most 1.85x under the
# `none` policy (docs/arbiter-eval.md).
NOT_BLOCKED = 3.0
# Nor may its host latency exceed this: a request waiting for the daemon
# would take seconds (be-timeout-ms, reconnect intervals, the 10 s
# hp-request-timeout-ms), while this loaded 2-core host has stalled a
# request by 93 ms with nothing to wait for (3.3x the isolated host p99,
# 2026-12-02 07:05 UTC, load 12), which the old 3x host bound failed.
WAIT_S = 0.5
# A BE kernel held for a dead HP client's request must be decided again at
# once; the daemon's own fallback, hp-request-timeout-ms, is 10 s. From the
# kill to BE's next step: the daemon seeing the socket's EOF, the grant, the
# rest of BE's step (about 15 ms at scale 20). Measured 18-25 ms; before
# the fix of the policy's restart grace (it began again when the only HP
# client died in the daemon's first second) 537-602 ms, which this fails.
HELD_REDECIDED_S = 0.25
# The client monitor reconnects every 200 ms; a loaded 2-core machine may
# take a few of those to schedule it.
RECONNECT_S = 5.0
# How long BE is given, after the HP service ends, to make its first step
# after the reconnection (one step is about 40 ms at scale 20).
AFTER_S = 2.0
# The reconnection checked for the race: from the restart (hold) to this
# long after both clients were back, the policy's grace period (1 s).
RACE_WINDOW_S = 1.0

# The eval setup of scripts/arbiter_eval.sh: HP three convolutions per
# request, BE two per step; conv beside conv interferes (1.5-2x), so a BE
# kernel run without control shows.
HP_KEYS = [
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808",
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976",
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192",
]
BE_KEYS = [
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=16,4,32|block=16,16,1|dsmem=14976",
    "_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976",
]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Failed(Exception):
    pass


# In a sanitizer build (ARBITER_TIMING_GATES=report, set by CMake for
# MOSAIC_SANITIZE) the daemon and the shim run unoptimised under ASan and
# UBSan, several times slower on the host, while the simulated GPU keeps
# real time: whether a request ends within p then measures the
# instrumentation, not the mechanism. There the SLO checks are reported,
# not failed; every other check (HP never blocked by the fault, BE held or
# resumed, state freed, no crash or sanitizer report) still fails the test.
SLO_GATED = os.environ.get("ARBITER_TIMING_GATES", "gate") != "report"


def slo_fail(msg):
    if SLO_GATED:
        raise Failed(msg)
    print(f"NOT GATED (sanitizer build, host timing not representative): {msg}")


def p99(v):
    s = sorted(v)
    return s[min(len(s) - 1, max(0, int(round(0.99 * len(s) + 0.5)) - 1))]


class Env:
    def __init__(self, build):
        self.bin = os.path.join(build, "bin")
        self.work = tempfile.mkdtemp(prefix="arbiter-faults.")
        self.env = dict(os.environ)
        self.env["MOSAIC_SIMGPU"] = f"arbiter-faults-{os.getpid()}"
        self.env.setdefault("MOSAIC_SIMGPU_SCALE", "20")
        fake = os.path.join(build, "tests", "fakecuda")
        old = self.env.get("LD_LIBRARY_PATH")
        self.env["LD_LIBRARY_PATH"] = fake + (":" + old if old else "")
        self.preload = os.environ.get("ARBITER_EVAL_PRELOAD") or os.path.join(build, "lib", "libmosaic.so")
        self.procs = []
        subprocess.run([self.exe("simgpu"), "create", self.env["MOSAIC_SIMGPU"]], env=self.env,
                       check=True, stdout=subprocess.DEVNULL)

    def exe(self, name):
        return os.path.join(self.bin, name)

    def path(self, name):
        return os.path.join(self.work, name)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run([self.exe("simgpu"), "rm", self.env["MOSAIC_SIMGPU"]], env=self.env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.work, ignore_errors=True)

    def spawn(self, argv, stdout, env=None, stderr=None):
        with open(stdout, "w") as out:
            p = subprocess.Popen(argv, env=env or self.env, stdout=out, stderr=stderr)
        self.procs.append(p)
        return p

    def daemon(self, sock, tag, on_timeout="run", policy="mosaic"):
        log = open(self.path(tag + ".daemon.log"), "w")
        argv = [self.exe("mosaic-sched"), "--config", "/dev/null", "--socket", sock,
                "--policy", policy, "--slo", str(P),
                "--profile-dir", os.path.join(ROOT, "profiler", "data", "h200"),
                "--model-dir", os.path.join(ROOT, "predictor", "models", "h200", "lockbox"),
                "--metrics-port", "0", "--mps", "off", "--log-level", "info",
                "--be-timeout-ms", str(int(BE_TIMEOUT_S * 1000)), "--be-on-timeout", on_timeout,
                "daemon"]
        p = subprocess.Popen(argv, env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        log.close()
        self.procs.append(p)
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            if p.poll() is not None or time.monotonic() > deadline:
                raise Failed(f"{tag}: the daemon did not start: "
                             + open(self.path(tag + ".daemon.log")).read())
            time.sleep(0.02)
        return p

    def client_env(self, sock, role):
        e = dict(self.env)
        e.update(MOSAIC_SCHED_SOCKET=sock, MOSAIC_ROLE=role, LD_PRELOAD=self.preload)
        return e

    def be(self, sock, tag):
        argv = [self.exe("be_trainer"), "--seconds", "600", "--step-times", self.path(tag + ".steps")]
        for k in BE_KEYS:
            argv += ["--kernel", k]
        return self.spawn(argv, self.path(tag + ".be.json"),
                          env=self.client_env(sock, "be") if sock else None)

    def hp(self, sock, tag, requests):
        argv = [self.exe("hp_service"), "--requests", str(requests), "--warmup", "3",
                "--gap-ms", "16", "--times", self.path(tag + ".times"),
                "--gpu-latencies", self.path(tag + ".gpu"), "--prequeue"]
        for k in HP_KEYS:
            argv += ["--kernel", k]
        return self.spawn(argv, self.path(tag + ".hp.json"),
                          env=self.client_env(sock, "hp") if sock else None)

    def status(self, sock):
        r = subprocess.run([self.exe("mosaic-sched"), "--socket", sock, "status", "--json"],
                           env=self.env, capture_output=True, text=True, timeout=10)
        if r.returncode != 0:
            return None
        return json.loads(r.stdout)

    def times(self, tag):
        """Each request's (host start, host latency, GPU span), in s. The
        GPU span (events around the request, the simulated GPU's time) is
        what interference changes and the arbiter controls: the SLO checks
        use it. The host latency also holds the loaded host's scheduling
        delays; the check that HP never waits for the daemon uses it."""
        with open(self.path(tag + ".times")) as f:
            host = [tuple(float(x) / 1e3 for x in line.split()) for line in f if line.strip()]
        with open(self.path(tag + ".gpu")) as f:
            gpu = [float(x) / 1e3 for x in f if x.strip()]
        if len(gpu) != len(host):
            raise Failed(f"{tag}: {len(host)} host times but {len(gpu)} GPU spans")
        return [(s, l, g) for (s, l), g in zip(host, gpu)]

    def steps(self, tag):
        with open(self.path(tag + ".steps")) as f:
            return [float(x) / 1e3 for x in f if x.strip()]


def cpu_s(pid):
    """User + system CPU time of a live process, in seconds (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def clients(st):
    return {(c["pid"], c["role"]) for c in st["clients"]} if st else set()


def wait_for(what, cond, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    raise Failed(f"{what}: not within {limit:.2f} s")


def ended_ok(p, name):
    p.wait(timeout=120)
    if p.returncode != 0:
        raise Failed(f"{name} ended with {p.returncode} (a negative value is the signal that killed it)")


class Iso:
    """HP alone, no shim, two runs pooled (one host stall in one run would
    move its p99): the p99 of host latencies and of GPU spans, in s."""

    def __init__(self, e):
        reqs = []
        for i in range(2):
            p = e.hp(None, f"iso{i}", 60)
            ended_ok(p, "hp_service alone")
            reqs += e.times(f"iso{i}")
        self.host = p99([l for _, l, _ in reqs])
        self.gpu = p99([g for _, _, g in reqs])


def daemon_kill(e, iso, mode):
    tag = "kill-" + mode
    sock = e.path(tag + ".sock")
    d1 = e.daemon(sock, tag + "-1", on_timeout=mode)
    be = e.be(sock, tag)
    time.sleep(0.3)
    hp = e.hp(sock, tag, 150)
    both = {(hp.pid, "hp"), (be.pid, "be")}
    wait_for("both clients connected", lambda: both <= clients(e.status(sock)), RECONNECT_S)
    # Kill after the policy has learned the request type (5 isolated
    # requests) and admitted BE for a while.
    time.sleep(1.5)
    t_kill = time.monotonic()
    d1.kill()
    d1.wait()
    # BE's CPU time once be-timeout-ms has run out: a held BE must sleep,
    # not spin on one of the two cores the HP service needs.
    time.sleep(BE_TIMEOUT_S + 0.1)
    cpu0, t_cpu0 = cpu_s(be.pid), time.monotonic()
    time.sleep(OUTAGE_S - BE_TIMEOUT_S - 0.1)
    be_cpu = (cpu_s(be.pid) - cpu0) / (time.monotonic() - t_cpu0)
    t_restart = time.monotonic()
    e.daemon(sock, tag + "-2", on_timeout=mode)
    wait_for("both clients reconnected to the new daemon",
             lambda: both <= clients(e.status(sock)), RECONNECT_S)
    t_back = time.monotonic()
    ended_ok(hp, "hp_service")
    # The HP service's 150 requests may end soon after the reconnection
    # (with BE held in the outage they run fast: under ASan in CI one run
    # had no BE step between the two, 2026-12-07); BE's recovery is judged
    # on its steps after the reconnection, up to AFTER_S more once HP ends.
    try:
        wait_for("a BE step after the reconnection",
                 lambda: any(t > t_back for t in e.steps(tag)), AFTER_S)
    except Failed:
        pass
    t_stop = time.monotonic()
    be.send_signal(signal.SIGTERM)
    ended_ok(be, "be_trainer")

    req = e.times(tag)
    steps = e.steps(tag)
    bound = P * iso.gpu
    # A request is in the outage if it ran at any time between the kill and
    # the reconnection (host times: the kill and the restart are the host's).
    outage = [(s, l, g) for s, l, g in req if s + l > t_kill and s < t_back]
    # Requests under way at the kill may overlap a BE kernel the daemon
    # granted before it, by its policy: those are the policy's (at most 1%
    # over p in normal operation), not the fault's. From one kernel after
    # the kill on, nothing the daemon decided runs any more.
    kernel_slack = 0.1
    # Checked: the requests begun while no daemon ran (the promise is about
    # the daemon's absence), and those begun in the reconnection that
    # follows, up to RACE_WINDOW_S after both clients were back. There a
    # race was found (BE reconnected before HP, the new daemon knew no HP
    # client and admitted BE while the HP service was in a request: 1.31x
    # the isolated p99 once); the mosaic policy now holds BE in a grace
    # period after its start and while a connected HP client has sent no
    # event (docs/arbiter-eval.md, "Faults under load"). With run, BE runs
    # uncontrolled until it is back, so the window starts one kernel after.
    over = [g for s, _, g in outage if t_kill + kernel_slack < s < t_restart and g > bound]
    race_from = t_restart if mode == "hold" else t_back + kernel_slack
    racing = [(s, g) for s, _, g in req if race_from <= s < t_back + RACE_WINDOW_S and g > bound]
    for s, l, g in outage:
        if s > t_kill + kernel_slack and g > bound and mode == "hold":
            print(f"{tag}: over p: a request {1e3 * (s - t_kill):+.0f} ms from the kill, GPU span "
                  f"{1e3 * g:.1f} ms, host {1e3 * l:.1f} ms"
                  + (" (after the restart)" if s >= t_restart else ""))
    log2 = open(e.path(tag + "-2.daemon.log")).read()
    be_first = log2.find("be_trainer granted be") < log2.find("hp_service granted hp")
    in_race = [g for s, _, g in req if race_from <= s < t_back + RACE_WINDOW_S]
    print(f"{tag}: reconnection (BE back {'before' if be_first else 'after'} HP): "
          f"{len(in_race)} requests begun in it, {len(racing)} over p "
          f"(worst GPU span {max(in_race, default=0.0) / bound:.3f} of the bound)")
    if racing:
        slo_fail(f"{tag}: {len(racing)} requests over p begun in the reconnection (BE back "
                     f"{'before' if be_first else 'after'} HP; latencies "
                     f"{', '.join(f'{l * 1e3:.1f}' for _, l in racing)} ms, bound {bound * 1e3:.1f} ms)")
    # The step under way at the kill may still finish (its kernel was
    # granted); one step of BE takes about 40 ms at scale 20 beside HP.
    step_slack = 0.3
    after = [t for t in steps if t_back < t < t_stop]
    worst = max((l for _, l, _ in outage), default=0.0)
    worst_gpu = max((g for _, _, g in outage), default=0.0)
    first = min((t for t in steps if t > t_restart), default=None)
    first_after = f"{1e3 * (first - t_restart):.0f} ms" if first is not None else "never"
    print(f"{tag}: isolated p99 {iso.gpu * 1e3:.2f} ms GPU, {iso.host * 1e3:.2f} ms host; "
          f"{len(req)} requests, {len(outage)} in the outage ({OUTAGE_S} s, reconnected "
          f"{t_back - t_restart:.2f} s after the restart), {len(over)} of them over p={P} "
          f"(worst {worst_gpu / iso.gpu:.2f}x the isolated GPU p99, host {worst / iso.host:.2f}x); "
          f"BE steps: {len([t for t in steps if t_kill < t < t_restart])} in the outage, "
          f"{len(after)} after the reconnection ({len(after) / max(t_stop - t_back, 1e-9):.1f}/s), "
          f"the first {first_after} after the restart; "
          f"BE used {100 * be_cpu:.0f}% of a core after be-timeout-ms")
    if not outage:
        raise Failed(f"{tag}: no HP request ran during the outage: the test shows nothing")
    if worst > WAIT_S or worst_gpu > NOT_BLOCKED * iso.gpu:
        raise Failed(f"{tag}: a request took {worst * 1e3:.1f} ms on the host (bound {WAIT_S * 1e3:.0f}), "
                     f"GPU span {worst_gpu / iso.gpu:.1f}x the isolated p99 (bound {NOT_BLOCKED}x) "
                     f"during the outage: HP waited on the absent daemon")
    if mode == "hold":
        if over:
            slo_fail(f"{tag}: {len(over)} requests over p during the outage with BE held "
                         f"(latencies {', '.join(f'{x * 1e3:.1f}' for x in over)} ms, bound {bound * 1e3:.1f} ms)")
        during = [t for t in steps if t_kill + step_slack < t < t_restart]
        if during:
            raise Failed(f"{tag}: BE made {len(during)} steps while the daemon was away with "
                         f"be-on-timeout hold")
        # A spinning shim measured 86% of a core; a sleeping one 1%. With
        # the device-side gate the held kernel waits on a grant word that
        # the simulated GPU's progress thread polls every 50 us: that thread
        # stands in for the GPU and took 21% of a core in CI (Release,
        # 2026-12-02), so the line is drawn between the two, not at 20%.
        if be_cpu > 0.5:
            raise Failed(f"{tag}: the held BE process used {100 * be_cpu:.0f}% of a core while "
                         f"the daemon was away: it spins instead of sleeping")
    else:
        # Before be-timeout-ms BE waits: requests ended by then are within p.
        early = [g for s, l, g in req
                 if s > t_kill + kernel_slack and s + l < t_kill + BE_TIMEOUT_S and g > bound]
        if early:
            slo_fail(f"{tag}: {len(early)} requests over p before be-timeout-ms ran out")
        waiting = [t for t in steps if t_kill + step_slack < t < t_kill + BE_TIMEOUT_S - 0.05]
        if waiting:
            raise Failed(f"{tag}: BE made {len(waiting)} steps before be-timeout-ms ran out")
        uncontrolled = [t for t in steps if t_kill + BE_TIMEOUT_S < t < t_restart]
        if not uncontrolled:
            raise Failed(f"{tag}: BE made no step after be-timeout-ms with be-on-timeout run")
        print(f"{tag}: uncontrolled after be-timeout-ms: {len(uncontrolled)} BE steps, "
              f"{len([g for s, _, g in req if s > t_kill + BE_TIMEOUT_S and s < t_back and g > bound])} "
              f"requests over p (allowed: BE runs without control)")
    if not after:
        raise Failed(f"{tag}: BE made no step after the daemon came back")
    log = open(e.path(tag + "-2.daemon.log")).read()
    if "removing the stale socket" not in log:
        raise Failed(f"{tag}: the new daemon did not say it replaced the stale socket")


def hp_in_request_with_be_held(st, hp_pid, be_pid):
    by = {c["pid"]: c for c in st["clients"]} if st else {}
    return (by.get(hp_pid, {}).get("requests_in_flight", 0) >= 1
            and by.get(be_pid, {}).get("be_waiting", 0) >= 1)


def client_kill(e, iso):
    tag = "client-kill"
    sock = e.path(tag + ".sock")
    e.daemon(sock, tag)
    be = e.be(sock, tag)
    time.sleep(0.3)
    hp = e.hp(sock, tag + "-hp1", 100000)

    # 1. HP killed in a request while a BE kernel is held for it, once the
    # policy has learned the request type (so the hold is eq. 5's, over an
    # open request in the policy's model). SIGSTOP first, so that the
    # request cannot end between the check and the kill.
    wait_for("the policy learning the HP request type",
             lambda: "HP request type" in open(e.path(tag + ".daemon.log")).read(), 20)
    deadline = time.monotonic() + 20
    while True:
        if time.monotonic() > deadline:
            raise Failed(f"{tag}: never saw an HP request in flight with a BE kernel held")
        if hp_in_request_with_be_held(e.status(sock), hp.pid, be.pid):
            hp.send_signal(signal.SIGSTOP)
            if hp_in_request_with_be_held(e.status(sock), hp.pid, be.pid):
                break
            hp.send_signal(signal.SIGCONT)
        time.sleep(0.005)
    t_kill = time.monotonic()
    hp.kill()
    hp.wait()
    st = wait_for("the killed HP client gone from status",
                  lambda: (lambda s: s if s and (hp.pid, "hp") not in clients(s) else None)(e.status(sock)),
                  RECONNECT_S)
    if st["hp_requests_in_flight"] != 0:
        raise Failed(f"{tag}: {st['hp_requests_in_flight']} HP requests still in flight after "
                     f"their client died")
    # Waited for longer than the bound, so that a failure says how late.
    wait_for("a BE step after the HP client died",
             lambda: any(t > t_kill for t in e.steps(tag)), 4 * HELD_REDECIDED_S + 1.0)
    first = min(t for t in e.steps(tag) if t > t_kill)
    if first - t_kill > HELD_REDECIDED_S:
        raise Failed(f"{tag}: BE's next step {1e3 * (first - t_kill):.0f} ms after the kill of the HP "
                     f"client it was held for (bound {1e3 * HELD_REDECIDED_S:.0f} ms): the held kernel "
                     f"was not decided again at once")
    print(f"{tag}: HP killed mid-request with a BE kernel held; gone from status, no request in "
          f"flight; BE's next step {1e3 * (first - t_kill):.0f} ms after the kill")

    # 2. A BE client killed with a kernel granted: a second BE trainer and a
    # new HP service carry on, HP within p once the dead one's work is gone.
    be2 = e.be(sock, tag + "-be2")
    hp2 = e.hp(sock, tag + "-hp2", 120)
    wait_for("the new clients connected",
             lambda: {(be2.pid, "be"), (hp2.pid, "hp")} <= clients(e.status(sock)), RECONNECT_S)

    def be1_running(s):
        by = {c["pid"]: c for c in s["clients"]} if s else {}
        return by.get(be.pid, {}).get("be_in_flight", 0) >= 1

    wait_for("the first BE trainer with a kernel granted", lambda: be1_running(e.status(sock)), 20)
    t_kill2 = time.monotonic()
    be.kill()
    be.wait()
    st = wait_for("the killed BE client gone from status",
                  lambda: (lambda s: s if s and (be.pid, "be") not in clients(s) else None)(e.status(sock)),
                  RECONNECT_S)
    ended_ok(hp2, "the second hp_service")
    t_end = time.monotonic()
    be2.send_signal(signal.SIGTERM)
    ended_ok(be2, "the second be_trainer")
    req = [(s, l, g) for s, l, g in e.times(tag + "-hp2") if s > t_kill2 + 0.2]
    over = [g for _, _, g in req if g > P * iso.gpu]
    steps2 = [t for t in e.steps(tag + "-be2") if t_kill2 < t < t_end]
    print(f"{tag}: BE killed with a kernel granted; gone from status; after it {len(req)} HP "
          f"requests, {len(over)} over p={P}; the other BE trainer made {len(steps2)} steps")
    if not req:
        raise Failed(f"{tag}: no HP request after the BE kill: the test shows nothing")
    # Requests over p here are the policy's own (the new HP service's first
    # overlapped requests, before the drift check caught up, as in
    # docs/arbiter-eval.md); what the kill must not do is leave anything
    # for HP to wait on.
    worst = max(l for _, l, _ in req)
    worst_gpu = max(g for _, _, g in req)
    if worst > WAIT_S or worst_gpu > NOT_BLOCKED * iso.gpu:
        raise Failed(f"{tag}: an HP request took {worst * 1e3:.1f} ms on the host (bound "
                     f"{WAIT_S * 1e3:.0f}), GPU span {worst_gpu / iso.gpu:.1f}x the isolated p99 "
                     f"(bound {NOT_BLOCKED}x) after a BE client died")
    if not steps2:
        raise Failed(f"{tag}: the other BE trainer made no step after the first one died")
    log = open(e.path(tag + ".daemon.log")).read()
    if log.count("its state is freed") < 2:
        raise Failed(f"{tag}: the daemon's log does not say both killed clients' state was freed")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    which = sys.argv[2:] or ["daemon-hold", "daemon-run", "client-kill"]
    for w in which:
        if w not in ("daemon-hold", "daemon-run", "client-kill"):
            print(f"arbiter_faults: '{w}' is not a test: use daemon-hold, daemon-run or client-kill",
                  file=sys.stderr)
            return 2
    e = Env(build)
    try:
        iso = Iso(e)
        for w in which:
            if w == "client-kill":
                client_kill(e, iso)
            else:
                daemon_kill(e, iso, w.split("-")[1])
    except (Failed, subprocess.SubprocessError, OSError) as x:
        print(f"FAIL: {x}")
        for name in sorted(os.listdir(e.work)):
            if name.endswith(".daemon.log"):
                print(f"--- {name} (last lines)")
                print("".join(open(e.path(name)).readlines()[-15:]))
        return 1
    finally:
        e.close()
    print("PASS: " + ", ".join(which))
    return 0


if __name__ == "__main__":
    sys.exit(main())
