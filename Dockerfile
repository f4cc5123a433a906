# The dss server as a container image: a static binary on distroless
# (no shell, no package manager), run as an unprivileged user, with the
# state in the volume /data.
#
#   docker build -t dss --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse HEAD) .
#   docker run -p 1883:1883 -v dss-data:/data \
#     -v ./users:/etc/dss/users:ro -e DSS_USERS=/etc/dss/users dss
#
# See docs/operations.md.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/dssio/dss/internal/buildinfo.Version=${VERSION} -X github.com/dssio/dss/internal/buildinfo.Commit=${COMMIT}" \
      -o /out/dss ./cmd/dss \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/dss /usr/local/bin/dss
# The volume's mount point belongs to the user the server runs as, so that
# a new named volume is writable.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME /data
# MQTT, MQTT over TLS, HTTP (/metrics, /healthz, /readyz).
EXPOSE 1883 8883 9090
# Listening beyond loopback needs authentication: give the server a users
# file (DSS_USERS) or client certificates (DSS_TLS_CLIENT_CA), or it
# refuses to start and says so.
ENV DSS_DATA=/data \
    DSS_LISTEN=:1883 \
    DSS_HTTP_LISTEN=:9090
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/dss", "ready", "--http", "127.0.0.1:9090"]
# SIGTERM (docker stop) shuts the server down gracefully.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/dss"]
CMD ["serve"]
