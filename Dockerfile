# syntax=docker/dockerfile:1
# lore: one static binary on a distroless base.
#   docker build -t lore .
#   docker run --rm -v lore-data:/data -p 4222:4222 -e LORE_NATS_TOKEN="$(openssl rand -hex 24)" lore
# Listening beyond loopback needs authentication (a token, a user and password
# or an nkey; see docs/security.md): without it lore serve exits with code 2.
# With a NATS cluster, see docker-compose.yml and docs/scale-out.md.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/lore ./cmd/lore
# The data folder, owned by the runtime user (a new named volume copies it).
RUN mkdir -p /out/root/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lore /usr/local/bin/lore
COPY --from=build --chown=65532:65532 /out/root/ /
ENV LORE_DATA=/data
VOLUME /data
# 4222: the embedded NATS server of `lore serve` (without --nats).
EXPOSE 4222
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/lore"]
CMD ["serve", "--host", "0.0.0.0"]
