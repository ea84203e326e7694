"""Names as kube-apiserver generates them from `metadata.generateName`.

k8s.io/apiserver pkg/storage/names/generate.go (SimpleNameGenerator): the prefix, cut to 58
characters (63 less the random part), then five characters of k8s.io/apimachinery pkg/util/rand's
alphabet, which leaves out vowels and look-alike characters so that no word is spelled by accident:
`bcdfghjklmnpqrstvwxz2456789`. `create -f` names objects this way; the store's own `create` and the
controllers' stand-ins (claims made from templates) may call `generate_name` too, so every
generated name looks like one a cluster makes.
"""

from __future__ import annotations

import secrets

ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # utilrand's alphanums
RANDOM_LENGTH = 5
MAX_NAME_LENGTH = 63
MAX_GENERATED_PREFIX = MAX_NAME_LENGTH - RANDOM_LENGTH


def random_suffix(length: int = RANDOM_LENGTH) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def generate_name(prefix: str) -> str:
    """`prefix` (cut to MAX_GENERATED_PREFIX characters) plus five random characters."""
    return prefix[:MAX_GENERATED_PREFIX] + random_suffix()
