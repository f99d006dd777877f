"""A real server group on this machine (namespaces, dockerd, bridge, registry), beside the pipeline, not in it."""
