# sedna-gm with its first-party feature plugins.
#   docker build -t sedna-gm .
#   kubectl apply -f config/rbac.yaml -f config/deploy/sedna-gm.yaml
FROM python:3.11-slim

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
