"""``python -m islands`` is ``python -m islands.launch``."""

import sys

from islands.launch import main

sys.exit(main())
