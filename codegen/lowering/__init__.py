"""Nodes to loopy expressions and instructions, one kernel at a time
(``builder.KernelBuilder``): flat buffers, linearized indices, inlined
nodes substituted, shared values in temporaries.  The forms build their
kernels with it, and the plan's row fusion probes reads with it.
"""
