#!/usr/bin/env bash
# One command for the whole test suite on a fresh machine: installs what the tests need
# (LibreOffice for the spreadsheet recalculation tests, pdftotext for the printed pages, the package
# with its test extras),
# lints with ruff (configuration in pyproject.toml), then runs pytest. Extra arguments go to
# pytest. Exits non-zero when the lint or any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v soffice >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing LibreOffice Calc (headless recalculation for the workbook tests)..."
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libreoffice-calc >/dev/null
    else
        echo "warning: LibreOffice (soffice) not found and cannot apt-get it here; workbook recalculation tests will fail" >&2
    fi
fi

if ! command -v pdftotext >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing poppler-utils (pdftotext reads the printed workbook pages in tests/test_workbook_pages.py)..."
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends poppler-utils >/dev/null
    else
        echo "warning: pdftotext not found and cannot apt-get it here; tests/test_workbook_pages.py will fail" >&2
    fi
fi

# torch==2.13.0 (the [torch] extra) is a CPU build that lies on this kind of machine's disk; the probe tests need it
python -m pip install -q --disable-pip-version-check -e '.[test,torch]'
python -m ruff check --no-cache .
python -m pytest "$@"
