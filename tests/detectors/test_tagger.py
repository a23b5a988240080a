"""The learned PERSON tagger: its words and features, how labels become names, and the shipped model itself."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from vdbguard.detectors import tagger as T
from vdbguard.detectors.lexicon import name_gazetteer

OUTSIDE, BEGIN, INSIDE = (0.9, 0.05, 0.05), (0.05, 0.9, 0.05), (0.05, 0.05, 0.9)


def test_words_split_names_at_apostrophes_and_hyphens_so_a_possessive_stays_outside() -> None:
    text = "Ask O'Brien's team-lead."
    assert [text[s:e] for s, e in T.words_of(text)] == ["Ask", "O", "'", "Brien", "'", "s", "team", "-", "lead", "."]


@pytest.mark.parametrize(
    ("word", "case"), [("smith", 1), ("Smith", 2), ("NASA", 3), ("A", 2), ("42", 4), ("-", 4), ("McDonald", 5)]
)
def test_each_word_carries_its_case_which_the_lower_casing_tokenizer_loses(word: str, case: int) -> None:
    assert T.case_of(word) == case


def test_the_feature_adds_whether_the_name_list_holds_the_word() -> None:
    names = frozenset({"smith"})
    assert T.feature_of("Smith", names) == T.feature_of("Jones", names) + 1


def test_labels_become_names_where_an_inside_follows_only_a_begin_or_an_inside() -> None:
    offsets = [(0, 3), (4, 8), (9, 12), (13, 16), (17, 20), (21, 24)]
    labels = [BEGIN, INSIDE, OUTSIDE, BEGIN, BEGIN, INSIDE]
    assert [(s, e) for s, e, _ in T.spans_of(labels, offsets)] == [(0, 8), (13, 16), (17, 24)]
    (_, _, score), *_ = T.spans_of(labels, offsets)
    assert score == pytest.approx(0.95)


def test_a_first_name_read_as_rather_outside_joins_the_surname_read_as_inside() -> None:
    """ "Leanne Smith": outside .58 / begin .42, then inside .95 is one name, not "Smith" alone."""
    offsets = [(0, 7), (8, 14), (15, 20)]
    probabilities = [(1.0, 0.0, 0.0), (0.58, 0.42, 0.0), (0.05, 0.0, 0.95)]
    assert [(s, e) for s, e, _ in T.spans_of(probabilities, offsets)] == [(8, 20)]
    assert T.spans_of([], []) == []


def test_the_outside_bias_moves_a_borderline_word_across_the_decision_and_leaves_sure_ones() -> None:
    offsets = [(0, 5), (6, 11), (12, 17)]
    probabilities = [(0.55, 0.45, 0.0), (0.02, 0.98, 0.0), (0.99, 0.01, 0.0)]  # "Faith" borderline, "Jones" sure
    assert [(s, e) for s, e, _ in T.spans_of(probabilities, offsets)] == [(6, 11)]
    assert [(s, e) for s, e, _ in T.spans_of(probabilities, offsets, -0.5)] == [(0, 5), (6, 11)]
    assert [(s, e) for s, e, _ in T.spans_of(probabilities, offsets, 2.0)] == [(6, 11)]
    assert T.spans_of(probabilities, offsets, 5.0) == []


@pytest.fixture(scope="module")
def shipped() -> T.PersonTagger:
    return T.PersonTagger()


def test_the_shipped_tagger_was_trained_over_the_installed_encoder_and_todays_features(shipped: T.PersonTagger) -> None:
    """Stale otherwise: retrain with pipelines/train_person_tagger.py and commit vdbguard/data/person-tagger."""
    training = shipped.training
    assert training["base_weights"] == T.base_weights_hash()
    assert training["featurisation"] == T.featurisation(name_gazetteer())
    assert training["labels"] == list(T.LABELS)


def test_the_frames_it_was_trained_on_are_the_trainers_today() -> None:
    frames = Path(__file__).resolve().parents[2] / "pipelines" / "person_frames.json"
    training = json.loads((T.TAGGER_DIR / "training.json").read_text())
    digest = hashlib.sha256(frames.read_bytes()).hexdigest()[:16]
    assert training["frames"] == digest, "retrain: the trainer's frames changed since the shipped tagger"
    if "gloss_frames" in training:  # trained with --gloss-frames
        glosses = hashlib.sha256(frames.with_name("person_gloss_frames.json").read_bytes()).hexdigest()[:16]
        assert training["gloss_frames"] == glosses, "retrain: the trainer's gloss frames changed since"


def test_the_shipped_tagger_finds_names_in_any_case_and_leaves_places_and_products(shipped: T.PersonTagger) -> None:
    texts = [
        "Thanks to Ingrid Solberg for the patch.",
        "Dr. Okonkwo will see you now.",
        "patient john whitaker seen for follow-up",
        "Shipped from Houston on Tuesday with Ubuntu installed.",
        "Keep the faith and weather the storm.",
    ]
    found = shipped.find(texts)
    names = [[text[s:e] for s, e, _ in spans] for text, spans in zip(texts, found, strict=True)]
    assert names[0] == ["Ingrid Solberg"]
    assert any("Okonkwo" in name for name in names[1])
    assert names[2] == ["john whitaker"]
    assert names[3] == [] and names[4] == []


def test_an_identifiers_prefix_is_never_a_name(shipped: T.PersonTagger) -> None:
    """Ticket and employee ids in a subject's place ("User ABC-1234 logged in.") read as names to the model alone."""
    texts = ["Employee EMP-482913 asked for a new laptop.", "User ABC-1234 logged in.", "INC-2231 went to Priya Raman"]
    found = [[text[s:e] for s, e, _ in spans] for text, spans in zip(texts, shipped.find(texts), strict=True)]
    assert found == [[], [], ["Priya Raman"]]
    assert T.glued_to_digits("ABC-1234 ok", 0, 3) and not T.glued_to_digits("Ann Lee, 1930-2001", 0, 7)


