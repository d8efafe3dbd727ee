"""``python -m tether_clr.cli``: the same as the ``tether-clr`` console script."""

from tether_clr.cli import main

main()
