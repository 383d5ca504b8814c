"""Analyses over the statement model: def/use semantics, CFG, liveness, region exits,
mma phases, value provenance, lane addresses, occupancy."""
