"""Timed work of the broker's control plane: when to delete expired store files (today); delay
levels and transaction check-backs land here later."""
