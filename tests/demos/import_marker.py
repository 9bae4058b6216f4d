"""A kernel demo that must never be imported at bake time (test data): importing it writes a marker file beside it
and raises."""

from pathlib import Path

Path(__file__).with_name("IMPORTED_AT_BAKE").write_text("kernel_demo was imported\n")
raise RuntimeError("kernel_demo imported at bake time")


def softmax(x):
    return x.softmax(-1)
