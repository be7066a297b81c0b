"""`libpypto.pro.language` names the same module as `libpypto.pro` (as pypto_pro.language
is Pro's own spelling): `import libpypto.pro.language as pl` works."""
import sys

from .. import pro as _pro

sys.modules[__name__] = _pro
