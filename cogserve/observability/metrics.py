"""Prometheus metrics: the one owner of the registry and every series in it.

Fed by the runtime's events (`runtime/events.py`) and by the request observer
(`observability/requests.py`), never by calls inside the runtime's logic. Values that
already live in the `Service` (slots, health) are read when Prometheus scrapes, so they
cost nothing between scrapes.

Only the parent process has series: worker processes report what they did in their
frames (downloads ride on a prediction's terminal frame), so however many workers
there are, one scrape sees everything.

The model's own metrics (`record_metric` / `current_scope().record_metric`) are not
exported: their names and values are chosen per prediction by model code, so as labels
or metric names they would make an unbounded number of series, which is what brings
a Prometheus server down. They stay in each prediction's `metrics` field.

`prometheus_client` costs ~28 ms to import, so `Metrics` is built after the worker has
been started (it loads in parallel) rather than before it.

The series every request and every prediction feeds (HTTP requests and their duration,
predictions by outcome, run and queue-wait durations) are `LoopSeries`: plain counts
updated on the event loop, with no lock and no label lookup, turned into Prometheus
families only when scraped. prometheus_client's `Counter`/`Histogram` take a lock per
value changed (eight per prediction request); the rarer series keep them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector
from prometheus_client.utils import INF, floatToGoString

from cogserve.observability import gpu
from cogserve.runtime.events import RuntimeEvent, SSEChange, WebhookOutcome
from cogserve.wire.states import Health, Status

if TYPE_CHECKING:
    from cogserve.runtime.prediction import Prediction
    from cogserve.runtime.service import Service

CONTENT_TYPE = CONTENT_TYPE_LATEST
OUTCOMES = tuple(s.value for s in (Status.SUCCEEDED, Status.FAILED, Status.CANCELED))
KINDS = ("prediction", "training")
HEALTH_STATES = tuple(h.value for h in (Health.STARTING, Health.READY, Health.BUSY,
                                        Health.SETUP_FAILED, Health.DEFUNCT))
# run() takes milliseconds to hours; the default buckets stop at 10 s
PREDICTION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
                      300, 600, 1800, 3600)
WAIT_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300)
HTTP_BUCKETS = Histogram.DEFAULT_BUCKETS  # (.005 ... 10, +Inf), as the request histogram had
HTTP_BOUNDS = [float(b) for b in HTTP_BUCKETS] + ([] if HTTP_BUCKETS[-1] == INF else [INF])
BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
# a batch's fill wait is bounded by max_wait (milliseconds) unless every slot is busy
BATCH_WAIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5)


class Metrics:
    """Every series cogserve exports, in its own registry (nothing global)."""

    def __init__(self, service: Service) -> None:
        # the `_created` companion series double every counter for a timestamp that
        # process_start_time_seconds already gives; this parent process has no other use
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=registry)  # the parent's CPU, memory, fds
        registry.register(_ServiceState(service))
        # GPU series only with the `gpu` extra, a driver and a GPU (observability/gpu.py)
        self.gpu = gpu.probe()
        if self.gpu is not None:
            registry.register(self.gpu)
        r: dict[str, Any] = {"registry": registry}
        series = LoopSeries()
        registry.register(series)
        self.http_requests = series.counter(
            "cogserve_http_requests", "HTTP requests answered, by route template, method "
            "and status", ("route", "method", "status"))
        self.http_duration = series.histogram(
            "cogserve_http_request_duration_seconds", "Time from request to the end of the "
            "response (a stream's whole length)", ("route", "method"), HTTP_BUCKETS)
        assert self.http_duration.bounds == HTTP_BOUNDS
        # (route, method, status) -> the request counter's cell and the duration's counts
        self._request_cells: dict[tuple[str, str, int], tuple[list[float], list[float]]] = {}
        # (kind, outcome) -> the prediction counter's cell, the run time's and queue wait's
        self._outcome_cells: dict[tuple[str, Status],
                                  tuple[list[float], list[float], list[float]]] = {}
        self.predictions = series.counter(
            "cogserve_predictions", "Predictions and trainings ended, by kind and outcome",
            ("kind", "outcome"))
        self.prediction_duration = series.histogram(
            "cogserve_prediction_duration_seconds", "Time in run() (predict_time), by kind",
            ("kind",), PREDICTION_BUCKETS)
        self.queue_wait = series.histogram(
            "cogserve_prediction_queue_wait_seconds", "Time from a prediction's creation to "
            "its start on a worker, by kind", ("kind",), WAIT_BUCKETS)
        self.batch_size = series.histogram(
            "cogserve_batch_size", "Predictions per run() call of a @batch model", (),
            BATCH_SIZE_BUCKETS)
        self.batch_wait = series.histogram(
            "cogserve_batch_wait_seconds", "How long a @batch model's batch waited to fill: "
            "from its oldest prediction's arrival to the batch leaving for a worker", (),
            BATCH_WAIT_BUCKETS)
        for family in (self.batch_size, self.batch_wait):
            family.touch(())  # a series from the start, as for the labelled ones
        self.worker_starts = Counter("cogserve_worker_starts", "Worker processes started", **r)
        self.worker_restarts = Counter(
            "cogserve_worker_restarts", "Worker processes started to replace one (after a "
            "cancel was ignored)", **r)
        self.worker_crashes = Counter(
            "cogserve_worker_crashes", "Worker processes that ended without being asked to "
            "(segfault, OOM kill, os._exit)", **r)
        self.setups = Counter("cogserve_setups", "setup() runs ended, by outcome", ["outcome"],
                              **r)
        self.setup_duration = Gauge("cogserve_setup_duration_seconds",
                                    "How long the last setup() took", **r)
        self.webhook_deliveries = Counter(
            "cogserve_webhook_deliveries", "Webhook requests the receiver accepted (2xx/3xx)",
            **r)
        self.webhook_retries = Counter(
            "cogserve_webhook_retries", "Webhook attempts that failed and were tried again", **r)
        self.webhook_failures = Counter(
            "cogserve_webhook_failures", "Webhook events given up on (attempts exhausted, "
            "refused with 4xx, or unsendable)", **r)
        self.uploads = Counter("cogserve_uploads", "File outputs uploaded", **r)
        self.upload_bytes = Counter("cogserve_upload_bytes", "Bytes of file outputs uploaded",
                                    **r)
        self.upload_failures = Counter("cogserve_upload_failures", "File output uploads that "
                                       "failed", **r)
        self.download_bytes = Counter("cogserve_download_bytes", "Bytes of http(s) file "
                                      "inputs downloaded by workers", **r)
        self.download_failures = Counter("cogserve_download_failures", "http(s) file input "
                                         "downloads that failed", **r)
        self.sse_clients = Gauge("cogserve_sse_clients", "Server-Sent Events clients "
                                 "connected now", **r)
        self.sse_lagged = Counter("cogserve_sse_streams_lagged", "SSE streams cut off for "
                                  "falling too far behind", **r)
        self.v2_inferences = Counter(
            "cogserve_v2_inferences", "Open Inference Protocol inference requests, by model "
            "and outcome (succeeded, failed, canceled, rejected)", ["model", "outcome"], **r)
        # what each webhook attempt's outcome and each SSE client's change counts
        self._webhook_counts: dict[WebhookOutcome, Callable[[], None]] = {
            WebhookOutcome.DELIVERED: self.webhook_deliveries.inc,
            WebhookOutcome.RETRIED: self.webhook_retries.inc,
            WebhookOutcome.FAILED: self.webhook_failures.inc}
        self._sse_counts: dict[SSEChange, Callable[[], None]] = {
            SSEChange.CONNECTED: self.sse_clients.inc,
            SSEChange.DISCONNECTED: self.sse_clients.dec,
            SSEChange.LAGGED: self.sse_lagged.inc}
        # every outcome is a series from the start, so rate() sees zeros rather than nothing
        for kind in KINDS:
            for outcome in OUTCOMES:
                self.predictions.add((kind, outcome), 0)
            self.prediction_duration.touch((kind,))
            self.queue_wait.touch((kind,))

    # ------------------------------------------------------------ feeds

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        # the two series' cells for this route, method and status, found once
        cells = self._request_cells.get((route, method, status))
        if cells is None:
            cells = self._request_cells[(route, method, status)] = (
                self.http_requests.cell((route, method, str(status))),
                self.http_duration.touch((route, method)))
        cells[0][0] += 1
        counts = cells[1]
        counts[bisect_left(HTTP_BOUNDS, seconds)] += 1  # the first bound >= seconds
        counts[-1] += seconds

    def on_event(self, event: RuntimeEvent, fields: dict[str, Any]) -> None:
        if event is RuntimeEvent.PREDICTION_COMPLETED:
            self._prediction(fields["prediction"])
        elif event is RuntimeEvent.BATCH_FORMED:
            self.batch_size.observe((), fields["size"])
            self.batch_wait.observe((), fields["wait"])
        elif event is RuntimeEvent.WEBHOOK_ATTEMPT:
            self._webhook_counts[fields["outcome"]]()
        elif event is RuntimeEvent.SSE_CLIENT:
            self._sse_counts[fields["change"]]()
        elif event is RuntimeEvent.V2_INFERENCE:
            self.v2_inferences.labels(fields["model"], fields["outcome"]).inc()
        elif event is RuntimeEvent.UPLOAD:
            if fields["ok"]:
                self.uploads.inc()
                self.upload_bytes.inc(fields["bytes"])
            else:
                self.upload_failures.inc()
        elif event is RuntimeEvent.DOWNLOADS:
            self.download_bytes.inc(fields["bytes"])
            self.download_failures.inc(fields["failures"])
        elif event is RuntimeEvent.WORKER_STARTED:
            self.worker_starts.inc()
            if fields["restart"]:
                self.worker_restarts.inc()
            if self.gpu is not None:
                self.gpu.started(fields["worker"], fields["pid"])
        elif event is RuntimeEvent.WORKER_EXITED:
            if not fields["expected"]:
                self.worker_crashes.inc()
            if self.gpu is not None:
                self.gpu.exited(fields["worker"])
        elif event is RuntimeEvent.SETUP_FINISHED:
            self.setups.labels(fields["status"]).inc()
            self.setup_duration.set(fields["seconds"])

    def _prediction(self, prediction: Prediction) -> None:
        # the three series' cells for this kind and outcome, found once
        cells = self._outcome_cells.get((prediction.kind, prediction.status))
        if cells is None:
            kind = (prediction.kind,)
            cells = self._outcome_cells[(prediction.kind, prediction.status)] = (
                self.predictions.cell((prediction.kind, prediction.status.value)),
                self.prediction_duration.touch(kind), self.queue_wait.touch(kind))
        cells[0][0] += 1
        seconds = prediction.predict_time
        if seconds is not None:
            counts = cells[1]
            counts[bisect_left(self.prediction_duration.bounds, seconds)] += 1
            counts[-1] += seconds
        wait = prediction.queue_wait()
        if wait is not None:
            wait = max(0.0, wait)
            counts = cells[2]
            counts[bisect_left(self.queue_wait.bounds, wait)] += 1
            counts[-1] += wait

    # ------------------------------------------------------------ exposition

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class _ServiceState(Collector):
    """Gauges read from the `Service` at scrape time: slots, health, queue length."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def collect(self) -> Iterator[GaugeMetricFamily]:
        capacity = self.service.capacity()
        yield GaugeMetricFamily("cogserve_slots", "Prediction slots of the ready workers",
                                value=capacity.slots)
        yield GaugeMetricFamily("cogserve_slots_in_use", "Prediction slots running a "
                                "prediction now", value=capacity.in_use)
        yield GaugeMetricFamily("cogserve_workers_ready", "Worker processes ready to serve",
                                value=capacity.workers_ready)
        yield GaugeMetricFamily("cogserve_queue_length", "Predictions waiting for a slot "
                                "(the --queue-size queue, or a @batch model's waiting area)",
                                value=capacity.queue_length)
        health = GaugeMetricFamily("cogserve_health_state", "1 for the server's health state "
                                   "(as /health-check reports it), 0 for the others",
                                   labels=["state"])
        current = self.service.current_health
        for state in HEALTH_STATES:
            health.add_metric([state], 1.0 if state == current else 0.0)
        yield health


