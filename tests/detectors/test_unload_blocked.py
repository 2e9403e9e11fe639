"""hung_request names the unload a hang blocks, and the version of a stuck batch.

tests/fixtures/foreign kws_classifier_unload_blocked (Triton 2.51, README Round 15): an unload
of kws_classifier asked over gRPC while its instance held a 25 s call; 2.51 answered the call
"ok" in 3 ms and logged nothing more, since a model unloads only when its in-flight requests
end."""

from __future__ import annotations

from dataclasses import replace

from observability import events as ev
from observability.detectors.hung_request import HungRequestDetector
from observability.detectors.window import Window
from tests.foreign.parsed import window


def _hung(w: Window) -> str:
    (found,) = [f for f in HungRequestDetector().detect(w) if f.model == "kws_gateway"]
    return found.summary


def test_the_blocked_unload_is_named_in_the_hang() -> None:
    summary = _hung(window("kws_classifier_unload_blocked"))
    assert "an unload (gRPC RepositoryModelUnload; the log names no model)" in summary
    assert "has not completed since" in summary


def test_an_unload_that_completed_is_not_named() -> None:
    w = window("kws_classifier_unload_blocked")
    asked = next(r for r in w.logs(ev.FrontendRequest) if r.method == "RepositoryModelUnload")
    done = ev.ModelStateChange(
        replace(asked.header, at_ns=asked.header.at_ns + 10**9, offset=-1),
        "kws_classifier",
        2,
        "unloaded",
    )
    summary = _hung(Window(w.since_ns, w.until_ns, events=[*w.events, done]))
    assert "unload" not in summary


def test_an_http_unload_names_its_model() -> None:
    """The same call made over HTTP, whose logged path names the model (http_server.cc
    ``HTTP request: 2 /v2/repository/models/<m>/unload``)."""
    w = window("kws_classifier_unload_blocked")
    grpc = [r for r in w.logs(ev.FrontendRequest) if r.method == "RepositoryModelUnload"]
    http = replace(
        grpc[0], protocol="http", method="POST", path="/v2/repository/models/kws_classifier/unload"
    )
    events = [http if e is grpc[0] else e for e in w.events if e not in grpc[1:]]
    summary = _hung(Window(w.since_ns, w.until_ns, events=events))
    assert "an unload of kws_classifier requested at" in summary


def test_a_hung_version_is_named_where_versions_share_instance_names() -> None:
    """med_classifier_v3_hang (Triton 2.51, README Round 18): versions 1 and 3 of
    med_classifier run instances named alike; version 3's batch hangs while version 1's
    batches on the same name go on. The stuck batch's prepared: line says its version."""
    found = [f for f in HungRequestDetector().detect(window("med_classifier_v3_hang"))]
    assert any("med_classifier_0_0 (version 3)" in f.summary for f in found)
    one = [f for f in HungRequestDetector().detect(window("st_sequence_hang"))]
    assert any("sess_tracker_0_1 (version 1)" in f.summary for f in one)
    single = HungRequestDetector().detect(window("kws_classifier_unload_blocked"))
    assert all("(version" not in f.summary for f in single)  # one version served: not said
