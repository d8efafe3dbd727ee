"""``python -m tether_clr.cli``: the same as the ``tether-clr`` console script."""

from . import main

main()
