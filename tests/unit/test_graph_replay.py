"""Graph replay of repeated cuBLASLt calls (tunedgemm/_fastlaunch.c's LtMatmul) against
stand-ins for cublasLtMatmul and the driver's graph calls, made with ctypes: which calls are
made directly, which are captured, which are replayed, and that every failure falls back to
the direct call."""

from __future__ import annotations

import ctypes

import pytest

fast = pytest.importorskip("tunedgemm._fastlaunch")

_P, _I = ctypes.c_void_p, ctypes.c_int
_PP, _IP = ctypes.POINTER(_P), ctypes.POINTER(_I)
LT = ctypes.CFUNCTYPE(_I, *([_P] * 14), ctypes.c_size_t, _P)
CAPTURE_STREAM = 0xCA97


class FakeDriver:
    """cublasLtMatmul and the graph calls, recording what reaches them."""

    def __init__(self, fail: str = "", capturing: bool = False) -> None:
        self.fail, self.capturing = fail, capturing
        self.direct: list[tuple] = []  # (a, b, c, stream) of each cublasLtMatmul
        self.launched: list[tuple] = []  # (graph, stream) of each cuGraphLaunch
        self.destroyed: list[int] = []
        self.graphs = 0
        self.in_capture = False

        def matmul(handle, desc, alpha, a, al, b, bl, beta, c, cl, d, dl, algo, ws, size, s):
            self.direct.append((a, b, c, s, self.in_capture))
            return 0

        def launch(graph, stream):
            self.launched.append((graph, stream))
            return 1 if self.fail == "launch" else 0

        def is_capturing(stream, status):
            status[0] = 1 if self.capturing else 0
            return 0

        def stream_create(stream, flags):
            stream[0] = CAPTURE_STREAM
            return 0

        def destroy(obj):
            self.destroyed.append(obj)
            return 0

        def begin(stream, mode):
            assert stream == CAPTURE_STREAM and mode == 2  # relaxed: forbids nothing elsewhere
            if self.fail == "begin":
                return 2
            self.in_capture = True
            return 0

        def end(stream, graph):
            self.in_capture = False
            self.graphs += 1
            graph[0] = 0x9000 + self.graphs
            return 0

        def instantiate(executable, graph, flags):
            executable[0] = graph + 0x100
            return 3 if self.fail == "instantiate" else 0

        self.callbacks = [
            LT(matmul),
            ctypes.CFUNCTYPE(_I, _P, _P)(launch),
            ctypes.CFUNCTYPE(_I, _P, _IP)(is_capturing),
            ctypes.CFUNCTYPE(_I, _PP, ctypes.c_uint)(stream_create),
            ctypes.CFUNCTYPE(_I, _P)(destroy),
            ctypes.CFUNCTYPE(_I, _P, _I)(begin),
            ctypes.CFUNCTYPE(_I, _P, _PP)(end),
            ctypes.CFUNCTYPE(_I, _PP, _P, ctypes.c_ulonglong)(instantiate),
        ]
        address = [ctypes.cast(f, _P).value for f in self.callbacks]
        matmul_at, launch_at, capturing_at, create_at, destroy_at = address[:5]
        begin_at, end_at, instantiate_at = address[5:]
        # The order of tunedgemm._driver.GRAPH_CALLS.
        self.graph_calls = (launch_at, capturing_at, create_at, destroy_at, begin_at, end_at,
                            instantiate_at, destroy_at, destroy_at)  # fmt: skip
        self.matmul_at = matmul_at

    def lt(self, graphs: bool = True):
        return fast.LtMatmul(self.matmul_at, 11, 12, 13, 14, 15, 16, 0, True,
                             self.graph_calls if graphs else None)  # fmt: skip


def test_graph_calls_are_the_drivers_in_the_order_the_c_side_takes():
    from tunedgemm import _driver

    assert _driver.GRAPH_CALLS == ("cuGraphLaunch", "cuStreamIsCapturing", "cuStreamCreate",
                                   "cuStreamDestroy_v2", "cuStreamBeginCapture_v2",
                                   "cuStreamEndCapture", "cuGraphInstantiateWithFlags",
                                   "cuGraphDestroy", "cuGraphExecDestroy")  # fmt: skip


def test_a_repeated_call_is_captured_once_then_replayed():
    driver = FakeDriver()
    lt = driver.lt()
    for _ in range(5):
        assert lt(100, 200, 300, 1.0, 0.0, None, 7) == 0
    # The first call direct; the second captured (the call made on the capture stream) and
    # launched; the rest replayed.
    assert driver.direct == [(100, 200, 300, 7, False), (100, 200, 300, CAPTURE_STREAM, True)]
    assert [stream for _, stream in driver.launched] == [7, 7, 7, 7]
    assert len({graph for graph, _ in driver.launched}) == 1
    assert lt.graph_counts() == (1, 4, True)


