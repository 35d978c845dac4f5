"""DAG -> fused Loopy kernels, and their schedules.

See docs/DESIGN.md for the pipeline.  The lowering passes live in this
package; targets (``targets/``) compile and launch what it produces.
"""
