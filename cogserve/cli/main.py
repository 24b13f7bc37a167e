"""The `cogserve` command: serve, predict|run, train, schema, env, dockerfile, k8s, ray."""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import json
import logging
import os
import pathlib
import signal
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from cogserve.exceptions import DefinitionError
from cogserve.model.config import ModelConfig, load_config
from cogserve.process import flag_types, interrupt
from cogserve.process.envvars import env_int, env_port, env_text
from cogserve.process.log_writer import BackgroundLogHandler
from cogserve.runtime.errors import StoreError
from cogserve.wire.protocol import Mode
from cogserve.wire.states import Event

if TYPE_CHECKING:  # for annotations only: each command imports its modules where used
    from cogserve.assembly import Assembled
    from cogserve.model.validation import InputValidator
    from cogserve.runtime.service import Service

log = logging.getLogger("cogserve")

NO_ENV_HELP = ("run the model with cogserve's own Python, not in an environment built for "
               "cog.yaml's packages (also COGSERVE_NO_ENV=1)")


def main(argv: list[str] | None = None) -> None:
    try:  # the flags' defaults come from the environment: a bad value is refused here
        port = env_port("PORT", 5000, any_free=True)
        max_body = env_int("COGSERVE_MAX_BODY_BYTES", 128 * 1024 * 1024, minimum=1)
    except DefinitionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    parser = argparse.ArgumentParser(prog="cogserve", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the model over HTTP",
                           formatter_class=_DefaultsShown)
    serve.add_argument("directory", nargs="?", default=".", help="the model folder")
    serve.add_argument("contract", nargs="?", choices=["serve"], default=None,
                       help="`serve` (what SageMaker's `docker run IMAGE serve` appends to an "
                            "image's entrypoint): the same as --sagemaker")
    serve.add_argument("-p", "--port", type=flag_types.port(0), default=None,
                       help=f"port to listen on ($PORT if set) (default: {port}); 8080 with "
                            "--sagemaker, AIP_HTTP_PORT on Vertex AI")
    serve.add_argument("--sagemaker", action="store_true",
                       help="also answer SageMaker's GET /ping and POST /invocations (port "
                            "8080 unless -p says otherwise)")
    serve.add_argument("--host", default="0.0.0.0",
                       help="address to listen on (127.0.0.1: this machine only)")
    serve.add_argument("--upload-url", default=None,
                       help="PUT file outputs here (multipart) and return their URLs")
    serve.add_argument("--predictor", default=None, help="FILE.py:NAME, overrides cog.yaml")
    serve.add_argument("--no-env", action="store_true", help=NO_ENV_HELP)
    serve.add_argument("--model-name", default=None, help="the model's name in the V2 API")
    serve.add_argument("--model-version", default=None, help="the model's version in the V2 API")
    serve.add_argument("--await-explicit-shutdown", action="store_true",
                       help="ignore SIGTERM; exit only on POST /shutdown")
    serve.add_argument("--max-body-bytes", type=flag_types.whole(1),
                       default=max_body,
                       help="largest request body accepted ($COGSERVE_MAX_BODY_BYTES if set)")
    serve.add_argument("--no-playground", dest="playground", action="store_false",
                       help="do not serve the browser playground at /docs")
    serve.add_argument("--no-mcp", dest="mcp", action="store_false",
                       help="do not serve the model as an MCP tool at /mcp")
    serve.add_argument("--no-openai", dest="openai", action="store_false",
                       help="do not serve the OpenAI API at /v1 (language and image models)")
    _capacity_flags(serve)
    serve.add_argument("--store", default=None,
                       metavar="sqlite|PATH|memory|redis://HOST:PORT/DB",
                       help="where predictions outlive the server (COGSERVE_STORE): sqlite "
                            "(the default: one file per model folder and port in "
                            "$COGSERVE_STATE_DIR, else ~/.local/state/cogserve), a SQLite "
                            "file's path, memory (nothing kept on disk), or a Redis shared "
                            "by replicas")
    serve.add_argument("--no-metrics", dest="metrics", action="store_false", default=None,
                       help="do not serve Prometheus metrics (COGSERVE_METRICS=0)")
    serve.add_argument("--metrics-port", type=flag_types.port(1), default=None,
                       help="serve /metrics on this port, not the API's (COGSERVE_METRICS_PORT)")

    for name, help_text in (("predict", "run one prediction"), ("run", "same as predict"),
                            ("train", "run one training")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("directory", nargs="?", default=".")
        p.add_argument("-i", "--input", action="append", default=[], metavar="NAME=VALUE",
                       help="an input; NAME=@FILE sends a local file; repeat for lists")
        p.add_argument("--json", default=None, metavar="JSON|@FILE|@-",
                       help="all inputs as one JSON object, from a file (@inputs.json) or "
                            "standard input (@- or -); prints the whole prediction as JSON")
        p.add_argument("-o", "--output", default=None,
                       help="write the output here (a file, text, or JSON; with --json the "
                            "whole prediction)" + ("; default: weights" if name == "train"
                                                   else ""))
        p.add_argument("--predictor", default=None)
        p.add_argument("--no-env", action="store_true", help=NO_ENV_HELP)

    schema = sub.add_parser("schema", help="print the OpenAPI schema")
    schema.add_argument("directory", nargs="?", default=".")
    schema.add_argument("--predictor", default=None)
    schema.add_argument("--no-env", action="store_true", help=NO_ENV_HELP)
    schema.add_argument("-o", "--output", default=None, help="write to this file")

    from cogserve.envs import command as env_command

    env_command.add_parser(sub)

    from cogserve.deploy import commands as deploy_commands

    deploy = deploy_commands.register(sub)
    args = parser.parse_args(argv)
    _configure_logging(background=args.command == "serve")
    try:
        if args.command in deploy:
            deploy[args.command](args)
        elif args.command == "serve":
            args.port = _serve_port(args, port)
            _serve(args)
        elif args.command in ("predict", "run", "train"):
            sys.exit(_predict(args, Mode.TRAIN if args.command == "train" else Mode.PREDICT))
        elif args.command == "schema":
            _schema(args)
        elif args.command == "env":
            sys.exit(env_command.run(args))
    except (DefinitionError, StoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:  # Ctrl-C: the worker has been stopped; no traceback
        print("interrupted", file=sys.stderr)
        sys.exit(130)


# the numeric capacity flags, `--queue-size` for `queue_size`: (Settings attribute, type,
# metavar, help); each is None when unset, keeping the environment's value
_LIMITS: tuple[tuple[str, type[int] | type[float], str, str], ...] = (
    ("queue_size", int, "N",
     "predictions that may wait for a free slot (COGSERVE_QUEUE_SIZE; default 0: answer 409 "
     "at once, as Cog does); a full queue answers 429 with Retry-After"),
    ("queue_timeout", float, "S",
     "fail a prediction that waited longer than S seconds in the queue "
     "(COGSERVE_QUEUE_TIMEOUT)"),
    ("predict_timeout", float, "S",
     "cancel and fail a prediction that runs longer than S seconds (COGSERVE_PREDICT_TIMEOUT; "
     "a request's X-Prediction-Timeout header or V2 timeout parameter may ask for less)"),
    ("workers", int, "N",
     "worker processes, each running setup() once (COGSERVE_WORKERS, default 1)"),
)


def _capacity_flags(serve: argparse.ArgumentParser) -> None:
    """Queue, pool, deadline and reload flags; unset ones keep the environment's value."""
    group = serve.add_argument_group("capacity (defaults: Cog's behaviour)")
    for name, kind, metavar, text in _LIMITS:
        group.add_argument(f"--{name.replace('_', '-')}", type=kind, default=None,
                           metavar=metavar, help=text)
    group.add_argument("--gpus", default=None, metavar="LIST",
                       help="CUDA_VISIBLE_DEVICES per worker, round-robin from a comma-"
                            "separated list, e.g. 0,1 (COGSERVE_GPUS)")
    group.add_argument("--reload", action="store_true",
                       help="restart the workers when a .py file or cog.yaml in the model "
                            "folder changes (development)")


def _apply_capacity(args: argparse.Namespace, settings: Any) -> None:
    from cogserve.runtime.settings import parse_gpus

    for name, _, _, _ in _LIMITS:
        value = getattr(args, name)
        if value is None:
            continue
        if value < 0 or (name == "workers" and value < 1):
            raise SystemExit(f"error: --{name.replace('_', '-')} must be "
                             f"{'at least 1' if name == 'workers' else 'positive or 0'}")
        if name.endswith("timeout") and value == 0:
            value = None  # 0: no limit
        setattr(settings, name, value)
    if args.gpus is not None:
        settings.gpus = parse_gpus(args.gpus)
    settings.predictor = args.predictor


class _DefaultsShown(argparse.HelpFormatter):
    """--help shows every default that is a value (host, port, ...), not None or a flag's."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (action.default is not None and not isinstance(action.default, bool)
                and action.default is not argparse.SUPPRESS):
            text += " (default: %(default)s)"
        return text


def _configure_logging(background: bool = False) -> None:
    """`background`: a server's INFO lines (an access line per request) are formatted and
    written by a thread (`log_writer`); a command's lines are written as they come, in
    order with what it prints."""
    level = env_text("COG_LOG_LEVEL", "INFO").upper()
    fmt = env_text("LOG_FORMAT", "json")
    handler = (BackgroundLogHandler(sys.stderr) if background
               else logging.StreamHandler(sys.stderr))
    if background:
        # no format here shows a record's thread or process: not looked up per record
        # (per request, for the access line)
        logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
        if sys.version_info >= (3, 12):
            logging.logAsyncioTasks = False
    if fmt == "console":
        handler.setFormatter(_Formatter(_CONSOLE))
    else:
        handler.setFormatter(_JSONFormatter())
    root = logging.getLogger("cogserve")
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level, logging.INFO))
    root.propagate = False


_CONSOLE = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Formatter(logging.Formatter):
    """It formats an access log line per request, so the timestamp's seconds are
    formatted once per second, not per line (strftime is ~5 us), and a line of the
    console format without an exception or a stack is written out directly (what
    `logging.Formatter.format` makes of it, in one step rather than five calls)."""

    _second = -1
    _stamp = ""

    def format(self, record: logging.LogRecord) -> str:
        if self._fmt is not _CONSOLE or record.exc_info or record.exc_text \
                or record.stack_info:
            return super().format(record)
        record.message = message = record.getMessage()
        record.asctime = stamp = self.formatTime(record, self.datefmt)
        return f"{stamp} {record.levelname} {record.name}: {message}"

    def format_parts(self, created: float, msecs: float, levelname: str, name: str,
                     message: str, fields: dict[str, Any] | None) -> str | None:
        """What `format` makes of a record with these attributes (no exception, no stack),
        without the record: the log writer renders the access line with it. None for a
        format of someone else's."""
        if self._fmt is not _CONSOLE:
            return None
        return f"{self._time(created, msecs)} {levelname} {name}: {message}"

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return self._time(record.created, record.msecs)

    def _time(self, created: float, msecs: float) -> str:
        second = int(created)
        if second != self._second:
            self._second = second
            self._stamp = time.strftime(self.default_time_format, self.converter(second))
        return f"{self._stamp},{int(msecs):03d}"


class _JSONFormatter(_Formatter):
    """One JSON object per line, written with orjson (json.dumps is ~10 us slower)."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {"timestamp": self.formatTime(record), "severity": record.levelname,
               "logger": record.name, "message": record.getMessage()}
        fields = getattr(record, "fields", None)  # structured lines (the access log)
        if fields:
            doc.update(fields)
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(doc, default=str).decode()

    def format_parts(self, created: float, msecs: float, levelname: str, name: str,
                     message: str, fields: dict[str, Any] | None) -> str | None:
        doc = {"timestamp": self._time(created, msecs), "severity": levelname,
               "logger": name, "message": message}
        if fields:
            doc.update(fields)
        return orjson.dumps(doc, default=str).decode()


def _mount_weights(config: ModelConfig) -> None:
    """cog.yaml `weights:` where the model reads them; nothing is imported without it."""
    if config.weights is not None:
        from cogserve.envs import weights

        weights.prepare(config)


def _serve_port(args: argparse.Namespace, default: int) -> int:
    """-p, else Vertex AI's AIP_HTTP_PORT (with its routes), else SageMaker's 8080 (with
    --sagemaker), else $PORT or 5000 (`default`)."""
    from cogserve.process.envvars import vertex_routes

    args.sagemaker = args.sagemaker or args.contract == "serve"
    if args.port is not None:
        return int(args.port)
    vertex = vertex_routes()
    if vertex is not None:
        return vertex.port
    if args.sagemaker:
        from cogserve.cloud import SAGEMAKER_PORT

        return SAGEMAKER_PORT
    return default


def _check_variables(url: str | None) -> None:
    """What is read later, checked before anything starts (a bad value stops the server
    here, not at the first webhook or upload): COGSERVE_WEBHOOK_SECRET; for a bucket in
    --upload-url, the s3 extra and COGSERVE_UPLOAD_PRESIGN."""
    from cogserve import buckets
    from cogserve.process.envvars import upload_presign, webhook_secret

    webhook_secret()
    if url is None or not url.startswith(buckets.SCHEMES):
        return
    if not buckets.installed():
        raise DefinitionError(f"--upload-url {url} needs the s3 extra: {buckets.INSTALL_HINT}")
    try:
        buckets.ObjectURL.parse(url)
    except ValueError as exc:
        raise DefinitionError(f"--upload-url: {exc}") from None
    upload_presign()


def _serve(args: argparse.Namespace) -> None:
    from cogserve import assembly
    from cogserve.runtime import settings as runtime_settings
    from cogserve.runtime.settings import ObservabilityOptions

    config = load_config(args.directory, args.predictor)
    config.ref(Mode.PREDICT if config.predict_ref or not config.train_ref else Mode.TRAIN)
    _check_variables(args.upload_url)
    settings = runtime_settings.for_model(config, upload_url=args.upload_url,
                                          no_env=args.no_env)
    settings.model_name = args.model_name
    settings.model_version = args.model_version
    _mount_weights(config)
    settings.playground = args.playground
    settings.mcp = args.mcp
    settings.openai = args.openai
    settings.sagemaker = args.sagemaker
    _apply_capacity(args, settings)
    settings.store = runtime_settings.choose_store(
        args.store if args.store is not None else env_text("COGSERVE_STORE"),
        config.directory, args.port)
    settings.observability = ObservabilityOptions.from_env(
        metrics=args.metrics, metrics_port=args.metrics_port, host=args.host)
    runtime = assembly.build_service(config, settings)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency, but optional on some OSes
        asyncio.run(_serve_async(runtime, args))
    else:
        uvloop.run(_serve_async(runtime, args))


async def _serve_async(runtime: Assembled, args: argparse.Namespace) -> None:
    """Start the service, then import the HTTP stack and serve: the worker boots (Python,
    its imports, setup()) while uvicorn and the app are imported and built, ~45 ms that
    used to come before the worker was spawned (the app's lifespan started it; the no-op
    model's READY 0.239 -> 0.198 s, bench/FINDINGS.md)."""
    from cogserve import assembly

    service = runtime.service
    stop = asyncio.Event()
    _handle_signals(service, stop, args.await_explicit_shutdown)
    try:
        await service.start()
    except Exception as exc:  # noqa: BLE001 - any failure: one line, no worker left behind
        log.error("the server could not start: %s", exc)
        await service.stop()
        raise SystemExit(1) from None
    uvicorn_level = {"DEBUG": "debug", "WARNING": "warning", "ERROR": "error"}.get(
        env_text("COG_LOG_LEVEL").upper(), "warning")
    try:
        from cogserve.http import server

        app = assembly.build_app(runtime, max_body=args.max_body_bytes, on_shutdown=stop.set)
        await server.serve(app, service, stop, args.host, args.port, log_level=uvicorn_level,
                           reload=args.reload)
    except BaseException:  # e.g. a bad COGSERVE_MAX_HEADERS: the worker is stopped too
        await service.stop()  # (after `serve` stopped it, a second stop does nothing)
        raise


def _handle_signals(service: Service, stop: asyncio.Event,
                    await_explicit_shutdown: bool) -> None:
    """Cog's shutdown rules, in place of uvicorn's (`cogserve.http.server` says why), from
    before the worker starts: a signal during the start stops the server as one later
    does."""
    loop = asyncio.get_running_loop()

    def on_sigterm() -> None:
        if await_explicit_shutdown:
            log.info("SIGTERM ignored: waiting for POST /shutdown (--await-explicit-shutdown)")
            return
        stop.set()

    def on_sigint() -> None:
        # the first Ctrl-C drains in-flight predictions, as SIGTERM does; the worker has its
        # own process group and does not see the key. A second one ends the worker, so
        # those predictions fail at once ("the worker process was killed by SIGKILL").
        if stop.is_set():
            log.warning("second interrupt: stopping the workers without waiting")
            service.kill_workers()
        stop.set()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    loop.add_signal_handler(signal.SIGINT, on_sigint)


def _schema(args: argparse.Namespace) -> None:
    from cogserve.model.loader import load_model
    from cogserve.model.schema import openapi_document

    config = load_config(args.directory, args.predictor)
    _reexec_in_model_env(config, args)
    from cogserve.runtime.settings import apply_environment

    apply_environment(config)
    output = pathlib.Path(args.output).resolve() if args.output else None
    os.chdir(config.directory)  # as the worker does: the model may read files at import
    with _stdout_to_stderr():  # a model that prints while loading must not corrupt the JSON
        model = None
        if config.predict_ref or not config.train_ref:  # else a train-only model
            model = load_model(config.ref(Mode.PREDICT), config.directory)
        train = None
        if config.train_ref:
            train = load_model(config.train_ref, config.directory, Mode.TRAIN).signature
    doc = openapi_document(model.signature if model else None, train,
                           streaming=model.streaming if model else False)
    text = json.dumps(doc, indent=2)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n")
    else:
        print(text)


def _reexec_in_model_env(config: ModelConfig, args: argparse.Namespace) -> None:
    """`schema` imports the model: it runs in the model's environment, when it has one."""
    from cogserve.envs import model_env
    from cogserve.envs.builder import EnvBuildError
    from cogserve.envs.command import to_stderr

    environment = model_env.for_model(config, args.no_env)
    if environment is None:
        return
    try:
        python = interrupt.run(environment.prepare(to_stderr))
    except EnvBuildError as exc:
        raise DefinitionError(f"could not build the model's environment: {exc}") from None
    argv = [python, "-m", "cogserve.cli", "schema", str(config.directory), "--no-env"]
    if args.predictor:
        argv += ["--predictor", args.predictor]
    if args.output:
        argv += ["-o", str(pathlib.Path(args.output).resolve())]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(python, argv, {**os.environ, **environment.worker_env()})


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send fd 1 (print, C extensions, child processes) to stderr for a while."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


# ---------------------------------------------------------------- predict / train


def _predict(args: argparse.Namespace, mode: Mode) -> int:
    if not env_text("COG_LOG_LEVEL"):  # every error is printed once, plainly, below
        logging.getLogger("cogserve").setLevel(logging.CRITICAL)
    config = load_config(args.directory, args.predictor)
    config.ref(mode)
    from cogserve.cli.inputs import read_json_argument
    from cogserve.model.verdicts import InputError

    try:  # before the model starts: a bad --json costs nothing
        given = read_json_argument(args.json) if args.json is not None else None
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return interrupt.run(_predict_async(config, args, mode, given))  # Ctrl-C: main() says so


async def _predict_async(config: ModelConfig, args: argparse.Namespace, mode: Mode,
                         given: dict[str, Any] | None) -> int:
    from cogserve.cli.output import OutputError, Presenter, writable_target
    from cogserve.envs.builder import EnvBuildError
    from cogserve.envs.command import to_stderr
    from cogserve.model.verdicts import InputError
    from cogserve.runtime import settings as runtime_settings
    from cogserve.runtime.errors import Refusal
    from cogserve.runtime.request import PredictionRequest
    from cogserve.runtime.service import Service
    from cogserve.wire.states import Health

    settings = runtime_settings.for_model(config, no_env=args.no_env)
    settings.workers = 1  # one prediction: COGSERVE_WORKERS is for `serve`
    _mount_weights(config)
    if settings.environment is not None:  # built here, before the worker, with live progress
        try:
            await settings.environment.prepare(to_stderr)
        except EnvBuildError as exc:
            print(f"error: could not build the model's environment: {exc}", file=sys.stderr)
            return 1
    # setup()'s output is printed as it runs, as `cog` shows it
    service = Service(config, settings, gate=True, on_setup_log=_to_stderr)
    # Ctrl-C cancels this coroutine before any service.stop() below runs: the worker is
    # killed as the loop closes (supervisor), and its temp folder goes at exit
    atexit.register(service.remove_folders)
    go: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def schema_reported() -> None:
        if not go.done():
            go.set_result(None)

    service.on_schema.append(schema_reported)
    await service.start()
    waiter: asyncio.Future[Any] = asyncio.ensure_future(service.ready.wait())
    await asyncio.wait([go, waiter], return_when=asyncio.FIRST_COMPLETED)
    if not go.done():
        reason = service.fatal_reason or service.setup.logs.strip() or "the worker exited"
        print(f"error: {reason}", file=sys.stderr)
        await service.stop()
        return 1
    assert service.schema is not None
    components = service.schema["components"]["schemas"]
    try:
        raw = _command_line_inputs(args, given, service.validator(mode))
        # `cog train` has no whole-response form: its --json is only a way to give inputs
        whole_json = given is not None and mode is not Mode.TRAIN
        explicit = args.output is not None or mode is Mode.TRAIN
        fallback = "weights" if mode is Mode.TRAIN else "output.json" if whole_json else "output"
        target = writable_target(args.output, fallback)
    except (InputError, OutputError) as exc:
        await service.stop()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    service.go()
    await service.ready.wait()
    if service.status is not Health.READY:  # its logs were printed as they came
        lines = service.setup.logs.strip().splitlines()
        print(f"error: setup() failed: {lines[-1] if lines else 'the worker exited'}",
              file=sys.stderr)
        await service.stop()
        return 1
    output_schema = components.get("TrainingOutput" if mode is Mode.TRAIN else "Output", {})
    try:
        prediction = service.create(PredictionRequest(raw, id=service.new_id(), mode=mode),
                                    listeners=[_print_logs])
    except Refusal as exc:  # the CLI's one mapping of what the runtime refuses
        print(f"error: {exc}", file=sys.stderr)
        await service.stop()
        return 1
    await prediction.done
    await service.stop()
    presenter = Presenter(output_schema, target, explicit, whole_json)
    try:
        return presenter.present(prediction.to_dict())
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _command_line_inputs(args: argparse.Namespace, given: dict[str, Any] | None,
                         validator: InputValidator) -> dict[str, Any]:
    """`--json` (its `@file` values read as data URLs) and `-i` pairs, checked by the
    server's validator and refused in `cog`'s words; `-i` overrides a `--json` key
    (cogserve's; `cog` refuses both at once)."""
    from cogserve.cli.inputs import coerce_inputs, files_to_data_urls
    from cogserve.model.verdicts import check_inputs, check_names

    raw: dict[str, Any] = {}
    if given is not None:
        check_names(given, validator)  # before any @file is read
        raw = files_to_data_urls(given)
    raw.update(coerce_inputs(args.input, validator))
    check_inputs(raw, validator)
    return raw


def _to_stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def _print_logs(prediction: Any, event: Event, payload: dict[str, Any]) -> None:
    """The prediction's logs go to stderr as they come; its output is printed at the end."""
    if event is Event.LOG:
        _to_stderr(payload["data"])

