"""Subcommands of the `tlblab` CLI, one module each (see `tlblab.cli`)."""
