"""pytest-beam: every BEAM probing question as a pytest test."""
__version__ = "0.1.0"
