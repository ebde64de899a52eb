{{/* <release>-postgresql, or fullnameOverride: the parent chart's
switchyard.postgresql.fullname makes the same name. */}}
{{- define "postgresql.fullname" -}}
{{- default (printf "%s-postgresql" .Release.Name) .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "postgresql.selectorLabels" -}}
app.kubernetes.io/name: postgresql
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "postgresql.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "postgresql.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: database
app.kubernetes.io/part-of: switchyard
{{- end }}

{{/* The password: auth.password, else the one in the Secret already in the
cluster (an upgrade keeps it: initdb used it once, for good), else a new
random one. */}}
{{- define "postgresql.password" -}}
{{- if .Values.auth.password }}
{{- .Values.auth.password }}
{{- else }}
{{- $old := lookup "v1" "Secret" .Release.Namespace (include "postgresql.fullname" .) }}
{{- if and $old $old.data (index $old.data "password") }}
{{- index $old.data "password" | b64dec }}
{{- else }}
{{- randAlphaNum 32 }}
{{- end }}
{{- end }}
{{- end }}
