"""The engines behind the built-in tool kinds: ``queries`` (model queries, search and fetch) and ``api`` (DRF
actions), ``admin_actions`` (the site's ModelAdmin actions). Each kind in ``tools.kinds`` binds one to a tool."""
