"""``python -m tonnx`` runs the ``tonnx`` command."""

import sys

from tonnx.cli import main

sys.exit(main())
