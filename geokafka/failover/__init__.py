"""Moving applications between sites: failover, promote and failback of a flow.

Above the pipeline: a failback starts the reverse flow, and a failover fences the flow's writers.
"""
