"""What durability costs: durable-agui against the in-process ``ag_ui_strands`` endpoint,
and against the floor, the least a durable turn on Temporal can cost.

``python -m bench`` starts both systems on loopback (our Temporal dev server, worker and API
as separate processes; the baseline FastAPI app built with ``ag_ui_strands`` in its own
uvicorn process) and the floor (``bench.floor``: one workflow update that runs one empty
activity, on our dev server, with our worker's options and client, its worker in a process
of its own), drives the same scenarios against each, alternating A B C A B C (the floor in
``round_trip``, ``zero_latency`` and ``concurrent``, two floor turns per round trip), and
prints a table of medians, p95 and ratios (ours / baseline, ours / floor), also written as
JSON.

Both systems run the ``demo`` agent (same tools, same system prompt) on the same offline
model with the same latency: first chunk after 200 ms, then one chunk every 10 ms. The
offline model streams its reply word by word, so the bench controls a turn's chunk count
through the text the model is given (see ``bench.client``):

- a round trip's final answer is ``confirm_booking -> success: <content>``; a tool result
  of 18 words makes it 21 chunks (the first, then 20 chunks 10 ms apart);
- a long answer of N chunks is the echo of a user text of N - 1 words (``echo: w0001 ...``).

Modules: ``services`` (starting and stopping the processes), ``client`` (AG-UI over SSE),
``scenarios`` (what is measured), ``report`` (statistics, table, JSON), ``cli`` (the entry
point), ``baseline_app`` (the baseline), ``floor`` (the floor's workflow, worker and
client), ``profiling`` (py-spy around a scenario).
"""
