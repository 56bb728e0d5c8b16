"""Who may call what: authentication (tokens, DRF classes), permissions, scopes, rate limits, audit."""
