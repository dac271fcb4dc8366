"""Evaluation kit: probe sets, ranking metrics, runs, ablations."""
