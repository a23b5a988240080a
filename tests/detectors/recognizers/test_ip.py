"""IP addresses by Presidio's recognizer, asked only where an address's shape appears."""

from __future__ import annotations

from presidio_analyzer.predefined_recognizers import IpRecognizer

from vdbguard.detectors.recognizers.ip import GatedIpRecognizer


def _found(recognizer, text: str) -> list[tuple[int, int, float]]:
    return sorted((r.start, r.end, r.score) for r in recognizer.analyze(text, ["IP_ADDRESS"]) or () if r.score > 0)


def test_the_gate_never_hides_an_address_presidio_finds() -> None:
    gated, presidio = GatedIpRecognizer(), IpRecognizer()
    texts = ["host 192.168.10.1 is down", "link fe80::1ff:fe23:4567:890a up", "2001:db8::1", "v1.2.3", "no address"]
    for text in texts:
        assert _found(gated, text) == _found(presidio, text), text
    assert _found(gated, texts[0]) and _found(gated, texts[1]) and _found(gated, texts[2])


def test_only_addresses_that_open_with_two_colons_pass_the_gate_unread() -> None:
    """ "::1" is the loopback, which names no machine of anyone's: the one shape the gate lets by."""
    assert _found(IpRecognizer(), "::1") and not _found(GatedIpRecognizer(), "::1")
