"""Benchmarks for `tlblab bench`, one module each (NAME, run(quick) -> dict)."""
