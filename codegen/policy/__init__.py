"""The policy: which kernel form, with which parameters, each plan group
gets, decided in one table (``rules.py``: ``choose``, ``describe``).

  classify      a group -> its shape class (the facts the rules read)
  device        the device facts (CPU or not, FP64 tensor cores, limits)
  rules         the table: (shape class, device) -> ``Choice``
  candidates    the schedules the tuner times per form

Builders (``forms/``) build what was chosen and decide nothing.  The
numbers the rules read are ``codegen/thresholds.py``'s, re-exported here.
"""
from __future__ import annotations

from .rules import (EPILOGUE_FORMS, RULES, Choice, Form, Rule, choose, describe,  # noqa: F401
                    reduction_stores_through_epilogue, stores_through_epilogue)
from ..thresholds import *  # noqa: F401,F403  (the measured numbers; see there)
