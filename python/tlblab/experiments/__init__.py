"""Experiments: one module per seed (`seed000` ... `seed004`), each function running tlblab for
one reproduction (`python/tlblab/reproductions/<seed>/<id>.toml`) and returning our value for
every row key. See docs/reproductions.md."""