class LoopCounter:
    """A counter family fed from the event loop: per label tuple, a cell (a one-item
    list) holding a plain float, which a feed may keep (`cell`) and add to itself."""

    __slots__ = ("name", "doc", "labels", "values")

    def __init__(self, name: str, doc: str, labels: Sequence[str]) -> None:
        self.name, self.doc, self.labels = name, doc, list(labels)
        self.values: dict[tuple[str, ...], list[float]] = {}

    def cell(self, labels: tuple[str, ...]) -> list[float]:
        """The series for `labels` (made, at zero, if it is not there yet)."""
        cell = self.values.get(labels)
        if cell is None:
            cell = self.values[labels] = [0.0]
        return cell

    def add(self, labels: tuple[str, ...], amount: float) -> None:
        self.cell(labels)[0] += amount

    def family(self) -> CounterMetricFamily:
        family = CounterMetricFamily(self.name, self.doc, labels=self.labels)
        for labels, cell in list(self.values.items()):  # copied: a scrape may be a thread
            family.add_metric(labels, cell[0])
        return family


class LoopHistogram:
    """A histogram family fed from the event loop: per label tuple, a count per bucket
    (not cumulative; the scrape adds them up) and the sum, as prometheus_client keeps."""

    __slots__ = ("name", "doc", "labels", "bounds", "names", "values")

    def __init__(self, name: str, doc: str, labels: Sequence[str],
                 buckets: Sequence[float]) -> None:
        self.name, self.doc, self.labels = name, doc, list(labels)
        bounds = [float(b) for b in buckets]
        if bounds[-1] != INF:
            bounds.append(INF)
        self.bounds = bounds
        self.names = [floatToGoString(b) for b in bounds]  # type: ignore[no-untyped-call]
        self.values: dict[tuple[str, ...], list[float]] = {}  # bucket counts + [sum]

    def touch(self, labels: tuple[str, ...]) -> list[float]:
        """The series for `labels`, made (all zero) if it is not there yet."""
        counts = self.values.get(labels)
        if counts is None:
            counts = self.values[labels] = [0.0] * (len(self.bounds) + 1)
        return counts

    def observe(self, labels: tuple[str, ...], amount: float) -> None:
        counts = self.values.get(labels) or self.touch(labels)
        counts[bisect_left(self.bounds, amount)] += 1  # the first bound >= amount
        counts[-1] += amount

    def family(self) -> HistogramMetricFamily:
        family = HistogramMetricFamily(self.name, self.doc, labels=self.labels)
        for labels, counts in list(self.values.items()):
            counts = list(counts)
            cumulative, total = [], 0.0
            for name, count in zip(self.names, counts, strict=False):
                total += count
                cumulative.append((name, total))
            family.add_metric(labels, cumulative, counts[-1])
        return family


class LoopSeries(Collector):
    """The per-request series, read at scrape time (see the module docstring)."""

    def __init__(self) -> None:
        self.families: list[LoopCounter | LoopHistogram] = []

    def counter(self, name: str, doc: str, labels: Sequence[str]) -> LoopCounter:
        family = LoopCounter(name, doc, labels)
        self.families.append(family)
        return family

    def histogram(self, name: str, doc: str, labels: Sequence[str],
                  buckets: Sequence[float]) -> LoopHistogram:
        family = LoopHistogram(name, doc, labels, buckets)
        self.families.append(family)
        return family

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        for family in self.families:
            yield family.family()
