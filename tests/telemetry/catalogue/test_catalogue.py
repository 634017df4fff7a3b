"""The zh-hans catalogue is complete and its compiled form matches the source."""

from __future__ import annotations

import gettext
from pathlib import Path

LOCALE = Path(__file__).resolve().parents[3] / "locale" / "zh_Hans" / "LC_MESSAGES"


def po_entries() -> list[tuple[str, str]]:
    """``(msgid, msgstr)`` pairs of the .po file (obsolete entries and the header left out).

    A message with a context (``pgettext``) is keyed as gettext compiles it:
    ``context + "\x04" + msgid``.
    """
    entries = []
    for block in (LOCALE / "django.po").read_text().split("\n\n"):
        lines = [ln for ln in block.splitlines() if not ln.startswith("#")]
        if not lines or not any(ln.startswith("msgid ") for ln in lines):
            continue
        fields: dict[str, str] = {}
        current = None
        for line in lines:
            if line.startswith(("msgctxt ", "msgid ", "msgid_plural ", "msgstr ", "msgstr[0] ")):
                current, _, rest = line.partition(" ")
                fields[current] = rest.strip()[1:-1]
            elif line.startswith('"') and current:
                fields[current] += line.strip()[1:-1]
        msgid = fields.get("msgid", "")
        if msgid and "msgctxt" in fields:
            msgid = fields["msgctxt"] + "\x04" + msgid
        if msgid:
            entries.append((msgid, fields.get("msgstr", fields.get("msgstr[0]", ""))))
    return entries


def test_every_message_has_a_chinese_translation():
    missing = [msgid for msgid, msgstr in po_entries() if not msgstr]
    assert missing == [], f"{len(missing)} untranslated, e.g. {missing[:3]}"


def test_no_translation_is_left_fuzzy():
    # gettext ignores fuzzy entries: a fuzzy msgstr shows English (or a wrong guess) on pages.
    blocks = (LOCALE / "django.po").read_text().split("\n\n")[1:]  # the header is fuzzy
    fuzzy = [b.split("msgid ", 1)[-1][:60] for b in blocks if "#, fuzzy" in b]
    assert fuzzy == [], f"{len(fuzzy)} fuzzy, e.g. {fuzzy[:3]}"


def test_the_compiled_catalogue_is_up_to_date_with_the_source():
    with open(LOCALE / "django.mo", "rb") as fh:
        compiled = gettext.GNUTranslations(fh)
    entries = po_entries()
    # Plural entries are stored with a (msgid, index) key; compare the singular ids only.
    singular_ids = {key if isinstance(key, str) else key[0] for key in compiled._catalog}
    stale = [
        msgid
        for msgid, _ in entries
        if msgid.replace('\\"', '"').replace("\\n", "\n") not in singular_ids
    ]
    assert stale == [], f"run `make messages`: {len(stale)} entries not compiled, e.g. {stale[:3]}"
