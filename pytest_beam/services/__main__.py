"""``python -m pytest_beam.services [--print]``: resolve (once) and cache the Neo4j class path."""

from .local_install import main

raise SystemExit(main())
