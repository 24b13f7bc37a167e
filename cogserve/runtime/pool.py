"""The worker processes of one server (`--workers N`) and the state of each.

The pool is the one owner of worker state: which workers exist, whether each is
starting, ready or gone, and which of its slots are taken. A slot is a value (`Slot`,
like coglet's permit): taking one from a member gives the permit, releasing the permit
is the only way back, and a member's free count is derived from the permits out.
`Workers` decides what a worker's message or exit means; the pool
answers where the next prediction goes (the least-loaded ready worker) and what the
whole server's state is. With one worker (the default) every question is answered from
`members[0]`, so the single-worker path costs what it did before pools existed.
"""

from __future__ import annotations

import asyncio
import enum
import math
import time
from dataclasses import dataclass, field

from cogserve.runtime.supervisor import WorkerHandle
from cogserve.wire.states import Health


class WorkerState(enum.Enum):
    """One worker's lifecycle; the server's health is derived from all of them."""

    STARTING = Health.STARTING
    READY = Health.READY
    SETUP_FAILED = Health.SETUP_FAILED
    DEFUNCT = Health.DEFUNCT  # ended after setup and not replaced


class Restart(enum.Enum):
    """Why a worker is being ended on purpose (so its exit starts a new one)."""

    NONE = "none"
    CANCEL_IGNORED = "cancel-ignored"  # run() ignored a cancel: killed
    RELOAD = "reload"  # --reload saw a change: stopped once idle


@dataclass(eq=False)
class Slot:
    """A permit to run one prediction on `member`. `release` gives it back (twice is
    once); nothing else changes how many slots a member has free."""

    member: Member
    shared: bool = field(default=False, compare=False)  # split among a batch (`share`)
    # when its batch's call began (monotonic; set by `share`): a class default, so the
    # permit of an unbatched prediction costs nothing more to make
    since = 0.0

    def release(self) -> None:
        member = self.member
        if member.ahead is self:
            member.ahead = None
            return
        member._held.discard(self)
        ahead = member.ahead
        if ahead is not None and len(member._held) < member.slots:
            member.ahead = None  # the batch sent ahead runs now: it holds a slot
            ahead.since = time.monotonic()
            member._held.add(ahead)

    def share(self, count: int) -> list[Share]:
        """Split this permit among the `count` predictions of one batch (`@batch`); the
        batch is handed to the worker now (`since`: `Pool.pick_ahead` asks)."""
        self.shared = True
        self.since = time.monotonic()
        parts: set[Share] = set()
        shares = [Share(self, parts) for _ in range(count)]
        parts.update(shares)
        return shares


class Share(Slot):
    """One batch member's part of the slot its batch holds. The slot goes back when every
    member has given back its share, i.e. when the worker has ended them all: a member
    cancelled mid-call ends at once, but the call goes on for the others."""

    def __init__(self, whole: Slot, parts: set[Share]) -> None:
        super().__init__(whole.member)
        self._whole = whole
        self._parts = parts

    def release(self) -> None:
        self._parts.discard(self)
        if not self._parts:
            self._whole.release()


