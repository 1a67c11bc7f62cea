"""The bottom layer every room may import: the typed contract, settings, the Temporal
connection and data converter, the payload codec, and reads of a thread's event stream.
Nothing here imports the rest of ``durable_agui``."""
