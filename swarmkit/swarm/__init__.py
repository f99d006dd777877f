"""The swarm itself: init, join and node labels (bootstrap), and each broker node's identity."""