# missed in float32, bfloat16 and int8 (not shipped), each with a doubt of 0.39-0.40 in the first two, 0.30 in int8
NEARLY_NAMED = [
    "Recompute the lower diagonal of the matrix. Best, Tove",
    "Element-wise minimum of two arrays. (Tove)",
]
CLEAN = ["Export the report as a spreadsheet every Monday.", "Shipped from Houston on Tuesday."]


def test_a_name_the_tagger_nearly_found_leaves_doubt_and_clean_text_none(shipped: T.PersonTagger) -> None:
    """Owner-side calibration reads the doubt (``Reading.unsure``). If a retrained tagger finds these names, pick
    sign-offs it misses: the doubt is for the names it misses."""
    tagged = shipped.tag([*NEARLY_NAMED, *CLEAN, "Thanks to Ingrid Solberg for the patch."])
    assert [t.names for t in tagged[:4]] == [[], [], [], []]
    assert min(t.doubt for t in tagged[:2]) > 0.3 and max(t.doubt for t in tagged[2:]) < 0.05


def test_doubt_is_the_likeliest_word_outside_every_name(monkeypatch: pytest.MonkeyPatch) -> None:
    tagger = object.__new__(T.PersonTagger)
    tagger.outside_bias, tagger.address_head = 0.0, None
    text = "cc Ann Lee and Bo"
    words = T.words_of(text)
    rows = [[0.9, 0.05, 0.05], [0.1, 0.85, 0.05], [0.1, 0.05, 0.85], [0.95, 0.03, 0.02], [0.6, 0.35, 0.05]]
    monkeypatch.setattr(tagger, "read", lambda texts, states: iter([(0, words, rows, None)]))
    [tagged] = tagger.tag([text])
    assert [text[s:e] for s, e, _ in tagged.names] == ["Ann Lee"]
    assert tagged.doubt == pytest.approx(0.40)  # "Bo": outside, though 0.35 + 0.05 of it said a name


def test_names_beside_long_numbers_are_found(shipped: T.PersonTagger) -> None:
    """Card and account numbers, read digit by digit, hid the name beside them; the model reads each digit as 0.
    Every letter of the name lies in a found span and nothing else does, so redaction removes it (in one or more)."""
    texts = [
        "Premium refund of €496 issued to card number 3546 6458 4681 9701 for William C. Douglas. Please advise.",
        "Direct debit set up from account 18-5354-2935190 for Louis T. Browne; the first payment is in two weeks.",
    ]
    for text, spans, name in zip(texts, shipped.find(texts), ["William C. Douglas", "Louis T. Browne"], strict=True):
        start = text.index(name)
        covered = {i for s, e, _ in spans for i in range(s, e)}
        assert {i for i in range(start, start + len(name)) if text[i] != " "} <= covered, (name, spans)
        assert all(start <= s and e <= start + len(name) for s, e, _ in spans), (name, spans)


