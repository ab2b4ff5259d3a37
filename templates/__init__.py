"""Scenario presets (TOML) and an example interruption log; each file names its source.

Load a preset with ``ckptplan.files.load_scenario(NAME)``; list them with ``ckptplan.files.list_templates()``.
"""
