"""Timed work of the broker's control plane: when to delete expired store files
(:mod:`~rmq.scheduling.retention`) and when to deliver delayed messages
(:mod:`~rmq.scheduling.delay`); transaction check-backs land here later."""
