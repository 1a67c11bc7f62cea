"""One router per resource: ``agents`` (AG-UI runs) and ``threads``."""
