{{- define "sedna-gm.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sedna-gm.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sedna-gm.labels" -}}
{{ include "sedna-gm.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: sedna-gm
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "sedna-gm.tokenSecret" -}}
{{- .Values.websocket.token.existingSecret | default (printf "%s-lc-token" (include "sedna-gm.fullname" .)) -}}
{{- end -}}

{{- define "sedna-gm.metricsSecret" -}}
{{- .Values.metrics.token.existingSecret | default (printf "%s-metrics-token" (include "sedna-gm.fullname" .)) -}}
{{- end -}}

{{- define "sedna-gm.gmyaml" -}}
{{- $ws := dict "address" "0.0.0.0" "port" (int .Values.websocket.port) "auth" .Values.websocket.auth "allowPlainCredentials" .Values.websocket.allowPlainCredentials -}}
{{- if eq .Values.websocket.auth "token" -}}
{{- $_ := set $ws "tokenSecret" (printf "%s/%s" .Release.Namespace (include "sedna-gm.tokenSecret" .)) -}}
{{- else if eq .Values.websocket.auth "node" -}}
{{- $_ := set $ws "nodeTokenNamespace" .Release.Namespace -}}
{{- end -}}
{{- if .Values.websocket.tls.secretName -}}
{{- $_ := set $ws "tls" (dict "certFile" "/tls/tls.crt" "keyFile" "/tls/tls.key") -}}
{{- end -}}
{{- $gm := deepCopy .Values.config -}}
{{- $_ := set $gm "kubeConfig" "" -}}
{{- $_ := set $gm "master" "" -}}
{{- $_ := set $gm "websocket" $ws -}}
{{- $_ := set $gm "metrics" (dict "enabled" true "address" "0.0.0.0" "port" (int .Values.metrics.port) "auth" .Values.metrics.auth) -}}
{{- if eq .Values.metrics.auth "token" -}}
{{- $_ := set $gm.metrics "tokenFile" "/metrics-token/token" -}}
{{- end -}}
{{- $_ := set $gm "leaderElection" (dict "enabled" (gt (int .Values.replicaCount) 1) "leaseName" (include "sedna-gm.fullname" .) "leaseNamespace" .Release.Namespace) -}}
{{- $_ := set $gm "features" .Values.features -}}
{{- $_ := set $gm "embedded" (dict "enabled" false) -}}
{{- toYaml $gm -}}
{{- end -}}
