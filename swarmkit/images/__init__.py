"""Offline image recipes (probe, tansu, kafka) and the shared Maven cache they and Spark draw on."""
