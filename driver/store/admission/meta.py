"""Object metadata and label selectors, as every kind's validation checks them.

Sources: k8s.io/apimachinery pkg/api/validation/objectmeta.go (ValidateObjectMetaAccessor,
ValidateAnnotations with the 256 KiB total, validateOwnerReference / ValidateOwnerReferences,
ValidateFinalizers, ValidateObjectMetaAccessorUpdate), pkg/apis/meta/v1/validation/validation.go
(ValidateLabels, ValidateLabelName, ValidateLabelSelector, ValidateLabelSelectorRequirement) and
k8s.io/kubernetes pkg/apis/core/validation/validation.go (ValidateObjectMeta's extra
validateKubeFinalizerName, ValidateHasLabel). `selector_matcher` is metav1.LabelSelectorAsSelector:
None when the selector cannot be turned into one (the callers then report "invalid label selector").

Labels and annotations are checked in sorted key order (Go iterates maps randomly; a stable order
gives stable messages).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from driver.store.admission import names
from driver.store.admission.field import (FieldError, child, forbidden, go_quote, index, invalid, invalid_each,
                                          required, too_long)

NameFn = Callable[[str, bool], list[str]]

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024  # TotalAnnotationSizeLimitB
STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")  # core/helper IsStandardFinalizerName
FINALIZER_ORPHAN, FINALIZER_FOREGROUND = "orphan", "foregroundDeletion"
NEGATIVE = "must be greater than or equal to 0"  # IsNegativeErrorMsg
IMMUTABLE = "field is immutable"  # FieldImmutableErrorMsg


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def label_name(name: str, path: str) -> list[FieldError]:
    """ValidateLabelName: a qualified name, reported at `path` with the name as the value."""
    return invalid_each(path, name, names.is_qualified_name(name))


def labels(value: Any, path: str) -> list[FieldError]:
    """ValidateLabels: every key a qualified name, every value a label value, both reported at the
    map's own path (kube-apiserver does not index the key)."""
    errs: list[FieldError] = []
    for k, v in sorted(_mapping(value).items()):
        errs += label_name(str(k), path)
        errs += invalid_each(path, str(v), names.is_label_value(str(v)))
    return errs


