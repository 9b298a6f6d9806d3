"""Rule implementations, one module per family; importing this package registers them all.

Modules are discovered, not listed, so adding a rule module touches no other file here.
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
