"""Example tools and scripts for ``tether-clr run`` (see docs/cli.md)."""
