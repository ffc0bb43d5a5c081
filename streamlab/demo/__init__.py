"""The live demo: one component every module uses (a producer, a real query, controls, Spark UI's charts).

`live.LiveDemo` is the demo, filed by what it does: `settings` (the knobs a query starts with, validated),
`controls` (sliders that act even while a cell runs), `loop` (producer, query, restarts, the polling thread), `state`
(what the loop and the controls share, one `DemoState`) and `charts` (Spark UI's charts, one demo or several on one
axis); `widgets` has the picture and slider helpers the course's interactive cells share.
"""
from streamlab.demo.live import LiveDemo, compare
from streamlab.demo.settings import KnobError, StreamSettings

__all__ = ["KnobError", "LiveDemo", "StreamSettings", "compare"]
