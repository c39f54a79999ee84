"""The ``make chaos`` campaign: faults injected into a real broker, with acked-key accounting.

Not part of ``make test`` (it runs for many minutes). ``python -m chaos`` runs every phase:

- :mod:`chaos.selfcheck`: the power-loss layer (:mod:`chaos.powerloss_fs`, a FUSE file system
  that drops every write not yet made durable by fsync/fdatasync/msync) drops what it must;
- :mod:`chaos.cycles`: kill -9 cycles and power-loss cycles of a broker process under load,
  SYNC_FLUSH and ASYNC_FLUSH, with acked-key accounting (:mod:`chaos.load`);
- :mod:`chaos.memory`: broker memory per idle connection and per stalled partial frame;

and :mod:`chaos.report` writes ``target/chaos/report.json`` and ``target/chaos/report.md``.
The figures of a run made on the project's machine are quoted in ``RELIABILITY.md``.
"""
