#!/bin/sh
# What a Sedna train or eval worker POSTs to its LC before it exits, for a worker pod
# of the helmet example that the embedded mode runs without a container:
#
#   report.sh POD train
#   report.sh POD eval
#
# LC_API: the LC's REST API (sedna-lc's BIND_PORT), default http://127.0.0.1:9100.
# ROUND: the training round (default 1): the trained model is output/train/ROUND/model.pb.
set -eu
pod=$1 kind=$2
api=${LC_API:-http://127.0.0.1:9100}
trained="/output/train/${ROUND:-1}/model.pb"
case $kind in
  train)
    results="[{\"format\":\"pb\",\"url\":\"$trained\"}]" ;;
  eval)  # the retrained model against the deployed one
    results="[{\"format\":\"pb\",\"url\":\"$trained\",\"metrics\":{\"precision\":[0.79]}},"
    results="$results{\"format\":\"pb\",\"url\":\"/models/deploy_model/saved_model.pb\","
    results="$results\"metrics\":{\"precision\":[0.62]}}]" ;;
  *) echo "usage: report.sh POD train|eval" >&2; exit 2 ;;
esac
curl -sS -X POST -H 'Content-Type: application/json' "$api/sedna/workers/$pod/info" -d \
  "{\"name\":\"$pod\",\"namespace\":\"default\",\"ownerName\":\"helmet-detection-demo\",\
\"ownerKind\":\"incrementallearningjob\",\"kind\":\"$kind\",\"status\":\"completed\",\
\"results\":$results}"
echo
