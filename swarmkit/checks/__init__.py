"""What reads a running cluster without changing it: verify, diagnose, health and status."""
