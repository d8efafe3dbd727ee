"""The catalog control plane's shared stores: :class:`~tether_clr.PostgresCatalogControl` and
:class:`~tether_clr.SqliteCatalogControl` (re-exported from ``tether_clr``).

They implement the catalog's :class:`~tether_clr.CatalogControl` protocol
(``tether_clr.catalog.control``); ``registry.attach_control`` follows one. This
package sits above recording (it reuses its SQLite helpers) and below the
front door; nothing in the catalog or the executor imports it.
"""
