"""The B-panel exchange of multi-GPU host calls: who uploads, who waits, who copies, and
that no GPU frees its panels while another may still read them."""

from __future__ import annotations

import threading
import time

from tunedgemm.panel_exchange import PanelExchange, Published


def later(work, *args):
    """work(*args) in a thread; returns (thread, box holding its result)."""
    box: list = []
    thread = threading.Thread(target=lambda: box.append(work(*args)), daemon=True)
    thread.start()
    return thread, box


def joined(*ordinals):
    exchange = PanelExchange()
    for ordinal in ordinals:
        exchange.join(ordinal, context=100 + ordinal)
    return exchange


def test_the_first_claims_the_others_wait_for_its_upload():
    exchange = joined(0, 1)
    assert exchange.take("B0", 0) is None  # GPU 0 claims it: it uploads
    thread, box = later(exchange.take, "B0", 1)
    time.sleep(0.05)
    assert thread.is_alive()  # GPU 1 waits for the upload to be queued
    panel = Published(0, ptr=4096, nbytes=64, event=7)
    exchange.publish("B0", panel)
    thread.join(5)
    assert box == [panel]
    assert exchange.take("B1", 1) is None  # another panel: GPU 1's to upload


def test_a_claim_without_waiting_goes_to_the_first_only():
    exchange = joined(0, 1)
    assert exchange.claim("B0", 0)  # nobody had it: GPU 0 uploads it
    assert exchange.claim("B0", 0)  # (its own claim stands)
    assert not exchange.claim("B0", 1)  # GPU 0 is uploading it
    assert exchange.take("B0", 0) is None  # the claimant uploads
    thread, box = later(exchange.take, "B0", 1)
    time.sleep(0.05)
    assert thread.is_alive()
    panel = Published(0, ptr=4096, nbytes=64, event=7)
    exchange.publish("B0", panel)
    thread.join(5)
    assert box == [panel]
    assert not exchange.claim("B0", 1)  # published: nothing to claim


def test_an_abandoned_claim_passes_to_a_waiter():
    exchange = joined(0, 1)
    assert exchange.take("B0", 0) is None
    thread, box = later(exchange.take, "B0", 1)
    time.sleep(0.05)
    exchange.abandon("B0", 0)  # GPU 0's upload failed
    thread.join(5)
    assert box == [None]  # GPU 1 claimed it


def test_a_gpu_that_leaves_drops_its_claims():
    exchange = joined(0, 1)
    assert exchange.take("B0", 0) is None
    thread, box = later(exchange.take, "B0", 1)
    time.sleep(0.05)
    exchange.leave(0)
    thread.join(5)
    assert box == [None]


def test_panels_are_freed_only_when_every_gpu_has_left():
    exchange = joined(0, 1, 2)
    exchange.leave(0)
    thread, _ = later(exchange.wait_all)
    time.sleep(0.05)
    exchange.leave(1)
    time.sleep(0.05)
    assert thread.is_alive()
    exchange.leave(2)
    thread.join(5)
    assert not thread.is_alive()


def test_a_gpu_never_copies_its_own_panel():
    exchange = joined(0, 1)
    assert exchange.take("B0", 0) is None
    exchange.publish("B0", Published(0, 1, 1, 1))
    assert exchange.take("B0", 0) is None  # (its ring lost it: it uploads it again)


def test_a_gpu_that_never_joined_is_not_waited_for():
    """A worker whose thread never started (Ctrl-C while they start) never leaves."""
    exchange = joined(0)  # GPU 1 never opened
    exchange.leave(0)
    thread, _ = later(exchange.wait_all)
    thread.join(5)
    assert not thread.is_alive()


def test_the_first_panel_asked_for_goes_up_in_one_part_per_gpu():
    exchange = PanelExchange(split_first=True)
    for ordinal in (0, 1, 2):
        exchange.join(ordinal, context=100 + ordinal)
    assert exchange.parts_of("B0") == 3
    assert exchange.parts_of("B1") == 1 and exchange.parts_of("B0") == 3  # decided once
    assert joined(0, 1).parts_of("B0") == 1  # (split_first off)


def test_each_gpu_claims_its_own_part_and_the_last_parts_go_to_whoever_is_free():
    exchange = PanelExchange(split_first=True)
    exchange.join(0, 100), exchange.join(1, 101)
    assert exchange.claim_part("B0", 3, 0) == 0
    assert exchange.claim_part("B0", 3, 1) == 1
    exchange.publish(("B0", 0), Published(0, 0x1000, 64, 7), part=True)
    assert exchange.claim_part("B0", 3, 0) == 2  # GPU 0 is done with its own first
    assert exchange.claim_part("B0", 3, 1) is None  # every part is taken
    assert exchange.take(("B0", 0), 1) == Published(0, 0x1000, 64, 7)
    assert exchange.parts == {0: 1} and not exchange.uploads  # parts are counted apart
