"""Attribute labels of a corpus sentence: condition family, sex and age band, read from its inserted values.

Shared by the attribute-probe attack (its training targets) and the concept transforms (what to erase), so
neither imports the other. Names are sexed with Faker's own gender-specific lists, loaded on first use.
"""

from __future__ import annotations

import datetime
import functools
import importlib
import re

from vdbguard.corpus.labelled import LabelledText
from vdbguard.pii import PiiType

NONE = "none"
ATTRIBUTES: tuple[str, ...] = ("medical_family", "sex", "age_band")
AGE_BANDS: tuple[tuple[int, str], ...] = ((35, "18-34"), (50, "35-49"), (65, "50-64"), (200, "65+"))

_FAMILIES: dict[str, tuple[str, ...]] = {
    "mental health": (
        "major depressive disorder", "generalized anxiety disorder", "bipolar disorder", "schizophrenia", "PTSD",
        "ADHD", "anorexia nervosa", "bulimia", "obsessive-compulsive disorder", "sertraline", "fluoxetine",
        "escitalopram", "bupropion", "venlafaxine", "lithium", "quetiapine", "olanzapine", "risperidone",
        "aripiprazole", "methylphenidate", "amphetamine salts", "alprazolam", "lorazepam", "clonazepam",
    ),
    "substance use": (
        "alcohol use disorder", "opioid use disorder", "naltrexone", "buprenorphine", "methadone",
    ),
    "cardiovascular": (
        "hypertension", "heart failure", "atrial fibrillation", "coronary artery disease", "stroke", "lisinopril",
        "amlodipine", "atorvastatin", "simvastatin", "furosemide", "warfarin", "apixaban", "clopidogrel",
        "losartan", "metoprolol", "spironolactone",
    ),
    "metabolic and endocrine": (
        "type 2 diabetes", "type 1 diabetes", "hypothyroidism", "hyperthyroidism", "metformin",
        "insulin glargine", "levothyroxine", "semaglutide",
    ),
    "respiratory": (
        "asthma", "COPD", "sleep apnea", "pneumonia", "cystic fibrosis", "albuterol", "fluticasone",
    ),
    "neurological": (
        "epilepsy", "multiple sclerosis", "Parkinson's disease", "Alzheimer's disease", "migraine",
        "levetiracetam", "lamotrigine", "valproate", "carbidopa-levodopa", "donepezil", "sumatriptan",
        "gabapentin",
    ),
    "infectious": (
        "HIV", "hepatitis C", "hepatitis B", "tuberculosis", "COVID-19", "long COVID", "tenofovir",
        "emtricitabine", "sofosbuvir", "isoniazid",
    ),
    "cancer": (
        "breast cancer", "prostate cancer", "lung cancer", "colon cancer", "leukemia", "lymphoma", "melanoma",
        "tamoxifen", "letrozole",
    ),
    "autoimmune and musculoskeletal": (
        "rheumatoid arthritis", "osteoarthritis", "lupus", "psoriasis", "gout", "osteoporosis", "methotrexate",
        "adalimumab", "hydroxychloroquine", "prednisone", "allopurinol",
    ),
    "digestive": ("Crohn's disease", "ulcerative colitis", "celiac disease", "mesalamine", "infliximab", "omeprazole"),
}  # fmt: skip
"""Condition / drug -> family. Anything in vdbguard.data.medical not listed here is family "other"."""
FAMILY_OF: dict[str, str] = {term.lower(): family for family, terms in _FAMILIES.items() for term in terms}
_FEMALE_TITLES = frozenset({"mrs", "ms", "miss"})
_MALE_TITLES = frozenset({"mr"})
_YEAR = re.compile(r"(?<!\d)(\d{4}|\d{2})(?!\d)")


def medical_family(term: str) -> str:
    return FAMILY_OF.get(term.lower(), "other")


@functools.lru_cache(maxsize=1)
def _first_names() -> tuple[frozenset[str], frozenset[str]]:
    """Female-only and male-only first names over Faker's English person providers (lower case).

    Faker's generic "en" provider is left out: its lists put many names on both sides.
    """
    female: set[str] = set()
    male: set[str] = set()
    for locale in ("en_US", "en_GB", "en_IE", "en_IN", "en_KE", "en_NG", "en_NZ"):
        try:
            provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        except ModuleNotFoundError:
            continue
        female |= {n.lower() for n in getattr(provider, "first_names_female", None) or ()}
        male |= {n.lower() for n in getattr(provider, "first_names_male", None) or ()}
    return frozenset(female - male), frozenset(male - female)


def sex_of_name(name: str) -> str | None:
    """Female or male from a title or a gender-specific first name; None when it cannot tell."""
    words = [w.strip(".,").lower() for w in name.split()]
    if not words:
        return None
    if words[0] in _FEMALE_TITLES:
        return "female"
    if words[0] in _MALE_TITLES:
        return "male"
    if words[0] in ("dr", "mx"):
        words = words[1:]
    female, male = _first_names()
    first = words[0] if words else ""
    if first in female:
        return "female"
    if first in male:
        return "male"
    return None


def age_band(age: int) -> str:
    return next(label for upper, label in AGE_BANDS if age < upper)


def birth_year(value: str, today: datetime.date | None = None) -> int | None:
    """The year in a date-of-birth literal; two-digit years resolve to the century giving age >= 18."""
    this_year = (today or datetime.date.today()).year
    years = [m for m in _YEAR.findall(value) if len(m) == 4]
    if years:
        return int(years[-1])
    short = _YEAR.findall(value)
    if not short:
        return None
    year = 2000 + int(short[-1])
    return year if this_year - year >= 18 else year - 100


def labels_of(item: LabelledText, today: datetime.date | None = None) -> dict[str, str | None]:
    """The attribute labels of one corpus sentence; None where the sentence is ambiguous for that attribute."""
    out: dict[str, str | None] = {}
    medical = {medical_family(v) for v in item.values.get(PiiType.MEDICAL, ())}
    out["medical_family"] = NONE if not medical else (medical.pop() if len(medical) == 1 else None)
    sexes = {sex_of_name(v) for v in item.values.get(PiiType.PERSON, ())}
    out["sex"] = NONE if not sexes else (next(iter(sexes)) if len(sexes) == 1 and None not in sexes else None)
    this_year = (today or datetime.date.today()).year
    bands = {
        None if (year := birth_year(v, today)) is None else age_band(this_year - year)
        for v in item.values.get(PiiType.DATE_OF_BIRTH, ())
    }
    out["age_band"] = NONE if not bands else (next(iter(bands)) if len(bands) == 1 and None not in bands else None)
    return out
