"""Batches sent ahead to busy workers (`Batcher.take_ahead`), until each takes its slot.

Sending a batch ahead must not lose it: if its worker dies before it begins that batch,
the batch goes back to the front of the backlog, as if it had never been sent. This
keeps, per worker, the one batch sent ahead and its messages (to send again) while
its permit has not taken a slot, and forgets it the moment it has: the messages may
hold MiBs of input.
"""

from __future__ import annotations

from cogserve.runtime.pool import Member, Slot
from cogserve.runtime.prediction import Prediction
from cogserve.wire import protocol

Entry = tuple[Prediction, protocol.Message]


class AheadBatches:
    def __init__(self) -> None:
        self._sent: dict[int, tuple[Slot, list[Entry]]] = {}  # worker index -> permit, batch

    def __bool__(self) -> bool:
        return bool(self._sent)

    def sent(self, member: Member, permit: Slot, batch: list[Entry]) -> None:
        self._sent[member.index] = (permit, batch)

    def slot_released(self, member: Member) -> None:
        """A slot of `member` came back: the batch sent ahead may have taken it."""
        sent = self._sent.get(member.index)
        if sent is not None and member.ahead is not sent[0]:
            del self._sent[member.index]

    def take_back(self, member: Member, running: dict[str, Prediction]) -> list[Entry]:
        """`member`'s worker died: the batch it had not begun, its permit given back and
        each prediction waiting again, for the front of the backlog. Not its members that
        ended meanwhile, nor those cancelled or spilled to a file in the dead worker's
        folder: they end with the worker's others."""
        sent = self._sent.pop(member.index, None)
        if sent is None or member.ahead is not sent[0]:
            return []
        back = []
        for prediction, message in sent[1]:
            if running.get(prediction.id) is not prediction or prediction.terminal \
                    or prediction.cancel_requested or protocol.INPUT_FILE in message:
                continue
            slot, prediction.slot = prediction.slot, None
            if slot is not None:
                slot.release()
            prediction.mark_waiting_again()
            back.append((prediction, message))
        return back
