"""The scheduling parts of a pod spec and a node: tolerations, taints, affinity, spread, node selectors.

Sources (k8s.io/kubernetes pkg/apis/core/validation/validation.go): ValidateTolerations,
validateTaintEffect, validateNodeTaints, validateAffinity / validateNodeAffinity /
validatePodAffinity / validatePodAntiAffinity, ValidateNodeSelector / ValidateNodeSelectorTerm /
ValidateNodeSelectorRequirement / ValidateNodeFieldSelectorRequirement,
ValidatePreferredSchedulingTerms, validatePodAffinityTerm(s), validateWeightedPodAffinityTerms,
ValidatePodAffinityTermSelector, validateMatchLabelKeysAndMismatchLabelKeys (label names, both
lists), validateTopologySpreadConstraints with ValidateMaxSkew, validateMinDomains,
ValidateTopologyKey, ValidateWhenUnsatisfiable, ValidateSpreadConstraintNotRepeat,
validateNodeInclusionPolicy and validateMatchLabelKeysInTopologySpread.

Tolerations accept Equal and Exists: the Lt/Gt operators need TaintTolerationComparisonOperators,
alpha and off in 1.37.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.store.admission import meta, names
from driver.store.admission.field import (FieldError, child, duplicate, forbidden, index, invalid, invalid_each,
                                          not_supported, required)


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_NOT_POSITIVE = "must be greater than zero"


def taint_effect(effect: Any, allow_empty: bool, path: str) -> list[FieldError]:
    if not allow_empty and not effect:
        return [required(path)]
    return [] if effect in TAINT_EFFECTS else [not_supported(path, effect or "", TAINT_EFFECTS)]


def tolerations(items: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, t in enumerate(_l(items)):
        t, at = _m(t), index(path, i)
        k, op, value, effect = str(t.get("key") or ""), t.get("operator") or "", str(t.get("value") or ""), t.get("effect") or ""
        if k:
            errs += meta.label_name(k, child(at, "key"))
        if not k and op != "Exists":
            errs.append(invalid(child(at, "operator"), op,
                                "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(invalid(child(at, "effect"), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if op in ("Equal", ""):
            msgs = names.is_label_value(value)
            if msgs:
                errs.append(invalid(child(at, "operator"), value, ";".join(msgs)))
        elif op == "Exists":
            if value:
                errs.append(invalid(child(at, "operator"), value, "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(child(at, "operator"), op, ["Equal", "Exists"]))
        if effect:
            errs += taint_effect(effect, True, child(at, "effect"))
    return errs


def node_taints(items: Any, path: str) -> list[FieldError]:
    """validateNodeTaints: key, value, effect, unique by (key, effect)."""
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(_l(items)):
        t, at = _m(t), index(path, i)
        k, value, effect = str(t.get("key") or ""), str(t.get("value") or ""), t.get("effect") or ""
        errs += meta.label_name(k, child(at, "key"))
        msgs = names.is_label_value(value)
        if msgs:
            errs.append(invalid(child(at, "value"), value, ";".join(msgs)))
        errs += taint_effect(effect, False, child(at, "effect"))
        if (k, effect) in seen:
            errs.append(duplicate(at, dict(t), "taints must be unique by key and effect pair"))
            continue
        seen.add((k, effect))
    return errs


def _selector_requirement(rq: Mapping[str, Any], allow_invalid_values: bool, path: str) -> list[FieldError]:
    op, values = rq.get("operator") or "", _l(rq.get("values"))
    errs: list[FieldError] = []
    if op in ("In", "NotIn"):
        if not values:
            errs.append(required(child(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(child(path, "values"),
                                  "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(required(child(path, "values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(invalid(child(path, "operator"), op, "not a valid selector operator"))
    errs += meta.label_name(str(rq.get("key") or ""), child(path, "key"))
    if not allow_invalid_values:
        for i, v in enumerate(values):
            errs += invalid_each(index(child(path, "values"), i), str(v), names.is_label_value(str(v)))
    return errs


def _field_requirement(rq: Mapping[str, Any], path: str) -> list[FieldError]:
    op, values = rq.get("operator") or "", _l(rq.get("values"))
    errs: list[FieldError] = []
    if op in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(required(child(path, "values"),
                                 "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(invalid(child(path, "operator"), op, "not a valid selector operator"))
    if rq.get("key") != "metadata.name":
        errs.append(invalid(child(path, "key"), rq.get("key") or "", "not a valid field selector key"))
    else:
        for i, v in enumerate(values):
            errs += invalid_each(index(child(path, "values"), i), str(v), names.name_is_dns_subdomain(str(v)))
    return errs


def node_selector_term(term: Any, allow_invalid_values: bool, path: str) -> list[FieldError]:
    term = _m(term)
    errs: list[FieldError] = []
    for j, rq in enumerate(_l(term.get("matchExpressions"))):
        errs += _selector_requirement(_m(rq), allow_invalid_values, index(child(path, "matchExpressions"), j))
    for j, rq in enumerate(_l(term.get("matchFields"))):
        errs += _field_requirement(_m(rq), index(child(path, "matchFields"), j))
    return errs


def node_selector(sel: Any, path: str, allow_invalid_values: bool = False) -> list[FieldError]:
    """ValidateNodeSelector (a NodeSelector object: nodeSelectorTerms)."""
    terms = _l(_m(sel).get("nodeSelectorTerms"))
    term_path = child(path, "nodeSelectorTerms")
    if not terms:
        return [required(term_path, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        errs += node_selector_term(term, allow_invalid_values, index(term_path, i))
    return errs


def _weight(value: Any, path: str) -> list[FieldError]:
    weight = value if isinstance(value, int) else 0
    return [] if 0 < weight <= 100 else [invalid(path, weight, "must be in the range 1-100")]


def _label_keys(path: str, keys: list[Any], selector: Any) -> list[FieldError]:
    if not keys:
        return []
    if selector is None:
        return [forbidden(path, "must not be specified when labelSelector is not set")]
    errs: list[FieldError] = []
    for i, k in enumerate(keys):
        errs += meta.label_name(str(k), index(path, i))
    return errs


def _pod_affinity_term(term: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = meta.label_selector(term.get("labelSelector"), child(path, "labelSelector"))
    errs += meta.label_selector(term.get("namespaceSelector"), child(path, "namespaceSelector"))
    for ns in _l(term.get("namespaces")):
        errs += invalid_each(child(path, "namespace"), str(ns), names.name_is_dns_label(str(ns)))
    match, mismatch = _l(term.get("matchLabelKeys")), _l(term.get("mismatchLabelKeys"))
    errs += _label_keys(child(path, "matchLabelKeys"), match, term.get("labelSelector"))
    errs += _label_keys(child(path, "mismatchLabelKeys"), mismatch, term.get("labelSelector"))
    for i, k in enumerate(match):
        if k in mismatch:
            errs.append(invalid(index(child(path, "matchLabelKeys"), i), k,
                                "exists in both matchLabelKeys and mismatchLabelKeys"))
    topology = str(term.get("topologyKey") or "")
    if not topology:
        errs.append(required(child(path, "topologyKey"), "can not be empty"))
    return errs + meta.label_name(topology, child(path, "topologyKey"))


def _pod_affinity(value: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    req_path = child(path, "requiredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(_l(value.get("requiredDuringSchedulingIgnoredDuringExecution"))):
        errs += _pod_affinity_term(_m(term), index(req_path, i))
    pref_path = child(path, "preferredDuringSchedulingIgnoredDuringExecution")
    for j, weighted in enumerate(_l(value.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        weighted = _m(weighted)
        errs += _weight(weighted.get("weight"), child(index(pref_path, j), "weight"))
        errs += _pod_affinity_term(_m(weighted.get("podAffinityTerm")), child(index(pref_path, j), "podAffinityTerm"))
    return errs


def affinity(value: Any, path: str) -> list[FieldError]:
    if value is None:
        return []
    value = _m(value)
    errs: list[FieldError] = []
    node = value.get("nodeAffinity")
    if node is not None:
        node, npath = _m(node), child(path, "nodeAffinity")
        if node.get("requiredDuringSchedulingIgnoredDuringExecution") is not None:
            errs += node_selector(node["requiredDuringSchedulingIgnoredDuringExecution"],
                                  child(npath, "requiredDuringSchedulingIgnoredDuringExecution"))
        pref_path = child(npath, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, term in enumerate(_l(node.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            term = _m(term)
            errs += _weight(term.get("weight"), child(index(pref_path, i), "weight"))
            errs += node_selector_term(term.get("preference"), True, child(index(pref_path, i), "preference"))
    for name in ("podAffinity", "podAntiAffinity"):
        if value.get(name) is not None:
            errs += _pod_affinity(_m(value[name]), child(path, name))
    return errs


def topology_spread(items: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    items = _l(items)
    for i, c in enumerate(items):
        c, at = _m(c), index(path, i)
        skew = c.get("maxSkew")
        if not isinstance(skew, int) or skew <= 0:
            errs.append(invalid(child(at, "maxSkew"), skew or 0, _NOT_POSITIVE))
        topology, when = c.get("topologyKey") or "", c.get("whenUnsatisfiable") or ""
        if not topology:
            errs.append(required(child(at, "topologyKey"), "can not be empty"))
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(not_supported(child(at, "whenUnsatisfiable"), when, ["DoNotSchedule", "ScheduleAnyway"]))
        for rest in items[i + 1:]:
            if _m(rest).get("topologyKey") == c.get("topologyKey") and _m(rest).get("whenUnsatisfiable") == c.get(
                    "whenUnsatisfiable"):
                errs.append(duplicate(child(at, "{topologyKey, whenUnsatisfiable}"), f"{{{topology}, {when}}}"))
                break
        min_domains = c.get("minDomains")
        if min_domains is not None:
            if not isinstance(min_domains, int) or min_domains <= 0:
                errs.append(invalid(child(at, "minDomains"), min_domains, _NOT_POSITIVE))
            if when != "DoNotSchedule":
                errs.append(invalid(child(at, "minDomains"), min_domains,
                                    f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"))
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            value = c.get(policy)
            if value is not None and value not in ("Honor", "Ignore"):
                errs.append(not_supported(child(at, policy), value, ["Honor", "Ignore"]))
        keys = _l(c.get("matchLabelKeys"))
        selector = c.get("labelSelector")
        if keys:
            if selector is None:
                errs.append(forbidden(child(at, "matchLabelKeys"), "must not be specified when labelSelector is not set"))
            in_selector = set(_m(_m(selector).get("matchLabels"))) | {
                _m(e).get("key") for e in _l(_m(selector).get("matchExpressions"))}
            for j, k in enumerate(keys):
                errs += meta.label_name(str(k), index(child(at, "matchLabelKeys"), j))
                if k in in_selector:
                    errs.append(invalid(index(child(at, "matchLabelKeys"), j), k,
                                        "exists in both matchLabelKeys and labelSelector"))
        errs += meta.label_selector(selector, child(at, "labelSelector"))
    return errs
