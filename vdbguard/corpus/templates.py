"""The sentence templates and the phrase pools that fill them: plain tables, no logic.

Kept apart from the generator so the wording can be read and edited as data; any change here changes the
generated corpus and so the corpus hash that cached models are keyed on.
"""

from __future__ import annotations

from collections.abc import Sequence

from vdbguard.pii import PiiType

# --------------------------------------------------------------------------------------------------
# Templates
#
# Placeholders are ``{kind}``, ``{kind2}`` (a second, independent value of the same kind) or
# ``{kind=clean one|clean two}`` (clean fillers that fit this particular slot better than the kind's
# default pool). PII kinds are listed in KIND_TYPE; every other kind is a non-PII "flavour" slot that
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


FLAVOUR: dict[str, Sequence[str | int]] = {
    "n1": range(1, 10),  # numbers draw exactly like rng.randint(1, 9)
    "n2": range(10, 100),
    "n3": range(100, 1000),
    "n4": range(1000, 10000),
    "n5": range(10000, 100000),
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

KIND_TYPE: dict[str, PiiType] = {
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

FIELD_BLANKS: tuple[str, ...] = (
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

CLEAN: dict[str, tuple[str, ...]] = {
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
    **dict.fromkeys(("name_v", "email_v", "phone_v", "ssn_v", "dob_v", "addr_v", "med_v"), FIELD_BLANKS),
}

TITLES_FEMALE = ("Mrs", "Ms", "Ms", "Miss", "Dr")
TITLES_MALE = ("Mr", "Mr", "Dr")
MONTHS = (
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
EMAIL_DOMAINS = ("northwind.com", "contoso.org", "acme-logistics.net", "globex.co", "initech.io")

MED_PRED: tuple[str, ...] = (
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
MED_NP: tuple[str, ...] = (
    "{c}",
    "{d}",
    "{c} on {d}",
    "{d} for {c}",
    "suspected {c}",
    "{d} refill",
    "{c} follow-up",
)
MED_V: tuple[str, ...] = ("{c}", "{d}", "{c}; {d}")
