"""The policy: which kernel form, with which parameters, each plan group
gets, decided in one table (``rules.py``: ``choose``, ``describe``).

  classify      a group -> its shape class (the facts the rules read)
  device        the device facts (CPU or not, FP64 tensor cores, limits)
  rules         the table: (shape class, device) -> ``Choice``
  candidates    the schedules the tuner times per form

Builders (``forms/``) build what was chosen and decide nothing.  The
numbers the rules read are a ``Thresholds`` value (``codegen/thresholds.py``:
the measured ones), given to ``choose``; ``using_thresholds(**changes)``
lowers under others.
"""
from __future__ import annotations

from .rules import (EPILOGUE_FORMS, RULES, Choice, Form, Rule, choose, describe,
                    reduction_stores_through_epilogue, stores_through_epilogue)
from ..thresholds import Thresholds, current_thresholds, using_thresholds

__all__ = ["Choice", "EPILOGUE_FORMS", "Form", "RULES", "Rule", "Thresholds", "choose",
           "current_thresholds", "describe", "reduction_stores_through_epilogue",
           "stores_through_epilogue", "using_thresholds"]
