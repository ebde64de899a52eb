{{/* <release>-redis, or fullnameOverride: the parent chart's
switchyard.redis.fullname makes the same name. */}}
{{- define "redis.fullname" -}}
{{- default (printf "%s-redis" .Release.Name) .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "redis.selectorLabels" -}}
app.kubernetes.io/name: redis
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "redis.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "redis.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: cache
app.kubernetes.io/part-of: switchyard
{{- end }}

{{/* auth.password, else the one in the Secret already in the cluster, else a
new random one. */}}
{{- define "redis.password" -}}
{{- if .Values.auth.password }}
{{- .Values.auth.password }}
{{- else }}
{{- $old := lookup "v1" "Secret" .Release.Namespace (include "redis.fullname" .) }}
{{- if and $old $old.data (index $old.data "password") }}
{{- index $old.data "password" | b64dec }}
{{- else }}
{{- randAlphaNum 32 }}
{{- end }}
{{- end }}
{{- end }}
