"""The stack file: listener model, topic specs, rendering, and one module per broker engine."""
