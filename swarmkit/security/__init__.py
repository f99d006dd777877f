"""Certificates, the cluster's client security settings, and the key material kept beside the inventory."""