def test_a_name_runs_on_through_a_middle_initial_and_nothing_else() -> None:
    """The tagger ended "Louis T. Browne" at "Louis" beside an account number; a name found runs on through an
    initial and the capitalised word after it, and two spans of one name become one."""
    text = "For Louis T. Browne; Ana. B. told Grace P. Whitfield and Li X. and Anne-Marie O. Duval-Roy, Bo A. lee"
    at = {name: text.index(name) for name in ("Louis", "Ana", "Grace", "P. Whitfield", "Li", "Anne-Marie", "Bo")}
    spans = [(at[n], at[n] + len(n), 0.9) for n in ("Louis", "Ana", "Grace", "Li", "Anne-Marie", "Bo")]
    spans.append((at["P. Whitfield"], at["P. Whitfield"] + 12, 0.6))
    found = [text[s:e] for s, e, _ in T.through_middle_initials(text, spans)]
    assert found == ["Louis T. Browne", "Ana", "Grace P. Whitfield", "Li", "Anne-Marie O. Duval-Roy", "Bo"]
    assert [score for *_, score in T.through_middle_initials(text, spans)] == [0.9] * 6


def test_long_texts_are_read_in_windows_with_offsets_into_the_whole_text(shipped: T.PersonTagger) -> None:
    filler = "the build failed again on the nightly runner " * 30
    text = filler + "and Ingrid Solberg fixed it."
    ((start, end, _),) = shipped.find([text])[0]
    assert text[start:end] == "Ingrid Solberg"


def test_a_text_is_read_alike_alone_and_beside_texts_of_other_lengths(shipped: T.PersonTagger) -> None:
    """Windows are padded to a multiple of ``LENGTH_STEP`` tokens and batched with those padded alike (a scan's chunk
    then batches ten at a time, not two): a text's names and scores never depend on the texts beside it."""
    texts = [
        *NEARLY_NAMED,
        *CLEAN,
        "Thanks to Ingrid Solberg for the patch.",
        "Thanks to Ingrid Solberg and Tove Jansson for the patch.",
        "patient john whitaker seen for follow-up",
        "Dr. Okonkwo will see you now.",
    ]
    tokens = [len(shipped.tokens.tokenizer.encode(T.WORD.findall(text), is_pretokenized=True).ids) for text in texts]
    padded = [T.padded_length(n) for n in tokens]
    assert len(set(tokens)) > len(set(padded)), "some batch must mix windows of different lengths"
    together = shipped.tag(texts)
    assert [shipped.tag([text])[0] for text in texts] == together
    assert [texts[5][s:e] for s, e, _ in together[5].names] == ["Ingrid Solberg", "Tove Jansson"]


def test_the_tagger_runs_on_one_thread_and_gives_the_callers_back() -> None:
    import torch

    from vdbguard.detectors.tagger import one_thread

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with one_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def with_addresses() -> T.PersonTagger:
    return T.PersonTagger(addresses=T.ADDRESS_DIR)


def test_the_address_head_was_trained_over_the_shipped_tagger_and_todays_frames() -> None:
    """Stale otherwise: retrain with pipelines/train_address_tagger.py and commit vdbguard/data/address-tagger."""
    training = json.loads((T.ADDRESS_DIR / "training.json").read_text())
    frames = Path(__file__).resolve().parents[2] / "pipelines" / "address_frames.json"
    assert training["tagger"] == T.tagger_digest(T.TAGGER_DIR)
    assert training["frames"] == hashlib.sha256(frames.read_bytes()).hexdigest()[:16]
    assert training["labels"] == list(T.LABELS)


def test_an_address_head_trained_over_another_tagger_is_refused() -> None:
    from vdbguard.errors import VdbguardError

    with pytest.raises(VdbguardError, match="another PERSON tagger"):
        T.AddressHead(T.ADDRESS_DIR, tagger="0" * 16)


