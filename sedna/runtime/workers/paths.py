"""Go's slash-path helpers (``filepath.Join``/``Clean``/``Split``) and name rules.

Container paths, download directories and volume names must be byte-for-byte
what Sedna's Go GM produces, because the storage initializer and the Python
workers (the sedna library) compute the same paths on their side. Python's
``posixpath`` differs in corner cases (``normpath`` keeps a leading ``//``,
``split`` strips the directory's trailing slash), so we spell Go's rules out.
"""

from __future__ import annotations

__all__ = ["convert_k8s_valid_name", "go_clean", "go_join", "go_split"]


def go_clean(path: str) -> str:
    """Lexically clean ``path`` exactly as Go's ``path.Clean`` does."""
    if path == "":
        return "."
    rooted = path.startswith("/")
    parts: list[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not rooted:
                parts.append("..")
            continue
        parts.append(seg)
    joined = "/".join(parts)
    if rooted:
        return "/" + joined
    return joined or "."


def go_join(*elems: str) -> str:
    """Join like Go's ``filepath.Join``: empty elements ignored, result cleaned."""
    kept = [e for e in elems if e != ""]
    if not kept:
        return ""
    return go_clean("/".join(kept))


def go_split(path: str) -> tuple[str, str]:
    """Split after the last slash like Go's ``filepath.Split``; dir keeps its slash."""
    i = path.rfind("/")
    return path[: i + 1], path[i + 1 :]


def convert_k8s_valid_name(name: str) -> str:
    """Map any string to an RFC 1123 label the way Sedna's ``ConvertK8SValidName`` does.

    Lowercase; every run of invalid characters becomes one ``-`` (never a
    leading one); at most 63 characters; a trailing ``-`` becomes ``z``.
    Works on bytes as Go does, so a non-ASCII character counts as invalid
    once per UTF-8 byte (all folded into one dash anyway).
    """
    out = bytearray()
    for c in name.lower().encode():
        if (0x61 <= c <= 0x7A) or (0x30 <= c <= 0x39) or c == 0x2D:
            out.append(c)
        elif out and out[-1] != 0x2D:
            out.append(0x2D)
    del out[63:]
    if out and out[-1] == 0x2D:
        out[-1] = ord("z")
    return out.decode()
