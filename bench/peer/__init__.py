"""The peer people would pick instead: LangGraph's Agent Server on its in-memory runtime.

``python -m bench.peer --venv .venv-langgraph`` starts ``langgraph dev`` (``langgraph-cli
[inmem]``, installed in a venv of its own so its dependencies stay out of ours) on loopback
and drives the same frontend-tool round trip as ``python -m bench`` over its HTTP API: a
scripted model (``graph.py``, no LLM) calls ``confirm_booking``, the graph stops on
``interrupt(...)``, a second run resumes it with ``Command(resume=<content>)`` and the final
text must be ``confirm_booking -> success: <content>``. Measured (``measure``):

- sequential round trips on fresh threads: wall time (median, p95) and the CPU of the
  server's process tree per round trip (``/proc/<pid>/stat``);
- closed loops: N clients each repeating round trips on fresh threads for S seconds,
  completed round trips per second, median and p95 wall time, CPU per round trip;
- a crash: a thread parked on its interrupt, ``kill -9`` of the server's process group,
  a restart in the same working directory, then the resume.

**The queue's poll.** When the in-memory runtime's queue found no pending run on its last
look, it sleeps 0.5 s before the next one (``asyncio.sleep(0.5)`` in
``langgraph_runtime_inmem/ops.py: Runs.next``, a constant: no flag or environment variable
changes it) and then takes only runs created before that sleep began. A run sent to an idle
queue waits 0.5 to 1 s, in practice 1 s (a client sends its next run just as the queue
starts a sleep), so a sequential round trip of two runs takes about 2 s. A busy queue that
runs one job at a time (``langgraph dev``'s default) takes the next run at once; with more
jobs at once (``--n-jobs-per-worker``) it starts every pending run, finds none, and sleeps
again, so under load each run waits for the poll once more.

**Its cost grows with what it holds.** Looking for work, creating a run and ending one
scan lists of every run and thread the server holds (``ops.py``: ``conn.store["runs"]``),
and none is dropped without a TTL or a delete, so CPU per round trip rises with the threads
held; the table gives each closed loop's count at its start.

**The in-memory runtime keeps nothing durable.** Runs, threads and checkpoints live in the
server process's memory; a dev-only flush pickles them to ``.langgraph_api/`` every 10 s
(no fsync), so a crash loses whatever happened since the last flush, and a parked thread
survives a ``kill -9`` only if a flush came between the park and the kill. LangGraph's
durable runtimes (PostgreSQL and Redis, ``langgraph up`` or LangSmith Deployment) are not
what is measured here.

Not in CI (it needs the separate venv). Modules: ``graph`` (the peer's agent, loaded by the
peer), ``server`` (``langgraph dev`` as a child process), ``client`` (the round trip over
HTTP), ``measure`` (what is measured), ``cli`` (the entry point).
"""
