"""``python -m tonnx`` runs the ``tonnx`` command."""

import sys

from .cli import main

sys.exit(main())