@pytest.mark.parametrize("change", ["a", "b", "c", "alpha", "beta", "workspace", "stream"])
def test_any_difference_is_another_call(change):
    driver = FakeDriver()
    lt = driver.lt()
    base = dict(a=100, b=200, c=300, alpha=1.0, beta=0.0, workspace=None, stream=7)
    other = {**base, change: {"alpha": 2.0, "beta": 0.5, "workspace": 64}.get(change, 999)}
    for args in (base, other, other, base, other):
        lt(*args.values())
    # other: seen, then captured on its repeat, then replayed; base: direct, then captured
    # when it comes back (it was seen lately).
    graphs = [graph for graph, _ in driver.launched]
    assert lt.graph_counts() == (2, 3, True)
    assert graphs[0] == graphs[2] != graphs[1]


def test_calls_alternating_between_operands_are_both_replayed():
    driver = FakeDriver()
    lt = driver.lt()
    for i in range(10):
        lt(100 + i % 2, 200, 300, 1.0, 0.0, None, 7)
    assert lt.graph_counts() == (2, 8, True)
    assert len(driver.direct) == 4  # each call once direct, once under capture


def test_a_stream_being_captured_gets_the_direct_call():
    driver = FakeDriver(capturing=True)
    lt = driver.lt()
    for _ in range(3):
        lt(100, 200, 300, 1.0, 0.0, None, 7)
    assert [s for *_, s, _capture in driver.direct] == [7, 7, 7] and not driver.launched
    assert lt.graph_counts() == (0, 0, True)


@pytest.mark.parametrize("fail", ["begin", "instantiate", "launch"])
def test_a_failing_graph_call_turns_replay_off_and_the_call_still_runs(fail):
    driver = FakeDriver(fail=fail)
    lt = driver.lt()
    for _ in range(4):
        assert lt(100, 200, 300, 1.0, 0.0, None, 7) == 0
    outside_capture = [d for d in driver.direct if not d[-1]]
    assert len(outside_capture) == 4  # every call made directly, the product computed
    assert lt.graph_counts()[2] is False


def test_without_graph_calls_every_call_is_direct():
    driver = FakeDriver()
    lt = driver.lt(graphs=False)
    for _ in range(3):
        lt(100, 200, 300, 1.0, 0.0, None, 7)
    assert len(driver.direct) == 3 and lt.graph_counts() == (0, 0, False)


def test_calls_whose_graphs_are_not_replayed_stop_being_captured():
    driver = FakeDriver()
    lt = driver.lt()
    for i in range(200):  # each call twice, then never again: a graph per pair, run once
        for _ in range(2):
            lt(100 + i, 200, 300, 1.0, 0.0, None, 7)
    captures, replays, on = lt.graph_counts()
    assert on and captures == 64 and replays == 64  # capturing stopped; replay stays on
    assert len(driver.destroyed) >= 2 * 64 - 8  # each graph freed once made, evicted ones too
    assert len([d for d in driver.direct if not d[-1]]) == 400 - 64


def test_graphs_are_freed_with_the_algorithm():
    driver = FakeDriver()
    lt = driver.lt()
    for _ in range(2):
        lt(100, 200, 300, 1.0, 0.0, None, 7)
    del lt
    assert CAPTURE_STREAM in driver.destroyed and 0x9001 + 0x100 in driver.destroyed


class Queue:
    """An own product's launches as plans.launcher's queue: records each call as (a, b, c,
    alpha, beta, stream, home, under capture); `fail_on_capture` raises under capture."""

    def __init__(self, driver: FakeDriver, fail_on_capture: bool = False) -> None:
        self.driver, self.fail_on_capture = driver, fail_on_capture
        self.calls: list[tuple] = []
        self.replay = None  # where set, the queue calls it again under capture

    def __call__(self, a, b, c, alpha, beta, stream, home):
        self.calls.append((a, b, c, alpha, beta, stream, home, self.driver.in_capture))
        if self.driver.in_capture and self.fail_on_capture:
            raise RuntimeError("a launch failed under capture")
        if self.driver.in_capture and self.replay is not None:
            again, self.replay = self.replay, None
            again(a, b, c, alpha, beta, home)  # another call while this one captures


