"""Reading files a user hands us, treated as untrusted: refuse hostile packages before any parser sees them."""

from __future__ import annotations

import zipfile
from pathlib import Path

from ..engine.errors import InputError

__all__ = ["check_xlsx_package"]


def check_xlsx_package(path: str | Path, field: str, max_bytes: int, advice: str = "") -> None:
    """Refuse an untrusted .xlsx before any XML parser sees it.

    * not a zip package -> not a readable workbook;
    * more than ``max_bytes`` once unpacked -> a zip bomb (``advice`` is appended to the message);
    * any ``<!DOCTYPE`` or ``<!ENTITY`` in an XML part -> refused: Office Open XML never carries a
      DTD, and openpyxl parses some parts with lxml (entities left unresolved) and others with
      defusedxml, so this one check covers entity-expansion and external-entity attacks in every part.

    Raises :class:`InputError` naming ``field``, the path and the rule.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.infolist()
            total = sum(m.file_size for m in members)
            if total > max_bytes:
                raise InputError(field, str(path), f"unpacks to {total:,} bytes (limit {max_bytes:,}): refusing it{advice}")
            for m in members:
                if m.filename.endswith((".xml", ".rels", ".vml")):
                    with zf.open(m) as fh:
                        head = fh.read(65536)
                    if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
                        raise InputError(field, str(path), f"was refused as unsafe XML ({m.filename} declares a "
                                         "DTD or entities, which a workbook never needs)")
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(field, str(path), f"is not a readable .xlsx file: not an .xlsx workbook package ({exc})") from None
