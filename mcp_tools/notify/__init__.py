"""Changes made anywhere reach every session: the change hub, its events and signals, the change counters."""
