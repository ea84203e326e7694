"""Names as kube-apiserver generates them from `metadata.generateName`.

k8s.io/apiserver pkg/storage/names/generate.go (SimpleNameGenerator): the prefix, cut to 58
characters (63 less the random part), then five characters of k8s.io/apimachinery pkg/util/rand's
alphabet (`bcdfghjklmnpqrstvwxz2456789`, the store's NAME_ALPHABET). The store's own `create`
names objects the same way (driver.store.objectstore.generated_name, which cuts the prefix), so a
long prefix gives a name of at most 63 characters, as on a cluster. `create -f` and the
controllers' stand-ins (claims made from templates) name objects with it.
"""

from __future__ import annotations

from driver.store.objectstore import NAME_ALPHABET, generated_name

ALPHABET = NAME_ALPHABET
RANDOM_LENGTH = 5
MAX_NAME_LENGTH = 63
MAX_GENERATED_PREFIX = MAX_NAME_LENGTH - RANDOM_LENGTH


def generate_name(prefix: str) -> str:
    """`prefix` (cut to MAX_GENERATED_PREFIX characters) plus five random characters."""
    return generated_name(prefix)
