"""``python -m islands`` is ``python -m islands.launch``."""

import sys

from .launch import main

sys.exit(main())
