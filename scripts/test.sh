#!/usr/bin/env bash
# One command for the whole test suite on a fresh machine: installs what the tests need
# (LibreOffice for the spreadsheet recalculation tests, pdftotext for the printed pages, the package
# with its test extras),
# lints with ruff (configuration in pyproject.toml), then runs pytest. Extra arguments go to
# pytest. Exits non-zero when the lint or any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

# need COMMAND PACKAGE WHY: apt-get PACKAGE when COMMAND is missing (as root with apt-get), else warn
need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing $2 ($3)..."
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null
    else
        echo "warning: $1 not found and cannot apt-get $2 here; $3 will fail" >&2
    fi
}
need soffice libreoffice-calc "the workbook recalculation tests"
need pdftotext poppler-utils "tests/test_workbook_pages.py (the printed workbook pages)"

# torch==2.13.0 (the [torch] extra) is a CPU build that lies on this kind of machine's disk; the probe tests need it
python -m pip install -q --disable-pip-version-check -e '.[test,torch]'
python -m ruff check --no-cache .
python -m pytest "$@"
