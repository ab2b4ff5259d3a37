"""ckptplan.files: the one I/O layer. Every file format the tools read or write lives here
(scenario TOML and tables, results, interruption logs), apart from the models (``ckptplan.engine``)
and from the Excel workbook generator (``ckptplan.workbook``). Writes are atomic and never replace a
user's file without ``force``; untrusted packages are checked before any parser sees them.
"""

from .atomic import OutputExistsError, atomic_write, atomic_write_text
from .plans import PlanFile, load_plan
from .scenarios import TEMPLATE_DIR, list_templates, load_scenario, template_path
from .untrusted import check_xlsx_package

__all__ = ["OutputExistsError", "PlanFile", "TEMPLATE_DIR", "atomic_write", "atomic_write_text", "check_xlsx_package",
           "list_templates", "load_plan", "load_scenario", "template_path"]