def annotations(value: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    total = 0
    for k, v in sorted(_mapping(value).items()):
        errs += invalid_each(path, str(k), names.is_qualified_name(str(k).lower()))
        total += len(str(k).encode()) + len(str(v).encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def nonnegative(value: Any, path: str) -> list[FieldError]:
    """ValidateNonnegativeField."""
    return [invalid(path, value, NEGATIVE)] if isinstance(value, int) and value < 0 else []


def _owner_reference(ref: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    api_version = str(ref.get("apiVersion") or "")
    group, version = "", ""
    if not api_version:
        errs.append(required(child(path, "apiVersion"), "must not be empty"))
    else:
        parts = api_version.split("/")
        if len(parts) == 1:
            version = parts[0]
        elif len(parts) == 2:
            group, version = parts
        if len(parts) > 2 or not version:
            errs.append(invalid(child(path, "apiVersion"), api_version, "must be <group>/<version> or <version>"))
    for field_name in ("kind", "name", "uid"):
        if not ref.get(field_name):
            errs.append(required(child(path, field_name), "must not be empty"))
    if group == "" and version == "v1" and ref.get("kind") == "Event":  # BannedOwners
        errs.append(invalid(path, dict(ref), "/v1, Kind=Event is disallowed from being an owner"))
    return errs


def owner_references(value: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    first_controller = ""
    refs = _list(value)
    for i, ref in enumerate(refs):
        ref = _mapping(ref)
        errs += _owner_reference(ref, index(path, i))
        if ref.get("controller") is True:
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if first_controller:
                errs.append(invalid(path, refs, "Only one reference can have Controller set to true. Found \"true\" "
                                                f"in references for {first_controller} and {current}"))
            else:
                first_controller = current
    return errs


def finalizers(value: Any, path: str) -> list[FieldError]:
    """ValidateFinalizers (each a qualified name, reported at the list's path) and core's
    validateKubeFinalizerName (an unprefixed name must be a standard one, reported at its index)."""
    items = [str(f) for f in _list(value)]
    errs: list[FieldError] = []
    for f in items:
        errs += invalid_each(path, f, names.is_qualified_name(f))
    if FINALIZER_ORPHAN in items and FINALIZER_FOREGROUND in items:
        errs.append(invalid(path, items, f"finalizer {FINALIZER_ORPHAN} and {FINALIZER_FOREGROUND} cannot be both set"))
    for i, f in enumerate(items):
        errs += kube_finalizer_name(f, index(path, i))
    return errs


def kube_finalizer_name(name: str, path: str) -> list[FieldError]:
    if "/" not in name and name not in STANDARD_FINALIZERS:
        return [invalid(path, name, "name is neither a standard finalizer name nor is it fully qualified")]
    return []


def object_meta(meta: Any, *, namespaced: bool, name_fn: NameFn, path: str = "metadata") -> list[FieldError]:
    """ValidateObjectMeta (core's, with the finalizer check): names, namespace, generation, labels,
    annotations, owner references, finalizers."""
    meta = _mapping(meta)
    errs: list[FieldError] = []
    generate = meta.get("generateName")
    if generate:
        errs += invalid_each(child(path, "generateName"), str(generate), name_fn(str(generate), True))
    name = meta.get("name")
    if not name:
        errs.append(required(child(path, "name"), "name or generateName is required"))
    else:
        errs += invalid_each(child(path, "name"), str(name), name_fn(str(name), False))
    errs += namespace_and_rest(meta, namespaced=namespaced, path=path)
    return errs


def namespace_and_rest(meta: Mapping[str, Any], *, namespaced: bool, path: str = "metadata") -> list[FieldError]:
    """validateObjectMetaAccessorWithOptsCommon: everything but the name."""
    errs: list[FieldError] = []
    ns = meta.get("namespace")
    if namespaced:
        if not ns:
            errs.append(required(child(path, "namespace")))
        else:
            errs += invalid_each(child(path, "namespace"), str(ns), names.name_is_dns_label(str(ns)))
    elif ns:
        errs.append(forbidden(child(path, "namespace"), "not allowed on this type"))
    errs += nonnegative(meta.get("generation"), child(path, "generation"))
    errs += labels(meta.get("labels"), child(path, "labels"))
    errs += annotations(meta.get("annotations"), child(path, "annotations"))
    errs += owner_references(meta.get("ownerReferences"), child(path, "ownerReferences"))
    errs += finalizers(meta.get("finalizers"), child(path, "finalizers"))
    return errs


def object_meta_update(new: Any, old: Any, path: str = "metadata") -> list[FieldError]:
    """ValidateObjectMetaUpdate. The server-owned fields (uid, creationTimestamp, resourceVersion,
    generation) are the store's to set, so only what a user can change is compared."""
    new, old = _mapping(new), _mapping(old)
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        added = sorted(set(_list(new.get("finalizers"))) - set(_list(old.get("finalizers"))))
        if added:
            errs.append(forbidden(child(path, "finalizers"), "no new finalizers can be added if the object is being "
                                  f"deleted, found new finalizers []string{{{', '.join(map(go_quote, added))}}}"))
    for field_name in ("name", "namespace"):
        if (new.get(field_name) or "") != (old.get(field_name) or ""):
            errs.append(invalid(child(path, field_name), new.get(field_name) or "", IMMUTABLE))
    errs += labels(new.get("labels"), child(path, "labels"))
    errs += annotations(new.get("annotations"), child(path, "annotations"))
    errs += owner_references(new.get("ownerReferences"), child(path, "ownerReferences"))
    for i, f in enumerate(_list(new.get("finalizers"))):
        errs += kube_finalizer_name(str(f), index(child(path, "finalizers"), i))
    return errs


def template_meta(meta: Any, path: str) -> list[FieldError]:
    """ValidateTemplateObjectMeta (a claim template's metadata): labels and annotations only."""
    meta = _mapping(meta)
    return labels(meta.get("labels"), child(path, "labels")) + annotations(meta.get("annotations"),
                                                                            child(path, "annotations"))


_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


def label_selector(selector: Any, path: str) -> list[FieldError]:
    """ValidateLabelSelector with AllowInvalidLabelValueInSelector false."""
    if selector is None:
        return []
    selector = _mapping(selector)
    errs = labels(selector.get("matchLabels"), child(path, "matchLabels"))
    for i, expr in enumerate(_list(selector.get("matchExpressions"))):
        errs += _selector_requirement(_mapping(expr), index(child(path, "matchExpressions"), i))
    return errs


def _selector_requirement(expr: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    op, values = expr.get("operator"), _list(expr.get("values"))
    if op in ("In", "NotIn"):
        if not values:
            errs.append(required(child(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(child(path, "values"),
                                  "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    else:
        errs.append(invalid(child(path, "operator"), op or "", "not a valid selector operator"))
    errs += label_name(str(expr.get("key") or ""), child(path, "key"))
    for i, v in enumerate(values):
        errs += invalid_each(index(child(path, "values"), i), str(v), names.is_label_value(str(v)))
    return errs


Matcher = Callable[[Mapping[str, Any]], bool]


def selector_matcher(selector: Any) -> tuple[Matcher | None, bool]:
    """(matches(labels), empty) for a metav1.LabelSelector; (None, False) when it is not a valid
    selector. A missing selector matches nothing (labels.Nothing()), `{}` everything (and is empty)."""
    if selector is None:
        return (lambda _labels: False), False
    selector = _mapping(selector)
    reqs: list[tuple[str, str, tuple[str, ...]]] = []
    for k, v in _mapping(selector.get("matchLabels")).items():
        if names.is_qualified_name(str(k)) or names.is_label_value(str(v)):
            return None, False
        reqs.append((str(k), "In", (str(v),)))
    for expr in _list(selector.get("matchExpressions")):
        expr = _mapping(expr)
        op, values = expr.get("operator"), tuple(str(v) for v in _list(expr.get("values")))
        key = str(expr.get("key") or "")
        if op not in _SELECTOR_OPS or names.is_qualified_name(key):
            return None, False
        if (op in ("In", "NotIn") and not values) or (op in ("Exists", "DoesNotExist") and values):
            return None, False
        if any(names.is_label_value(v) for v in values):
            return None, False
        reqs.append((key, str(op), values))

    def matches(obj_labels: Mapping[str, Any]) -> bool:
        for key, op, values in reqs:
            has = key in obj_labels
            if op == "In" and not (has and str(obj_labels[key]) in values):
                return False
            if op == "NotIn" and has and str(obj_labels[key]) in values:
                return False
            if op == "Exists" and not has:
                return False
            if op == "DoesNotExist" and has:
                return False
        return True
    return matches, not reqs
