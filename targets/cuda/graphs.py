"""CUDA graphs: many calls of one program (``prog.repeat``), and one call
of a program of many launches replayed (``Replay``).

A training step is a few small kernels; launched one by one from Python it
costs microseconds of host time each, more than the kernels themselves.
``run_repeated`` captures ``K`` consecutive steps into one CUDA graph (the
stream-capture API, through NVIDIA's ``cuda.bindings.driver``: pycuda builds
without graph support) and replays it ``n // K`` times, so the host does one
launch per ``K`` steps.  pycuda's launches are captured on pycuda's stream,
in pycuda's context (the primary one, current in this thread: the same
handle the bindings see).  Without cuda-bindings a graph is an ImportError
naming the package: ``prog.repeat`` raises it, and ``Replay`` launches one
by one, with a warning.

The carried values (shared variables) ping-pong between two buffers each:
step ``s`` reads set ``s % 2`` and writes the other, so no kernel ever reads
a buffer that its own step writes, and ``K`` is even so that every replay
starts from the same set.  Everything a step needs is allocated before the
capture; the captured kernels take fixed pointers.
"""
from __future__ import annotations

import threading

from ..device_common import allocation_bytes, host_array
from ..foreign import CudaView, checked, driver_api

_NON_BLOCKING = 1           # CU_STREAM_NON_BLOCKING (pycuda's Stream flags)
_LEGACY = 1                 # CU_STREAM_LEGACY: pycuda's stream 0, whatever the bindings' mode
STEPS_PER_GRAPH = 64        # even; a graph of 64 steps instantiates in ~1 ms
# A program of at least REPLAY_MIN_LAUNCHES launches whose buffers (inputs,
# temporaries, outputs) take at most REPLAY_MAX_BYTES is replayed as a graph
# (``Replay``, made at the program's first call).  Launched one by one,
# NPBench's nbody at preset L (6311 small kernels a call) took 72 ms on an
# H200, 11 us a launch; replayed, 26 ms
REPLAY_MIN_LAUNCHES = 64
REPLAY_MAX_BYTES = 256 << 20


