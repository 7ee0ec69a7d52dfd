//! Deterministic simulation harness for the retention worker (filled by the simulation-world issue).
