"""The IR: expression nodes (``nodes``), the pymbolic conventions of fused
elementwise expressions (``expr``), the node ``Mapper`` (``mapper``) and DAG
printing (``printing``).  The bottom layer: it imports nothing else of
polyarray, and everything else (frontend, passes, targets) builds on it."""
