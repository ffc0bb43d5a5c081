"""The live demo: one component every module uses (a producer, a real query, controls, Spark UI's charts).

`live.LiveDemo` is the demo; `widgets` has the picture and slider helpers the course's interactive cells share.
"""
from streamlab.demo.live import LiveDemo, compare

__all__ = ["LiveDemo", "compare"]