@dataclass(eq=False)
class Member:
    """One worker process of the pool; replaced processes keep the member."""

    index: int
    process: WorkerHandle | None = None
    state: WorkerState = WorkerState.STARTING
    slots: int = 1  # its concurrency, from the worker's schema message
    _held: set[Slot] = field(default_factory=set, repr=False)  # permits out
    # a batch sent while every slot is busy, to be prepared while they run (`acquire_ahead`)
    ahead: Slot | None = field(default=None, repr=False)
    restart: Restart = Restart.NONE
    draining: bool = False  # reload pending: takes no new predictions
    tmpdir: str = ""  # its TMPDIR, emptied whenever it (re)starts (`folders`)
    memdir: str | None = None  # its folder for data: URL inputs, in memory, if any
    in_setup_document: bool = False  # started with the server: setup logs -> /health-check
    setup_timer: asyncio.TimerHandle | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return f"worker {self.index}"

    @property
    def in_use(self) -> int:
        """Slots taken (permits not yet released)."""
        return len(self._held)

    @property
    def free(self) -> int:
        """Slots a new prediction could take: none unless the worker is ready."""
        if self.state is not WorkerState.READY:
            return 0
        return self.slots - len(self._held)

    @property
    def idle(self) -> bool:
        return not self._held

    def acquire(self) -> Slot:
        """Take a slot (the caller checked `free`); release the permit to give it back."""
        slot = Slot(self)
        self._held.add(slot)
        return slot

    @property
    def busy_since(self) -> float:
        """When the oldest of its running batches began (monotonic); inf when idle."""
        return min((slot.since for slot in self._held), default=math.inf)

    @property
    def takes_ahead(self) -> bool:
        """Every slot is busy with a batch and no batch waits in the worker: one may be
        sent ahead. (Not while a training holds a slot: its start may still be on its way
        to the store, and a batch sent now would overtake it.)"""
        return (self.ahead is None and self.slots > 0 and len(self._held) >= self.slots
                and self.serving and all(slot.shared for slot in self._held))

    def acquire_ahead(self) -> Slot:
        """The permit of a batch sent ahead (the caller checked `takes_ahead`): it holds
        no slot until one is released, and then the first that is (`Slot.release`)."""
        slot = self.ahead = Slot(self)
        return slot

    @property
    def serving(self) -> bool:
        return self.state is WorkerState.READY and not self.draining


class Pool:
    """N members; `pick` routes, `health` summarises."""

    def __init__(self, size: int = 1, gpus: list[str] | None = None) -> None:
        self.members = [Member(i) for i in range(max(1, size))]
        self.gpus = gpus or []
        self._single = self.members[0] if len(self.members) == 1 else None

    def __len__(self) -> int:
        return len(self.members)

    def env_for(self, member: Member) -> dict[str, str]:
        """Per-worker environment: CUDA_VISIBLE_DEVICES round-robin over --gpus."""
        if not self.gpus:
            return {}
        return {"CUDA_VISIBLE_DEVICES": self.gpus[member.index % len(self.gpus)]}

    def pick(self) -> Member | None:
        """The ready worker with the most free slots (the least loaded), or None."""
        single = self._single
        if single is not None:
            return single if single.free > 0 and single.serving else None
        best: Member | None = None
        for member in self.members:
            if member.serving and member.free > 0 and (best is None or member.free > best.free):
                best = member
        return best

    def pick_ahead(self) -> Member | None:
        """A busy worker that takes a batch ahead (`Member.takes_ahead`), or None; of
        several, the one whose running call began first. A batch sent ahead waits for
        that worker alone, so it goes where a slot is likeliest to come back first: with
        every call the same size, the oldest ends first."""
        best: Member | None = None
        began = 0.0
        for member in self.members:
            if member.takes_ahead:
                since = member.busy_since
                if best is None or since < began:
                    best, began = member, since
        return best

    @property
    def free(self) -> int:
        return sum(m.free for m in self.members if m.serving)

    @property
    def state(self) -> WorkerState:
        """READY if any worker can serve, else STARTING if one is on its way, else the
        failure: SETUP_FAILED when every worker failed its setup, DEFUNCT otherwise."""
        # asked twice per request: identity tests, not a set of states (Enum's hash is a
        # Python call)
        starting = False
        all_failed = True
        for member in self.members:
            state = member.state
            if state is WorkerState.READY:
                return state
            if state is WorkerState.STARTING:
                starting = True
            if state is not WorkerState.SETUP_FAILED:
                all_failed = False
        if starting:
            return WorkerState.STARTING
        return WorkerState.SETUP_FAILED if all_failed else WorkerState.DEFUNCT

    def describe(self) -> list[dict[str, object]]:
        """Each worker for /health-check (shown when there is more than one)."""
        return [{"id": m.index, "status": m.state.value,
                 "pid": m.process.pid if m.process is not None else None,
                 "busy": m.in_use if m.state is WorkerState.READY else 0}
                for m in self.members]
