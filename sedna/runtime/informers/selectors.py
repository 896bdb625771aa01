"""Label selectors evaluated against cached objects.

Listers filter the cache locally, so they need kube's selector language: the
string form (``a=b,c!=d,e in (x,y),f notin (z),g,!h``), a plain ``{key: value}``
dict, and ``metav1.LabelSelector`` (``matchLabels`` + ``matchExpressions``) as found
in Deployments and Services. Parsed selectors are cached: controllers list with the
same few selectors over and over.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

__all__ = [
    "Requirement",
    "Selector",
    "SelectorError",
    "as_selector",
    "parse_selector",
    "selector_from_label_selector",
]

Op = Literal["=", "!=", "in", "notin", "exists", "!", "gt", "lt"]


class SelectorError(ValueError):
    """A selector that does not parse; the message points at the offending part."""


@dataclass(frozen=True)
class Requirement:
    """One clause of a selector."""

    key: str
    op: Op
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, Any]) -> bool:
        """Whether ``labels`` satisfy this clause (kube's semantics for absent keys)."""
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            have = int(labels[self.key])
            want = int(next(iter(self.values)))
        except (TypeError, ValueError):
            return False
        return have > want if self.op == "gt" else have < want

    def __str__(self) -> str:
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return f"!{self.key}"
        vals = sorted(self.values)
        if self.op in ("in", "notin"):
            return f"{self.key} {self.op} ({','.join(vals)})"
        if self.op in ("gt", "lt"):
            return f"{self.key}{'>' if self.op == 'gt' else '<'}{vals[0]}"
        return f"{self.key}{self.op}{vals[0]}"


@dataclass(frozen=True)
class Selector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, Any] | None) -> bool:
        """Whether an object's labels satisfy every requirement."""
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Match ``obj.metadata.labels``."""
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, Mapping) else None
        return self.matches(labels if isinstance(labels, Mapping) else None)

    @property
    def empty(self) -> bool:
        """True when the selector selects everything."""
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


_TOKEN = re.compile(r"\s*(?:(?P<op>==|!=|=|!|\(|\)|,|>|<)|(?P<word>[A-Za-z0-9_.\-/]+))")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise SelectorError(f"selector {text!r}: unexpected character at {pos}: {text[pos:]!r}")
        out.append(m.group("op") or m.group("word"))
        pos = m.end()
    return out


_OPERATORS = {"=", "==", "!=", "(", ")", ",", "!", ">", "<"}


@lru_cache(maxsize=256)
def parse_selector(text: str) -> Selector:
    """Parse kube's label selector syntax; raise ``SelectorError`` naming the problem."""
    toks = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def fail(msg: str) -> SelectorError:
        return SelectorError(f"selector {text!r}: {msg}")

    def word(at: int, what: str) -> str:
        if at >= len(toks) or toks[at] in _OPERATORS:
            raise fail(f"expected {what}")
        return toks[at]

    while i < len(toks):
        if toks[i] == "!":
            reqs.append(Requirement(word(i + 1, "a key after '!'"), "!"))
            i += 2
        else:
            key = word(i, "a key")
            i += 1
            nxt = toks[i] if i < len(toks) else ","
            if nxt == ",":
                reqs.append(Requirement(key, "exists"))
            elif nxt in ("=", "==", "!="):
                i += 1
                # An empty value is legal (``key=`` selects an empty label).
                value = ""
                if i < len(toks) and toks[i] not in _OPERATORS:
                    value = toks[i]
                    i += 1
                reqs.append(Requirement(key, "!=" if nxt == "!=" else "=", frozenset([value])))
            elif nxt in (">", "<"):
                value = word(i + 1, f"a number after {nxt!r}")
                if not value.lstrip("-").isdigit():
                    raise fail(f"{value!r} is not an integer")
                reqs.append(Requirement(key, "gt" if nxt == ">" else "lt", frozenset([value])))
                i += 2
            elif nxt in ("in", "notin"):
                i += 1
                if i >= len(toks) or toks[i] != "(":
                    raise fail(f"expected '(' after {nxt!r}")
                i += 1
                values: list[str] = []
                while True:
                    if i < len(toks) and toks[i] == ")":
                        i += 1
                        break
                    if i < len(toks) and toks[i] not in _OPERATORS:
                        values.append(toks[i])
                        i += 1
                    if i < len(toks) and toks[i] == ",":
                        i += 1
                        continue
                    if i < len(toks) and toks[i] == ")":
                        continue
                    raise fail(f"unterminated value list for {key!r}")
                if not values:
                    raise fail(f"empty value list for {key!r}")
                reqs.append(Requirement(key, nxt, frozenset(values)))  # type: ignore[arg-type]
            else:
                raise fail(f"unexpected {nxt!r} after {key!r}")
        if i < len(toks):
            if toks[i] != ",":
                raise fail(f"expected ',' before {toks[i]!r}")
            i += 1
            if i >= len(toks):
                raise fail("trailing ','")
    return Selector(tuple(reqs))


def selector_from_label_selector(ls: Mapping[str, Any] | None) -> Selector:
    """Convert a ``metav1.LabelSelector`` dict; ``None`` or ``{}`` selects everything."""
    if not ls:
        return Selector()
    reqs: list[Requirement] = []
    for key, value in sorted((ls.get("matchLabels") or {}).items()):
        reqs.append(Requirement(str(key), "=", frozenset([str(value)])))
    ops: dict[str, Op] = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in ls.get("matchExpressions") or ():
        op = ops.get(str(expr.get("operator")))
        if op is None:
            raise SelectorError(f"matchExpressions: unknown operator {expr.get('operator')!r}")
        values = frozenset(str(v) for v in expr.get("values") or ())
        if op in ("in", "notin") and not values:
            raise SelectorError(f"matchExpressions: {op} on {expr.get('key')!r} needs values")
        reqs.append(Requirement(str(expr.get("key")), op, values))
    return Selector(tuple(reqs))


def as_selector(sel: Mapping[str, str] | str | Selector | None) -> Selector | None:
    """Normalize what listers accept; ``None`` (or empty) means no filtering."""
    if sel is None:
        return None
    if isinstance(sel, Selector):
        return None if sel.empty else sel
    if isinstance(sel, str):
        parsed = parse_selector(sel.strip())
        return None if parsed.empty else parsed
    if not sel:
        return None
    return Selector(
        tuple(Requirement(str(k), "=", frozenset([str(v)])) for k, v in sorted(sel.items()))
    )
