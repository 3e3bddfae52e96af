# Cerulean's multi-arch image: the fully static musl server and nothing else (no shell, no libc),
# for linux/amd64 and linux/arm64. No RUN step, so either half builds on any machine without
# emulation. scripts/image.sh stages the build context and builds both into one image index:
#   bash scripts/image.sh                       # localhost/cerulean:<version>, a manifest list
#   docker run -p 10002:10002 IMAGE             # data in the /data volume
#   docker run -p 10002:10002 IMAGE --inMemoryPersistence
# Context (scripts/image.sh): cerulean-amd64, cerulean-arm64 (build/cross/linux-musl-{x64,arm64}/
# cerulean), THIRD-PARTY-NOTICES.txt, and empty folders data/ and tmp/.
FROM scratch
ARG TARGETARCH
COPY --chmod=0755 cerulean-${TARGETARCH} /usr/local/bin/cerulean
COPY THIRD-PARTY-NOTICES.txt /usr/share/doc/cerulean/THIRD-PARTY-NOTICES.txt
# /data belongs to the server's user; SQLite's temporary files go to /tmp.
COPY --chown=65532:65532 data/ /data/
COPY --chmod=1777 tmp/ /tmp/
USER 65532:65532
VOLUME /data
EXPOSE 10002
HEALTHCHECK --interval=10s --timeout=3s --start-period=2s --retries=3 \
  CMD ["/usr/local/bin/cerulean", "health", "--tableHost", "127.0.0.1", "--tablePort", "10002"]
ENTRYPOINT ["/usr/local/bin/cerulean", "--tableHost", "0.0.0.0", "--location", "/data"]
CMD []
