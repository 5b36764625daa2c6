"""What a reading shows for a value NVML (or nvidia-smi) could not give.

Its own module so that the GPU panel and its formatting draw the first frame without the
GPU models (pydantic classes) loaded: those come with the first sample (issue 42)."""

NA = "N/A"
