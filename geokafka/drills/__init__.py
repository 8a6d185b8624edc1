"""DR drills that really kill a data center: the connected-clusters drill and demo, and stretch drills."""
