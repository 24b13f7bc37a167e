"""`bench/run`: cogserve against the reference, its peers and the floor, in one command.

    bench/run                      all scenarios, 5 rounds, writes bench/RESULTS.md
    bench/run --quick              2 rounds of short runs (< 3 min), writes
                                   bench/.cache/RESULTS-quick.md and prints it
    bench/run -s noop_seq -s sse   only these scenarios (writes bench/.cache/RESULTS-partial.md)
    bench/run --profile noop_seq   cogserve alone under py-spy: a flame graph SVG
    bench/run -s noop_seq --baseline main
                                   also cogserve at git ref `main`, as one more system
                                   (installed once into bench/.cache/venvs/baseline-SHA)

For each scenario every system is started once and warmed up, then the rounds run
interleaved (cogserve, peer, floor, then peer, floor, cogserve ...) so a burst of load from
elsewhere on the machine hits every system alike. A system that fails records
"failed: <reason>" for that scenario and the run goes on.
"""

from __future__ import annotations

import argparse
import datetime
import http.server
import os
import pathlib
import signal
import sys
import threading
import time
import traceback

from bench import envs, loadgen, profile, report, systems
from bench.catalog import ALL
from bench.scenarios import Context, Scenario, Unavailable, Unsupported
from bench.systems import BASELINE, COGSERVE, LITSERVE, MLSERVER, REFERENCE, Server, StartError

RESULTS = envs.BENCH / "RESULTS.md"
QUICK_RESULTS = envs.CACHE / "RESULTS-quick.md"
PARTIAL_RESULTS = envs.CACHE / "RESULTS-partial.md"  # -s/--system: never clobber the full table


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- upload receiver


