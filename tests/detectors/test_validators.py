"""Checksums and shapes: each validator accepts planted values and refuses their near misses."""

from __future__ import annotations

import pytest
from faker import Faker

from vdbguard.detectors.validators import aba_routing_valid, iban_valid, luhn_valid, may_hold
from vdbguard.pii import PiiType


def test_checksums_accept_generated_values_and_refuse_one_changed_digit() -> None:
    fake = Faker(["en_US", "de_DE", "en_GB", "fr_FR"])
    Faker.seed(7)
    for _ in range(200):
        card = fake.credit_card_number()
        assert luhn_valid(card), card
        wrong = card[:-1] + str((int(card[-1]) + 1) % 10)
        assert not luhn_valid(wrong), wrong
        iban = fake.iban()
        assert iban_valid(iban), iban
        checked = iban[:2] + f"{(int(iban[2:4]) + 1) % 100:02d}" + iban[4:]  # its check digits one off
        assert not iban_valid(checked), checked
    assert aba_routing_valid("011000015") and not aba_routing_valid("011000016") and not aba_routing_valid("000000000")
    assert iban_valid("GB82 WEST 1234 5698 7654 32") and not iban_valid("GB82 WEST 1234 5698 7654 33")


@pytest.mark.parametrize(
    ("pii_type", "holds", "lacks"),
    [
        (
            PiiType.CREDIT_CARD,
            "Refund requested by Chris Curtis, card 2701590830166136 charged twice.",
            "Refund for order 2701590830166137 charged twice.",
        ),  # one digit off: not Luhn-valid
        (
            PiiType.ACCOUNT_NUMBER,
            "Wire it to DE89 3704 0044 0532 0130 00 by Friday.",
            "Wire it to DE89 3704 0044 0532 0130 01 by Friday.",
        ),
        (
            PiiType.ACCOUNT_NUMBER,
            "The final paycheck goes to account 60-4385-1533780.",
            "The final paycheck goes out on the 15th, as every month.",
        ),
        (PiiType.SSN, "Employee record: SSN 219-09-9999 on file.", "Employee record: SSN 000-09-9999 on file."),
        (PiiType.EMAIL, "Send the quote to ana.lopez@example.org today.", "Send the quote to the usual mailbox today."),
        (PiiType.PHONE, "Call me back on +44 20 7946 0958 after lunch.", "Call me back after lunch, room 4 or 7."),
        (PiiType.DATE_OF_BIRTH, "Born on 12 March 1961 in a small town.", "Born in a small town, long ago."),
        (PiiType.ADDRESS, "Ship it to 742 Evergreen Terrace next week.", "Ship it to the usual place next week."),
        (PiiType.PERSON, "The invoice is for Ms. Okonkwo, due Friday.", "The invoice is due Friday, as in March."),
        (PiiType.PERSON, "Escalated by Priya yesterday.", "<PERSON> escalated it yesterday. SSN and HR are done."),
        (PiiType.MEDICAL, "Triage: a flare-up of asthma this week.", "Triage: a flare-up of the build queue."),
    ],
)
def test_each_type_may_be_held_by_a_planted_value_and_not_by_its_near_miss(pii_type: PiiType, holds: str, lacks: str):
    assert may_hold(pii_type, holds), holds
    assert not may_hold(pii_type, lacks), lacks
