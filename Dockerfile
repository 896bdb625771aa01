# sedna-gm with its first-party feature plugins.
#   docker build -t sedna-gm:0.1.0 .   (the tag config/deploy and the Helm chart run)
#   then the README's "Install on a cluster"
# The base image, pinned by version and by digest (the multi-platform index, as
# docker-library/repo-info records it for python:3.11.16-slim-bookworm), so a rebuild
# gets the same Python and Debian until this line is changed. To move it:
#   docker buildx imagetools inspect python:3.11.X-slim-bookworm   (the "Digest:" line)
# and replace both the tag and the digest.
FROM python:3.11.16-slim-bookworm@sha256:c425d915a89a6dcd3183b1797ad9bd8878caff5a417f6371c8df93c8ea8b727f

WORKDIR /src
COPY pyproject.toml README.md ./
COPY sedna ./sedna
COPY plugins ./plugins
RUN pip install --no-cache-dir . ./plugins/incremental_learning ./plugins/contrib/dataset \
    ./plugins/contrib/federated_learning ./plugins/contrib/lifelong_learning \
    ./plugins/contrib/joint_inference \
    ./plugins/contrib/object_search ./plugins/contrib/object_tracking \
    ./plugins/contrib/feature_extraction ./plugins/contrib/reid ./plugins/contrib/video_analytics \
    && rm -rf /src

USER 65532:65532
EXPOSE 9000 9091
ENTRYPOINT ["sedna-gm"]
CMD ["--config", "/config/gm.yaml"]
