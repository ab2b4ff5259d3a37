"""ckptplan command-line front end (see ckptplan.cli)."""

__all__ = []
