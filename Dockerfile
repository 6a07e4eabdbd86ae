# latchkey in a container: a static binary on distroless, as a non-root
# user, with its data in a volume at /data.
#
#   docker build --build-arg VERSION=v1.4.0 -t latchkey .   # latchkey version prints it
#   docker run -d --name latchkey -p 8080:8080 -v latchkey-data:/data \
#     -e LATCHKEY_BASE_URL=https://auth.example.com latchkey
#   docker logs latchkey        # the first start prints the test key and admin token
#
# On PostgreSQL add -e LATCHKEY_DATABASE_URL=postgres://... and
# -e LATCHKEY_MASTER_KEY=...: the database URL wins over the LATCHKEY_DATA
# set below (the log says the data file is not used).
#
# Set LATCHKEY_BASE_URL to the origin browsers and mail recipients use: it
# is in every magic link, the JWT issuer and the passkey relying party. The
# default below suits `-p 8080:8080` on your own machine. The image has no
# shell, so it has no HEALTHCHECK: probe GET /api/v1/health (liveness) and
# GET /api/v1/ready (readiness) over HTTP from outside (your orchestrator's
# HTTP probes, or curl on the host).

# The build stage's Go is the version go.mod names.
FROM golang:1.26.8 AS build
WORKDIR /src
# Modules first: this layer is reused while go.mod and go.sum are unchanged.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The context has no .git, so the version and commit come from here
# (default dev, unknown): --build-arg COMMIT=$(git rev-parse --short=12 HEAD).
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /out/latchkey . \
 && mkdir /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/latchkey /usr/local/bin/latchkey
# The volume's mount point belongs to the nonroot user (uid 65532), so a
# new named volume does too.
COPY --from=build --chown=65532:65532 /out/data /data
ENV LATCHKEY_ADDR=0.0.0.0:8080 \
    LATCHKEY_DATA=/data/latchkey.db \
    LATCHKEY_BASE_URL=http://localhost:8080
VOLUME /data
EXPOSE 8080
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/latchkey"]
CMD ["serve"]
