"""Which chunks moved between workers, and how many bytes: ``pa.dask.moves``.

On a ``distributed`` cluster a task runs where the scheduler puts it, and a
chunk it reads that another worker holds is copied over first.  Those
copies decide whether a second GPU helps (a device chunk goes through the
host on its way: pickled as its host copy, uploaded again by the receiver).
Each worker logs the copies it received (``Worker.transfer_incoming_log``:
the keys, their sizes as dask's ``sizeof`` gives them, the sender, the
time); ``moves(client)`` gathers those logs into one table.  The placement
is the scheduler's, made while the graph runs, so the table is of a run
that happened, not a forecast."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Move:
    """One chunk copied from worker ``source`` to worker ``destination``."""
    key: str                # the dask key, as text
    source: str             # worker addresses
    destination: str
    nbytes: int             # as dask's sizeof says (device chunks: their bytes)
    seconds: float          # the transfer it came in (shared by the keys sent together)


class Moves(tuple):
    """The moves of a run, oldest first (a tuple of ``Move``), printed as a
    table of the bytes between each pair of workers and the chunks moved."""

    @property
    def total_bytes(self) -> int:
        return sum(m.nbytes for m in self)

    def by_pair(self) -> dict:
        """{(source, destination): (chunks, bytes)}."""
        out = {}
        for m in self:
            chunks, nbytes = out.get((m.source, m.destination), (0, 0))
            out[(m.source, m.destination)] = (chunks + 1, nbytes + m.nbytes)
        return out

    def __str__(self):
        if not self:
            return "no chunk moved between workers"
        lines = [f"{len(self)} chunks moved between workers, {_size(self.total_bytes)}:"]
        for (src, dst), (chunks, nbytes) in sorted(self.by_pair().items()):
            lines.append(f"  {src} -> {dst}: {chunks} chunks, {_size(nbytes)}")
        lines.append("chunks:")
        lines += [f"  {m.key}  {m.source} -> {m.destination}  {_size(m.nbytes)}" for m in self]
        return "\n".join(lines)

    __repr__ = __str__


def _size(n) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _incoming(dask_worker, reset=False):
    """A worker's received transfers (``client.run`` calls it there)."""
    log = list(dask_worker.transfer_incoming_log)
    if reset:
        dask_worker.transfer_incoming_log.clear()
    return [(entry["start"], entry["who"], entry["duration"],
             [(str(k), int(n)) for k, n in entry["keys"].items()]) for entry in log]


def moves(client=None, reset=False) -> Moves:
    """The chunks that workers of ``client``'s cluster (default: the current
    client) copied from one another since the cluster started, or since the
    last ``reset=True`` (which empties the workers' logs after reading).
    Each worker keeps its latest transfers (``distributed``'s
    ``transfer_incoming_log``, 100000 by default)."""
    if client is None:
        from distributed import get_client
        client = get_client()
    logs = client.run(_incoming, reset=reset)
    found = []
    for destination, entries in logs.items():
        for start, source, seconds, keys in entries:
            found += [(start, Move(key, source, destination, nbytes, seconds))
                      for key, nbytes in keys]
    found.sort(key=lambda pair: pair[0])
    return Moves(m for _, m in found)
