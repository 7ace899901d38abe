"""``mtserve bench``: load generation and reports for mtserve and its baselines.

The layers mirror the rest of mtserve: ``workloads`` makes the inputs,
``targets`` are the things under test (a server over HTTP, the raw engine in
process, the naive one-at-a-time baseline, transformers ``generate``),
``load`` drives them (closed-loop sweeps, open-loop arrivals, the fairness
scenario), ``stats`` turns outcomes into figures, ``process`` samples the
server's CPU and memory, and ``report`` writes JSON, a table and a plot.
``cli`` wires them into the ``mtserve bench`` command.
"""