class Graph:
    """An instantiated CUDA graph of the launches ``record(stream)`` makes;
    ``launch_on``: the driver's handle of the stream it is launched on (the
    capture's by default; ``CU_STREAM_LEGACY``, the legacy default stream,
    orders it after pycuda's synchronous copies)."""

    def __init__(self, stream, record, launch_on=None):
        cu = self._cu = driver_api()
        h = cu.CUstream(stream.handle)
        checked(cu.cuStreamBeginCapture(
            h, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture")
        try:
            record(stream)
        finally:
            graph = checked(cu.cuStreamEndCapture(h), "cuStreamEndCapture")
        try:
            self.exe = checked(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        finally:
            cu.cuGraphDestroy(graph)
        self._stream = h if launch_on is None else cu.CUstream(launch_on)

    def launch(self):
        checked(self._cu.cuGraphLaunch(self.exe, self._stream), "cuGraphLaunch")

    def __del__(self):
        exe = getattr(self, "exe", None)
        if exe is not None:
            try:
                self._cu.cuGraphExecDestroy(exe)
            except Exception:       # noqa: BLE001  (interpreter shutdown: nothing to undo)
                pass


def run_repeated(exe, bindings, n, carry):
    """``n`` calls of the CUDA executable ``exe`` in which, for each
    ``(k, name)`` of ``carry``, output ``k`` of a call is placeholder
    ``name``'s value in the next; other bindings are the same in every call.
    Returns the last call's outputs as device arrays (a carried output's
    array is its final value).  Waits for the device."""
    drv = exe._drv
    live = []
    bufs = exe.buffers(bindings, live)
    outs = exe._outs
    in_buf = dict(exe._inputs)
    carry = [(k, pname) for k, pname in carry if pname in in_buf]
    # per carried value: the two buffers it alternates between; set 0 starts
    # as a copy of the binding (the variable keeps its own buffer untouched)
    pairs = []
    for k, pname in carry:
        name, nbytes = outs[k][0], outs[k][5]
        first = exe._alloc(max(nbytes, 1), live)
        second = bufs[name] if not outs[k][4] else exe._alloc(max(nbytes, 1), live)
        pairs.append((in_buf[pname], name, outs[k][4], nbytes, (first, second)))
    # outputs returned as copies get their own buffers, written every step
    carried = {k for k, _ in carry}
    copies = {k: exe._alloc(max(o[5], 1), live) for k, o in enumerate(outs)
              if o[4] and k not in carried}
    stream = drv.Stream(flags=_NON_BLOCKING)
    drv.Context.synchronize()           # uploads and pool fills, on the legacy stream
    for bname, oname, copied, nbytes, (first, second) in pairs:
        if nbytes:
            drv.memcpy_dtod_async(first, int(bufs[bname]), nbytes, stream)
    pack = exe._pack_args

    def step(parity, stream):
        for bname, oname, copied, nbytes, sets in pairs:
            bufs[bname] = sets[parity]
            if not copied:
                bufs[oname] = sets[1 - parity]
        for launch, fmt, args, grid, block in exe._launches:
            if grid is None:        # a library step, on this stream
                launch(bufs, stream)
                continue
            launch(grid, block, pack(fmt, *[bufs[a] for a in args]), 0, stream)
        for bname, oname, copied, nbytes, sets in pairs:
            if copied and nbytes:       # the new value is an input: copied
                drv.memcpy_dtod_async(sets[1 - parity], int(bufs[oname]), nbytes, stream)
        for k, buf in copies.items():
            if outs[k][5]:
                drv.memcpy_dtod_async(buf, int(bufs[outs[k][0]]), outs[k][5], stream)

    per_graph, done = STEPS_PER_GRAPH, 0
    if n >= per_graph:
        graph = Graph(stream, lambda s: [step(i % 2, s) for i in range(per_graph)])
        for _ in range(n // per_graph):
            graph.launch()
        done = n - n % per_graph
    for i in range(done, n):
        step(i % 2, stream)
    stream.synchronize()
    final = {k: pair[4][n % 2] for (k, _), pair in zip(carry, pairs)}
    results = [exe.wrap(final.get(k, copies.get(k, bufs[o[0]])), o[6])
               for k, o in enumerate(outs)]
    if exe._checks:
        exe.read_flags(waited=True)
    return results


class Replay:
    """The launches of one CUDA program captured once as a graph, replayed
    at each call: a program of hundreds of small kernels (a time loop's
    steps) costs a few microseconds of host time per launch, more than the
    kernels; a graph is one host launch (``REPLAY_MIN_LAUNCHES``).

    A graph's kernels take fixed pointers, so the program's buffers are
    held from call to call (at most ``REPLAY_MAX_BYTES`` of them):
    each call copies its inputs into the held ones, replays, and copies the
    outputs out (device results get buffers of their own: a later call
    overwrites the held ones).  Only the thread that captured it replays a
    graph (another thread, a dask worker's, launches as usual)."""

    def __init__(self, exe):
        driver_api()            # no cuda-bindings: an ImportError before anything is held
        drv = exe._drv
        self.thread = threading.get_ident()
        buffers = exe.lowered.buffers
        self.held = {}
        for pname, bname in exe._inputs:
            self.held[bname] = exe._alloc(allocation_bytes(buffers[bname]), [])
        for name, nbytes in exe._allocs:
            self.held[name] = exe._alloc(nbytes, [])
        self.inputs = [(pname, bname, self.held[bname],
                        buffers[bname].size * buffers[bname].storage.itemsize)
                       for pname, bname in exe._inputs]
        bufs = dict(exe._fixed)
        bufs.update(self.held)
        pack = exe._pack_args

        def record(stream):
            for launch, fmt, args, grid, block in exe._launches:
                if grid is None:    # a library step, on this stream
                    launch(bufs, stream)
                    continue
                launch(grid, block, pack(fmt, *[bufs[a] for a in args]), 0, stream)

        drv.Context.synchronize()
        self.graph = Graph(drv.Stream(flags=_NON_BLOCKING), record, launch_on=_LEGACY)
        self.bufs = bufs

    def run(self, exe, bindings):
        """Copy the inputs in and replay; the buffer of each output (held:
        read or copied before the next call)."""
        if threading.get_ident() != self.thread:
            return None
        drv, gpuarray = exe._drv, exe._gpuarray
        for pname, bname, dst, nbytes in self.inputs:
            v = bindings[pname]
            if isinstance(v, gpuarray):
                if nbytes:
                    drv.memcpy_dtod_async(dst, v.gpudata, nbytes)
            elif type(v) is CudaView:
                if not v.c_contiguous:
                    return None
                if nbytes:
                    drv.memcpy_dtod_async(dst, v.ptr, nbytes)
            else:
                arr = host_array(v)
                if nbytes:
                    drv.memcpy_htod(dst, arr)
        self.graph.launch()
        return self.bufs


__all__ = ["Graph", "Replay", "run_repeated", "STEPS_PER_GRAPH", "REPLAY_MIN_LAUNCHES",
           "REPLAY_MAX_BYTES"]
