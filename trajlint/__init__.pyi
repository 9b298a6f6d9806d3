from trajlint.api import BuiltRow as BuiltRow
from trajlint.api import Finding as Finding
from trajlint.api import Location as Location
from trajlint.api import Report as Report
from trajlint.api import Rollout as Rollout
from trajlint.api import Rule as Rule
from trajlint.api import SettingsError as SettingsError
from trajlint.api import build_row as build_row
from trajlint.api import check_paths as check_paths
from trajlint.api import check_rows as check_rows
from trajlint.api import rules as rules

__version__: str
__all__: list[str]