def test_an_own_products_repeated_call_is_captured_with_its_streams_workspace():
    driver = FakeDriver()
    queue = Queue(driver)
    replay = fast.Replay(queue, driver.graph_calls)
    for _ in range(4):
        assert replay(100, 200, 300, 1.0, 0.0, 7, 64) is None
    # Direct on stream 7; then captured on the capture stream with stream 7 as home (whose
    # workspace the graph must use, as it is replayed on 7); then replayed.
    assert queue.calls == [(100, 200, 300, 1.0, 0.0, 7, 7, False),
                           (100, 200, 300, 1.0, 0.0, CAPTURE_STREAM, 7, True)]  # fmt: skip
    assert [stream for _, stream in driver.launched] == [7, 7, 7]
    assert replay.graph_counts() == (1, 3, True)


@pytest.mark.parametrize("change", ["a", "c", "alpha", "beta", "stream", "workspace"])
def test_an_own_call_that_differs_anywhere_is_another_graph(change):
    driver = FakeDriver()
    replay = fast.Replay(Queue(driver), driver.graph_calls)
    base = dict(a=100, b=200, c=300, alpha=1.0, beta=0.0, stream=7, workspace=64)
    other = {**base, change: {"alpha": 2.0, "beta": 0.5, "workspace": 128}.get(change, 999)}
    for args in (base, base, other, other, base):
        replay(*args.values())
    # base: direct, then captured and launched, then replayed at the end; other likewise but
    # for the last replay.
    assert replay.graph_counts() == (2, 3, True)
    assert len({graph for graph, _ in driver.launched}) == 2


def test_without_a_workspace_argument_the_call_is_keyed_without_one():
    driver = FakeDriver()
    queue = Queue(driver)
    replay = fast.Replay(queue, driver.graph_calls)
    for _ in range(3):
        replay(100, 200, 300, 1.0, 0.0, 7)
    assert replay.graph_counts() == (1, 2, True) and len(queue.calls) == 2


def test_a_queue_failing_under_capture_turns_replay_off_and_the_call_runs_directly():
    driver = FakeDriver()
    queue = Queue(driver, fail_on_capture=True)
    replay = fast.Replay(queue, driver.graph_calls)
    for _ in range(4):
        assert replay(100, 200, 300, 1.0, 0.0, 7, 64) is None
    direct = [call for call in queue.calls if not call[-1]]
    assert len(direct) == 4 and not driver.launched
    assert replay.graph_counts() == (0, 0, False)


def test_a_direct_calls_error_reaches_the_caller():
    driver = FakeDriver()

    def queue(*args):
        raise ValueError("no workspace")

    replay = fast.Replay(queue, driver.graph_calls)
    with pytest.raises(ValueError, match="no workspace"):
        replay(100, 200, 300, 1.0, 0.0, 7)


def test_a_call_made_while_another_captures_goes_direct():
    driver = FakeDriver()
    queue = Queue(driver)
    replay = fast.Replay(queue, driver.graph_calls)
    queue.replay = replay
    for _ in range(2):
        replay(100, 200, 300, 1.0, 0.0, 7)
    # The nested call (as another thread's would) neither captured nor launched a graph.
    assert queue.calls[-1] == (100, 200, 300, 1.0, 0.0, 7, 7, True)
    assert replay.graph_counts() == (1, 1, True)


def test_own_calls_on_a_stream_being_captured_and_without_graph_calls_go_direct():
    for driver, graphs in ((FakeDriver(capturing=True), True), (FakeDriver(), False)):
        queue = Queue(driver)
        replay = fast.Replay(queue, driver.graph_calls if graphs else None)
        for _ in range(3):
            replay(100, 200, 300, 1.0, 0.0, 7)
        assert len(queue.calls) == 3 and not driver.launched


def test_a_launcher_holding_its_replay_is_collected_with_its_graphs():
    import gc

    driver = FakeDriver()

    class Launcher:  # as plans._SplitK: it holds the replay, the replay its bound queue
        def __init__(self):
            self.replay = fast.Replay(self.queue, driver.graph_calls)

        def queue(self, *args):
            pass

    launcher = Launcher()
    for _ in range(2):
        launcher.replay(100, 200, 300, 1.0, 0.0, 7)
    del launcher
    gc.collect()
    assert CAPTURE_STREAM in driver.destroyed and 0x9001 + 0x100 in driver.destroyed


def test_replay_checks_its_arguments():
    driver = FakeDriver()
    with pytest.raises(TypeError, match="callable"):
        fast.Replay(5, driver.graph_calls)
    with pytest.raises(TypeError, match="graph_calls"):
        fast.Replay(Queue(driver), (1, 2))
    replay = fast.Replay(Queue(driver), driver.graph_calls)
    with pytest.raises(TypeError, match="stream"):
        replay(100, 200, 300, 1.0, 0.0)