def test_the_address_head_finds_postal_addresses_and_leaves_places_and_numbers(
    shipped: T.PersonTagger, with_addresses: T.PersonTagger
) -> None:
    texts = [
        "Please send the replacement to 80 West Tasman Drive, San Jose CA 95134.",
        "Registered office: Osterstrasse 15, 26122 Oldenburg, Germany",
        "Customer at 12 Baker Street, London NW1 6XE reports a leak; call Ingrid Solberg.",
        "We flew to Paris in May and stayed near the river.",
        "Version 3.2 of the driver shipped on 12 May with 4 fixes for port 8080.",
    ]
    tagged = with_addresses.tag(texts)
    addresses = [[text[s:e] for s, e, _ in t.addresses] for text, t in zip(texts, tagged, strict=True)]
    assert all(addresses[:3]) and addresses[3:] == [[], []]
    assert addresses[0] == ["80 West Tasman Drive, San Jose CA 95134"], "found whole"
    assert addresses[2] == ["12 Baker Street, London NW1 6XE"]
    assert [t.names for t in tagged] == shipped.find(texts), "the address head changed the names"


def test_the_address_head_finds_an_address_whose_street_is_a_name_past_its_house_number(
    with_addresses: T.PersonTagger,
) -> None:
    """A head reading each word alone found "9" here: redaction then left the street and the town in the text."""
    text = "Text from Clare: running late, meet me at 9 Pamela Row, Lake Adam, S5 3WH instead."
    (found,) = [[text[s:e] for s, e, _ in tagged.addresses] for tagged in with_addresses.tag([text])]
    assert len(found) == 1 and found[0].startswith("9 Pamela Row, Lake Adam"), found


def test_a_person_beside_a_records_other_fields_is_no_address(with_addresses: T.PersonTagger) -> None:
    """Version 11's head read "Rudolf Szalai, SSN 524-" as an address, and the name went unredacted as a PERSON."""
    text = "ViViT model - modular file inheriting transformer core from ViT. Record: Rudolf Szalai, SSN 524-71-6789."
    (tagged,) = with_addresses.tag([text])
    assert tagged.addresses == []


def test_a_records_intake_line_holds_no_address(with_addresses: T.PersonTagger) -> None:
    """Version 13's head read "name Donald Delacruz, DOB" of the demo's intake lines as an address, a first head over
    14's tagger "name" and "DOB 1 Jul 1955, diagnosis": the word "name" then stood unmasked in a report as a value the
    scan had found. Since 14 such lines are among the things an address's frame can hold."""
    texts = [
        "Intake form: name Jacob A. Glass, DOB 1 Jul 1955, diagnosis risperidone.",
        "Intake form: name Donald Delacruz, DOB October 21, 1961, diagnosis hydroxychloroquine.",
    ]
    assert [t.addresses for t in with_addresses.tag(texts)] == [[], []]


def test_an_address_begun_twice_in_a_row_is_one_address(with_addresses: T.PersonTagger) -> None:
    """The head may begin an address at two words in a row ("address" | "6 Monica End, ..."): one address, never the
    lone word "address" reported as PII beside it."""
    text = "FYI: Delivery exception for Order 2476: address 6 Monica End, Lake Johnborough not found."
    (tagged,) = with_addresses.tag([text])
    found = [text[s:e] for s, e, _ in tagged.addresses]
    assert len(found) == 1 and found[0].endswith("6 Monica End, Lake Johnborough"), found


def test_a_spot_inside_a_building_is_no_address_but_a_street_beside_one_is(with_addresses: T.PersonTagger) -> None:
    """Version 12's head read "bay 2," and "room" as addresses in the demo's clean notes: a spot inside a building
    (``spots`` in pipelines/address_frames.json) is none alone, and the street after it still is."""
    texts = [
        "FYI: the patient in bay 2, DOB to be confirmed, missed the last appointment.",
        "Moved to bed 14 on Ward C overnight; the server sits in rack B4 of Building 3.",
        "Deliver to Room 4, 80 West Tasman Drive, San Jose CA 95134 before noon.",
    ]
    tagged = with_addresses.tag(texts)
    found = [[text[s:e] for s, e, _ in t.addresses] for text, t in zip(texts, tagged, strict=True)]
    assert found[:2] == [[], []], found
    assert len(found[2]) == 1 and found[2][0].endswith("80 West Tasman Drive, San Jose CA 95134"), found
