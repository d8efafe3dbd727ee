"""Example tools and scripts for ``tether-clr run`` (see README, "The tether-clr command")."""
