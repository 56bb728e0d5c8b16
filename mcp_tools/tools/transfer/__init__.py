"""Tools and their grants as a versioned file: export, parse and check its shape, diff and import it."""
