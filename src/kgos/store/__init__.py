"""Storage layer: the SQLite system of record (native and foreign KGs, import/export, validation)."""
