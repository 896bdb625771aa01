"""Label and field selectors, parsed once per request and matched per object.

The grammar follows k8s.io/apimachinery's labels.Parse: ``a=b``, ``a==b``, ``a!=b``,
``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``, comma-separated (AND).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import bad_request

Matcher = Callable[[Mapping[str, Any]], bool]

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VAL = r"[-A-Za-z0-9_.]*"
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^)]*)\)\s*$")
_EQ_RE = re.compile(rf"^\s*({_KEY})\s*(==|!=|=)\s*({_VAL})\s*$")
_EXISTS_RE = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


def _split_terms(sel: str) -> list[str]:
    """Split on commas that are not inside ``(...)``."""
    terms: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in sel:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise bad_request(f'unable to parse requirement: unbalanced ")" in {sel!r}')
        if ch == "," and depth == 0:
            terms.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise bad_request(f'unable to parse requirement: unbalanced "(" in {sel!r}')
    terms.append("".join(cur))
    return terms


LabelReq = Callable[[Mapping[str, str]], bool]


def _label_req(term: str) -> LabelReq:
    m = _SET_RE.match(term)
    if m:
        key, op, raw = m.group(1), m.group(2), m.group(3)
        values = {v.strip() for v in raw.split(",")}
        for v in values:
            if not re.fullmatch(_VAL, v):
                raise bad_request(f"invalid label value: {v!r}")
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    m = _EQ_RE.match(term)
    if m:
        key, op, val = m.group(1), m.group(2), m.group(3)
        if op == "!=":
            return lambda labels: labels.get(key) != val
        return lambda labels: labels.get(key) == val
    m = _EXISTS_RE.match(term)
    if m:
        neg, key = m.group(1), m.group(2)
        if neg:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise bad_request(f"unable to parse requirement: invalid label selector term {term!r}")


_EMPTY: Mapping[str, Any] = {}


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels: Mapping[str, str] = (obj.get("metadata") or _EMPTY).get("labels") or _EMPTY
    return labels


def parse_label_selector(sel: str | None) -> Matcher | None:
    """A predicate on objects, or None when the selector selects everything.

    A list runs it on every object of the resource in scope (kube filters the same
    way), so a selector that matches nothing still costs a pass over them all: the
    usual one-term selector is matched without the loop over terms.
    """
    if not sel or not sel.strip():
        return None
    reqs = [_label_req(t) for t in _split_terms(sel) if t.strip()]
    if not reqs:
        return None
    if len(reqs) == 1:
        only = reqs[0]

        def match_one(obj: Mapping[str, Any]) -> bool:
            labels: Mapping[str, str] = (obj.get("metadata") or _EMPTY).get("labels") or _EMPTY
            return only(labels)

        return match_one

    def match(obj: Mapping[str, Any]) -> bool:
        labels = _labels(obj)
        return all(r(labels) for r in reqs)

    return match


_FIELD_RE = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*?)\s*$")


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


# kube accepts only a few field paths per kind; these are the ones clients use.
SUPPORTED_FIELDS = {
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "status.phase",
    "spec.schedulerName",
    "spec.restartPolicy",
    "status.podIP",
    "type",
    "involvedObject.kind",
    "involvedObject.name",
    "involvedObject.namespace",
    "involvedObject.uid",
    "reason",
    "spec.unschedulable",
}


def parse_field_selector(sel: str | None, kind: str = "") -> Matcher | None:
    """A predicate for ``fieldSelector``; unknown fields are a 400 as in kube."""
    if not sel or not sel.strip():
        return None
    reqs: list[tuple[str, bool, str]] = []
    for term in _split_terms(sel):
        if not term.strip():
            continue
        m = _FIELD_RE.match(term)
        if not m:
            raise bad_request(f"invalid field selector: {term!r}")
        path, op, val = m.group(1), m.group(2), m.group(3)
        if path not in SUPPORTED_FIELDS:
            raise bad_request(
                f"field label not supported: {path}" + (f' for kind "{kind}"' if kind else "")
            )
        reqs.append((path, op == "!=", val))

    def match(obj: Mapping[str, Any]) -> bool:
        for path, neg, val in reqs:
            eq = _field_value(obj, path) == val
            if eq == neg:
                return False
        return True

    return match


def combine(*matchers: Matcher | None) -> Matcher | None:
    """AND of the non-None matchers (None = match all)."""
    ms = [m for m in matchers if m is not None]
    if not ms:
        return None
    if len(ms) == 1:
        return ms[0]
    return lambda obj: all(m(obj) for m in ms)
