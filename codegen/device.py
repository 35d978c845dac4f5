"""The device facts that the policy (``policy.py``) reads.

Today the one fact that changes a default is whether the device is a CPU
(contiguous work per work-item, no local-memory tiles); ``max_work_group``
is the device's limit, checked after lowering (``check_work_groups``)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    cpu: bool = False                   # CPU layouts: contiguous memory per work-item
    max_work_group: tuple | None = None     # (work-items per group, (per axis 0, 1, 2))
