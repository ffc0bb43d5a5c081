"""A workshop on one shared hub: JupyterHub serving the course to a room, each learner kept apart on a shared Kafka.

`kafka` runs the room's broker (SCRAM, ACLs, quotas) and provisions learners; `hub` is JupyterHub's configuration
and the spawner that gives each learner a home, limits and credentials; `activity` keeps the idle culler away
from a server whose kernel is busy; `instructor` collects, grades and exports. `python -m workshop`
is the instructor's command line; docs/workshop.md is the guide.
"""
