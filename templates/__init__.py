"""Scenario presets (TOML). Load them with ``engine.load_scenario(NAME)``; list with ``engine.list_templates()``."""
