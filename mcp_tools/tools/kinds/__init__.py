"""Tool kinds: one class per kind of tool, registered by name (``register_kind``), the built-in ones first.

``base`` is the interface (``ToolKind``, ``Plan``), ``registry`` the kinds by name, ``results`` what a run
returned as a call's result, ``builtin`` the kinds this package brings (one module each), ``checks`` the system
checks of saved tools against the kinds.
"""
