"""An app of tools whose output or progress misbehaves; installed only by tests.settings_misbehaving."""
