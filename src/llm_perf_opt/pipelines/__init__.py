"""Hydra entry points, one per job; each composes stages and stays a few lines long."""
