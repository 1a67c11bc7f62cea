# durable-agui: one image for the API and the worker (the command picks the process).
FROM python:3.11.11-slim-bookworm

WORKDIR /app
COPY pyproject.toml README.md ./
COPY durable_agui ./durable_agui

# The README's install step, in the same venv layout.
RUN python3 -m venv .venv && .venv/bin/pip install -e .

ENV PATH="/app/.venv/bin:${PATH}" \
    DURABLE_AGUI_API_HOST=0.0.0.0 \
    DURABLE_AGUI_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8000
CMD ["durable-agui", "api"]