class _Receiver(http.server.BaseHTTPRequestHandler):
    """Accepts PUT/POST uploads, discards the bytes, answers with a Location."""

    protocol_version = "HTTP/1.1"

    def _accept(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                _drain(self.rfile, size + 2)
        else:
            _drain(self.rfile, length)
        location = f"http://{self.headers.get('Host', '127.0.0.1')}/stored{self.path}"
        body = b"{}"
        self.send_response(201)
        self.send_header("Location", location)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_PUT = _accept
    do_POST = _accept

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def _drain(stream: object, size: int) -> None:
    read = stream.read  # type: ignore[attr-defined]
    while size > 0:
        chunk = read(min(size, 1 << 20))
        if not chunk:
            return
        size -= len(chunk)


def start_receiver() -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# ---------------------------------------------------------------- the runner


def _reason(exc: BaseException) -> str:
    """One line for the table: our own errors speak for themselves, others get a type."""
    text = " ".join(str(exc).split()).replace("|", "/")
    if not isinstance(exc, (StartError, RuntimeError)) or not text:
        text = f"{type(exc).__name__}: {text}"
    return text[:240]


def _note(exc: BaseException) -> str:
    if isinstance(exc, Unsupported):
        return f"not supported: {_reason(exc)}"
    return f"failed: {_reason(exc)}"


def run_scenario(scenario: Scenario, ctx: Context, results: report.Results,
                 only: list[str] | None, baseline: bool = False) -> None:
    chosen = [s for s in scenario.lineup(baseline)
              if not only or s in only or s == BASELINE]
    outcomes = results.setdefault(scenario.key, {})
    for system in chosen:
        outcomes[system] = report.Outcome()
    try:
        scenario.prepare(ctx)
    except Unavailable as exc:
        for system in chosen:
            outcomes[system].note = f"not available: {exc}"
        log(f"{scenario.key}: not available: {exc}")
        return
    except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
        for system in chosen:
            outcomes[system].note = _note(exc)
        log(f"{scenario.key}: prepare failed: {exc}")
        return

    servers: dict[str, Server] = {}

    def launch(system: str) -> None:
        """Start and warm up `system`'s server into `servers`, or note why it did not."""
        try:
            log(f"{scenario.key}: starting {system}")
            servers[system] = scenario.start(system, ctx)
            scenario.warmup(servers[system], ctx)
        except Exception as exc:  # noqa: BLE001
            outcomes[system].note = _note(exc)
            log(f"{scenario.key}: {system}: {outcomes[system].note}")
            if system in servers:
                servers.pop(system).stop()

    relaunch = scenario.relaunch_each_round
    dropped: set[str] = set()  # failed to start or to measure: not tried again
    try:
        for system in chosen:
            if scenario.restart_each_round:  # measure() starts its own
                servers[system] = Server(system, "", None, 0.0)
            elif not relaunch:  # else started at each of its turns below
                launch(system)
                if system not in servers:
                    dropped.add(system)
        rounds = 1 if getattr(scenario, "single_round", False) else ctx.rounds  # the soak
        for round_no in range(rounds):
            # the order rotates each round: a system's run can leave the machine busy for
            # the next one (the reference's 50 MiB upload slowed whichever server uploaded
            # right after it 3-4x, scenario 5b), so no system always comes after the same one
            turn = round_no % len(chosen)
            for system in (*chosen[turn:], *chosen[:turn]):
                if system in dropped:
                    continue
                if relaunch:
                    launch(system)
                server = servers.get(system)
                if server is None:
                    dropped.add(system)
                    continue
                try:
                    values = scenario.measure(server, ctx)
                except Exception as exc:  # noqa: BLE001
                    outcomes[system].note = _note(exc)
                    log(f"{scenario.key}: {system} round {round_no + 1}: "
                        f"{outcomes[system].note}")
                    if os.environ.get("BENCH_DEBUG"):
                        traceback.print_exc()
                    servers.pop(system).stop()
                    dropped.add(system)
                    continue
                outcomes[system].add(values)
                shown = ", ".join(f"{k} {report.fmt(v)}" for k, v in values.items())
                log(f"{scenario.key}: {system} round {round_no + 1}: {shown}")
                if relaunch:
                    servers.pop(system).stop()  # its successor starts at its next turn
    finally:
        for server in servers.values():
            server.stop()


# ---------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> None:
    keys = [s.key for s in ALL]
    parser = argparse.ArgumentParser(prog="bench/run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="2 short rounds per system; results to bench/.cache/")
    parser.add_argument("-s", "--scenario", action="append", choices=keys, metavar="NAME",
                        help=f"run only this scenario (repeatable): {', '.join(keys)}")
    parser.add_argument("--system", action="append", choices=systems.ALL,
                        help="run only this system (repeatable)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per system (>= 1)")
    parser.add_argument("--seconds", type=float, default=None, help="length of a rate run")
    parser.add_argument("--baseline", metavar="REF",
                        help="also run cogserve at this git ref (a commit, branch or tag) in "
                             "every scenario, interleaved, with its own ratio column")
    parser.add_argument("--profile", choices=keys, metavar="NAME",
                        help="profile cogserve in this scenario with py-spy; write an SVG")
    parser.add_argument("-o", "--output", type=pathlib.Path, default=None,
                        help="where to write the results (default bench/RESULTS.md, "
                             "or bench/.cache/RESULTS-quick.md with --quick)")
    args = parser.parse_args(argv)

    rounds = args.rounds or (2 if args.quick else 5)
    seconds = args.seconds or (1.0 if args.quick else 5.0)
    ctx = Context(wrk=envs.wrk(), rounds=max(1, rounds), seconds=seconds,
                  warmup_s=1.0 if args.quick else 2.0, repeats=2 if args.quick else 5)
    chosen = [s for s in ALL if not args.scenario or s.key in args.scenario]
    needed = {COGSERVE} | {sys_ for s in chosen for sys_ in s.systems
                           if not args.system or sys_ in args.system}
    if args.profile:
        needed = {COGSERVE}
    for name in (COGSERVE, REFERENCE, MLSERVER, LITSERVE):
        if name in needed:
            envs.venv(name)
    if args.baseline and not args.profile:
        systems.use_baseline(envs.baseline(args.baseline))

    receiver = start_receiver()
    ctx.upload_url = f"http://127.0.0.1:{receiver.server_address[1]}/uploads/"
    try:
        if args.profile:
            scenario = next(s for s in ALL if s.key == args.profile)
            out = profile.record(scenario, ctx, seconds=max(5.0, seconds * 2))
            print("\n".join(profile.summary(out)))
            print(f"flame graph: {out}")
            return
        started = datetime.datetime.now(datetime.UTC)
        load_before = " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3])
        results: report.Results = {}
        for scenario in chosen:
            run_scenario(scenario, ctx, results, args.system, baseline=bool(args.baseline))
        load_after = " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3])
        text = report.render(chosen, results, quick=args.quick, rounds=ctx.rounds,
                             seconds=seconds, started=started, load_before=load_before,
                             load_after=load_after, baseline=systems.baseline_label())
    finally:
        receiver.shutdown()
        receiver.server_close()
    partial = len(chosen) < len(ALL) or bool(args.system)
    out = args.output or (QUICK_RESULTS if args.quick else PARTIAL_RESULTS if partial
                          else RESULTS)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    log(f"results written to {out}")


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.exit(128 + signum)  # unwinds through the `finally` blocks that stop servers


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        main()
    except envs.SetupError as exc:
        print(f"bench: setup failed: {exc}", file=sys.stderr)
        sys.exit(2)
    except (StartError, Unavailable, loadgen.LoadError) as exc:  # --profile: nothing to record
        print(f"bench: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
