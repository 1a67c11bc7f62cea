// A run's events as @ag-ui/client 1.x's HttpAgent takes them: checked by its own verifier
// (verifyEvents), then applied to the transcript the client sent (defaultApplyEvents).
// Standard input: {"messages": [...], "events": [...]}. Standard output: the transcript the
// client holds afterwards (JSON). Exit 1 with the verifier's error when it refuses an event.
import { defaultApplyEvents, verifyEvents } from "@ag-ui/client";
import { from, lastValueFrom, toArray } from "rxjs";

let text = "";
for await (const chunk of process.stdin) text += chunk;
const { messages, events } = JSON.parse(text);
const input = { threadId: "t", runId: "r", messages, state: {}, tools: [], context: [], forwardedProps: {} };
try {
  const verified = verifyEvents(false)(from(events));
  const changes = await lastValueFrom(defaultApplyEvents(input, verified, { messages }, []).pipe(toArray()));
  const held = changes.filter((change) => change.messages !== undefined).at(-1)?.messages;
  process.stdout.write(JSON.stringify(held ?? messages));
} catch (error) {
  console.error(error.message);
  process.exit(1);
}
