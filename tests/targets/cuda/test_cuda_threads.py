"""Which thread pushes and pops the CUDA context (targets/cuda/driver.py),
with a stand-in for pycuda's per-thread context stacks, so that it runs
without a GPU (tests/targets/test_interop.py runs the real thing on one).

pycuda aborts the process when a thread ends with a context on its stack,
and ``pycuda.autoprimaryctx`` pushes the primary context on whichever
thread imports it (a dask worker's task thread) and pops it at exit from
the main thread."""
import sys
import threading
import types

import pytest

from polyarray.targets.cuda import driver as cuda_driver


class _Stacks:
    """pycuda's per-thread context stacks, and what ended non-empty."""

    def __init__(self):
        self.by_thread = {}     # by OS thread (C++ thread-local storage in pycuda: it
        self.log = []           # outlives the thread's Python locals)

    def stack(self):
        return self.by_thread.setdefault(threading.get_ident(), [])


def _fake_pycuda(monkeypatch, stacks):
    context = types.SimpleNamespace()

    def push():
        stacks.stack().append(context)

    def pop():
        s = stacks.stack()
        if not s:
            raise RuntimeError("cannot pop non-current context")
        s.pop()
        stacks.log.append(("pop", threading.get_ident()))

    context.push, context.pop = push, pop
    drv = types.ModuleType("pycuda.driver")
    drv.init = lambda: None
    drv.Device = types.SimpleNamespace(count=lambda: 1)
    drv.Context = types.SimpleNamespace(
        get_current=lambda: (stacks.stack() or [None])[-1], get_device=lambda: "device")
    pkg = types.ModuleType("pycuda")
    pkg.__path__ = []
    pkg.driver = drv
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    registered = []
    monkeypatch.setattr("atexit.register", registered.append)
    monkeypatch.setattr("atexit.unregister", lambda f: registered.remove(f))

    class Finder:           # ``import pycuda.autoprimaryctx``: pushes in the importing thread
        def find_spec(self, name, path=None, target=None):
            if name != "pycuda.autoprimaryctx":
                return None
            import importlib.machinery
            return importlib.machinery.ModuleSpec(name, self)

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            module.context = context
            push()
            module._finish_up = lambda: context.pop()
            registered.append(module._finish_up)
            stacks.log.append(("import", threading.get_ident()))

    monkeypatch.setattr(sys, "meta_path", [Finder()] + sys.meta_path)
    monkeypatch.delitem(sys.modules, "pycuda.autoprimaryctx", raising=False)
    monkeypatch.setattr(cuda_driver, "STATE", {})
    monkeypatch.setattr(cuda_driver, "_THREAD", threading.local())
    return context, registered


def _in_thread(fn, name):
    t = threading.Thread(target=fn, name=name)
    t.start()
    t.join()


@pytest.mark.parametrize("first", ["worker", "main"])
def test_every_thread_leaves_its_context_stack_as_it_found_it(monkeypatch, first):
    stacks = _Stacks()
    context, registered = _fake_pycuda(monkeypatch, stacks)
    ended = {}

    idents = {"MainThread": threading.get_ident()}

    def work(name):
        def run():
            idents[name] = threading.get_ident()
            cuda_driver.driver()
            cuda_driver.in_this_thread()
            assert stacks.stack() == [context]          # current here
            stacks.log.append(("ran", name))
            ended[name] = stacks.stack()        # this thread's list, read after it ends
        return run

    if first == "main":
        cuda_driver.driver()            # autoprimaryctx imported (and pushed) here
    _in_thread(work("worker"), "worker")
    _in_thread(work("second"), "second")
    assert ended["worker"] == [] and ended["second"] == []     # popped as each ended
    assert ("import", idents["worker" if first == "worker" else "MainThread"]) in stacks.log
    cuda_driver.in_this_thread()        # the main thread (again, or for the first time)
    assert stacks.stack() == [context]
    for f in list(reversed(registered)):     # exit: atexit runs last registered first
        f()
    assert stacks.stack() == []                 # nothing left for pycuda's cleanup
    pops = [who for what, who in stacks.log if what == "pop"]
    assert sorted(pops) == sorted(idents[k] for k in ("MainThread", "second", "worker")), \
        stacks.log
