# triton-observability's own services (`triton-obs watch`, the triage app): one image, built
# from this repository (`docker compose build`). Slim, pinned base; runs as a non-root user.
FROM python:3.11.10-slim-bookworm

WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY observability ./observability
COPY collectors ./collectors
COPY dashboards ./dashboards
RUN pip install --no-cache-dir '.[app]' \
    && useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin obs \
    && mkdir -p /data && chown obs /data

USER 10001
WORKDIR /data
ENTRYPOINT ["triton-obs"]
