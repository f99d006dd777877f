"""Offline image recipes (probe, tansu, kafka), the shared Maven cache they and Spark draw on, and shipping images to hosts."""
