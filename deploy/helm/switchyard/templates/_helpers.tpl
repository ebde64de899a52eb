{{/* The chart's name, or nameOverride. */}}
{{- define "switchyard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects: fullnameOverride, or the release name
when it already holds the chart name (a release called switchyard names its
objects switchyard, as the plain manifests do), or <release>-<name>.
*/}}
{{- define "switchyard.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* name-version, for the helm.sh/chart label. */}}
{{- define "switchyard.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels every object carries. */}}
{{- define "switchyard.labels" -}}
helm.sh/chart: {{ include "switchyard.chart" . }}
{{ include "switchyard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: switchyard
{{- end }}

{{/* The labels that select the gateway's pods (never change them: a
Deployment's selector is immutable). */}}
{{- define "switchyard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "switchyard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The image: repository@digest when a digest is pinned, else repository:tag
(the tag defaulting to the chart's appVersion). */}}
{{- define "switchyard.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The Secret the gateway's environment comes from (envFrom). */}}
{{- define "switchyard.secretName" -}}
{{- if and .Values.secret.create .Values.existingSecret }}
{{- fail "existingSecret and secret.create exclude each other: name your Secret, or let the chart create one" }}
{{- end }}
{{- default (include "switchyard.fullname" .) .Values.existingSecret }}
{{- end }}

{{/* The port of a listen address ("0.0.0.0:8080", "[::]:8080"). */}}
{{- define "switchyard.port" -}}
{{- splitList ":" (toString .) | last | atoi }}
{{- end }}

{{/* The port the gateway serves HTTP on: config.gateway.listen's, else the
image's SWITCHYARD_LISTEN_ADDR (0.0.0.0:8080). */}}
{{- define "switchyard.httpPort" -}}
{{- include "switchyard.port" (dig "gateway" "listen" "0.0.0.0:8080" .Values.config) }}
{{- end }}

{{/* The port of config.gateway.metrics_listen; empty when it is unset. */}}
{{- define "switchyard.metricsPort" -}}
{{- with (dig "gateway" "metrics_listen" "" .Values.config) }}
{{- include "switchyard.port" . }}
{{- end }}
{{- end }}

{{/* The preStop sleep, config.gateway.shutdown_grace_secs (the gateway's
default, 600, when unset) and the margin: the pod's
terminationGracePeriodSeconds (the kubelet counts the preStop hook in it). */}}
{{- define "switchyard.terminationGracePeriodSeconds" -}}
{{- add .Values.preStopSleepSeconds (dig "gateway" "shutdown_grace_secs" 600 .Values.config) .Values.terminationGraceMarginSecs }}
{{- end }}

{{/* The subcharts' Service and Secret names (as their own helpers make them). */}}
{{- define "switchyard.postgresql.fullname" -}}
{{- default (printf "%s-postgresql" .Release.Name) .Values.postgresql.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "switchyard.redis.fullname" -}}
{{- default (printf "%s-redis" .Release.Name) .Values.redis.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The gateway's DATABASE_URL and REDIS_URL where they do not come from the
Secret: from the evaluation subcharts (the password from their Secret, put
into the URL by Kubernetes' $(VAR) expansion, so it is not in the Deployment),
from a Secret of the user's, or from a URL in values.
*/}}
{{- define "switchyard.sharedStateEnv" -}}
{{- $db := .Values.externalDatabase }}
{{- if gt (len (compact (list .Values.postgresql.enabled $db.url $db.existingSecret))) 1 }}
{{- fail "set at most one of postgresql.enabled, externalDatabase.url and externalDatabase.existingSecret" }}
{{- end }}
{{- if .Values.postgresql.enabled }}
{{- $pg := include "switchyard.postgresql.fullname" . }}
- name: SWITCHYARD_POSTGRESQL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $pg }}
      key: password
- name: DATABASE_URL
  value: {{ printf "postgres://%s:$(SWITCHYARD_POSTGRESQL_PASSWORD)@%s:5432/%s" .Values.postgresql.auth.username $pg .Values.postgresql.auth.database | quote }}
{{- else if $db.existingSecret }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ $db.existingSecret }}
      key: {{ $db.existingSecretKey }}
{{- else if $db.url }}
- name: DATABASE_URL
  value: {{ $db.url | quote }}
{{- end }}
{{- $redis := .Values.externalRedis }}
{{- if gt (len (compact (list .Values.redis.enabled $redis.url $redis.existingSecret))) 1 }}
{{- fail "set at most one of redis.enabled, externalRedis.url and externalRedis.existingSecret" }}
{{- end }}
{{- if .Values.redis.enabled }}
{{- $r := include "switchyard.redis.fullname" . }}
- name: SWITCHYARD_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $r }}
      key: password
- name: REDIS_URL
  value: {{ printf "redis://:$(SWITCHYARD_REDIS_PASSWORD)@%s:6379/0" $r | quote }}
{{- else if $redis.existingSecret }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ $redis.existingSecret }}
      key: {{ $redis.existingSecretKey }}
{{- else if $redis.url }}
- name: REDIS_URL
  value: {{ $redis.url | quote }}
{{- end }}
{{- end }}
