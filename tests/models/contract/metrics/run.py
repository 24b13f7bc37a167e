"""Every way to record metrics, and every way to get it wrong."""

import threading

from cog import BaseRunner, current_scope


class Runner(BaseRunner):
    def setup(self) -> None:
        # outside a prediction these do nothing (and do not fail)
        self.record_metric("in_setup", 1)
        self.scope.metrics["in_setup"] = 2
        del self.scope.metrics["in_setup"]
        current_scope().record_metric("in_setup", 3)

    def run(self, case: str = "ok") -> str:
        self.record_metric("tokens", 10)
        if case == "ok":
            self.record_metric("tokens", 5, mode="incr")
            self.record_metric("steps", "a", mode="append")
            self.record_metric("steps", "b", mode="append")
            self.record_metric("timing.load.disk", 1.5)
            self.scope.metrics["gone"] = True
            del self.scope.metrics["gone"]
            self.scope.metrics["flag"] = True
            current_scope().record_metric("via_scope", {"k": [1, 2]})
            self.record_metric("cleared", 1)
            self.record_metric("cleared", None)
        elif case == "type_change":
            self.record_metric("tokens", "many")
        elif case == "reserved_cog":
            self.record_metric("cog.thing", 1)
        elif case == "reserved_time":
            self.record_metric("predict_time", 1)
        elif case == "bad_name":
            self.record_metric("9bad", 1)
        elif case == "too_deep":
            self.record_metric("a.b.c.d.e", 1)
        elif case == "bad_value":
            self.record_metric("obj", object())
        elif case == "thread":  # a thread of the model's own still records into this one
            worker = threading.Thread(target=lambda: current_scope().record_metric("t", 1))
            worker.start()
            worker.join()
        elif case == "path_conflict":
            self.record_metric("tokens.inner", 1)
        elif case == "bad_mode":
            self.record_metric("x", 1, mode="multiply")
        return case
